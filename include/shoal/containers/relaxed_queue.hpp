// shoal/containers/relaxed_queue.hpp — a distributed queue with relaxed FIFO order (Paznikov 2020).
//
// Model: one-sided (RDMA), distributed. Every rank holds one ring buffer of `capacity_per_rank` slots in the symmetric
// heap, with its state words (each on a cache line of its own). Every element carries the time of its insertion from
// a clock synchronised across the team when the queue is built. push puts the element into one ring (a random one,
// or the caller's own first); try_pop looks at the heads of `ncand` random non-empty rings and takes the oldest of
// them. There is no global head or tail, hence no hot spot; the price is that a pop may return an element near the
// head rather than the oldest one (docs/containers/relaxed_queue.md measures how near).
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
//     try_push returns false once every ring was full. try_pop locks non-empty rings until ncand are held (a ring seen
//     empty is passed over and shrinks the set of rings left to try, the paper's navail) and takes the element with
//     the smallest stamp. With ncand below the number of rings it try-locks random rings: a busy one counts an
//     attempt once at least one ring is held, and after max_nattempts all held rings are released and the search
//     starts over after a random back-off. With every ring a candidate it locks them in ring order, waiting for each:
//     a waiting popper only waits for a ring above every ring it holds and the others never wait while holding one,
//     so no pop deadlocks and none has to start over.
//   lock_free (beyond the paper)  no locks: each ring is a bounded MPMC queue after Vyukov, done with remote atomics.
//     Positions only grow (slot = position % capacity_per_rank). push stamps the element, claims position `pos` by
//     compare_exchange on the ring's enqueue counter from the position last seen here (room: pos < dequeue counter +
//     capacity_per_rank, checked against the dequeue counter last seen here and read again only when that says
//     full), puts the element and publishes it by storing the slot's sequence word = pos + 1. try_pop reads the
//     dequeue counter and the head slot's sequence of ncand random rings, reads the heads whose sequence says
//     published, and claims the oldest by compare_exchange on that ring's dequeue counter (a failed claim starts the
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
// remote atomic; k = ncand; e = rings passed over as empty; a state that changed since it was last seen here adds
// 1A to that ring):
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
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "shoal/containers/detail/option_check.hpp"
#include "shoal/core/clock.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

namespace relaxed {

enum class algorithm { lock_based, lock_free };
enum class lock_mode { exclusive, shared };
enum class insertion { random, local_first };

/// A popped element with its insertion stamp and the stamp of the pop (ns on the synchronised clock).
template <class T>
struct stamped {
  T value;
  std::uint64_t pushed_at = 0;
  std::uint64_t popped_at = 0;
  int ring = -1;
};

}  // namespace relaxed

/// Options of a relaxed_queue (every field defaulted; checked at construction, see the header comment).
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
  relaxed::insertion insertion = relaxed::insertion::random;
  /// Seed of the random ring choices (mixed with the rank); any value.
  std::uint64_t seed = 0x5eed;
  /// Ping-pong rounds per rank when the clocks are synchronised, >= 1 (synchronized_clock's rounds).
  int clock_sync_rounds = synchronized_clock::default_rounds;
};

namespace detail {

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
  explicit ring_order(int rings) : rings_(static_cast<std::size_t>(rings)) {
    for (int i = 0; i < rings; ++i) rings_[static_cast<std::size_t>(i)] = i;
  }
  /// Every ring is unexamined again.
  void restart() { taken_ = 0; }
  std::size_t remaining() const { return rings_.size() - taken_; }
  /// A random unexamined position (stays unexamined until take()).
  std::size_t pick(ring_rng& rng) const { return taken_ + rng.below(remaining()); }
  int ring_at(std::size_t position) const { return rings_[position]; }
  /// Marks the ring at `position` examined.
  void take(std::size_t position) { std::swap(rings_[position], rings_[taken_++]); }
  /// The ring taken last.
  int last_taken() const { return rings_[taken_ - 1]; }

 private:
  std::vector<int> rings_;
  std::size_t taken_ = 0;
};

}  // namespace detail

template <remote_storable T>
class relaxed_queue {
 public:
  using value_type = T;
  using item_type = detail::relaxed_item<T>;
  using slot_type = detail::relaxed_slot<T>;

