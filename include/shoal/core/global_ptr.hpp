// shoal/core/global_ptr.hpp — a pointer into any rank's symmetric-heap segment.
//
// A global_ptr<T> is 8 bytes: (rank + 1) in the top 20 bits and the byte offset in the segment in the low 44
// (up to 2^20 - 1 ranks, 16 TiB per segment). The all-zero value is null, so a zeroed word in remote memory is a
// null pointer, and a global_ptr can itself be stored in remote memory and swapped atomically.
// Arithmetic moves by elements within the same rank's segment, as for T*.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/error.hpp"

namespace shoal {

template <class T>
class global_ptr {
 public:
  using element_type = T;
  static constexpr int offset_bits = 44;
  static constexpr std::uint64_t offset_mask = (std::uint64_t{1} << offset_bits) - 1;
  static constexpr int max_ranks = (1 << (64 - offset_bits)) - 1;

  constexpr global_ptr() noexcept = default;
  constexpr global_ptr(std::nullptr_t) noexcept {}
  constexpr global_ptr(int rank, std::size_t offset) noexcept
      : bits_((static_cast<std::uint64_t>(rank) + 1) << offset_bits | (offset & offset_mask)) {}

  /// Converts global_ptr<T> to global_ptr<const T>.
  template <class U>
    requires std::is_convertible_v<U*, T*>
  constexpr global_ptr(const global_ptr<U>& other) noexcept : bits_(other.raw()) {}

  constexpr int rank() const noexcept { return static_cast<int>((bits_ >> offset_bits)) - 1; }
  constexpr std::size_t offset() const noexcept { return static_cast<std::size_t>(bits_ & offset_mask); }
  constexpr bool is_null() const noexcept { return bits_ == 0; }
  constexpr explicit operator bool() const noexcept { return bits_ != 0; }

  /// The raw 64-bit encoding (for storage in remote memory); from_raw reverses it.
  constexpr std::uint64_t raw() const noexcept { return bits_; }
  static constexpr global_ptr from_raw(std::uint64_t bits) noexcept {
    global_ptr p;
    p.bits_ = bits;
    return p;
  }

  /// The same address seen as another type (like reinterpret_cast).
  template <class U>
  constexpr global_ptr<U> reinterpret() const noexcept {
    return global_ptr<U>::from_raw(bits_);
  }

  /// True when the pointer addresses this rank's own segment.
  bool is_local() const { return !is_null() && rank() == detail::rt().rank; }

  /// A plain pointer into this rank's own segment. Throws usage_error for another rank's memory.
  T* local() const {
    auto& r = detail::rt();
    if (is_null()) return nullptr;
    if (rank() != r.rank) {
      throw usage_error("shoal::global_ptr::local(): pointer to rank " + std::to_string(rank()) +
                        " used on rank " + std::to_string(r.rank) + "; use get/put for another rank's memory");
    }
    return reinterpret_cast<T*>(r.base + offset());
  }

  // Element arithmetic (sizeof(T) bytes per step).
  constexpr global_ptr& operator+=(std::ptrdiff_t n) noexcept {
    bits_ = static_cast<std::uint64_t>(static_cast<std::int64_t>(bits_) + n * static_cast<std::int64_t>(step()));
    return *this;
  }
  constexpr global_ptr& operator-=(std::ptrdiff_t n) noexcept { return *this += -n; }
  constexpr global_ptr& operator++() noexcept { return *this += 1; }
  constexpr global_ptr& operator--() noexcept { return *this -= 1; }
  constexpr global_ptr operator++(int) noexcept {
    auto t = *this;
    ++*this;
    return t;
  }
  constexpr global_ptr operator--(int) noexcept {
    auto t = *this;
    --*this;
    return t;
  }
  friend constexpr global_ptr operator+(global_ptr p, std::ptrdiff_t n) noexcept { return p += n; }
  friend constexpr global_ptr operator+(std::ptrdiff_t n, global_ptr p) noexcept { return p += n; }
  friend constexpr global_ptr operator-(global_ptr p, std::ptrdiff_t n) noexcept { return p -= n; }
  /// Distance in elements between two pointers into the same rank's segment.
  friend constexpr std::ptrdiff_t operator-(global_ptr a, global_ptr b) noexcept {
    return (static_cast<std::ptrdiff_t>(a.offset()) - static_cast<std::ptrdiff_t>(b.offset())) /
           static_cast<std::ptrdiff_t>(step());
  }

  friend constexpr bool operator==(global_ptr a, global_ptr b) noexcept = default;
  /// Ordered by rank, then offset.
  friend constexpr std::strong_ordering operator<=>(global_ptr a, global_ptr b) noexcept { return a.bits_ <=> b.bits_; }

 private:
  static constexpr std::size_t step() noexcept {
    if constexpr (std::is_void_v<T>) return 1;
    else return sizeof(T);
  }
  std::uint64_t bits_ = 0;
};

static_assert(sizeof(global_ptr<int>) == 8 && std::is_trivially_copyable_v<global_ptr<int>>);

}  // namespace shoal

template <class T>
struct std::hash<shoal::global_ptr<T>> {
  std::size_t operator()(const shoal::global_ptr<T>& p) const noexcept { return std::hash<std::uint64_t>{}(p.raw()); }
};
