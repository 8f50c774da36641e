// shoal/containers/relaxed_queue_options.hpp — the types a relaxed_queue's user names: its options, the choices
// they take, and a popped element with its stamps (the queue itself: shoal/containers/relaxed_queue.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shoal/core/clock.hpp"

namespace shoal {

namespace relaxed {

/// lock_based: the paper's rings under a remote test-and-set lock; lock_free: Vyukov's bounded queue per ring.
enum class algorithm { lock_based, lock_free };
/// lock_based only: the emulated MPI lock mode around a ring's test-and-set lock.
enum class lock_mode { exclusive, shared };
/// Where a push puts its element and where a pop looks first (see relaxed_queue_options::locality).
enum class locality { random, local_first };

/// A popped element with its insertion stamp and the stamp of the pop (ns on the synchronised clock).
template <class T>
struct stamped {
  T value;
  std::uint64_t pushed_at = 0;
  std::uint64_t popped_at = 0;
  int ring = -1;
};

}  // namespace relaxed

/// Options of a relaxed_queue (every field defaulted; checked at construction, see relaxed_queue.hpp).
struct relaxed_queue_options {
  /// Slots of the ring on each rank, in [1, 2^31) (the paper: 100,000); the same on every rank.
  std::size_t capacity_per_rank = 100'000;
  /// Candidate rings a pop examines, >= 1 (the paper's ncand; it recommends 2: more gives an order closer to FIFO,
  /// and costs more).
  int ncand = 2;
  /// Busy locks a lock_based pop tolerates while it holds candidates before it releases them all and starts over,
  /// >= 1 (the paper's max_nattempts).
  int max_nattempts = 8;
  /// lock_based only; the same on every rank.
  relaxed::lock_mode mode = relaxed::lock_mode::exclusive;
  /// The same on every rank.
  relaxed::algorithm algorithm = relaxed::algorithm::lock_based;
  /// random (the paper): a push tries random rings, a pop examines random rings. local_first: a push tries this
  /// rank's ring first, and a lock_free pop examines it first (its other ncand - 1 candidates are random), so an
  /// element that stays on its rank costs no remote operation; each rank's elements then sit in its own ring, which
  /// costs order when the ranks push at different rates (docs/containers/relaxed_queue.md, "Reading the numbers").
  relaxed::locality locality = relaxed::locality::random;
  /// Seed of the random ring choices (mixed with the rank); any value.
  std::uint64_t seed = 0x5eed;
  /// Ping-pong rounds per rank when the clocks are synchronised, >= 1 (synchronized_clock's rounds).
  int clock_sync_rounds = synchronized_clock::default_rounds;
};

}  // namespace shoal
