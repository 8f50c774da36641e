// shoal/containers/dist_map.hpp — a distributed hash map whose operations run at the key's owner (CSE_Hash, the
// K-V storage service). Model: owner computes, on active messages. Placement: distributed over every rank
// (co-located layout) or over a set of server ranks (service layout, dist_map_options::servers).
//
// Every key has one owner rank: XXH3(key) scaled to the owners (or key mod owners with key_placement::cyclic). An
// operation is one active message to the owner, which applies it to its local table (shoal::local::flat by default, or
// shoal::local::linear for Litwin linear hashing) and, unless the result is ignored, sends one reply back. Messages
// to one owner are aggregated into large buffers by the AM layer. Keys and values: any shoal::serializable type.
//
// Operations. Who: collective = every rank of the map's team, in the same order; any rank = one rank's call, no
// other rank's code takes part (the owner's handler runs inside its progress):
//   dist_map(opts = {}, team = world())  collective  owners and servers are team ranks
//   ~dist_map                            collective  completes this rank's operations, then B (a flush without the
//                                                    error report); no-op after finalize (docs/design.md, "Lifetime")
//   insert(k, v) -> bool                 any rank    inserted (false: key present, value unchanged)
//   insert_or_assign(k, v) -> bool       any rank    inserted (false: assigned)
//   insert_or_update(k, v, fn) -> bool   any rank    inserted, else fn(V& stored, V v) runs at the owner
//   find(k) -> optional<V>, contains(k) -> bool
//                                        any rank
//   erase(k) -> optional<V>              any rank    the removed value (CSE_Hash's delete returns what it removed)
//   update(k, fn, args...)               any rank    fn(V&, args...) at the owner: optional<result> (bool if fn
//                                                    returns void)
//   async_<op>(...) -> future<...>       any rank    the same, non-blocking
//   post_<op>(...) -> void               any rank    fire and forget (insert, insert_or_assign, insert_or_update,
//                                                    erase, update): completed by wait() / flush(), which report
//                                                    failures
//   insert_batch(range of (k, v)) -> batch_insert_result, find_batch(keys) / erase_batch(keys) -> vector<optional<V>>
//                                        any rank    (and async_ forms): one message per owner, replies merged in
//                                                    input order
//   insert_or_assign_batch(range of (k, v)), insert_or_update_batch(range of (k, v), fn) -> batch_insert_result
//                                        any rank    (and async_ forms): the single operation per pair, one message
//                                                    per owner; pairs of one key apply in input order (existing
//                                                    counts the assigned / updated keys)
//   wait()                               any rank    completes this rank's operations (CSE_Hash HASH_Wait)
//   flush()                              collective  completes everyone's (HASH_Flush)
//   serve() / close()                    collective  service layout: the servers call serve(), every client calls
//                                                    close(); the servers serve until every client has closed
//   owner(k), is_owner(), team()         any rank    placement
//   local_for_each(fn), local_size()     any rank    this rank's shard only: entries (key-value pairs) stored here
//   local_reserve(n)                     any rank    room for n keys in this rank's shard (no message)
//   size()                               collective  entries in the whole map (flush first)
//   for_all(fn), reduce(identity, map, op)
//                                        collective  flush first, then every rank's shard
// Cost (M messages, B barriers; messages are aggregated per owner, so M counts appended messages, not MPI sends):
//   single operation, owner remote       M = 2 per group: async_<op>s of plain-byte keys and values to one owner
//                                        gather (up to 256, fewer for large values) and leave as one byte message,
//                                        when full, when one of their futures is tested or waited for, before
//                                        anything else to that owner, at wait(); one reply completes them. A group
//                                        of one (a blocking call) is a request and a reply. Futures: one allocation
//                                        per chunk of up to 256 (fewer for large values). post_<op>s of plain
//                                        bytes: M = 1 per column — held per owner, a record each, they leave as one
//                                        message of up to 4 KiB, when full, before anything else to that owner, at
//                                        wait() (owner_table/held_posts.hpp); other post_<op>s: M = 1
//   single operation, owner is this rank  M = 0: grouped the same way and run here when the group leaves (inline
//                                        at once while the futures are waited for one at a time); post_<op>s of
//                                        plain bytes are held in this rank's own column the same way and run in one
//                                        loop, keys prefetched; others (a vector of values) wait in a ring of 8, key
//                                        prefetched (owner_table/own_posts.hpp); both run before anything else this
//                                        rank issues to its own shard
//   batch of n keys over d owners         M = 2d (any batch form; the owner's part of this rank runs inline, after
//                                        the other parts left, letting MPI move them every 1,024 keys). An owner's
//                                        part above the AM buffer (64 KiB) travels alone, received blocking.
//                                        Keys, values and results of plain bytes (find / erase, and the pair
//                                        batches): cut in one counting sort, copied once each way (no encoding);
//                                        an optional result travels as its value and a presence byte
//   wait()                                M = 2 per owner sent post_<op>s since the last wait (a fence); the replies
//                                        of operations with a result still out are waited for, no fence
//   flush()                               wait() + B = 1;   for_all / reduce / size: flush() + B = 1 or an allreduce
// Blocking factor L (dist_map_options::blocking_factor): after L requests the next one first calls wait().
//
// Concurrency: any operation may run concurrently with any other (the owner applies them one at a time, in arrival
// order; from one origin to one owner the order is the issue order). A find issued after an insert by the same
// rank sees it. An async_ operation takes effect between its call and its future becoming ready (a group that was
// not looked at leaves at the next wait()). Results of local_* calls reflect the operations applied so far.
//
// Errors: container_full when an insert does not fit under capacity_per_rank (single forms: from the future;
// post_ forms: from wait / flush; batches and dist_multimap::try_insert return the exact counts instead);
// remote_error when fn throws at the owner; usage_error for a bad layout or calling serve/close on the wrong ranks;
// shoal::error "... (corrupt stream)" when a malformed message reaches a handler (refused before anything is touched,
// reported to its sender at am::barrier; docs/testing.md, "Malformed messages").
//
//   shoal::dist_map<std::uint64_t, std::string> m;                   // collective
//   m.insert(42, "answer");
//   m.post_insert(7, "seven");                                       // fire and forget
//   m.flush();                                                       // collective: everything is in
//   std::optional<std::string> v = m.find(7);
//   m.update(42, [](std::string& s, char c) { s += c; }, '!');       // runs at the owner
//   auto counts = m.insert_batch(std::vector<std::pair<std::uint64_t, std::string>>{{1, "a"}, {2, "b"}});
//   std::size_t total = m.size();                                     // collective
#pragma once

