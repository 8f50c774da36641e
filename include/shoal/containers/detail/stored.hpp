// shoal/containers/detail/stored.hpp — the machinery behind containers/storage.hpp: the storage policy of each
// representation (inline, fixed, blob: encode, decode, probe, compare, release) and the blob heap that owns one
// container's blobs on this rank. What users write (shoal::fixed, shoal::blob) and the rules (costs, blob lifetime)
// are in containers/storage.hpp.
#pragma once

#include <absl/container/flat_hash_set.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/containers/detail/message_exchange.hpp"
#include "shoal/containers/storage.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/serialize.hpp"

namespace shoal::detail {

/// The blobs one container allocated on this rank, and the return of released blobs to their owners.
class blob_heap {
 public:
  /// Collective over `team`.
  explicit blob_heap(const shoal::team& team) : returns_(4096, 4, "shoal blob_heap", team) {}
  /// Frees this rank's blobs, unless the environment they were allocated in has ended (they went with it).
  ~blob_heap() {
    if (!returns_.team().live()) return;
    for (auto raw : mine_) deallocate(global_ptr<std::byte>::from_raw(raw));
  }
  blob_heap(const blob_heap&) = delete;
  blob_heap& operator=(const blob_heap&) = delete;

  /// Copies bytes into a new blob in this rank's heap. Local.
  global_ptr<std::byte> store(std::span<const std::byte> bytes) {
    auto p = allocate<std::byte>(bytes.size());
    if (!bytes.empty()) std::memcpy(p.local(), bytes.data(), bytes.size());
    mine_.insert(p.raw());
    return p;
  }

  /// Gives a blob back: at once when it is this rank's, at the next reclaim() when it is another rank's.
  void release(global_ptr<std::byte> p) {
    if (p.is_null()) return;
    if (p.is_local()) {
      free_mine(p.raw());
      return;
    }
    const auto raw = p.raw();
    returns_.append(returns_.team().from_world(p.rank()), [&](byte_writer& w) { w.write(raw); });
  }

  /// Collective: returns released blobs to their owners, who free them.
  void reclaim() {
    for (const auto& m : returns_.complete()) {
      byte_reader r(m.payload());
      while (r.remaining() > 0) free_mine(r.read<std::uint64_t>());
    }
  }

  std::size_t live_blobs() const { return mine_.size(); }

 private:
  void free_mine(std::uint64_t raw) {
    if (mine_.erase(raw) == 0) return;  // already freed (dropped with the container's storage)
    deallocate(global_ptr<std::byte>::from_raw(raw));
  }

  absl::flat_hash_set<std::uint64_t> mine_;
  message_exchange returns_;
};

/// Inline storage of a trivially copyable T.
template <class T>
struct inline_storage {
  using value_type = T;
  using stored_type = T;
  using probe_type = const T&;
  static constexpr bool uses_blobs = false;

  static stored_type encode(const T& v, blob_heap*) { return v; }
  static T decode(const stored_type& s) { return s; }
  static probe_type probe(const T& v) { return v; }
  static bool matches(const stored_type& s, probe_type v) {
    if constexpr (std::has_unique_object_representations_v<T>) return std::memcmp(&s, &v, sizeof(T)) == 0;
    else return s == v;
  }
  static void release(const stored_type&, blob_heap*) {}
};

/// Writes the payload bytes of a value: raw elements for strings and vectors, cereal output otherwise.
template <class T>
std::vector<std::byte> payload_bytes(const T& v) {
  if constexpr (contiguous_serializable<T>) {
    const auto* b = reinterpret_cast<const std::byte*>(v.data());
    return std::vector<std::byte>(b, b + v.size() * sizeof(typename T::value_type));
  } else {
    return to_bytes(v);
  }
}

template <class T>
T from_payload(std::span<const std::byte> bytes) {
  if constexpr (contiguous_serializable<T>) {
    using E = typename T::value_type;
    T v;
    v.resize(bytes.size() / sizeof(E));
    if (!bytes.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  } else {
    return from_bytes<T>(bytes);
  }
}

/// Inline storage of a serialized T in N bytes.
template <class T, std::size_t N>
struct fixed_storage {
  using value_type = T;
  struct stored_type {
    std::uint32_t length;
    std::byte data[N];
  };
  using probe_type = stored_type;
  static constexpr bool uses_blobs = false;

  static stored_type encode(const T& v, blob_heap*) {
    const auto bytes = payload_bytes(v);
    if (bytes.size() > N) {
      throw usage_error("shoal: a value needs " + std::to_string(bytes.size()) + " bytes but its slot is fixed<T, " +
                        std::to_string(N) + ">; raise N, or store the type as shoal::blob<T> (variable length)");
    }
    stored_type s{};
    s.length = static_cast<std::uint32_t>(bytes.size());
    if (!bytes.empty()) std::memcpy(s.data, bytes.data(), bytes.size());
    return s;
  }
  static T decode(const stored_type& s) { return from_payload<T>(std::span<const std::byte>(s.data, s.length)); }
  static probe_type probe(const T& v) { return encode(v, nullptr); }
  static bool matches(const stored_type& s, const probe_type& p) {
    return s.length == p.length && std::memcmp(s.data, p.data, s.length) == 0;
  }
  static void release(const stored_type&, blob_heap*) {}
};

/// Variable-length storage: a blob in the writer's heap.
template <class T>
struct blob_storage {
  using value_type = T;
  struct stored_type {
    std::uint64_t ptr;    // global_ptr<std::byte>::raw()
    std::uint64_t bytes;  // payload length
  };
  using probe_type = std::vector<std::byte>;
  static constexpr bool uses_blobs = true;

  static stored_type encode(const T& v, blob_heap* heap) {
    const auto bytes = payload_bytes(v);
    return stored_type{heap->store(bytes).raw(), bytes.size()};
  }
  static std::vector<std::byte> read(const stored_type& s) {
    std::vector<std::byte> bytes(s.bytes);
    if (s.bytes > 0) get(global_ptr<std::byte>::from_raw(s.ptr), bytes.data(), s.bytes);
    return bytes;
  }
  static T decode(const stored_type& s) { return from_payload<T>(read(s)); }
  static probe_type probe(const T& v) { return payload_bytes(v); }
  static bool matches(const stored_type& s, const probe_type& p) {
    if (s.bytes != p.size()) return false;
    const auto bytes = read(s);
    return std::memcmp(bytes.data(), p.data(), p.size()) == 0;
  }
  static void release(const stored_type& s, blob_heap* heap) { heap->release(global_ptr<std::byte>::from_raw(s.ptr)); }
};

template <class T>
struct storage_for {
  static_assert(serializable<T>, "shoal: a stored type must satisfy shoal::serializable (see core/serialize.hpp)");
  using type = std::conditional_t<trivially_serializable<T>, inline_storage<T>, blob_storage<T>>;
};
template <class T, std::size_t N>
struct storage_for<fixed<T, N>> {
  using type = fixed_storage<T, N>;
};
template <class T>
struct storage_for<blob<T>> {
  using type = blob_storage<T>;
};

/// The storage policy for a type as written in a container's template arguments.
template <class T>
using storage_t = typename storage_for<T>::type;

}  // namespace shoal::detail
