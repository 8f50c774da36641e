// shoal/local/flat_table.hpp — open addressing through abseil's flat_hash_map (the K-V storage paper's "flat
// hashing"), behind the interface of shoal/local/table.hpp.
//
// The fastest local table on average (one probe sequence over a flat array with SIMD control bytes). Its growth is
// by doubling: the insert that crosses the load limit rehashes every entry, so single-insert latency has spikes
// proportional to the table size (see linear_hash_table for the alternative, and shoal-bench `dist_map`).
//
// Cost: find / insert / erase O(1) expected; an insert that doubles the table O(size); prefetch(k), a hint before
// one of them (starts loading k's control bytes and slots into the cache), O(1). Not thread-safe.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>

#include "shoal/local/table.hpp"

namespace shoal::local {

template <class K, class V, class Hash = local_hash<K>, class Eq = std::equal_to<K>>
class flat_table {
 public:
  using key_type = K;
  using mapped_type = V;

  flat_table() = default;

  std::size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }

  V* find(const K& key) {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  const V* find(const K& key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  bool contains(const K& key) const { return map_.contains(key); }
  /// A hint before an operation on key: starts loading where it would be into the cache (see the header comment).
  void prefetch(const K& key) const { map_.prefetch(key); }

  template <class... Args>
  std::pair<V*, bool> try_emplace(K key, Args&&... args) {
    auto [it, inserted] = map_.try_emplace(std::move(key), std::forward<Args>(args)...);
    return {&it->second, inserted};
  }

  template <class M>
  std::pair<V*, bool> insert_or_assign(K key, M&& value) {
    auto [it, inserted] = map_.insert_or_assign(std::move(key), std::forward<M>(value));
    return {&it->second, inserted};
  }

  std::optional<V> extract(const K& key) {
    auto node = map_.extract(key);
    if (node.empty()) return std::nullopt;
    return std::optional<V>(std::move(node.mapped()));
  }

  bool erase(const K& key) { return map_.erase(key) != 0; }

  void reserve(std::size_t n) { map_.reserve(n); }
  void clear() { map_.clear(); }

  /// Calls f(const K&, V&) for every entry.
  template <class F>
  void for_each(F&& f) {
    for (auto& [k, v] : map_) f(k, v);
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [k, v] : map_) f(k, v);
  }

 private:
  /// Hash, with a mark no compiler may drop. GCC 12 finds a function whose only effects are prefetch instructions
  /// "pure" and deletes a call to it whose result is unused, so whenever its inliner left absl's prefetch out of line
  /// (an unrelated change elsewhere can decide that) dist_map's owner loops lost every prefetch (measured: 42 against
  /// 55 Mops/s, docs/containers/dist_map.md, session 48). An empty volatile asm in the hash — no instruction — is an
  /// effect: absl's prefetch, which hashes the key, is no longer pure, and its calls stay. (A hasher marked only for
  /// prefetch's key, through a transparent key type, changed absl's inlining of every insert: 20 against 27 Mops/s.)
  struct hasher : Hash {
    std::size_t operator()(const K& key) const {
      std::size_t h = Hash::operator()(key);
      asm volatile("" : "+r"(h));
      return h;
    }
  };
  absl::flat_hash_map<K, V, hasher, Eq> map_;
};

/// The open-addressing family, for dist_map<K, V, shoal::local::flat> (the default).
struct flat {
  template <class K, class V>
  using table = flat_table<K, V>;
};

}  // namespace shoal::local
