// shoal/containers/dist_multimap.hpp — a distributed hash multimap whose operations run at the key's owner: a key
// holds a sequence of values (CSE_Hash's tables, where one insert stores n values under a key). Model: owner
// computes, on active messages; the same engine, layouts, options and completion as shoal::dist_map.
//
// Operations. Who (as in dist_map.hpp): collective = every rank of the team, in the same order; any rank = one
// rank's call:
//   dist_multimap(opts = {}, team = world()), ~dist_multimap
//                                        collective  as dist_map's (the destructor: this rank's operations
//                                                    complete, then B; no-op after finalize)
//   try_insert(k, values | v) -> size_t  any rank    appends the values that fit; returns how many went in (fewer
//                                                    only when the owner reaches capacity_per_rank: CSE_Hash's
//                                                    request size n in, count out)
//   insert(k, values | v)                any rank    appends all the values or none: container_full (nothing
//                                                    stored) when they do not all fit under capacity_per_rank
//   insert_or_assign(k, values) -> bool  any rank    replaces the key's values; true when the key was new
//                                                    (container_full when the new values do not fit)
//   find(k) -> vector<V>                 any rank    every value of the key, in insertion order (empty: absent)
//   count(k) -> size_t, contains(k) -> bool
//                                        any rank
//   erase(k) -> vector<V>                any rank    removes the key and returns its values (CSE_Hash's delete)
//   update(k, fn, args...)               any rank    fn(std::vector<V>&, args...) at the owner (as dist_map::update)
//   async_<op>(...) -> future<...>, post_<op>(...) (insert, erase, update)
//                                        any rank    as dist_map; post_insert(k, std::vector<V>&&) takes the
//                                                    values (moved into this rank's own shard, no copy)
//   insert_batch(range of (k, v)) -> batch_insert_result; find_batch(keys) / erase_batch(keys) -> vector<vector<V>>
//                                        any rank
//   wait(), local_for_each, local_size, local_reserve
//                                        any rank    as dist_map
//   flush(), serve() / close(), for_all, reduce, size
//                                        collective  as dist_map
// Sizes count key-value pairs, as std::unordered_multimap::size: a key with three values counts 3 in size() (the
// whole map) and in local_size() (the pairs stored on this rank).
//
// Cost: as dist_map — a remote operation is M = 2 (M = 1 for post_<op>; async_count travels in groups as dist_map's
// futures do, the operations that carry or return values go alone), a batch 2 per owner, wait() 2 per owner
// addressed, flush() one barrier more. Values of one key travel together, so a request of n values is one
// message. post_insert to this rank's own shard waits in dist_map's ring of 8 with its key prefetched (its values
// copied at the post); at another owner, the AM layer hints each message's key 8 messages ahead of it.
// Concurrency: as dist_map; the values of a key keep the order in which their inserts reached the owner.
// Errors: as dist_map.
//
//   shoal::dist_multimap<std::uint32_t, double> rows;                // collective
//   std::vector<double> row = {1.0, 2.0, 3.0};
//   std::size_t stored = rows.try_insert(7, row);                     // 3 unless the owner is full
//   rows.insert(8, row);                                              // all three, or container_full
//   rows.flush();                                                     // collective
//   std::vector<double> values = rows.erase(7);                       // {1, 2, 3}, and the key is gone
#pragma once

#include <cstddef>
#include <optional>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_container.hpp"
#include "shoal/containers/dist_map_options.hpp"
#include "shoal/containers/dist_map_results.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/local/flat_table.hpp"
#include "shoal/local/linear_hash_table.hpp"

namespace shoal {

template <serializable K, serializable V, class Family = local::flat>
  requires hashable<K> && std::equality_comparable<K>
class dist_multimap : public detail::owner_container<dist_multimap<K, V, Family>, K, std::vector<V>, Family> {
  using values = std::vector<V>;
  using base = detail::owner_container<dist_multimap, K, values, Family>;
  friend base;
  using typename base::engine;
  using status = detail::insert_status;

 public:
  using key_type = K;
  using mapped_type = V;

