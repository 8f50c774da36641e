// shoal/containers/detail/owner_container.hpp — the public operations dist_map and dist_multimap share, on the
// owner-computes engine (owner_table.hpp): completion (wait, flush), the service layout (serve, close), placement,
// this rank's shard (local_size, local_for_each), the collectives (for_all, reduce, size), update and batch insert.
#pragma once

#include <concepts>
#include <cstddef>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_table.hpp"
#include "shoal/containers/dist_map_options.hpp"
#include "shoal/containers/dist_map_results.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

/// A user function run at the owner: a lambda without captures or another empty function object (it is rebuilt
/// there from its type; pass what it needs as arguments).
template <class F>
concept owner_function = std::is_empty_v<F> && std::default_initializable<F>;

/// The public operations dist_map and dist_multimap share (completion, layout, the local shard, collectives, update
/// and batch insert), and the helpers both use to issue their operations. `Stored` is what a key maps to in the
/// shard; `Derived` (CRTP) supplies the operations whose meaning differs: `update_op<F, Args...>` and
/// `insert_batch_op`, and its `mapped_type`.
template <class Derived, class K, class Stored, class Family>
class owner_container {
  friend struct owner_table_test_access;  // owner_table.hpp

 public:
  /// Runs fn at the owner if the key is present (dist_map: fn(V& value, args...); dist_multimap: fn(std::vector<V>&
  /// values, args...)). Returns whether the key was present (fn returning void) or fn's result (nullopt: absent).
  template <owner_function F, class... Args>
  auto update(const K& key, F fn, Args&&... args) {
    return async_update(key, fn, std::forward<Args>(args)...).get();
  }
  template <owner_function F, class... Args>
  auto async_update(K key, F, Args&&... args) {
    using op = typename Derived::template update_op<F, std::decay_t<Args>...>;
    return call<op, typename op::wire, identity>(std::move(key), std::forward<Args>(args)...);
  }
  /// Fire and forget: no result; completed (and a throwing fn reported) by wait() / flush().
  template <owner_function F, class... Args>
  void post_update(K key, F, Args&&... args) {
    post<typename Derived::template update_op<F, std::decay_t<Args>...>>(std::move(key), std::forward<Args>(args)...);
  }

  /// Inserts every (key, value) of a random-access range of pairs, one message per owner (dist_map: keys already
  /// present keep their value; dist_multimap: values are appended). The counts of every owner, summed.
  template <std::ranges::random_access_range Range>
  batch_insert_result insert_batch(const Range& pairs) {
    return async_insert_batch(pairs).get();
  }
  template <std::ranges::random_access_range Range>
  future<batch_insert_result> async_insert_batch(const Range& pairs) {
    return pair_batch<typename Derived::insert_batch_op, typename Derived::mapped_type>(pairs);
  }

  /// Completes every operation this rank issued (CSE_Hash HASH_Wait). Not collective.
  void wait() { t_.wait(); }
  /// Collective: completes every rank's operations (CSE_Hash HASH_Flush).
  void flush() { t_.flush(); }
  /// Service layout, server ranks: answers requests until every client has closed (collective with close()).
  void serve() { t_.serve(); }
  /// Service layout, client ranks: completes this rank's operations, then ends the service (collective with serve()).
  void close() { t_.close(); }
  /// True on the ranks that store data (every rank co-located; the servers in the service layout).
  bool is_owner() const { return t_.owns_shard(); }
  /// The team rank that owns `key`.
  int owner(const K& key) const { return t_.owner_of(key); }
  /// The team the container lives on.
  const shoal::team& team() const noexcept { return t_.team(); }

