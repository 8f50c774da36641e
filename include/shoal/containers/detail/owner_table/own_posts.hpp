// shoal/containers/detail/owner_table/own_posts.hpp — this rank's fire-and-forget operations on its own shard, held
// back a few posts so that each key's place in the shard loads while the operations before it run. For posts whose
// arguments are not all plain bytes (the multimap's vector of values); posts of plain bytes are held in columns, this
// rank's own included (held_posts.hpp).
//
// A post to another owner runs there in a loop that prefetches each message's key a few messages ahead (the AM
// layer's prefetch hint); a post to this rank's own shard used to run at once, inside the issuing loop, one cache
// miss after another (at 2 ranks half the posts of a uniform key set: 6 of the 14 ms of `insert N-N`). Here it joins
// a ring of `distance` operations: its key is prefetched when it joins, and it runs when `distance` more have joined
// after it, or when the holder leaves. owner_table treats the holder as this rank's group not yet sent (groups.hpp),
// so it leaves — every held operation runs, in issue order — before anything else this rank issues on the table
// (an operation with a result, a batch, a post of another type), at wait() / flush(), and before local_for_each.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shoal/containers/detail/owner_table/batches.hpp"
#include "shoal/containers/detail/owner_table/groups.hpp"

namespace shoal::detail {

/// Posts whose arguments can wait in a ring (values that move without throwing: plain bytes, or a vector of values, as
/// the multimap's), and a shard that can prefetch the key (the first one).
template <class Shard, class Key, class... Args>
concept holdable_posts =
    ((std::is_nothrow_move_constructible_v<Args> && std::is_nothrow_move_assignable_v<Args> &&
      std::default_initializable<Args>) &&
     ...) &&
    requires(const Shard& s, const Key& k) { s.prefetch(k); };

/// One tag per (Op, Args...): which own_posts a held holder is (owner_table keeps it beside the holder, own_posts_type_).
template <class Op, class... Args>
inline constexpr char own_posts_tag = 0;

/// What owner_table keeps of a holder whatever its operation type.
struct own_posts_base : unsent_group {
  virtual ~own_posts_base() = default;
};

/// The held posts of Op (arguments Args...) for `Table`, which runs each through its run_own_post<Op>(args...).
template <class Table, class Op, class... Args>
class own_posts final : public own_posts_base {
 public:
  /// As many as a batch's loop at the owner prefetches ahead.
  static constexpr std::uint32_t distance = batch_prefetch_distance;

  explicit own_posts(Table& table) : table_(table) {}
  own_posts(const own_posts&) = delete;
  own_posts& operator=(const own_posts&) = delete;
  ~own_posts() override = default;

  void add(Args... args) {
    table_.shard().prefetch(std::get<0>(std::tie(args...)));
    ring_[(head_ + count_) % ring_size] = std::tuple<Args...>(std::move(args)...);
    if (++count_ > distance) run_oldest();
  }

  /// Runs every held operation, in order; the table forgets this holder as its unsent group.
  void send_unsent(bool = false) override {
    table_.forget_unsent(this);
    while (count_ > 0) run_oldest();
  }
  /// The environment ended first: nothing can run any more.
  void drop_unsent(std::exception_ptr) override { count_ = 0; }

 private:
  static constexpr std::uint32_t ring_size = distance + 1;

  void run_oldest() {
    std::tuple<Args...> args = std::move(ring_[head_]);
    head_ = (head_ + 1) % ring_size;
    --count_;
    std::apply([&](Args&... a) { table_.template run_own_post<Op>(std::move(a)...); }, args);
  }

  Table& table_;
  std::array<std::tuple<Args...>, ring_size> ring_{};
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
};

}  // namespace shoal::detail
