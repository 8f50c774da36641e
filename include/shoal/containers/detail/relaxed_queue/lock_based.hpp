// shoal/containers/detail/relaxed_queue/lock_based.hpp — relaxed_queue's lock_based algorithm (the paper's): each
// ring under a remote test-and-set lock, in exclusive or (emulated) shared mode. The protocol and its costs are
// described in shoal/containers/relaxed_queue.hpp and docs/containers/relaxed_queue.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "shoal/containers/detail/relaxed_queue/rings.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"

namespace shoal::detail {

// The lock is bit 63 of the ring's state word: taking it is one compare_exchange from the state last seen here (a
// wrong guess costs one more: the failed exchange returns the current state), and the store that writes the new state
// releases it. A ring that an unlocked observation shows empty (pop) or full (push) is passed over without locking.
// Shared mode registers as a shared holder on the lock word before and leaves after.
template <class T>
class relaxed_lock_based {
 public:
  using item_type = relaxed_item<T>;

  explicit relaxed_lock_based(relaxed_rings<T>& rings)
      : r_(rings), state_cache_(static_cast<std::size_t>(rings.count), 0) {}

  /// One attempt to store `value` in `ring`; false when that ring is full.
  bool push(int ring, const T& value) {
    const std::uint64_t capacity = r_.opts.capacity_per_rank;
    std::uint64_t state = 0;
    if (acquire(ring, true, [capacity](std::uint64_t s) { return count_of(s) < capacity; }, state) != grab::held) {
      return false;  // full
    }
    const std::uint64_t head = head_of(state), count = count_of(state);
    // Stamped under the lock, so each ring holds its elements in stamp order (up to the clock error).
    put(r_.item_of(r_.slot_at(ring, head + count)), item_type{r_.clock.now(), value});
    release(ring, pack(head, count + 1));
    return true;
  }

  /// Pops the oldest head among `want` candidate rings (see relaxed_queue.hpp); nullopt when every ring was empty.
  std::optional<relaxed::stamped<T>> pop(std::size_t want) {
    auto& held = r_.held;
    held.clear();
    auto nonempty = [](std::uint64_t s) { return count_of(s) > 0; };
    std::uint64_t state = 0;
    auto hold = [&](int ring) {
      held.push_back({ring, state, get(r_.item_of(r_.slot_at(ring, head_of(state))))});
      r_.head_bound(ring) = held.back().item.stamp;
    };
    if (want >= static_cast<std::size_t>(r_.count)) {
      // Every ring a candidate: lock them in ring order, waiting for each. Poppers that wait only ever wait for a
      // ring above every ring they hold, and the others never wait while holding one, so nobody deadlocks and no
      // pop has to let go and start over (with one-sided atomics that need the target's CPU, each restart of every
      // contender costs round trips to every ring). A ring whose head bound is no older than a held head is not
      // locked at all: its head cannot be the oldest.
      for (int ring = 0; ring < r_.count; ++ring) {
        if (r_.ruled_out(ring)) continue;
        const grab g = acquire(ring, true, nonempty, state);
        if (g == grab::held) hold(ring);
        else r_.head_bound(ring) = 0;  // empty
      }
    } else {
      r_.pop_order.restart();
      std::size_t target = want;
      std::size_t ruled = 0;  // candidates passed over by their head bound
      int busy = 0;
      int restarts = 0;
      shoal::wait_until([&] {
        while (held.size() + ruled < target && r_.pop_order.remaining() > 0) {
          const std::size_t position = r_.pop_order.pick(r_.rng);
          const int ring = r_.pop_order.ring_at(position);
          if (r_.ruled_out(ring)) {
            r_.pop_order.take(position);
            ++ruled;
            continue;
          }
          const grab g = acquire(ring, false, nonempty, state);
          if (g == grab::held) {
            r_.pop_order.take(position);
            hold(ring);
            busy = 0;
          } else if (g == grab::passed) {
            r_.pop_order.take(position);
            r_.head_bound(ring) = 0;
            // One ring fewer to choose from: the paper's navail, and ncand shrinks with it.
            target = std::min(target, held.size() + ruled + r_.pop_order.remaining());
          } else if (!held.empty() && ++busy >= r_.opts.max_nattempts) {
            // Another popper may hold what we wait for while it waits for ours: release all, back off, start over.
            for (const auto& c : held) release(c.ring, c.position);
            held.clear();
            r_.pop_order.restart();
            target = want;
            ruled = 0;
            busy = 0;
            r_.back_off(++restarts);
          } else {
            return false;  // busy: pause, then try a ring again
          }
        }
        return true;
      });
    }
    if (held.empty()) return std::nullopt;
    const auto& best = r_.oldest();
    const std::uint64_t head = head_of(best.position), count = count_of(best.position);
    const std::uint64_t next = head + 1 == r_.opts.capacity_per_rank ? 0 : head + 1;  // head < capacity: no division
    relaxed::stamped<T> out{best.item.value, best.item.stamp, r_.clock.now(), best.ring};
    for (const auto& c : held) release(c.ring, c.ring == best.ring ? pack(next, count - 1) : c.position);
    return out;
  }

