// shoal/containers/relaxed_queue.hpp — a distributed queue with relaxed FIFO order (Paznikov 2020).
//
// Model: one-sided (RDMA), distributed. Every rank holds one ring buffer of `capacity_per_rank` slots in the symmetric
// heap, with its state words (each on a cache line of its own). Every element carries the time of its insertion from
// a clock synchronised across the team when the queue is built. push puts the element into one ring (a random one,
// or the caller's own first with locality::local_first); try_pop takes the oldest of the heads of `ncand` non-empty
// rings (random ones; with local_first and lock_free the caller's own ring first). There is no global head or tail,
// hence no hot spot; the price is that a pop may return an element near the head rather than the oldest one
// (docs/containers/relaxed_queue.md measures how near).
//
// Head bounds (both algorithms): each handle keeps, per ring, a lower bound of the stamp of its head (the stamp of the
// head it last read there). A head only gets newer, so a candidate ring whose bound is no older than a head the pop
// already has in hand cannot hold the oldest head: it counts as examined and is neither read nor locked. The pop's
// choice is the same as if it had read it; what it saves is remote traffic (at 2 ranks with ncand = 2, a pop whose
// first ring holds the older head reads that ring alone). The bounds are exact for lock_based (stamped under the lock, so each
// ring is in stamp order); a lock_free ring is in claim order, and two pushes that race for one ring may sit there
// against the order of their stamps (the stamp is taken just before the claim), which the bound inherits.
//
// Files: the options and the types users name are in containers/relaxed_queue_options.hpp; the rings, the random
// choices and the bounds in containers/detail/relaxed_queue/rings.hpp; the two algorithms in lock_based.hpp and
// lock_free.hpp beside it.
//
// Operations (who: collective = every rank of the queue's team, in the same order; any rank = one rank's call):
//   relaxed_queue<T> q(opts = {}, team = world())
//                                collective  allocates one ring of opts.capacity_per_rank slots per team rank,
//                                            synchronises the clocks (shoal::synchronized_clock, core/clock.hpp)
//   ~relaxed_queue               collective  B, then each rank frees its ring (no-op after finalize)
//   q.try_push(v)                any rank    -> bool: true when stored, false when every ring was full
//   q.push(v)                    any rank    as try_push; container_full when every ring was full
//   q.try_pop() / try_pop(ncand) any rank    -> std::optional<T>; std::nullopt when every ring was seen empty
//   q.try_pop_stamped(ncand)     any rank    -> also the element's insertion stamp, the pop's stamp and its ring
//   q.size()                     collective  the number of elements after every earlier operation completed
//   q.now(), clock_error_bound_ns()
//                                any rank    the synchronised clock (ns) that stamps elements, and its error bound
//
// Algorithms (relaxed_queue_options::algorithm):
//   lock_based (the paper)  a ring is locked by a remote test-and-set: the lock is bit 63 of the ring's state word
//     (head index << 32 | count), so one compare_exchange from the state last seen here takes the lock and reads the
//     state at once (a wrong guess costs one more: the failed exchange returns the current state), and the store of
//     the new state releases it. push locks a ring (waiting by reads while another holds it), puts the element,
//     stores the new state; a ring that an unlocked observation shows full is passed over without locking, and
//     try_push returns false once every ring was full. try_pop locks non-empty rings until ncand are held or ruled out by
//     their head bound (a ring seen empty is passed over and shrinks the set of rings left to try, the paper's
//     navail) and takes the element with the smallest stamp. With ncand below the number of rings it try-locks random rings: a busy one counts an
//     attempt once at least one ring is held, and after max_nattempts all held rings are released and the search
//     starts over after a random back-off. With every ring a candidate it locks them in ring order, waiting for each:
//     a waiting popper only waits for a ring above every ring it holds and the others never wait while holding one,
//     so no pop deadlocks and none has to start over.
//   lock_free (beyond the paper)  no locks: each ring is a bounded MPMC queue after Vyukov, done with remote atomics.
//     Positions only grow (slot = position % capacity_per_rank). push stamps the element, claims position `pos` by
//     compare_exchange on the ring's enqueue counter from the position last seen here (room: pos < dequeue counter +
//     capacity_per_rank, checked against the dequeue counter last seen here and read again only when that says
//     full), puts the element and publishes it by storing the slot's sequence word = pos + 1. try_pop reads the
//     dequeue counter and the head slot's sequence of ncand rings (those not ruled out by their head bound), reads
//     the heads whose sequence says published, and claims the oldest by compare_exchange on that ring's dequeue counter (a failed claim starts the
//     pop over). A popper reads a head before claiming it, so once the dequeue counter has passed a position its slot
//     may be written again: a pop still reading it fails its claim. A slot is never popped twice (one
//     compare_exchange wins each position) and never read half-written (its sequence is published after the put). A
//     push claimed but not yet published holds up the ring's later elements, as in Vyukov's queue: a pop that finds
//     such a head with later pushes queued behind it waits for the publication (passing over the ring would hide them
//     all for as long as the pusher is off the CPU); the stamp is taken before the claim, so the wait is for the put.
//
// Lock modes (relaxed_queue_options::mode, lock_based only). The paper brackets every ring access by MPI_Win_lock on
// the ring's rank, EXCLUSIVE or SHARED, around the test-and-set lock. shoal keeps one MPI_Win_lock_all epoch open for
// the whole run, so the modes are emulated on the ring's words (one ring per rank):
//   exclusive  the test-and-set bit of the state word alone.
//   shared     the caller first registers as a shared holder on the ring's lock word (fetch_add 1: MPI_LOCK_SHARED),
//              then takes the test-and-set bit, and leaves (fetch_add -1) after releasing it. Two more atomics per
//              ring, as a shared MPI lock pays for its protocol; the mutual exclusion is the same.
// Unlike the paper, where remove always runs in a lock_all (shared) epoch, the mode applies to push and pop alike.
//
// Cost per operation, uncontended and with the states last seen here still right (R remote read, W remote write, A
// remote atomic; k = candidates read, 1 <= k <= ncand: a candidate ruled out by its head bound costs nothing; e =
// rings passed over as empty; a state that changed since it was last seen here adds 1A to that ring; with
// local_first the own ring's words are this rank's memory):
//   lock_based exclusive  push 2A + W             try_pop k(2A + R) + eA
//   lock_based shared     push 4A + W             try_pop k(4A + R) + 3eA
//   lock_free             push 2A + W             try_pop k(2A + R) + A + 3eA
// A full ring costs a push 1A before it moves on (lock_based: an unlocked observation of its state; lock_free: a read
// of its dequeue counter, 2A when the position last seen here is old); contention adds retries. Each element's stamp
// is one read of the local clock.
//
// Concurrency promises: every operation may run concurrently with every other (fully atomic). Ordering: a pop
// returns the oldest of the k heads it examined; the rank error (older elements still queued) is measured in
// docs/containers/relaxed_queue.md. A full push and an empty pop are observations of each ring at the time it was
// examined, not of the whole queue at one instant.
//
// Errors: shoal::usage_error for bad options, naming the field (capacity_per_rank 0 or >= 2^31, ncand,
// max_nattempts or clock_sync_rounds < 1, capacity_per_rank / algorithm / mode that differ between ranks);
// shoal::heap_exhausted when the rings do not fit (raise SHOAL_HEAP_SIZE); shoal::container_full from push (not
// try_push) when every ring was full (the message names the capacity per rank).
//
// Example:
//   shoal::relaxed_queue<std::uint64_t> q({.capacity_per_rank = 1000, .ncand = 2});
//   if (!q.try_push(shoal::rank())) { /* every ring is full */ }
//   shoal::barrier();
//   while (auto v = q.try_pop()) consume(*v);
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "shoal/containers/detail/option_check.hpp"
#include "shoal/containers/detail/relaxed_queue/lock_based.hpp"
#include "shoal/containers/detail/relaxed_queue/lock_free.hpp"
#include "shoal/containers/detail/relaxed_queue/rings.hpp"
#include "shoal/containers/relaxed_queue_options.hpp"
#include "shoal/core/clock.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

