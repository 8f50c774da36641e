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

/// Where the next post to one owner is written: owner_table keeps one per owner, and a post's whole fast path is a
/// compare of `tag` and a record written at `cur`. It describes the owner's open column — the one that is that
/// owner's unsent group — and only it: `tag` names the open column's operation type, nullptr while none is open (a
/// column closes when it leaves or another group becomes the owner's unsent one, whose arrival sends it first).
struct held_cursor {
  std::byte* cur = nullptr;
  std::byte* end = nullptr;
  const void* tag = nullptr;
};

/// What owner_table keeps of a column whatever its operation type.
struct held_posts_base : unsent_group {
  virtual ~held_posts_base() = default;
};

/// One tag per (Op, Args...): which column a held_posts_base is.
template <class Op, class... Args>
inline constexpr char held_posts_tag = 0;

/// Appends one post's record at the owner's open column of Op (`cursor.tag` must be its tag); a column that fills up
/// leaves at once (`column`: the open column, which sends it).
template <class... Args>
inline void hold_post(held_cursor& cursor, held_posts_base& column, const Args&... args) {
  using record = post_record<Args...>;
  // The cursor moves before the record is written: the record's bytes may alias anything, so a cursor read after
  // them would wait for their store.
  std::byte* const at = cursor.cur;
  cursor.cur = at + record::bytes;
  const bool full = cursor.cur == cursor.end;
  record::write(at, args...);
  if (full) [[unlikely]] column.send_unsent();
}

/// The column of posts of Op (arguments Args...) for one owner of `Table`, written through that owner's held_cursor
/// while it is open; it sends or runs a full column through the table's leave_held<Op, Args...>(owner, records, n)
/// and forgets it as that owner's unsent group (forget_unsent).
template <class Table, class Op, class... Args>
class held_posts final : public held_posts_base {
 public:
  using record = post_record<Args...>;
  static constexpr const void* tag = &held_posts_tag<Op, Args...>;

  held_posts(Table& table, int owner, held_cursor& cursor, std::size_t records)
      : table_(table), owner_(owner), cursor_(cursor), bytes_(records * record::bytes),
        column_(new std::byte[bytes_]) {}
  held_posts(const held_posts&) = delete;
  held_posts& operator=(const held_posts&) = delete;
  ~held_posts() override = default;

  /// This column becomes its owner's open one (owner_table made it the owner's unsent group). A column already open
  /// (opened again by a post made while a send ran handlers) stays as it is.
  void open() {
    if (cursor_.tag == tag) return;
    cursor_ = {column_.get(), column_.get() + bytes_, tag};
  }

  /// Sends (or runs) the held posts, in order, and closes the column. The column is swapped for a spare first: a post
  /// made while they run or travel (a handler run meanwhile) opens it again on the spare instead of changing these.
  void send_unsent(bool = false) override {
    table_.forget_unsent(owner_, this);
    if (cursor_.tag != tag) return;  // not open: holds nothing
    const auto n = static_cast<std::uint32_t>(static_cast<std::size_t>(cursor_.cur - column_.get()) / record::bytes);
    cursor_ = {};
    if (n == 0) return;
    std::unique_ptr<std::byte[]> full = std::exchange(column_, spare_ ? std::move(spare_) : fresh());
    table_.template leave_held<Op, Args...>(owner_, full.get(), n);
    if (!spare_) spare_ = std::move(full);
  }
  /// The environment ended first: nothing can leave any more.
  void drop_unsent(std::exception_ptr) override {
    if (cursor_.tag == tag) cursor_ = {};
  }

 private:
  std::unique_ptr<std::byte[]> fresh() const { return std::unique_ptr<std::byte[]>(new std::byte[bytes_]); }

  Table& table_;
  int owner_;
  held_cursor& cursor_;
  std::size_t bytes_;
  std::unique_ptr<std::byte[]> column_;
  std::unique_ptr<std::byte[]> spare_;
};

}  // namespace shoal::detail