  /// The elements in this rank's ring (one atomic).
  std::uint64_t local_size() const { return count_of(atomic_load(r_.state_word(r_.me))); }

 private:
  static constexpr std::uint64_t count_mask = 0xffffffffull;
  static constexpr std::uint64_t locked = std::uint64_t{1} << 63;  // the lock bit of the state word

  static std::uint64_t head_of(std::uint64_t state) { return (state & ~locked) >> 32; }
  static std::uint64_t count_of(std::uint64_t state) { return state & count_mask; }
  static std::uint64_t pack(std::uint64_t head, std::uint64_t count) { return head << 32 | count; }

  enum class grab { held, passed, busy };

  std::uint64_t& cached(int ring) { return state_cache_[static_cast<std::size_t>(ring)]; }

  /// Takes `ring`'s lock if an unlocked observation of its state satisfies `wanted`: held (the state as taken in
  /// *state), passed (not wanted; nothing held), or busy (locked by another, and `wait` is false). With `wait`, a
  /// held lock is waited for by reading the word, not by exchanges that would slow its holder.
  template <class Wanted>
  grab acquire(int ring, bool wait, Wanted wanted, std::uint64_t& state) {
    const auto word = r_.state_word(ring);
    std::uint64_t seen = cached(ring);
    if (!wanted(seen)) seen = atomic_load(word);  // the last state seen says no: look before passing or locking
    const bool shared = r_.opts.mode == relaxed::lock_mode::shared;
    if (shared) fetch_add(r_.lock_word(ring), std::uint64_t{1});  // shared holder first (MPI_LOCK_SHARED)
    grab outcome = grab::busy;
    for (;;) {
      if ((seen & locked) != 0) {
        if (!wait) break;
        shoal::wait_until([&] {
          seen = atomic_load(word);
          return (seen & locked) == 0;
        });
      }
      cached(ring) = seen;
      if (!wanted(seen)) {
        outcome = grab::passed;
        break;
      }
      const std::uint64_t before = compare_exchange(word, seen, seen | locked);
      if (before == seen) {
        state = seen;
        return grab::held;
      }
      seen = before;
    }
    if (shared) fetch_add(r_.lock_word(ring), ~std::uint64_t{0});  // -1: leave as shared holder
    return outcome;
  }

  /// Stores `state` (unlocked) into a ring held here: writes it and releases the lock in one atomic.
  void release(int ring, std::uint64_t state) {
    atomic_store(r_.state_word(ring), state);
    cached(ring) = state;
    if (r_.opts.mode == relaxed::lock_mode::shared) fetch_add(r_.lock_word(ring), ~std::uint64_t{0});
  }

  relaxed_rings<T>& r_;
  std::vector<std::uint64_t> state_cache_;  // each ring's state as last seen here (a guess)
};

}  // namespace shoal::detail
