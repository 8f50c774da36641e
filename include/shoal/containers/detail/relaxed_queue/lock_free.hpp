// shoal/containers/detail/relaxed_queue/lock_free.hpp — relaxed_queue's lock_free algorithm (beyond the paper):
// each ring a bounded MPMC queue after Vyukov, done with remote atomics. The protocol and its costs are described in
// shoal/containers/relaxed_queue.hpp and docs/containers/relaxed_queue.md.
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

// Positions only grow; slot = position % capacity. Position e may be written once e < dequeue_pos + capacity: the pop
// that claimed e - capacity read its element before its claim, and a pop still reading it fails its claim. The caches
// hold lower bounds of the counters (guesses for the claims, bounds for the room check).
template <class T>
class relaxed_lock_free {
 public:
  using item_type = relaxed_item<T>;
  using slot_type = relaxed_slot<T>;

  explicit relaxed_lock_free(relaxed_rings<T>& rings)
      : r_(rings), enqueue_cache_(static_cast<std::size_t>(rings.count), 0),
        dequeue_cache_(static_cast<std::size_t>(rings.count), 0), push_slots_(static_cast<std::size_t>(rings.count)),
        pop_slots_(static_cast<std::size_t>(rings.count)) {}

  /// One attempt to store `value` in `ring`; false when that ring is full.
  bool push(int ring, const T& value) {
    // Stamped before the claim: between its claim and its publication a push hides the ring's later elements from
    // pops, so that window holds only the put.
    const item_type item{r_.clock.now(), value};
    const auto enqueue = r_.enqueue_word(ring);
    std::uint64_t pos = cached(enqueue_cache_, ring);
    for (;;) {
      if (pos >= cached(dequeue_cache_, ring) + r_.opts.capacity_per_rank) {  // may be full: read the pops' counter
        cached(dequeue_cache_, ring) = std::max(cached(dequeue_cache_, ring), atomic_load(r_.dequeue_word(ring)));
        if (pos >= cached(dequeue_cache_, ring) + r_.opts.capacity_per_rank) return false;
      }
      const std::uint64_t seen = compare_exchange(enqueue, pos, pos + 1);
      if (seen == pos) break;
      pos = seen;  // another pusher claimed `pos` (or the guess was old): try the current position
    }
    cached(enqueue_cache_, ring) = pos + 1;
    const auto slot = slot_of_position(push_slots_, ring, pos);
    put(r_.item_of(slot), item);
    atomic_store(r_.sequence_of(slot), pos + 1);  // publish
    return true;
  }

  /// Pops the oldest head among `want` candidate rings (this rank's first with locality::local_first; rings ruled
  /// out by their head bound count as candidates and are not read); nullopt when every ring was empty.
  std::optional<relaxed::stamped<T>> pop(std::size_t want) {
    auto& held = r_.held;
    for (int restarts = 0;; ++restarts) {
      held.clear();
      r_.pop_order.restart();
      std::size_t candidates = 0;  // rings whose head is held, or ruled out by their bound
      auto examine = [&](int ring) {
        if (r_.ruled_out(ring)) {
          ++candidates;
          return;
        }
        std::uint64_t pos = 0;
        global_ptr<slot_type> slot;
        if (look_at_head(ring, pos, slot) == head::ready) {
          held.push_back({ring, pos, get(r_.item_of(slot))});
          r_.head_bound(ring) = held.back().item.stamp;
          ++candidates;
        } else {
          r_.head_bound(ring) = 0;  // empty, or its element was stamped at some time before its claim: read it again
        }
      };
      if (r_.opts.locality == relaxed::locality::local_first) {
        r_.pop_order.take_ring(r_.me);
        examine(r_.me);
      }
      while (candidates < want && r_.pop_order.remaining() > 0) {
        const std::size_t position = r_.pop_order.pick(r_.rng);
        const int ring = r_.pop_order.ring_at(position);
        r_.pop_order.take(position);
        examine(ring);
      }
      if (held.empty()) return std::nullopt;
      const auto& best = r_.oldest();
      const std::uint64_t seen = compare_exchange(r_.dequeue_word(best.ring), best.position, best.position + 1);
      if (seen == best.position) {
        cached(dequeue_cache_, best.ring) = best.position + 1;
        return relaxed::stamped<T>{best.item.value, best.item.stamp, r_.clock.now(), best.ring};
      }
      r_.back_off(restarts);  // another popper took that head first
    }
  }

  /// The elements in this rank's ring (two atomics).
  std::uint64_t local_size() const {
    return atomic_load(r_.enqueue_word(r_.me)) - atomic_load(r_.dequeue_word(r_.me));
  }

 private:
  struct position_index {
    std::uint64_t position = 0;
    std::uint64_t index = 0;  // position % capacity_per_rank
  };

  enum class head { ready, empty, in_flight };

  static std::uint64_t& cached(std::vector<std::uint64_t>& cache, int ring) {
    return cache[static_cast<std::size_t>(ring)];
  }

  /// The slot of position `position` of `ring`. Positions mostly move on by a little from the one last seen for the
  /// ring, so the slot index follows from that one's by an addition; a division (tens of cycles, the largest part
  /// of a pop's own work) only when the position jumped or went back.
  global_ptr<slot_type> slot_of_position(std::vector<position_index>& seen, int ring, std::uint64_t position) const {
    auto& last = seen[static_cast<std::size_t>(ring)];
    const std::uint64_t capacity = r_.opts.capacity_per_rank;
    const std::uint64_t step = position - last.position;
    last.index = step < capacity ? last.index + step : position % capacity;
    if (last.index >= capacity) last.index -= capacity;
    last.position = position;
    return r_.slot_at(ring, last.index);
  }

  /// Looks at the head of `ring`: ready (a published element: its dequeue position in `pos`, its slot in `slot`),
  /// empty (nothing claimed), or in_flight (its only element is claimed but not yet published).
  head look_at_head(int ring, std::uint64_t& pos, global_ptr<slot_type>& slot) {
    const auto dequeue = r_.dequeue_word(ring);
    head outcome = head::ready;
    shoal::wait_until([&] {
      for (;;) {
        pos = atomic_load(dequeue);
        cached(dequeue_cache_, ring) = std::max(cached(dequeue_cache_, ring), pos);
        slot = slot_of_position(pop_slots_, ring, pos);
        const auto lag = static_cast<std::int64_t>(atomic_load(r_.sequence_of(slot)) - (pos + 1));
        if (lag == 0) {
          outcome = head::ready;
          return true;
        }
        if (lag > 0) continue;  // the slot holds a later lap's element: other pops took `pos` meanwhile; look again
        // Not published: the ring is empty, or a push has claimed `pos` and not published it yet. When later pushes
        // are queued behind it, wait for the publication: a pusher descheduled between its claim and its
        // publication would otherwise hide all of them from every pop for as long as it is off the CPU (at 3 ranks
        // on 2 busy cores: mean rank errors of 60, max 276). Passing over a ring hides at most its element in flight.
        const std::uint64_t claimed = atomic_load(r_.enqueue_word(ring));
        if (claimed > pos + 1) return false;
        outcome = claimed <= pos ? head::empty : head::in_flight;
        return true;
      }
    });
    return outcome;
  }

  relaxed_rings<T>& r_;
  std::vector<std::uint64_t> enqueue_cache_;  // lower bounds of each ring's counters
  std::vector<std::uint64_t> dequeue_cache_;
  std::vector<position_index> push_slots_, pop_slots_;  // the last position's slot, per ring
};

}  // namespace shoal::detail
