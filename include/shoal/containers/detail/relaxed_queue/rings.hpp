// shoal/containers/detail/relaxed_queue/rings.hpp — what relaxed_queue's two algorithms share: the layout of the
// rings in the symmetric heap, the random ring choices, the synchronised clock, the candidates of a pop and the
// lower bounds of the rings' head stamps kept by this handle (users never name these; the queue and its cost table:
// shoal/containers/relaxed_queue.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/containers/relaxed_queue_options.hpp"
#include "shoal/core/clock.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

/// The state words of one ring, each on a cache line of its own (pushers and poppers of a ring use different words,
/// and no word's traffic slows another's); each is accessed only with remote atomics.
struct relaxed_ring_header {
  std::uint64_t lock = 0;  // lock_based, shared mode: the count of shared holders (the emulated MPI shared lock)
  std::uint64_t pad0[7] = {};
  std::uint64_t state = 0;  // lock_based: locked bit 63 | head index << 32 | count
  std::uint64_t pad1[7] = {};
  std::uint64_t enqueue_pos = 0;  // lock_free: positions claimed by pushers
  std::uint64_t pad2[7] = {};
  std::uint64_t dequeue_pos = 0;  // lock_free: positions claimed by poppers
  std::uint64_t pad3[7] = {};
};

template <class T>
struct relaxed_item {
  std::uint64_t stamp;
  T value;
};

/// A ring slot: the sequence word (lock_free's readiness word, atomics only: 1 + the position of the element last
/// published in the slot, 0 before the first) and the item (get/put).
template <class T>
struct relaxed_slot {
  std::uint64_t sequence;
  relaxed_item<T> item;
};

/// Byte offset of the item in a relaxed_slot: after the 8-byte word, aligned for the item.
template <class T>
inline constexpr std::size_t relaxed_item_offset =
    (sizeof(std::uint64_t) + alignof(relaxed_item<T>) - 1) / alignof(relaxed_item<T>) * alignof(relaxed_item<T>);

/// The random source of the ring choices: splitmix64, one multiply chain per draw (the choices need speed, not
/// statistical strength; std::mt19937_64 cost 6 % of a pop).
class ring_rng {
 public:
  explicit ring_rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t operator()() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, n) by multiply-shift (no division).
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>((*this)()) * n) >> 64);
  }

 private:
  std::uint64_t state_;
};

/// The rings not yet examined by one operation, drawn in random order without repetition (a partial
/// Fisher-Yates shuffle over 0..p-1 that is restarted, not rebuilt).
class ring_order {
 public:
  explicit ring_order(int rings) : rings_(static_cast<std::size_t>(rings)), where_(static_cast<std::size_t>(rings)) {
    for (int i = 0; i < rings; ++i) rings_[static_cast<std::size_t>(i)] = where_[static_cast<std::size_t>(i)] = i;
  }
  /// Every ring is unexamined again.
  void restart() { taken_ = 0; }
  std::size_t remaining() const { return rings_.size() - taken_; }
  /// A random unexamined position (stays unexamined until take()).
  std::size_t pick(ring_rng& rng) const { return taken_ + rng.below(remaining()); }
  int ring_at(std::size_t position) const { return rings_[position]; }
  /// Marks the ring at `position` examined.
  void take(std::size_t position) {
    const std::size_t first = taken_++;
    std::swap(rings_[position], rings_[first]);
    where_[static_cast<std::size_t>(rings_[position])] = static_cast<int>(position);
    where_[static_cast<std::size_t>(rings_[first])] = static_cast<int>(first);
  }
  /// Marks `ring` examined (it must be unexamined).
  void take_ring(int ring) { take(static_cast<std::size_t>(where_[static_cast<std::size_t>(ring)])); }
  /// The ring taken last.
  int last_taken() const { return rings_[taken_ - 1]; }

 private:
  std::vector<int> rings_;
  std::vector<int> where_;  // the position of each ring in rings_
  std::size_t taken_ = 0;
};

/// One ring per team rank (ring r on team rank r) and this handle's view of them.
template <class T>
class relaxed_rings {
 public:
  using item_type = relaxed_item<T>;
  using slot_type = relaxed_slot<T>;

  /// A head a pop holds (lock_based: locked) or has read (lock_free), with the ring's state (lock_based) or its
  /// dequeue position (lock_free).
  struct candidate {
    int ring;
    std::uint64_t position;
    item_type item;
  };

