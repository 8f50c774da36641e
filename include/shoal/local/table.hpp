// shoal/local/table.hpp — the interface every sequential table of shoal/local/ offers to the owner-computes
// containers (dist_map, dist_multimap), and the hash they use by default.
//
// A local table maps a key to one mapped value on one rank, with no communication and no locking (the owner runs
// every operation of its shard). Two implementations, both from the papers behind dist_map:
//   shoal::local::linear_hash_table  Litwin's linear hashing: grows and shrinks one bucket at a time, so no single
//                                    insert pays for a full rehash (K-V storage paper §2, "linear hashing").
//   shoal::local::flat_table         open addressing (abseil's flat_hash_map): the fastest on average, but an insert
//                                    that crosses the load limit rehashes the whole table.
// A container picks one by a *family* (shoal::local::linear, shoal::local::flat) whose `table<K, V>` is the table.
//
// Pointers returned by find / try_emplace stay valid until the next insertion or erasure in the same table.
#pragma once

#include <absl/hash/hash.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "shoal/core/hash.hpp"

namespace shoal::local {

/// The default hash of the local tables: abseil's (inlined, fast) for the types it knows, else XXH3 of the key
/// (shoal::hash_value) with a seed of its own — distinct from the seed that picks the owner rank, so the keys that
/// land on one rank still spread over all of its buckets.
template <class K>
struct local_hash {
  static constexpr std::uint64_t seed = 0x6c6f63616c5f6862ull;  // "local_hb"
  std::size_t operator()(const K& key) const {
    if constexpr (std::is_default_constructible_v<absl::Hash<K>>) {
      return absl::Hash<K>{}(key);
    } else {
      return static_cast<std::size_t>(shoal::hash_value(key, seed));
    }
  }
};

/// What dist_map and dist_multimap need from a local table.
template <class T>
concept table = requires(T t, const T ct, const typename T::key_type& key, typename T::key_type k,
                         typename T::mapped_type v) {
  typename T::key_type;
  typename T::mapped_type;
  { t.find(key) } -> std::same_as<typename T::mapped_type*>;
  { ct.find(key) } -> std::same_as<const typename T::mapped_type*>;
  { ct.contains(key) } -> std::same_as<bool>;
  { t.try_emplace(std::move(k), std::move(v)) } -> std::same_as<std::pair<typename T::mapped_type*, bool>>;
  { t.insert_or_assign(std::move(k), std::move(v)) } -> std::same_as<std::pair<typename T::mapped_type*, bool>>;
  { t.extract(key) } -> std::same_as<std::optional<typename T::mapped_type>>;
  { t.erase(key) } -> std::same_as<bool>;
  { ct.size() } -> std::same_as<std::size_t>;
  t.reserve(std::size_t{});
  t.clear();
};

}  // namespace shoal::local