#include <cstddef>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_container.hpp"
#include "shoal/containers/dist_map_options.hpp"
#include "shoal/containers/dist_map_results.hpp"
#include "shoal/local/flat_table.hpp"
#include "shoal/local/linear_hash_table.hpp"

namespace shoal {

template <serializable K, serializable V, class Family = local::flat>
  requires hashable<K> && std::equality_comparable<K>
class dist_map : public detail::owner_container<dist_map<K, V, Family>, K, V, Family> {
  using base = detail::owner_container<dist_map, K, V, Family>;
  friend base;
  using typename base::engine;
  using status = detail::insert_status;

 public:
  using key_type = K;
  using mapped_type = V;

  /// Collective over `team` (every rank of the team passes the same options; servers are team ranks).
  explicit dist_map(const dist_map_options& options = {}, const shoal::team& team = shoal::world())
      : base(options, "shoal::dist_map", team) {}

  // ---- single operations -----------------------------------------------------------------------------------------

  bool insert(const K& key, const V& value) { return async_insert(key, value).get(); }
  future<bool> async_insert(K key, V value) {
    return this->template call<insert_op, bool, inserted_or_full>(std::move(key), std::move(value));
  }
  /// Fire and forget: no result; completed (and a refused insert reported) by wait() / flush().
  void post_insert(K key, V value) { this->template post<insert_op>(std::move(key), std::move(value)); }

  bool insert_or_assign(const K& key, const V& value) { return async_insert_or_assign(key, value).get(); }
  future<bool> async_insert_or_assign(K key, V value) {
    return this->template call<assign_op, bool, inserted_or_full>(std::move(key), std::move(value));
  }
  void post_insert_or_assign(K key, V value) { this->template post<assign_op>(std::move(key), std::move(value)); }

  /// Inserts (key, value), or, if the key is present, runs fn(stored, value) at the owner.
  template <detail::owner_function F>
  bool insert_or_update(const K& key, const V& value, F fn) {
    return async_insert_or_update(key, value, fn).get();
  }
  template <detail::owner_function F>
  future<bool> async_insert_or_update(K key, V value, F) {
    return this->template call<upsert_op<F>, bool, inserted_or_full>(std::move(key), std::move(value));
  }
  template <detail::owner_function F>
  void post_insert_or_update(K key, V value, F) {
    this->template post<upsert_op<F>>(std::move(key), std::move(value));
  }

  std::optional<V> find(const K& key) { return async_find(key).get(); }
  future<std::optional<V>> async_find(K key) {
    return this->template call<find_op, std::optional<V>, detail::identity>(std::move(key));
  }

  bool contains(const K& key) { return async_contains(key).get(); }
  future<bool> async_contains(K key) {
    return this->template call<contains_op, bool, detail::identity>(std::move(key));
  }

  /// Removes the key; returns the removed value (nullopt: absent).
  std::optional<V> erase(const K& key) { return async_erase(key).get(); }
  future<std::optional<V>> async_erase(K key) {
    return this->template call<erase_op, std::optional<V>, detail::identity>(std::move(key));
  }
  void post_erase(K key) { this->template post<erase_op>(std::move(key)); }

  // ---- batches (one message per owner) ---------------------------------------------------------------------------

  /// insert_or_assign of every (key, value) of a random-access range of pairs, one message per owner; pairs with the
  /// same key apply in input order (the last value stays). Counts: inserted, existing (assigned), rejected.
  template <std::ranges::random_access_range Range>
  batch_insert_result insert_or_assign_batch(const Range& pairs) {
    return async_insert_or_assign_batch(pairs).get();
  }
  template <std::ranges::random_access_range Range>
  future<batch_insert_result> async_insert_or_assign_batch(const Range& pairs) {
    return this->template pair_batch<assign_batch_op, V>(pairs);
  }