  /// Collective over `team`: allocates the rings through `reg` (which frees them), synchronises the clocks.
  relaxed_rings(const relaxed_queue_options& o, const shoal::team& team, registration& reg)
      : opts(o), me(team.rank()), count(team.size()), pop_order(count), push_order(count),
        rng(o.seed ^ (static_cast<std::uint64_t>(me) + 1) * 0xd1b54a32d192ed03ull), clock(o.clock_sync_rounds, team),
        head_bounds_(static_cast<std::size_t>(count), 0) {
    headers_ = reg.allocate_collective<relaxed_ring_header>(1);
    slots_ = reg.allocate_collective<slot_type>(opts.capacity_per_rank);  // on failure reg frees the headers
    *headers_[static_cast<std::size_t>(me)].local() = relaxed_ring_header{};
    slot_type* mine = slots_[static_cast<std::size_t>(me)].local();
    for (std::size_t i = 0; i < opts.capacity_per_rank; ++i) mine[i].sequence = 0;  // lock_free: nothing published
  }

  global_ptr<std::uint64_t> lock_word(int ring) const { return word(ring, offsetof(relaxed_ring_header, lock)); }
  global_ptr<std::uint64_t> state_word(int ring) const { return word(ring, offsetof(relaxed_ring_header, state)); }
  global_ptr<std::uint64_t> enqueue_word(int ring) const {
    return word(ring, offsetof(relaxed_ring_header, enqueue_pos));
  }
  global_ptr<std::uint64_t> dequeue_word(int ring) const {
    return word(ring, offsetof(relaxed_ring_header, dequeue_pos));
  }
  /// The slot of `ring` at index `index` < 2 * capacity_per_rank (lock_based: head + count), wrapped by one compare.
  global_ptr<slot_type> slot_at(int ring, std::uint64_t index) const {
    if (index >= opts.capacity_per_rank) index -= opts.capacity_per_rank;
    return slots_[static_cast<std::size_t>(ring)] + static_cast<std::ptrdiff_t>(index);
  }
  static global_ptr<std::uint64_t> sequence_of(global_ptr<slot_type> slot) {
    return slot.template reinterpret<std::uint64_t>();
  }
  static global_ptr<item_type> item_of(global_ptr<slot_type> slot) {
    return global_ptr<item_type>(slot.rank(), slot.offset() + relaxed_item_offset<T>);
  }

  /// A lower bound of the stamp of `ring`'s head, kept by this handle (0: unknown). Heads only get newer (a pop moves
  /// a head on to an element pushed after it), so a ring whose bound is no older than a head a pop has in hand need
  /// not be read. Exact for lock_based rings (stamped under the lock, so in stamp order); lock_free rings are in
  /// claim order and a push is stamped just before its claim, so two pushes racing for one ring may sit one before
  /// the other against their stamps, as in the ring itself (docs/containers/relaxed_queue.md).
  std::uint64_t& head_bound(int ring) { return head_bounds_[static_cast<std::size_t>(ring)]; }

  /// Whether `ring` can be passed over: a candidate is in hand and the ring's head is no older than the oldest one.
  bool ruled_out(int ring) const {
    return !held.empty() && head_bounds_[static_cast<std::size_t>(ring)] >= oldest().item.stamp;
  }

  /// The held candidate with the smallest stamp (ties: the lower ring).
  const candidate& oldest() const {
    return *std::min_element(held.begin(), held.end(), [](const candidate& a, const candidate& b) {
      return a.item.stamp != b.item.stamp ? a.item.stamp < b.item.stamp : a.ring < b.ring;
    });
  }

  /// A random pause that grows with the number of restarts (up to 2^10 waiting steps of shoal::wait_until: progress,
  /// then yield, then short sleeps once the wait is long, so that a contender sharing this core gets to finish).
  void back_off(int restarts) {
    std::uint64_t steps = rng.below(std::uint64_t{1} << std::min(restarts, 10));
    shoal::wait_until([&steps] { return steps-- == 0; });
  }

  const relaxed_queue_options opts;
  const int me;     // this rank's ring
  const int count;  // rings (team ranks)
  ring_order pop_order;
  ring_order push_order;
  ring_rng rng;
  synchronized_clock clock;
  std::vector<candidate> held;  // the candidates of the pop under way

 private:
  global_ptr<std::uint64_t> word(int ring, std::size_t field_offset) const {
    const auto header = headers_[static_cast<std::size_t>(ring)];  // ring = team rank; the pointer names its rank
    return global_ptr<std::uint64_t>(header.rank(), header.offset() + field_offset);
  }

  std::vector<std::uint64_t> head_bounds_;
  std::vector<global_ptr<relaxed_ring_header>> headers_;
  std::vector<global_ptr<slot_type>> slots_;
};

}  // namespace shoal::detail
