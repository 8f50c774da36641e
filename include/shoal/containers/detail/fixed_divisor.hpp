// shoal/containers/detail/fixed_divisor.hpp — x / d and x mod d for a divisor fixed at run time, without a division
// instruction: a 64-bit `div` takes about 4 ns on this project's machine (a chain of dependent ones: 3.8-3.9 ns each),
// and placement divides every key — dist_map's cyclic placement takes each key modulo the number of owners (the
// division was the largest part of cutting a batch by owner), hash_map finds a key's owner as its slot divided by the
// block size (the division was the largest part of a local insert after the cache miss), bloom_filter a value's owner
// as its block divided by the blocks per rank; and the queues' ring (hosted_ring.hpp) finds every operation's first
// slot as its position modulo the capacity. A power of two is a mask or a shift; any other divisor uses Lemire,
// Kaser and Kurz's direct computation ("Faster Remainder by Direct Computation", 2019): with M = ceil(2^128 / d), x / d
// is the top 64 bits of the 192-bit M * x, and x mod d the high part of (M * x mod 2^128) * d — both exact for every
// 64-bit x and d >= 1.
#pragma once

#include <bit>
#include <cstdint>

namespace shoal::detail {

/// Division by d (d >= 1, fixed at construction).
class fixed_divisor {
 public:
  explicit fixed_divisor(std::uint64_t d = 1)
      : d_(d), power_of_two_((d & (d - 1)) == 0), shift_(static_cast<unsigned>(std::countr_zero(d))) {
    const unsigned __int128 all = ~static_cast<unsigned __int128>(0);
    m_ = all / d + 1;  // ceil(2^128 / d) mod 2^128 (for d = 1 it wraps to 0, and 1 is a power of two: masked)
  }

  std::uint64_t divisor() const { return d_; }

  /// x / d.
  std::uint64_t quotient(std::uint64_t x) const {
    if (power_of_two_) return x >> shift_;
    const auto m_lo = static_cast<std::uint64_t>(m_);
    const auto m_hi = static_cast<std::uint64_t>(m_ >> 64);
    const unsigned __int128 carry = (static_cast<unsigned __int128>(m_lo) * x) >> 64;
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(m_hi) * x + carry) >> 64);
  }

  /// x mod d.
  std::uint64_t remainder(std::uint64_t x) const {
    if (power_of_two_) return x & (d_ - 1);
    const unsigned __int128 low = m_ * x;  // the fractional part of x / d, in 128 bits
    const auto lo = static_cast<std::uint64_t>(low);
    const auto hi = static_cast<std::uint64_t>(low >> 64);
    const unsigned __int128 bottom = (static_cast<unsigned __int128>(lo) * d_) >> 64;
    const unsigned __int128 top = static_cast<unsigned __int128>(hi) * d_;
    return static_cast<std::uint64_t>((bottom + top) >> 64);
  }

 private:
  std::uint64_t d_;
  bool power_of_two_;
  unsigned shift_;
  unsigned __int128 m_;
};

}  // namespace shoal::detail
