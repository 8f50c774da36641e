// shoal/containers/detail/hash_map_slot.hpp — the slot protocol of shoal::hash_map: the 32-bit status word in front
// of every bucket and the remote atomics that move it between states (containers/hash_map.hpp uses it; the costs are
// in its table).
//
// Status bits 0-1 are the state: free 0, reserved 1 (a writer owns the bucket), ready 2, erased 3 (a tombstone);
// bits 2-31 count the fully atomic readers inside. (BCL sets one of 30 random read bits instead; two readers that draw
// the same bit let a writer in while one of them still reads, so shoal counts readers.)
//
// Which atomic does what, chosen for the cheapest MPI call (a fetch_and_op is cheaper than a compare_and_swap on both
// MPIs, and never has to be retried):
//   reserve a free bucket         compare_exchange free -> reserved (only one writer may win it)
//   publish reserved -> ready     fetch_add(+1)  (only the writer that reserved it publishes; readers' counts stay)
//   erase   reserved -> erased    fetch_add(+2)
//   a reader enters / leaves      fetch_add(+4) / fetch_add(-4); a reader that entered a free or reserved bucket
//                                 leaves at once (an erased one it need not leave: below)
//   take a ready bucket alone     compare_exchange "ready, no reader" -> reserved (erase, insert_or_assign)
// Readers therefore also count themselves into free and reserved buckets for a moment: a writer reserving a free
// bucket keeps such a count (the reader leaves by its fetch_add(-4)), and nothing waits for a count except taking a
// ready bucket alone. A reader that enters an erased bucket does not leave: a tombstone never changes state again
// (resize rebuilds the table from the ready buckets), so its count is never read, and adding 4 never touches the
// state bits, even when the count wraps around. A miss costs 2 atomics at the free bucket that ends it, a tombstone
// on the way one. Different atomics on one word are atomic with each other: on the shared-memory path
// they are CPU atomics, across hosts the owner's CPU atomics, and on MPI windows shoal names every operation it
// issues in MPICH's which_accumulate_ops hint (core/detail/path_setup.hpp; tests/core_test.cpp,
// MixedOperationsOnOneWord, checks it on both MPIs).
#pragma once

#include <cstdint>

#include "shoal/core/global_ptr.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"

namespace shoal::detail {

/// The slot protocol's states and transitions (static members only; hash_map names it `slot`).
struct hash_map_slot {
  static constexpr std::uint32_t free_state = 0, reserved_state = 1, ready_state = 2, erased_state = 3;
  static constexpr std::uint32_t state_mask = 3;
  static constexpr std::uint32_t one_reader = 4;

  using status = global_ptr<std::uint32_t>;

  static constexpr std::uint32_t state_of(std::uint32_t word) { return word & state_mask; }

  /// Waits (making progress) while a writer holds the bucket; returns the status it then sees.
  static std::uint32_t wait_until_written(status st) {
    std::uint32_t seen = 0;
    wait_until([&] {
      seen = atomic_load(st);
      return state_of(seen) != reserved_state;
    });
    return seen;
  }

  /// Reserves a free bucket (keeping the count of readers passing through it). Returns free_state when this call
  /// reserved it, else the status that is not free.
  static std::uint32_t reserve(status st) {
    std::uint32_t guess = free_state;
    for (;;) {
      const auto seen = compare_exchange(st, guess, guess | reserved_state);
      if (seen == guess) return free_state;
      if (state_of(seen) != free_state) return seen;
      guess = seen;  // a reader passing through: keep its count
    }
  }

  /// Moves a bucket this rank has reserved from reserved to `to` (ready or erased), keeping any reader count.
  static void release_reserved(status st, std::uint32_t to) { fetch_add(st, to - reserved_state); }

  /// Counts a reader into the bucket. Returns ready_state once inside (leave with leave_reader), else the state that
  /// kept it out: out of a free or reserved bucket the reader has left again; an erased bucket keeps its count (see
  /// the top of this file), so passing a tombstone costs one atomic.
  static std::uint32_t enter_reader(status st) {
    const auto seen = fetch_add(st, one_reader);
    const auto state = state_of(seen);
    if (state != ready_state && state != erased_state) fetch_add(st, 0u - one_reader);
    return state;
  }

  static void leave_reader(status st) { fetch_add(st, 0u - one_reader); }

  /// Takes a ready bucket alone (ready with no reader -> reserved), waiting for readers and writers to leave. Returns
  /// reserved_state on success, else the state of a bucket that stopped being ready (erased, or free after a resize).
  static std::uint32_t acquire_exclusive(status st) {
    std::uint32_t outcome = reserved_state;
    wait_until([&] {
      const auto seen = compare_exchange(st, ready_state, reserved_state);
      if (seen == ready_state) return true;
      switch (state_of(seen)) {
        case reserved_state: wait_until_written(st); return false;
        case ready_state: return false;  // readers inside: wait for them to leave
        default: outcome = state_of(seen); return true;
      }
    });
    return outcome;
  }
};

}  // namespace shoal::detail