  /// Collective over `team` (every rank of the team passes the same options; servers are team ranks).
  explicit dist_multimap(const dist_map_options& options = {}, const shoal::team& team = shoal::world())
      : base(options, "shoal::dist_multimap", team) {}

  // ---- single operations -----------------------------------------------------------------------------------------

  /// Appends the values that fit under capacity_per_rank; returns how many went in (CSE_Hash: n in, count out).
  std::size_t try_insert(const K& key, std::span<const V> vs) { return async_try_insert(key, vs).get(); }
  std::size_t try_insert(const K& key, const V& v) { return try_insert(key, std::span<const V>(&v, 1)); }
  future<std::size_t> async_try_insert(K key, std::span<const V> vs) {
    return this->template call<append_op, std::size_t, inserted_count>(std::move(key), values(vs.begin(), vs.end()));
  }
  future<std::size_t> async_try_insert(K key, const V& v) {
    return async_try_insert(std::move(key), std::span<const V>(&v, 1));
  }

  /// Appends all the values or none: container_full (nothing stored) when they do not all fit.
  void insert(const K& key, std::span<const V> vs) { async_insert(key, vs).get(); }
  void insert(const K& key, const V& v) { insert(key, std::span<const V>(&v, 1)); }
  future<void> async_insert(K key, std::span<const V> vs) {
    return this->template call<append_all_op, void, all_or_full>(std::move(key), values(vs.begin(), vs.end()));
  }
  future<void> async_insert(K key, const V& v) { return async_insert(std::move(key), std::span<const V>(&v, 1)); }
  /// Fire and forget: no result; completed (and values that did not fit reported) by wait() / flush(). To another
  /// owner the values are sent straight from `vs` (no vector made here); for this rank's own shard they are copied.
  void post_insert(K key, std::span<const V> vs) { this->template post<append_op>(std::move(key), vs); }
  /// Takes the values: at this rank's own shard they move in (no copy), to another owner they are sent from `vs`.
  void post_insert(K key, values&& vs) { this->template post<append_op>(std::move(key), std::move(vs)); }
  void post_insert(K key, const V& v) { post_insert(std::move(key), std::span<const V>(&v, 1)); }

  bool insert_or_assign(const K& key, std::span<const V> vs) { return async_insert_or_assign(key, vs).get(); }
  future<bool> async_insert_or_assign(K key, std::span<const V> vs) {
    return this->template call<assign_op, bool, inserted_or_full>(std::move(key), values(vs.begin(), vs.end()));
  }

  std::vector<V> find(const K& key) { return async_find(key).get(); }
  future<std::vector<V>> async_find(K key) {
    return this->template call<find_op, values, detail::identity>(std::move(key));
  }

  std::size_t count(const K& key) { return async_count(key).get(); }
  future<std::size_t> async_count(K key) {
    return this->template call<count_op, std::size_t, detail::identity>(std::move(key));
  }
  bool contains(const K& key) { return count(key) != 0; }

  /// Removes the key; returns its values (empty: absent).
  std::vector<V> erase(const K& key) { return async_erase(key).get(); }
  future<std::vector<V>> async_erase(K key) {
    return this->template call<erase_op, values, detail::identity>(std::move(key));
  }
  void post_erase(K key) { this->template post<erase_op>(std::move(key)); }

  // ---- batches (one message per owner) ---------------------------------------------------------------------------

  /// The values of every key of a random-access range, in order.
  template <std::ranges::random_access_range Range>
  std::vector<values> find_batch(const Range& keys) {
    return async_find_batch(keys).get();
  }
  template <std::ranges::random_access_range Range>
  future<std::vector<values>> async_find_batch(const Range& keys) {
    return this->template keyed_batch<find_batch_op>(keys);
  }

  /// Removes every key of a random-access range; returns their values, in order.
  template <std::ranges::random_access_range Range>
  std::vector<values> erase_batch(const Range& keys) {
    return async_erase_batch(keys).get();
  }
  template <std::ranges::random_access_range Range>
  future<std::vector<values>> async_erase_batch(const Range& keys) {
    return this->template keyed_batch<erase_batch_op>(keys);
  }

