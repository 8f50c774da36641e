// shoal/containers/detail/owner_table/groups.hpp — single operations to one owner that travel and complete together.
//
// A future-returning operation for another rank is not sent on its own: it joins its owner's open group (its
// arguments appended to the group's columns, its future a cell in the group's chunk) and the group leaves as one
// message when it holds future_chunk_size operations, when one of its futures is waited for or tested (get, wait,
// ready), or before anything else this rank sends that owner (a post, a batch, an operation of another type, wait,
// flush) — so operations still reach their owner in issue order. The owner runs a group in one loop (keys
// prefetched, as a batch) and answers with one message, which completes the group's futures. owner_table decides when
// a group leaves and sends it; this file holds the chunk and the types on the wire.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <exception>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_table/replies.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::detail {

/// How a result travels in a group's reply: std::vector<bool> is not an array of bools, so a bool goes as a byte.
template <class T>
using result_cell = std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>;

/// Operations that travel in groups: arguments and result whose bytes are the value (columns of them are copied as
/// raw bytes), no bool argument (a column of bools would be a std::vector<bool>), a result that can be made empty
/// before the owner fills it in.
template <class Wire, class... Args>
concept groupable =
    std::is_trivially_copyable_v<result_cell<Wire>> && std::default_initializable<Wire> &&
    ((std::is_trivially_copyable_v<Args> && std::default_initializable<Args> && !std::is_same_v<Args, bool>) && ...);

/// One argument column of a chunk: room for every operation's argument, left uninitialized until an operation
/// writes its place (the chunk is allocated per 64 operations; zeroing its columns would be a second pass).
template <class T, std::size_t N>
struct argument_column {
  argument_column() {}  // NOLINT: deliberately leaves `at` uninitialized
  T at[N];
};

/// A group that may hold operations not yet sent (what owner_table sends before anything else to that owner).
struct unsent_group {
  /// `waited`: because one of its futures is waited for or tested.
  virtual void send_unsent(bool waited = false) = 0;
  /// The container goes away without sending them (its environment ended first): their futures fail with `e`.
  virtual void drop_unsent(std::exception_ptr e) = 0;

 protected:
  ~unsent_group() = default;
};

/// Receives the reply of a group: the results of its operations first .. first + results.size() - 1, in order (or of
/// one operation that went alone: receiver<Wire>::arrive).
template <class Wire>
struct group_receiver : receiver<Wire> {
  virtual void arrive_group(std::vector<result_cell<Wire>>&& results, std::uint32_t first) = 0;

 protected:
  ~group_receiver() = default;
};

/// Up to future_chunk_size operations Op of one origin for one owner, and their futures (Convert: Op::wire -> R).
/// Operations are added at the end, their arguments in the chunk's columns; the ones not sent yet (first_unsent_ ..
/// used_) leave together through Table::send_group, which sends those parts of the columns. Waiting for or testing a
/// future whose operation has not left sends it.
template <class Table, class Op, class R, class Convert, class... Args>
class group_chunk final : public reply_cells<typename Op::wire, R, Convert, group_receiver<typename Op::wire>>,
                          public unsent_group {
  using wire = typename Op::wire;
  using cells = layer::future_cells<R, future_chunk_size>;

 public:
  using op = Op;
  static inline const char tag = 0;  // its address names the chunk type (owner_table keeps one open per owner and type)

  group_chunk(Table& table, int owner) : table_(&table), owner_(owner) {}

  int owner() const { return owner_; }
  bool full() const { return used_ == future_chunk_size; }

  /// Appends an operation; its future shares ownership of the chunk.
  template <class... A>
  future<R> add(A&&... args) {
    const std::uint32_t index = used_++;
    std::apply([&](auto&... column) { ((column.at[index] = std::forward<A>(args)), ...); }, columns_);
    return cells::template future_of<R>(index);
  }

  /// A cell not done yet is waited for or tested: its operation leaves if it has not.
  bool poll(const void* cell) override {
    if (!cells::poll(cell)) send_unsent(true);
    return cells::poll(cell);
  }

  void send_unsent(bool waited = false) override {
    if (first_unsent_ == used_) return;
    const std::uint32_t first = std::exchange(first_unsent_, used_);
    const auto unsent = std::apply(
        [&](const auto&... column) { return std::tuple{std::span<const Args>(column.at + first, used_ - first)...}; },
        columns_);
    table_->send_group(*this, first, unsent, waited);
  }

  void drop_unsent(std::exception_ptr e) override {
    for (std::uint32_t i = std::exchange(first_unsent_, used_); i < used_; ++i) this->set_error(i, e);
  }

  void arrive_group(std::vector<result_cell<wire>>&& results, std::uint32_t first) override {
    for (std::uint32_t i = 0; i < results.size(); ++i) {
      if (!this->cell_done(first + i)) this->arrive(wire(std::move(results[i])), first + i);
    }  // (a done one failed at the owner: its error came first)
  }

 private:
  Table* table_;
  int owner_;
  std::tuple<argument_column<Args, future_chunk_size>...> columns_;  // the operations' arguments, one column each
  std::uint32_t used_ = 0;
  std::uint32_t first_unsent_ = 0;
};

}  // namespace shoal::detail
