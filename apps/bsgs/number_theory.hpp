// apps/bsgs/number_theory.hpp — modular arithmetic for baby-step giant-step: A^x ≡ B (mod C), C prime < 2^63.
//
// Products go through unsigned __int128, so every modulus below 2^63 is exact (the application uses C < 2^44,
// where the baby-step table of sqrt(C) entries still fits in memory). Also a deterministic Miller–Rabin test
// (exact for all 64-bit integers) to check that C is prime and to pick primes of a given size, and the sequential
// BSGS used as the per-core reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

#include "shoal/local/flat_table.hpp"

namespace bsgs {

using u64 = std::uint64_t;

inline u64 mul_mod(u64 a, u64 b, u64 m) {
  return static_cast<u64>(static_cast<unsigned __int128>(a) * b % m);
}

inline u64 pow_mod(u64 base, u64 exponent, u64 m) {
  u64 result = 1 % m;
  base %= m;
  while (exponent) {
    if (exponent & 1) result = mul_mod(result, base, m);
    base = mul_mod(base, base, m);
    exponent >>= 1;
  }
  return result;
}

/// x, x·s, x·s², ... (count values, mod m) handed to out(i, value) in order of i; returns x·s^count, where the next
/// run starts. Four chains, each stepping by s⁴: four 128-bit remainders are in flight at once, where a single chain
/// waits for each one in turn (a loop that only computes powers is bound by that wait, one that also inserts each
/// power into a table is not).
template <class Out>
u64 geometric_run(u64 x, u64 s, u64 m, u64 count, Out&& out) {
  const u64 s2 = mul_mod(s, s, m), s4 = mul_mod(s2, s2, m);
  u64 c0 = x % m, c1 = mul_mod(c0, s, m), c2 = mul_mod(c1, s, m), c3 = mul_mod(c2, s, m);
  u64 i = 0;
  for (; i + 4 <= count; i += 4) {
    out(i, c0), out(i + 1, c1), out(i + 2, c2), out(i + 3, c3);
    c0 = mul_mod(c0, s4, m), c1 = mul_mod(c1, s4, m), c2 = mul_mod(c2, s4, m), c3 = mul_mod(c3, s4, m);
  }
  const u64 rest[4] = {c0, c1, c2, c3};  // x·s^(i+k)
  for (u64 k = 0; i + k < count; ++k) out(i + k, rest[k]);
  return rest[count - i];
}

/// The inverse of a modulo the prime p (Fermat), for a not divisible by p.
inline u64 inverse_mod_prime(u64 a, u64 p) { return pow_mod(a, p - 2, p); }

/// Deterministic Miller–Rabin: exact for every n < 2^64.
inline bool is_prime(u64 n) {
  if (n < 2) return false;
  for (u64 p : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
    if (n % p == 0) return n == p;
  }
  u64 d = n - 1;
  int s = 0;
  while ((d & 1) == 0) {
    d >>= 1;
    ++s;
  }
  for (u64 a : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
    u64 x = pow_mod(a, d, n);
    if (x == 1 || x == n - 1) continue;
    bool composite = true;
    for (int r = 1; r < s && composite; ++r) {
      x = mul_mod(x, x, n);
      if (x == n - 1) composite = false;
    }
    if (composite) return false;
  }
  return true;
}

/// The largest prime below 2^bits (2 <= bits <= 63).
inline u64 largest_prime_below_power_of_two(int bits) {
  u64 n = (u64{1} << bits) - 1;
  while (!is_prime(n)) --n;
  return n;
}

/// m = ceil(sqrt(C - 1)): x = i·m + j with 0 <= i, j < m covers every exponent 0 .. C-2.
inline u64 step_count(u64 c) {
  const u64 n = c - 1;
  u64 m = static_cast<u64>(std::sqrt(static_cast<double>(n)));
  while (m * m < n) ++m;
  while (m > 1 && (m - 1) * (m - 1) >= n) --m;
  return m;
}

/// True when A^x ≡ B (mod C).
inline bool verify(u64 a, u64 b, u64 c, u64 x) { return pow_mod(a, x, c) == b % c; }

/// Sequential BSGS: the smallest x in [0, C-1) with A^x ≡ B (mod C), or nullopt. The per-core reference.
inline std::optional<u64> solve_sequential(u64 a, u64 b, u64 c) {
  const u64 m = step_count(c);
  shoal::local::flat_table<u64, u64> baby;
  baby.reserve(m);
  u64 power = 1;
  for (u64 j = 0; j < m; ++j) {
    baby.try_emplace(power, j);  // keeps the smallest j of a repeated power
    power = mul_mod(power, a, c);
  }
  const u64 giant = inverse_mod_prime(pow_mod(a, m, c), c);  // A^-m
  u64 gamma = b % c;
  for (u64 i = 0; i < m; ++i) {
    if (const u64* j = baby.find(gamma)) return i * m + *j;
    gamma = mul_mod(gamma, giant, c);
  }
  return std::nullopt;
}

}  // namespace bsgs