 private:
  // Operations, applied at the owner.
  /// Appends the values that fit (All: all of them or none).
  template <bool All>
  struct append_values_op {
    using wire = batch_insert_result;
    static wire apply(engine& t, int, K key, values vs) {
      std::size_t fit = std::min(vs.size(), t.room());
      if (All && fit < vs.size()) fit = 0;
      batch_insert_result r{fit, 0, vs.size() - fit};
      if (fit == 0) return r;
      vs.resize(fit);
      auto [stored, inserted] = t.shard().try_emplace(std::move(key));
      if (stored->empty()) *stored = std::move(vs);
      else stored->insert(stored->end(), std::make_move_iterator(vs.begin()), std::make_move_iterator(vs.end()));
      t.add_entries(fit);
      return r;
    }
  };
  struct assign_op {
    using wire = status;
    static wire apply(engine& t, int, K key, values vs) {
      values* stored = t.shard().find(key);
      const std::size_t old = stored ? stored->size() : 0;
      if (vs.size() > old && vs.size() - old > t.room()) return status::rejected;
      t.remove_entries(old);
      t.add_entries(vs.size());
      if (stored) {
        *stored = std::move(vs);
        return status::existing;
      }
      t.shard().try_emplace(std::move(key), std::move(vs));
      return status::inserted;
    }
  };
  struct find_op {
    using wire = values;
    static wire apply(engine& t, int, K key) {
      const values* v = t.shard().find(key);
      return v ? *v : values{};
    }
  };
  struct count_op {
    using wire = std::size_t;
    static wire apply(engine& t, int, K key) {
      const values* v = t.shard().find(key);
      return v ? v->size() : 0;
    }
  };
  struct erase_op {
    using wire = values;
    static wire apply(engine& t, int, K key) {
      auto v = t.shard().extract(key);
      if (!v) return {};
      t.remove_entries(v->size());
      return std::move(*v);
    }
  };
  template <class F, class... Args>
  struct update_op {
    using result = std::invoke_result_t<F, values&, Args&...>;
    using wire = std::conditional_t<std::is_void_v<result>, bool, std::optional<result>>;
    static wire apply(engine& t, int, K key, Args... args) {
      values* v = t.shard().find(key);
      if (!v) return wire{};
      const std::size_t before = v->size();
      auto recount = [&] {
        t.remove_entries(before);
        t.add_entries(v->size());
      };
      if constexpr (std::is_void_v<result>) {
        F{}(*v, args...);
        recount();
        return true;
      } else {
        wire out(F{}(*v, args...));
        recount();
        return out;
      }
    }
  };
  struct insert_batch_op {
    using wire = batch_insert_result;
    static wire apply(engine& t, int, std::vector<K> keys, std::vector<V> vs) {
      batch_insert_result r;
      detail::for_each_prefetched(t.shard(), keys, [&](std::size_t i) {
        r += append_op::apply(t, 0, std::move(keys[i]), values{std::move(vs[i])});
      });
      return r;
    }
  };
  using find_batch_op = detail::per_key_batch_op<find_op>;
  using erase_batch_op = detail::per_key_batch_op<erase_op>;

  using append_op = append_values_op<false>;
  using append_all_op = append_values_op<true>;

  struct inserted_count {
    std::size_t operator()(const batch_insert_result& r) const { return r.inserted; }
  };
  struct all_or_full {
    layer::future_value<void> operator()(const batch_insert_result& r) const {
      if (r.rejected != 0) {
        throw container_full("shoal::dist_multimap::insert: " + std::to_string(r.rejected) +
                             " value(s) do not fit: the owner would exceed capacity_per_rank entries (nothing was "
                             "stored); raise dist_map_options::capacity_per_rank, or call try_insert, which stores "
                             "the values that fit and returns how many");
      }
      return {};
    }
  };
  struct inserted_or_full {
    bool operator()(status s) const {
      if (s == status::rejected) {
        throw container_full("shoal::dist_multimap: insert_or_assign did not fit: its owner would exceed "
                             "capacity_per_rank entries; raise dist_map_options::capacity_per_rank");
      }
      return s == status::inserted;
    }
  };
};

}  // namespace shoal
