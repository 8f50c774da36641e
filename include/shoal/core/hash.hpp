// shoal/core/hash.hpp — the hash that decides where keys live.
//
// XXH3 (libxxhash) over a key's bytes: the same 64-bit value on every rank, whatever the process layout. Trivially
// copyable keys without padding hash their object bytes, strings their characters, every other serializable key
// its serialized bytes. A per-container seed gives independent hashes (e.g. the k functions of a Bloom filter).
//
// XXH3 is inlined (XXH_INLINE_ALL, xxHash's documented way; the values are libxxhash's): for a key whose size is
// known at compile time the hash is a few instructions instead of a call into the shared library, which took 7% of a
// BSGS rank's time on an 8-byte key. Including <xxhash.h> before or after this header stays valid.
#pragma once

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#define SHOAL_DEFINED_XXH_INLINE_ALL
#endif
#include <xxhash.h>
#ifdef SHOAL_DEFINED_XXH_INLINE_ALL
#undef XXH_INLINE_ALL
#undef SHOAL_DEFINED_XXH_INLINE_ALL
#endif

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shoal/core/serialize.hpp"

namespace shoal {

/// Keys shoal can hash: serializable types (padding bytes of trivially copyable keys must not matter: such keys
/// need unique object representations, or they are hashed through their serialized form).
template <class T>
concept hashable = serializable<T> || std::is_convertible_v<const T&, std::string_view>;

template <hashable T>
std::uint64_t hash_value(const T& key, std::uint64_t seed = 0) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    std::string_view s = key;
    return XXH3_64bits_withSeed(s.data(), s.size(), seed);
  } else if constexpr (std::has_unique_object_representations_v<T> || std::is_floating_point_v<T>) {
    return XXH3_64bits_withSeed(&key, sizeof(T), seed);
  } else {
    if constexpr (contiguous_serializable<T>) {
      if constexpr (std::has_unique_object_representations_v<typename T::value_type>) {
        return XXH3_64bits_withSeed(key.data(), key.size() * sizeof(typename T::value_type), seed);
      }
    }
    auto bytes = to_bytes(key);
    return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
  }
}

/// Function object form of hash_value.
template <class T>
struct hasher {
  std::uint64_t seed = 0;
  std::uint64_t operator()(const T& key) const { return hash_value(key, seed); }
};

}  // namespace shoal
