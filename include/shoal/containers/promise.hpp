// shoal/containers/promise.hpp — concurrency promises (BCL §7): one vocabulary for every container.
//
// A promise is the set of operations that may run concurrently with the call it is passed to, anywhere in the
// team, until the next barrier. The default, promise::any, allows everything, and every container's default
// implementation is fully atomic. A smaller set lets the container pick a cheaper implementation:
//
//   hash_map.find(k, promise::find)      only finds run concurrently: one remote get, no atomics (BCL Table 3d)
//   circular_queue.try_push(v, promise::push) only pushes run concurrently (Table 4b)
//   circular_queue.try_pop(promise::pop)      only pops run concurrently (Table 4e)
//   ... promise::local                    only the owner works on a local structure (Table 4c / 4f)
// (An owner-only operation with its own name needs no promise: hash_map::local_insert, BCL Table 3b.)
//
// Promises combine with |:  promise::find | promise::insert. A promise that is broken (an insert while another rank
// used promise::find) gives unspecified results for that phase, exactly as a data race would; it never corrupts
// memory outside the container.
#pragma once

#include <cstdint>

namespace shoal {

class concurrency {
 public:
  constexpr concurrency() = default;
  constexpr explicit concurrency(std::uint32_t bits) : bits_(bits) {}

  constexpr std::uint32_t bits() const { return bits_; }
  /// True when every operation in this promise is one of `allowed`.
  constexpr bool within(concurrency allowed) const { return (bits_ & ~allowed.bits_) == 0; }
  /// True when `op` may run concurrently.
  constexpr bool allows(concurrency op) const { return (bits_ & op.bits_) == op.bits_; }

  friend constexpr concurrency operator|(concurrency a, concurrency b) { return concurrency(a.bits_ | b.bits_); }
  friend constexpr bool operator==(concurrency, concurrency) = default;

 private:
  std::uint32_t bits_ = ~std::uint32_t{0};
};

namespace promise {
inline constexpr concurrency find{1u << 0};
inline constexpr concurrency insert{1u << 1};
inline constexpr concurrency erase{1u << 2};
inline constexpr concurrency push{1u << 3};
inline constexpr concurrency pop{1u << 4};
/// Only the calling rank touches its own (local) part: CPU loads, stores and atomics, no remote operation.
inline constexpr concurrency local{1u << 5};
/// Anything may run concurrently (the default: fully atomic).
inline constexpr concurrency any{~std::uint32_t{0}};
}  // namespace promise

}  // namespace shoal