  /// Collective over `team`: allocates one ring of opts.capacity_per_rank slots on every rank of the team (ring r on
  /// team rank r) and synchronises the clocks.
  explicit relaxed_queue(const relaxed_queue_options& opts = {}, const shoal::team& team = shoal::world())
      : reg_(team, "shoal::relaxed_queue"), opts_(validated(opts, team)), me_(team.rank()), rings_(team.size()),
        pop_order_(rings_), push_order_(rings_), rng_(seeded(opts.seed)), clock_(opts.clock_sync_rounds, team),
        state_cache_(static_cast<std::size_t>(rings_), 0), enqueue_cache_(static_cast<std::size_t>(rings_), 0),
        dequeue_cache_(static_cast<std::size_t>(rings_), 0), push_slots_(static_cast<std::size_t>(rings_)),
        pop_slots_(static_cast<std::size_t>(rings_)) {
    headers_ = reg_.allocate_collective<detail::relaxed_ring_header>(1);
    slots_ = reg_.allocate_collective<slot_type>(opts_.capacity_per_rank);  // on failure reg_ frees the headers
    *headers_[static_cast<std::size_t>(me_)].local() = detail::relaxed_ring_header{};
    slot_type* mine = slots_[static_cast<std::size_t>(me_)].local();
    for (std::size_t i = 0; i < opts_.capacity_per_rank; ++i) mine[i].sequence = 0;  // lock_free: nothing published yet
    team.barrier();
  }

  const shoal::team& team() const noexcept { return reg_.team(); }

  relaxed_queue(const relaxed_queue&) = delete;
  relaxed_queue& operator=(const relaxed_queue&) = delete;

  /// Stores `value` in one ring (random, or this rank's first with insertion::local_first); false when every ring
  /// was full when examined.
  [[nodiscard]] bool try_push(const T& value) {
    reg_.check();
    if (opts_.insertion == relaxed::insertion::local_first && store(me_, value)) return true;
    push_order_.restart();
    while (push_order_.remaining() > 0) {
      push_order_.take(push_order_.pick(rng_));
      if (store(push_order_.last_taken(), value)) return true;
    }
    return false;
  }

  /// As try_push, but throws container_full when every ring was full.
  void push(const T& value) {
    if (try_push(value)) return;
    throw container_full("shoal::relaxed_queue::push: every ring was full (" +
                         std::to_string(opts_.capacity_per_rank) + " slots on each of " + std::to_string(rings_) +
                         " ranks); pop elements first, construct the queue with a larger "
                         "relaxed_queue_options::capacity_per_rank, or call "
                         "try_push, which returns false instead of throwing");
  }