template <remote_storable T>
class relaxed_queue {
 public:
  using value_type = T;

  /// Collective over `team`: allocates one ring of opts.capacity_per_rank slots on every rank of the team (ring r on
  /// team rank r) and synchronises the clocks.
  explicit relaxed_queue(const relaxed_queue_options& opts = {}, const shoal::team& team = shoal::world())
      : reg_(team, "shoal::relaxed_queue"), rings_(validated(opts, team), team, reg_), locked_(rings_),
        lock_free_(rings_) {
    team.barrier();
  }

  const shoal::team& team() const noexcept { return reg_.team(); }

  relaxed_queue(const relaxed_queue&) = delete;
  relaxed_queue& operator=(const relaxed_queue&) = delete;

  /// Stores `value` in one ring (random, or this rank's first with locality::local_first); false when every ring
  /// was full when examined.
  [[nodiscard]] bool try_push(const T& value) {
    reg_.check();
    if (rings_.opts.locality == relaxed::locality::local_first && store(rings_.me, value)) return true;
    auto& order = rings_.push_order;
    order.restart();
    while (order.remaining() > 0) {
      order.take(order.pick(rings_.rng));
      if (store(order.last_taken(), value)) return true;
    }
    return false;
  }

  /// As try_push, but throws container_full when every ring was full.
  void push(const T& value) {
    if (try_push(value)) return;
    throw container_full("shoal::relaxed_queue::push: every ring was full (" +
                         std::to_string(rings_.opts.capacity_per_rank) + " slots on each of " +
                         std::to_string(rings_.count) +
                         " ranks); pop elements first, construct the queue with a larger "
                         "relaxed_queue_options::capacity_per_rank, or call "
                         "try_push, which returns false instead of throwing");
  }

