// shoal/containers/storage.hpp — how a container stores a key or value in remote memory (BCL §6), and the two
// wrappers a user writes in a container's template arguments to choose it.
//
// The representation follows from the type a container is instantiated with (hash_map<K, V> today):
//
//   written as                    stored as                                            cost of one read / write
//   T, trivially copyable         inline: the object's bytes, no serialization, no     the slot's bytes (R / W)
//                                 extra copy
//   shoal::fixed<T, N>            inline: T serialized into an N-byte slot (plus a     the slot's N + 4 bytes (R / W),
//                                 4-byte length). std::string: N characters;           plus serializing T locally
//                                 std::vector<E>: N bytes of elements; any other
//                                 serializable T: N bytes of cereal output
//   shoal::blob<T>, or any other  variable length: the serialized bytes live in a      the 16-byte slot, plus one
//   serializable T (std::string,  blob allocated in the writer's symmetric heap; the   more remote get of the blob to
//   std::vector, cereal types)    slot holds {global pointer, length}                  read it; a local allocation and
//                                                                                      copy to write it
//
// Choose fixed<T, N> when a bound on the serialized size is known (k-mers, short names): a read is one remote get and
// nothing is allocated. A value that needs more than N bytes raises shoal::usage_error naming N (raise N, or use
// blob<T>). Choose blob<T> (the default for types that are not trivially copyable) when sizes vary widely.
//
// Blob lifetime (the rule every container follows): a key blob is immutable from insert until the collective that
// drops the entry (resize / destruction); a value blob is released only by a writer that holds its entry exclusively
// (no reader inside), so a fully atomic reader, which holds the entry while it reads the blob, never reads freed
// memory, and a reader under promise::find runs in a phase without writers. A released blob of this rank returns to
// the heap at once; one of another rank is returned to its owner at the container's next collective call (for
// hash_map: reclaim(), resize()). Every blob a rank allocated and still holds is freed when the container is
// destroyed, so none leaks.
//
// Example:
//   shoal::hash_map<shoal::fixed<std::string, 31>, int> kmers(1000);        // keys inline, up to 31 characters
//   shoal::hash_map<std::uint64_t, shoal::blob<std::vector<int>>> lists(1000);  // values as blobs (the default)
#pragma once

#include <cstddef>

#include "shoal/core/serialize.hpp"

namespace shoal {

/// Stores T inline, serialized into a slot of Bytes bytes (std::string: characters; std::vector<E>: bytes of
/// elements; other types: bytes of cereal output). A value that needs more raises usage_error.
template <serializable T, std::size_t Bytes>
struct fixed {
  using type = T;
  static constexpr std::size_t capacity = Bytes;
};

/// Stores T as a variable-length blob in the writer's heap (the default for every type that is not trivially
/// copyable); reading it costs one more remote get.
template <serializable T>
struct blob {
  using type = T;
};

}  // namespace shoal