  /// Entries (key-value pairs) stored on this rank.
  std::size_t local_size() const { return t_.entries(); }
  /// Makes room in this rank's shard for `keys` keys without growing (no message; a hint: a no-op on ranks that
  /// store nothing, and the shard still grows past it).
  void local_reserve(std::size_t keys) {
    if (t_.owns_shard()) t_.shard().reserve(keys);
  }
  /// Calls fn(const K&, Stored&) for every key of this rank's shard.
  template <class F>
  void local_for_each(F&& fn) {
    t_.settle_own();
    t_.shard().for_each(fn);
  }
  /// Collective: flush(), then fn(const K&, Stored&) over every rank's shard, then a barrier.
  template <class F>
  void for_all(F&& fn) {
    flush();
    local_for_each(fn);
    t_.team().barrier();
  }
  /// Collective: flush(), then op-combines map(k, stored) over every key of every rank (identity: op's neutral
  /// element; op as for shoal::allreduce).
  template <class T, class Map, class Op>
  T reduce(T identity, Map map, Op op) {
    flush();
    T acc = identity;
    t_.shard().for_each([&](const K& k, Stored& v) { acc = op(acc, map(k, v)); });
    return t_.team().allreduce(acc, op);
  }
  /// Collective: the number of entries on every rank.
  std::size_t size() {
    flush();
    return t_.team().allreduce(local_size(), op::sum{});
  }

 protected:
  using engine = owner_table<K, Stored, Family>;

  owner_container(const dist_map_options& options, std::string name, const shoal::team& team)
      : t_(options, std::move(name), team) {}

  template <class Op, class R, class Convert, class... Args>
  future<R> call(K key, Args&&... args) {
    t_.check();
    const int owner = t_.owner_of(key);
    return t_.template call<Op, R, Convert>(owner, std::move(key), std::forward<Args>(args)...);
  }
  template <class Op, class... Args>
  void post(K key, Args&&... args) {
    t_.check();
    const int owner = t_.owner_of(key);
    t_.template post<Op>(owner, std::move(key), std::forward<Args>(args)...);
  }
  /// One Op per owner over the keys of a random-access range; results (a vector per owner) back in input order.
  template <class Op, class Range>
  future<typename Op::wire> keyed_batch(const Range& keys) {
    using result = typename Op::wire;
    const std::size_t n = std::ranges::size(keys);
    if constexpr (requires { typename Op::single; }) {
      using W = typename Op::single::wire;
      if constexpr (byte_batchable<K, W>) {
        if (n <= byte_batch_limit<K, W>) {
          return t_.template call_keyed_bytes<typename Op::single>(
              n, [&](std::size_t i) -> decltype(auto) { return keys[i]; });
        }
      }
    }
    batch_cut cut = t_.split_by_owner(n, [&](std::size_t i) -> decltype(auto) { return keys[i]; });
    return t_.template call_batch<Op, result, scatter_back>(
        result(n), std::move(cut),
        [&](std::size_t, const std::vector<std::size_t>& at) { return std::make_tuple(gather<K>(keys, at)); });
  }
  /// One Op per owner over the (key, value) pairs of a random-access range; the counts summed.
  template <class Op, class V, class Range>
  future<batch_insert_result> pair_batch(const Range& pairs) {
    const std::size_t n = std::ranges::size(pairs);
    if constexpr (requires { typename Op::single; }) {
      if constexpr (byte_batchable<K, V>) {
        if (n <= byte_batch_inputs(sizeof(K) + sizeof(V))) {
          return t_.template call_pair_bytes<typename Op::single, V>(
              n, [&](std::size_t i) -> decltype(auto) { return std::get<0>(pairs[i]); },
              [&](std::size_t i) -> decltype(auto) { return std::get<1>(pairs[i]); });
        }
      }
    }
    // One pass: each pair goes straight into its owner's key and value vectors (the counts need no positions).
    auto [cut, args] = t_.template cut_arguments_by_owner<K, V>(
        n, [&](std::size_t i) -> decltype(auto) { return std::get<0>(pairs[i]); },
        [&](std::tuple<std::vector<K>, std::vector<V>>& part, std::size_t i) {
          std::get<0>(part).push_back(static_cast<K>(std::get<0>(pairs[i])));
          std::get<1>(part).push_back(static_cast<V>(std::get<1>(pairs[i])));
        });
    auto& parts = args;  // a lambda names a structured binding only from clang 16 on: capture a reference to it
    return t_.template call_batch<Op, batch_insert_result, merge_counts>(
        batch_insert_result{}, std::move(cut),
        [&](std::size_t part, const std::vector<std::size_t>&) { return std::move(parts[part]); });
  }

  engine t_;
};

}  // namespace shoal::detail