  /// insert_or_update of every (key, value) of a random-access range of pairs (fn(V& stored, V v) at the owner for a
  /// key present), one message per owner, in input order per key. Counts: inserted, existing (updated), rejected.
  template <std::ranges::random_access_range Range, detail::owner_function F>
  batch_insert_result insert_or_update_batch(const Range& pairs, F fn) {
    return async_insert_or_update_batch(pairs, fn).get();
  }
  template <std::ranges::random_access_range Range, detail::owner_function F>
  future<batch_insert_result> async_insert_or_update_batch(const Range& pairs, F) {
    return this->template pair_batch<upsert_batch_op<F>, V>(pairs);
  }

  /// The value of every key of a random-access range, in order.
  template <std::ranges::random_access_range Range>
  std::vector<std::optional<V>> find_batch(const Range& keys) {
    return async_find_batch(keys).get();
  }
  template <std::ranges::random_access_range Range>
  future<std::vector<std::optional<V>>> async_find_batch(const Range& keys) {
    return this->template keyed_batch<find_batch_op>(keys);
  }

  /// Removes every key of a random-access range; returns the removed values, in order.
  template <std::ranges::random_access_range Range>
  std::vector<std::optional<V>> erase_batch(const Range& keys) {
    return async_erase_batch(keys).get();
  }
  template <std::ranges::random_access_range Range>
  future<std::vector<std::optional<V>>> async_erase_batch(const Range& keys) {
    return this->template keyed_batch<erase_batch_op>(keys);
  }

 private:
  // Operations, applied at the owner.
  struct insert_op {
    using wire = status;
    static wire apply(engine& t, int, K key, V value) {
      if (t.room() == 0) return t.shard().contains(key) ? status::existing : status::rejected;
      const bool inserted = t.shard().try_emplace(std::move(key), std::move(value)).second;
      if (inserted) t.add_entries(1);
      return inserted ? status::inserted : status::existing;
    }
  };
  // With room, assign and upsert look the key up once: try_emplace leaves `value` alone when the key is present (as
  // std::unordered_map::try_emplace; both local tables forward it), so it is still there for the assignment / fn.
  struct assign_op {
    using wire = status;
    static wire apply(engine& t, int, K key, V value) {
      if (t.room() == 0) {
        V* stored = t.shard().find(key);
        if (!stored) return status::rejected;
        *stored = std::move(value);
        return status::existing;
      }
      auto [stored, inserted] = t.shard().try_emplace(std::move(key), std::move(value));
      if (inserted) {
        t.add_entries(1);
        return status::inserted;
      }
      *stored = std::move(value);
      return status::existing;
    }
  };
  template <class F>
  struct upsert_op {
    using wire = status;
    static wire apply(engine& t, int, K key, V value) {
      if (t.room() == 0) {
        V* stored = t.shard().find(key);
        if (!stored) return status::rejected;
        F{}(*stored, std::move(value));
        return status::existing;
      }
      auto [stored, inserted] = t.shard().try_emplace(std::move(key), std::move(value));
      if (inserted) {
        t.add_entries(1);
        return status::inserted;
      }
      F{}(*stored, std::move(value));
      return status::existing;
    }
  };
  struct find_op {
    using wire = std::optional<V>;
    static wire apply(engine& t, int, K key) {
      const V* v = t.shard().find(key);
      return v ? wire(*v) : wire();
    }
  };
  struct contains_op {
    using wire = bool;
    static wire apply(engine& t, int, K key) { return t.shard().contains(key); }
  };
  struct erase_op {
    using wire = std::optional<V>;
    static wire apply(engine& t, int, K key) {
      auto v = t.shard().extract(key);
      if (v) t.remove_entries(1);
      return v;
    }
  };
  template <class F, class... Args>
  struct update_op {
    using result = std::invoke_result_t<F, V&, Args&...>;
    using wire = std::conditional_t<std::is_void_v<result>, bool, std::optional<result>>;
    static wire apply(engine& t, int, K key, Args... args) {
      V* v = t.shard().find(key);
      if (!v) return wire{};
      if constexpr (std::is_void_v<result>) {
        F{}(*v, args...);
        return true;
      } else {
        return wire(F{}(*v, args...));
      }
    }
  };
  using insert_batch_op = detail::counted_pair_batch_op<insert_op>;
  using assign_batch_op = detail::counted_pair_batch_op<assign_op>;
  template <class F>
  using upsert_batch_op = detail::counted_pair_batch_op<upsert_op<F>>;
  using find_batch_op = detail::per_key_batch_op<find_op>;
  using erase_batch_op = detail::per_key_batch_op<erase_op>;

  /// insert_status -> bool, or container_full.
  struct inserted_or_full {
    bool operator()(status s) const {
      if (s == status::rejected) {
        throw container_full("shoal::dist_map: the insert did not fit: its owner holds capacity_per_rank entries; "
                             "raise dist_map_options::capacity_per_rank");
      }
      return s == status::inserted;
    }
  };
};

}  // namespace shoal
