// shoal/containers/detail/owner_table/held_posts.hpp — fire-and-forget operations whose arguments are plain bytes,
// held per owner in a column of records and sent (or, for this rank's own shard, run) a column at a time.
//
// A post used to be one active message: per call the issue ledger, the owner's unsent group, the touched-owner list,
// the team's rank and the AM layer's outbox (about 15 ns at 2 ranks, where a hand-written all-to-all buckets a key in
// about 4). Now a post of plain bytes appends its arguments, packed, to its owner's column: one record written at a
// cursor. A full column leaves as one AM byte message, which the owner runs in one loop with each key prefetched a
// few records ahead (as a batch); this rank's own column runs here the same way. owner_table treats a column as its
// owner's group not yet sent (groups.hpp), so it leaves before anything else this rank sends or runs for that owner
// (an operation with a result, a batch, a post of another type), at wait() / flush(), and before local_for_each on
// this rank's own column: per origin and owner the issue order holds, as CSE_Hash §2 asks. Posts complete at wait(),
// as before; a column waits at most until then.
//
// Wire (a byte message, am::detail::reserve_bytes): the records back to back, each the post's arguments' bytes in
// order (no header: the count is the size over the record's size). Read with memcpy: a message starts at any
// alignment in the AM buffer.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shoal/containers/detail/owner_table/groups.hpp"

namespace shoal::detail {

/// The largest record a column holds: bigger posts go one message each, where copying them twice would cost more
/// than the call.
inline constexpr std::size_t held_record_limit = 256;

/// Posts whose arguments travel as their bytes in a column: plain bytes, key first, a record of at most
/// held_record_limit bytes.
template <class K, class... Args>
concept byte_postable =
    sizeof...(Args) >= 1 && std::same_as<std::tuple_element_t<0, std::tuple<Args...>>, K> &&
    ((std::is_trivially_copyable_v<Args> && std::default_initializable<Args>) && ...) &&
    (std::size_t{0} + ... + sizeof(Args)) <= held_record_limit;

/// One post's arguments Args... packed back to back (the first is the key).
template <class... Args>
struct post_record {
  static constexpr std::size_t bytes = (std::size_t{0} + ... + sizeof(Args));

  static void write(std::byte* p, const Args&... args) {
    ((std::memcpy(p, static_cast<const void*>(&args), sizeof(Args)), p += sizeof(Args)), ...);
  }
  /// Argument I of the record at p.
  template <std::size_t I>
  static auto load(const std::byte* p) {
    using T = std::tuple_element_t<I, std::tuple<Args...>>;
    T v;
    std::memcpy(static_cast<void*>(&v), p + offset<I>(), sizeof(T));
    return v;
  }
  /// f(args...) with the record's arguments, as values the call may move from.
  template <class F>
  static decltype(auto) apply(const std::byte* p, F&& f) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
      return f(load<I>(p)...);
    }(std::index_sequence_for<Args...>{});
  }

 private:
  template <std::size_t I>
  static constexpr std::size_t offset() {
    constexpr std::size_t sizes[] = {sizeof(Args)...};
    std::size_t at = 0;
    for (std::size_t i = 0; i < I; ++i) at += sizes[i];
    return at;
  }
};

/// Records per column for `ranks` owners: 4 KiB of records (a few hundred small posts per message), less in a large
/// team — a rank posting to every owner holds at most 256 KiB per map, 512 bytes per owner at least — and never
/// fewer than one.
inline std::size_t held_column_records(std::size_t record_bytes, int ranks) {
  const std::size_t bytes =
      std::clamp<std::size_t>((std::size_t{256} << 10) / static_cast<std::size_t>(std::max(ranks, 1)), 512, 4096);
  return std::max<std::size_t>(1, bytes / record_bytes);
}

/// What owner_table keeps of a column whatever its operation type.
struct held_posts_base : unsent_group {
  virtual ~held_posts_base() = default;
};

/// One tag per (Op, Args...): which column a held_posts_base is.
template <class Op, class... Args>
inline constexpr char held_posts_tag = 0;

/// The column of posts of Op (arguments Args...) for one owner of `Table`, which sends or runs a full column through
/// its leave_held<Op, Args...>(owner, records, n) and forgets it as that owner's unsent group (forget_unsent).
template <class Table, class Op, class... Args>
class held_posts final : public held_posts_base {
 public:
  using record = post_record<Args...>;

  held_posts(Table& table, int owner, std::size_t records)
      : table_(table), owner_(owner), bytes_(records * record::bytes), column_(new std::byte[bytes_]),
        cur_(column_.get()), end_(cur_ + bytes_) {}
  held_posts(const held_posts&) = delete;
  held_posts& operator=(const held_posts&) = delete;
  ~held_posts() override = default;

  void add(const Args&... args) {
    // The cursor moves before the record is written: the record's bytes may alias anything, so a cursor read after
    // them would wait for their store.
    std::byte* const at = cur_;
    cur_ = at + record::bytes;
    const bool full = cur_ == end_;
    record::write(at, args...);
    if (full) [[unlikely]] send_unsent();
  }

  /// Sends (or runs) the held posts, in order. The column is swapped for a spare first: a post made while they run
  /// or travel (a handler run meanwhile) starts the next column instead of changing this one.
  void send_unsent(bool = false) override {
    table_.forget_unsent(owner_, this);
    if (cur_ == column_.get()) return;
    const auto n = static_cast<std::uint32_t>(static_cast<std::size_t>(cur_ - column_.get()) / record::bytes);
    std::unique_ptr<std::byte[]> full = std::exchange(column_, spare_ ? std::move(spare_) : fresh());
    cur_ = column_.get();
    end_ = cur_ + bytes_;
    table_.template leave_held<Op, Args...>(owner_, full.get(), n);
    if (!spare_) spare_ = std::move(full);
  }
  /// The environment ended first: nothing can leave any more.
  void drop_unsent(std::exception_ptr) override { cur_ = column_.get(); }

 private:
  std::unique_ptr<std::byte[]> fresh() const { return std::unique_ptr<std::byte[]>(new std::byte[bytes_]); }

  Table& table_;
  int owner_;
  std::size_t bytes_;
  std::unique_ptr<std::byte[]> column_;
  std::unique_ptr<std::byte[]> spare_;
  std::byte* cur_;
  std::byte* end_;
};

}  // namespace shoal::detail