  /// Pops the oldest head among options().ncand random non-empty rings; std::nullopt when every ring was empty.
  std::optional<T> try_pop() { return try_pop(rings_.opts.ncand); }
  std::optional<T> try_pop(int ncand) {
    reg_.check();
    auto s = try_pop_stamped(ncand);
    if (!s) return std::nullopt;
    return std::move(s->value);
  }

  /// As try_pop, with the element's insertion stamp, the pop's stamp and the ring it came from.
  std::optional<relaxed::stamped<T>> try_pop_stamped(int ncand) {
    if (ncand < 1) throw usage_error("shoal::relaxed_queue::try_pop: ncand must be at least 1 (got " +
                                     std::to_string(ncand) + ")");
    const std::size_t want = std::min<std::size_t>(static_cast<std::size_t>(ncand), static_cast<std::size_t>(rings_.count));
    return lock_based() ? locked_.pop(want) : lock_free_.pop(want);
  }

  /// Collective: the number of elements once every rank's earlier operations have completed.
  std::size_t size() const {
    reg_.check();
    team().barrier();
    const std::uint64_t mine = lock_based() ? locked_.local_size() : lock_free_.local_size();
    const auto total = team().allreduce(mine, op::sum{});
    team().barrier();
    return static_cast<std::size_t>(total);
  }

  const relaxed_queue_options& options() const { return rings_.opts; }
  /// Slots in all rings together.
  std::size_t capacity() const { return rings_.opts.capacity_per_rank * static_cast<std::size_t>(rings_.count); }
  /// The synchronised clock (ns) that stamps elements; see clock_error_bound_ns for its accuracy.
  std::uint64_t now() const { return rings_.clock.now(); }
  /// The largest residual error of any rank's clock offset (half the best ping-pong round trip).
  std::int64_t clock_error_bound_ns() const { return rings_.clock.error_bound_ns(); }

 private:
  static relaxed_queue_options validated(const relaxed_queue_options& o, const shoal::team& team) {
    detail::check_option(o.capacity_per_rank >= 1 && o.capacity_per_rank < (std::size_t{1} << 31),
                         "relaxed_queue_options::capacity_per_rank", "in [1, 2^31) slots", o.capacity_per_rank);
    detail::check_option(o.ncand >= 1, "relaxed_queue_options::ncand", "at least 1", o.ncand);
    detail::check_option(o.max_nattempts >= 1, "relaxed_queue_options::max_nattempts", "at least 1", o.max_nattempts);
    detail::check_option(o.clock_sync_rounds >= 1, "relaxed_queue_options::clock_sync_rounds", "at least 1",
                         o.clock_sync_rounds);
    // The layout and the protocol must be the same everywhere.
    const std::uint64_t shape = o.capacity_per_rank << 8 | static_cast<std::uint64_t>(o.algorithm) << 4 |
                                static_cast<std::uint64_t>(o.mode);
    if (team.allreduce(shape, op::min{}) != team.allreduce(shape, op::max{})) {
      throw usage_error("shoal::relaxed_queue_options::capacity_per_rank, ::algorithm and ::mode must be equal on "
                        "every rank");
    }
    return o;
  }

  bool lock_based() const { return rings_.opts.algorithm == relaxed::algorithm::lock_based; }

  /// One attempt to store `value` in `ring`; false when that ring is full.
  bool store(int ring, const T& value) { return lock_based() ? locked_.push(ring, value) : lock_free_.push(ring, value); }

  registration reg_;  // the team; frees the rings collectively (docs/design.md, "Lifetime")
  detail::relaxed_rings<T> rings_;
  detail::relaxed_lock_based<T> locked_;
  detail::relaxed_lock_free<T> lock_free_;
};

}  // namespace shoal
