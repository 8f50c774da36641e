// shoal/containers/detail/owner_table/groups.hpp — single operations to one owner that travel and complete together.
//
// A future-returning operation for another rank is not sent on its own: it joins its owner's open group (its
// arguments appended to the group's columns, its future a cell in the group's chunk) and the group leaves as one
// message when it holds group_capacity operations, when one of its futures is waited for or tested (get, wait,
// ready), or before anything else this rank sends that owner (a post, a batch, an operation of another type, wait,
// flush) — so operations still reach their owner in issue order. The owner runs a group in one loop (keys
// prefetched, as a batch) and answers with one message, which completes the group's futures. owner_table decides when
// a group leaves and sends it; this file holds the chunk.
// Wire (AM byte messages, as byte_batches.hpp's): request [u32 slot][u32 count][each argument column: count values],
// read by the owner where it arrived; reply [u32 slot][u32 count][count results (result_codec)], read by the origin
// where it arrived. An operation that throws at its owner is answered first by a message of its own (its future
// fails); its place in the reply holds an empty result, which the origin skips. A group of one travels as a single
// request (owner_table::on_call).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shoal/containers/detail/owner_table/byte_batches.hpp"
#include "shoal/containers/detail/owner_table/replies.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::detail {

/// Operations that travel in groups: arguments and result whose bytes are the value (a group travels as a byte
/// message: its argument columns, then in the reply its results, result_codec), a result that can be made empty
/// before the owner fills it in.
template <class Wire, class... Args>
concept groupable = std::is_trivially_copyable_v<Wire> && std::default_initializable<Wire> &&
                    ((std::is_trivially_copyable_v<Args> && std::default_initializable<Args>) && ...);

/// One argument column of a chunk: room for every operation's argument, left uninitialized until an operation
/// writes its place (the chunk is allocated per group; zeroing its columns would be a second pass).
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

/// Receives the reply of a group: the results of its operations first .. first + n - 1, in order, encoded by
/// result_codec<Wire> from `results` on (any alignment, in the AM buffer); or of one operation that went alone
/// (receiver<Wire>::arrive).
template <class Wire>
struct group_receiver : receiver<Wire> {
  using interface = group_receiver;  // takes group replies too (a group of one: receiver<Wire>'s replies)
  virtual void arrive_group(const std::byte* results, std::uint32_t n, std::uint32_t first) = 0;
  /// Operation `index` of the group that starts at operation `first` failed at its owner.
  virtual void fail_member(std::exception_ptr e, std::uint32_t first, std::uint32_t index) = 0;

 protected:
  ~group_receiver() = default;
};

/// Operations per group of Op with arguments Args and futures of R: a cell and the arguments per operation
/// (future_chunk_cells).
template <class R, class... Args>
inline constexpr std::uint32_t group_capacity = future_chunk_cells(future_cell_bytes<R> + (sizeof(Args) + ... + 0));

/// Up to group_capacity operations Op of one origin for one owner, and their futures (Convert: Op::wire -> R).
/// Operations are added at the end, their arguments in the chunk's columns; the ones not sent yet (first_unsent_ ..
/// used_) leave together through Table::send_group, which sends those parts of the columns. Waiting for or testing a
/// future whose operation has not left sends it.
template <class Table, class Op, class R, class Convert, class... Args>
class group_chunk final : public reply_cells<typename Op::wire, R, Convert, group_capacity<R, Args...>,
                                             group_receiver<typename Op::wire>>,
                          public unsent_group {
  using wire = typename Op::wire;
  using base = reply_cells<wire, R, Convert, group_capacity<R, Args...>, group_receiver<wire>>;
  using typename base::cells;
  using base::capacity;

 public:
  using op = Op;
  static inline const char tag = 0;  // its address names the chunk type (owner_table keeps one open per owner and type)

  group_chunk(Table& table, int owner) : table_(&table), owner_(owner) {}

  int owner() const { return owner_; }
  bool full() const { return used_ == capacity; }

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

  // `first` comes from this rank's own request slot (first <= used_); `index` and `n` from the message.
  void fail_member(std::exception_ptr e, std::uint32_t first, std::uint32_t index) override {
    if (index >= used_ - first) throw error("shoal::dist_map: malformed group error (corrupt stream)");
    this->fail(std::move(e), first + index);
  }

  void arrive_group(const std::byte* results, std::uint32_t n, std::uint32_t first) override {
    if (n > used_ - first) throw error("shoal::dist_map: malformed group reply (corrupt stream)");
    for (std::uint32_t i = 0; i < n; ++i) {
      if (!this->cell_done(first + i)) this->arrive(result_codec<wire>::read(results, n, i), first + i);
    }  // (a done one failed at the owner: its error came first)
  }

 private:
  Table* table_;
  int owner_;
  std::tuple<argument_column<Args, capacity>...> columns_;  // the operations' arguments, one column each
  std::uint32_t used_ = 0;
  std::uint32_t first_unsent_ = 0;
};

}  // namespace shoal::detail