  /// Pops the oldest head among options().ncand random non-empty rings; std::nullopt when every ring was empty.
  std::optional<T> try_pop() { return try_pop(opts_.ncand); }
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
    const std::size_t want = std::min<std::size_t>(static_cast<std::size_t>(ncand), static_cast<std::size_t>(rings_));
    return opts_.algorithm == relaxed::algorithm::lock_based ? pop_locked(want) : pop_lock_free(want);
  }

  /// Collective: the number of elements once every rank's earlier operations have completed.
  std::size_t size() const {
    reg_.check();
    team().barrier();
    const int me = me_;
    std::uint64_t mine;
    if (opts_.algorithm == relaxed::algorithm::lock_based) {
      mine = atomic_load(state_word(me)) & count_mask;
    } else {
      mine = atomic_load(enqueue_word(me)) -
             atomic_load(dequeue_word(me));
    }
    const auto total = team().allreduce(mine, op::sum{});
    team().barrier();
    return static_cast<std::size_t>(total);
  }

  const relaxed_queue_options& options() const { return opts_; }
  /// Slots in all rings together.
  std::size_t capacity() const { return opts_.capacity_per_rank * static_cast<std::size_t>(rings_); }
  /// The synchronised clock (ns) that stamps elements; see clock_error_bound_ns for its accuracy.
  std::uint64_t now() const { return clock_.now(); }
  /// The largest residual error of any rank's clock offset (half the best ping-pong round trip).
  std::int64_t clock_error_bound_ns() const { return clock_.error_bound_ns(); }

 private:
  static constexpr std::uint64_t count_mask = 0xffffffffull;
  static constexpr std::uint64_t locked = std::uint64_t{1} << 63;  // lock_based: the lock bit of the state word

  struct position_index {
    std::uint64_t position = 0;
    std::uint64_t index = 0;  // position % capacity_per_rank
  };

  struct candidate {
    int ring;
    std::uint64_t position;  // lock_based: the ring's state word (unlocked); lock_free: the dequeue position
    item_type item;
  };

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

  detail::ring_rng seeded(std::uint64_t seed) const {
    return detail::ring_rng(seed ^ (static_cast<std::uint64_t>(me_) + 1) * 0xd1b54a32d192ed03ull);
  }

  global_ptr<std::uint64_t> header_word(int ring, std::size_t field_offset) const {
    const auto header = headers_[static_cast<std::size_t>(ring)];  // ring = team rank; the pointer names its rank
    return global_ptr<std::uint64_t>(header.rank(), header.offset() + field_offset);
  }
  global_ptr<std::uint64_t> lock_word(int ring) const {
    return header_word(ring, offsetof(detail::relaxed_ring_header, lock));
  }
  global_ptr<std::uint64_t> state_word(int ring) const {
    return header_word(ring, offsetof(detail::relaxed_ring_header, state));
  }
  global_ptr<std::uint64_t> enqueue_word(int ring) const {
    return header_word(ring, offsetof(detail::relaxed_ring_header, enqueue_pos));
  }
  global_ptr<std::uint64_t> dequeue_word(int ring) const {
    return header_word(ring, offsetof(detail::relaxed_ring_header, dequeue_pos));
  }
  /// The slot of `ring` at index `index` < 2 * capacity_per_rank (lock_based: head + count), wrapped by one compare.
  global_ptr<slot_type> slot_at(int ring, std::uint64_t index) const {
    if (index >= opts_.capacity_per_rank) index -= opts_.capacity_per_rank;
    return slots_[static_cast<std::size_t>(ring)] + static_cast<std::ptrdiff_t>(index);
  }
  /// The slot of lock_free position `position` of `ring`. Positions mostly move on by a little from the one last
  /// seen for the ring, so the slot index follows from that one's by an addition; a division (tens of cycles, the
  /// largest part of a pop's own work) only when the position jumped or went back.
  global_ptr<slot_type> slot_of_position(std::vector<position_index>& seen, int ring, std::uint64_t position) const {
    auto& last = seen[static_cast<std::size_t>(ring)];
    const std::uint64_t step = position - last.position;
    last.index = step < opts_.capacity_per_rank ? last.index + step : position % opts_.capacity_per_rank;
    if (last.index >= opts_.capacity_per_rank) last.index -= opts_.capacity_per_rank;
    last.position = position;
    return slot_at(ring, last.index);
  }
  static global_ptr<std::uint64_t> sequence_of(global_ptr<slot_type> slot) {
    return slot.template reinterpret<std::uint64_t>();
  }
  static global_ptr<item_type> item_of(global_ptr<slot_type> slot) {
    return global_ptr<item_type>(slot.rank(), slot.offset() + detail::relaxed_item_offset<T>);
  }
  std::uint64_t& cached(std::vector<std::uint64_t>& cache, int ring) { return cache[static_cast<std::size_t>(ring)]; }

  // ---- lock_based ----------------------------------------------------------------------------------------------
  // The lock is bit 63 of the ring's state word: taking it is one compare_exchange from the state last seen here
  // (a wrong guess costs one more: the failed exchange returns the current state), and the store that writes the
  // new state releases it. A ring that an unlocked observation shows empty (pop) or full (push) is passed over
  // without locking. Shared mode registers as a shared holder on the lock word before and leaves after.

  static std::uint64_t head_of(std::uint64_t state) { return (state & ~locked) >> 32; }
  static std::uint64_t count_of(std::uint64_t state) { return state & count_mask; }
  static std::uint64_t pack(std::uint64_t head, std::uint64_t count) { return head << 32 | count; }

  enum class grab { held, passed, busy };

  /// Takes `ring`'s lock if an unlocked observation of its state satisfies `wanted`: held (the state as taken in
  /// *state), passed (not wanted; nothing held), or busy (locked by another, and `wait` is false). With `wait`, a
  /// held lock is waited for by reading the word, not by exchanges that would slow its holder.
  template <class Wanted>
  grab acquire(int ring, bool wait, Wanted wanted, std::uint64_t& state) {
    const auto word = state_word(ring);
    std::uint64_t seen = cached(state_cache_, ring);
    if (!wanted(seen)) seen = atomic_load(word);  // the last state seen says no: look before passing or locking
    const bool shared = opts_.mode == relaxed::lock_mode::shared;
    if (shared) fetch_add(lock_word(ring), std::uint64_t{1});  // shared holder first (MPI_LOCK_SHARED)
    grab outcome = grab::busy;
    detail::spin_waiter pause;
    for (;;) {
      if ((seen & locked) != 0) {
        if (!wait) break;
        pause();
        seen = atomic_load(word);
        continue;
      }
      cached(state_cache_, ring) = seen;
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
    if (shared) fetch_add(lock_word(ring), ~std::uint64_t{0});  // -1: leave as shared holder
    return outcome;
  }

  /// Stores `state` (unlocked) into a ring held here: writes it and releases the lock in one atomic.
  void release(int ring, std::uint64_t state) {
    atomic_store(state_word(ring), state);
    cached(state_cache_, ring) = state;
    if (opts_.mode == relaxed::lock_mode::shared) fetch_add(lock_word(ring), ~std::uint64_t{0});
  }

  /// One attempt to store `value` in `ring`; false when that ring is full.
  bool store(int ring, const T& value) {
    return opts_.algorithm == relaxed::algorithm::lock_based ? push_locked(ring, value) : push_lock_free(ring, value);
  }

  bool push_locked(int ring, const T& value) {
    const std::uint64_t capacity = opts_.capacity_per_rank;
    std::uint64_t state = 0;
    if (acquire(ring, true, [capacity](std::uint64_t s) { return count_of(s) < capacity; }, state) != grab::held) {
      return false;  // full
    }
    const std::uint64_t head = head_of(state), count = count_of(state);
    // Stamped under the lock, so each ring holds its elements in stamp order (up to the clock error).
    put(item_of(slot_at(ring, head + count)), item_type{clock_.now(), value});
    release(ring, pack(head, count + 1));
    return true;
  }

  std::optional<relaxed::stamped<T>> pop_locked(std::size_t want) {
    held_.clear();
    auto nonempty = [](std::uint64_t s) { return count_of(s) > 0; };
    std::uint64_t state = 0;
    if (want >= static_cast<std::size_t>(rings_)) {
      // Every ring a candidate: lock them all in ring order, waiting for each. Poppers that wait only ever wait for a
      // ring above every ring they hold, and the others never wait while holding one, so nobody deadlocks and no
      // pop has to let go and start over (with one-sided atomics that need the target's CPU, each restart of every
      // contender costs round trips to every ring).
      for (int ring = 0; ring < rings_; ++ring) {
        if (acquire(ring, true, nonempty, state) == grab::held) {
          held_.push_back({ring, state, get(item_of(slot_at(ring, head_of(state))))});
        }
      }
    } else {
      pop_order_.restart();
      std::size_t target = want;
      int busy = 0;
      int restarts = 0;
      detail::spin_waiter pause;
      while (held_.size() < target && pop_order_.remaining() > 0) {
        const std::size_t position = pop_order_.pick(rng_);
        const int ring = pop_order_.ring_at(position);
        const grab g = acquire(ring, false, nonempty, state);
        if (g == grab::held) {
          pop_order_.take(position);
          held_.push_back({ring, state, get(item_of(slot_at(ring, head_of(state))))});
          busy = 0;
        } else if (g == grab::passed) {
          pop_order_.take(position);
          // One ring fewer to choose from: the paper's navail, and ncand shrinks with it.
          target = std::min(target, held_.size() + pop_order_.remaining());
        } else if (!held_.empty() && ++busy >= opts_.max_nattempts) {
          // Another popper may hold what we wait for while it waits for ours: release all, back off, start over.
          for (const auto& c : held_) release(c.ring, c.position);
          held_.clear();
          pop_order_.restart();
          target = want;
          busy = 0;
          back_off(++restarts);
        } else {
          pause();
        }
      }
    }
    if (held_.empty()) return std::nullopt;
    const auto& best = oldest();
    const std::uint64_t head = head_of(best.position), count = count_of(best.position);
    relaxed::stamped<T> out{best.item.value, best.item.stamp, clock_.now(), best.ring};
    for (const auto& c : held_) {
      release(c.ring, c.ring == best.ring ? pack((head + 1) % opts_.capacity_per_rank, count - 1) : c.position);
    }
    return out;
  }

  // ---- lock_free -----------------------------------------------------------------------------------------------
  // Positions only grow; slot = position % capacity. Position e may be written once e < dequeue_pos + capacity: the
  // pop that claimed e - capacity read its element before its claim, and a pop still reading it fails its claim.
  // The caches hold lower bounds of the counters (guesses for the claims, bounds for the room check).

  bool push_lock_free(int ring, const T& value) {
    // Stamped before the claim: between its claim and its publication a push hides the ring's later elements from
    // pops, so that window holds only the put.
    const item_type item{clock_.now(), value};
    const auto enqueue = enqueue_word(ring);
    std::uint64_t pos = cached(enqueue_cache_, ring);
    for (;;) {
      if (pos >= cached(dequeue_cache_, ring) + opts_.capacity_per_rank) {  // may be full: read the pops' counter
        cached(dequeue_cache_, ring) = std::max(cached(dequeue_cache_, ring), atomic_load(dequeue_word(ring)));
        if (pos >= cached(dequeue_cache_, ring) + opts_.capacity_per_rank) return false;
      }
      const std::uint64_t seen = compare_exchange(enqueue, pos, pos + 1);
      if (seen == pos) break;
      pos = seen;  // another pusher claimed `pos` (or the guess was old): try the current position
    }
    cached(enqueue_cache_, ring) = pos + 1;
    const auto slot = slot_of_position(push_slots_, ring, pos);
    put(item_of(slot), item);
    atomic_store(sequence_of(slot), pos + 1);  // publish
    return true;
  }

  std::optional<relaxed::stamped<T>> pop_lock_free(std::size_t want) {
    for (int restarts = 0;; ++restarts) {
      held_.clear();
      pop_order_.restart();
      while (held_.size() < want && pop_order_.remaining() > 0) {
        const std::size_t position = pop_order_.pick(rng_);
        const int ring = pop_order_.ring_at(position);
        pop_order_.take(position);
        std::uint64_t pos = 0;
        global_ptr<slot_type> slot;
        if (ready_head(ring, pos, slot)) held_.push_back({ring, pos, get(item_of(slot))});
      }
      if (held_.empty()) return std::nullopt;
      const auto& best = oldest();
      const std::uint64_t seen = compare_exchange(dequeue_word(best.ring), best.position, best.position + 1);
      if (seen == best.position) {
        cached(dequeue_cache_, best.ring) = best.position + 1;
        return relaxed::stamped<T>{best.item.value, best.item.stamp, clock_.now(), best.ring};
      }
      back_off(restarts);  // another popper took that head first
    }
  }

  /// True when the head slot of `ring` holds a published element (its dequeue position in `pos`, the slot in
  /// `slot`); false when the ring is empty, or when its only element is claimed but not yet published.
  bool ready_head(int ring, std::uint64_t& pos, global_ptr<slot_type>& slot) {
    const auto dequeue = dequeue_word(ring);
    detail::spin_waiter pause;
    for (;;) {
      pos = atomic_load(dequeue);
      cached(dequeue_cache_, ring) = std::max(cached(dequeue_cache_, ring), pos);
      slot = slot_of_position(pop_slots_, ring, pos);
      const auto lag = static_cast<std::int64_t>(atomic_load(sequence_of(slot)) - (pos + 1));
      if (lag == 0) return true;
      if (lag < 0) {
        // Not published: the ring is empty, or a push has claimed `pos` and not published it yet. When later pushes
        // are queued behind it, wait for the publication: a pusher descheduled between its claim and its publication
        // would otherwise hide all of them from every pop for as long as it is off the CPU (at 3 ranks on 2 busy
        // cores: mean rank errors of 60, max 276). Passing over a ring hides at most its element in flight.
        if (atomic_load(enqueue_word(ring)) <= pos + 1) return false;
        pause();
      }
      // lag > 0: the slot holds a later lap's element, so other pops took `pos` meanwhile; look again.
    }
  }

  // ---- shared ----------------------------------------------------------------------------------------------------

  const candidate& oldest() const {
    return *std::min_element(held_.begin(), held_.end(), [](const candidate& a, const candidate& b) {
      return a.item.stamp != b.item.stamp ? a.item.stamp < b.item.stamp : a.ring < b.ring;
    });
  }

  /// A random pause that grows with the number of restarts (up to 2^10 waiting steps: progress, then yield, then
  /// short sleeps once the wait is long, so that a contender sharing this core gets to finish).
  void back_off(int restarts) {
    const std::uint64_t limit = std::uint64_t{1} << std::min(restarts, 10);
    detail::spin_waiter pause;
    for (std::uint64_t i = rng_.below(limit); i > 0; --i) pause();
  }

  registration reg_;  // the team; frees the rings collectively (docs/design.md, "Lifetime")
  relaxed_queue_options opts_;
  int me_;
  int rings_;
  detail::ring_order pop_order_;
  detail::ring_order push_order_;
  detail::ring_rng rng_;
  synchronized_clock clock_;
  std::vector<std::uint64_t> state_cache_;    // lock_based: each ring's state as last seen here (a guess)
  std::vector<std::uint64_t> enqueue_cache_;  // lock_free: lower bounds of each ring's counters
  std::vector<std::uint64_t> dequeue_cache_;
  std::vector<position_index> push_slots_, pop_slots_;  // lock_free: the last position's slot, per ring
  std::vector<global_ptr<detail::relaxed_ring_header>> headers_;
  std::vector<global_ptr<slot_type>> slots_;
  std::vector<candidate> held_;
};

}  // namespace shoal
