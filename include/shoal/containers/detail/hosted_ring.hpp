// shoal/containers/detail/hosted_ring.hpp — the mechanism shared by fast_queue and circular_queue: a ring of
// `capacity` slots and four 64-bit position counters in the host's heap, plus the three ways of claiming slots.
//
// Positions only grow (slot = position % capacity): head / tail count the slots claimed by pops / pushes;
// head_ready / tail_ready count the slots whose pop / push has completed (circular_queue only; fast_queue works on
// head and tail alone). A push may write the slots [p, p + n) when p + n <= head_ready + capacity (the old values
// were read); a pop may read [p, p + n) when p + n <= tail_ready (the values were written).
//
// Claiming slots (`reserve_*`) on a counter, bounded by another word plus a slack (capacity for pushes, 0 for pops):
//   reserve_atomic    compare_exchange on the counter, starting from the cached value: correct under any
//                     concurrency; 1 A when the cache is right, 1 A more per concurrent claim that got in first.
//   reserve_in_phase  one fetch_add; a claim that does not fit hands back its excess with a second fetch_add.
//                     Correct only while the bound does not move (a phase of only pushes or only pops): then every
//                     claim that starts past a claim that failed also fails, so hand-backs never leave holes.
//                     A claim that cannot fit even from the cached counter (a lower bound) is refused without
//                     claiming, so a full queue costs 1 A and never disturbs concurrent claims.
//   reserve_local     the host alone, plain CPU atomics on its own memory, no remote operation.
// The bound is read from a per-handle cache and re-read (1 A) only when the cached value says "no room": counters
// only grow, so a cached value is a safe lower bound.
//
// Publishing completion (circular_queue): `publish_in_order` CASes the ready counter from p to p + n, so it waits
// for every earlier claim to complete (needed while the other side reads the ready counter); `publish_any_order`
// is one fetch_add (enough when nobody reads the ready counter before the next barrier).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/detail/fixed_divisor.hpp"
#include "shoal/containers/detail/hosted_allocation.hpp"
#include "shoal/containers/promise.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

enum class ring_word : std::size_t { head = 0, tail = 1, head_ready = 2, tail_ready = 3 };

/// How many slots a claim takes when fewer than asked are free.
enum class claim { all_or_nothing, up_to };

/// The implementation a queue operation takes, chosen from its concurrency promise.
enum class queue_path { atomic, phase, local };

/// `operation` is promise::push or promise::pop. promise::local alone -> local; a promise allowing only
/// `operation` -> phase (only operations of the same kind run concurrently); anything wider -> atomic.
constexpr queue_path select_queue_path(concurrency promised, concurrency operation) {
  if (promised.within(promise::local)) return queue_path::local;
  if (promised.within(operation)) return queue_path::phase;
  return queue_path::atomic;
}

struct slot_range {
  std::uint64_t first = 0;
  std::size_t count = 0;
};

/// Future state of an asynchronous ring write: owns the values until the puts have completed at the host.
template <class T>
struct ring_write_state final : shoal::layer::future_state<bool> {
  std::vector<T> values;
  std::vector<future<void>> pieces;
  int host = 0;  // environment rank
  bool test() override {
    if (done) return true;
    for (auto& piece : pieces)
      if (!piece.ready()) return false;
    shoal::flush(host);  // the values are at the host, not only out of our buffer
    set_value(true);
    return true;
  }
};

template <remote_storable T>
class hosted_ring {
 public:
  using position = std::uint64_t;

  hosted_ring() = default;

  /// Collective over `team`: team rank `host` allocates the counters and `capacity` slots.
  hosted_ring(int host, std::size_t capacity, const char* container, const shoal::team& team)
      : container_(container), reg_(team, std::string("shoal::") + container) {
    check_capacity(capacity);
    control_ = hosted_allocation<position>(reg_, host, word_count);
    set_data(hosted_allocation<T>(reg_, host, capacity));
    if (is_host()) set_local_positions(0, 0);
    reset_cache(0);
    team.barrier();  // the counters are zero before anyone claims a slot
  }

  const shoal::team& team() const noexcept { return reg_.team(); }

  int host() const noexcept { return data_.host(); }
  std::size_t capacity() const noexcept { return data_.count(); }
  bool is_host() const { return data_.on_this_rank(); }
  const char* container() const noexcept { return container_; }

  /// Throws usage_error when the handle owns nothing (moved from).
  void check_valid() const { reg_.check(); }
  /// Throws usage_error unless the calling rank is the host (for promise::local).
  void check_host(const char* operation) const {
    check_valid();
    if (!is_host()) {
      throw usage_error(std::string("shoal::") + container_ + "::" + operation + " with promise::local on rank " +
                         std::to_string(reg_.rank()) + ": only the host (rank " + std::to_string(host()) +
                        ") may use the local promise; other ranks use promise::push / promise::pop / the default");
    }
  }

  /// The error of a throwing push (`push`, not `try_push`) whose n values did not fit.
  [[noreturn]] void throw_full(std::size_t n) const {
    throw container_full(std::string("shoal::") + container_ + "::push: " + std::to_string(n) +
                         " value(s) do not fit: the queue (capacity " + std::to_string(capacity()) +
                         ", hosted on rank " + std::to_string(host()) +
                         ") is full; pop values first, give it a larger capacity (the constructor or resize), or "
                         "call try_push, which returns false instead of throwing");
  }

  global_ptr<position> word(ring_word w) const { return control_.ptr() + static_cast<std::ptrdiff_t>(w); }

  /// Atomic read of a counter (1 A); refreshes the cache.
  position load(ring_word w) {
    const position v = atomic_load(word(w));
    note(w, v);
    return v;
  }

  /// Values between head and tail (2 A); exact between phases. During a phase, claims in flight may put head
  /// past tail for a moment: that reads as 0.
  /// The values read here do not enter the cache: mid-phase they may include claims that are being handed back,
  /// and the cache must stay a lower bound of what the counters settle to.
  std::size_t size() const {
    check_valid();
    const position h = atomic_load(word(ring_word::head));
    const position t = atomic_load(word(ring_word::tail));
    return t > h ? static_cast<std::size_t>(t - h) : 0;
  }

  // ---- claiming slots -----------------------------------------------------------------------------------------

  /// Claims slots on the path chosen by a queue's promise.
  slot_range reserve(queue_path path, ring_word counter, ring_word bound, std::size_t slack, std::size_t n,
                     claim how) {
    switch (path) {
      case queue_path::local: return reserve_local(counter, bound, slack, n, how);
      case queue_path::phase: return reserve_in_phase(counter, bound, slack, n, how);
      default: return reserve_atomic(counter, bound, slack, n, how);
    }
  }

  slot_range reserve_atomic(ring_word counter, ring_word bound, std::size_t slack, std::size_t n, claim how) {
    position first = cached(counter);
    for (;;) {
      const std::size_t take = fitting(first, bound, slack, n, how);
      if (take == 0) return {first, 0};
      const position seen = compare_exchange(word(counter), first, first + take);
      if (seen == first) {
        note(counter, first + take);
        return {first, take};
      }
      first = seen;  // another claim got in first: retry from where it ended
    }
  }

  slot_range reserve_in_phase(ring_word counter, ring_word bound, std::size_t slack, std::size_t n, claim how) {
    // The cached counter is a lower bound: if even from there nothing fits, the claim cannot fit now. Not claiming
    // at all keeps a doomed claim from making concurrent claims fail while it is handed back.
    if (fitting(cached(counter), bound, slack, n, how) == 0) return {cached(counter), 0};
    const position first = fetch_add(word(counter), position{n});
    const std::size_t take = fitting(first, bound, slack, n, how);
    if (take < n) fetch_add(word(counter), position{0} - position{n - take});  // hand back what does not fit
    if (take > 0) note(counter, first + take);
    return {first, take};
  }

  slot_range reserve_local(ring_word counter, ring_word bound, std::size_t slack, std::size_t n, claim how) {
    auto c = local_ref(counter);
    const position first = c.load(std::memory_order_relaxed);
    const position limit = local_ref(bound).load(std::memory_order_acquire) + slack;
    const std::size_t room = limit > first ? static_cast<std::size_t>(limit - first) : 0;
    const std::size_t take = how == claim::up_to ? std::min(room, n) : (room >= n ? n : 0);
    c.store(first + take, std::memory_order_release);
    note(counter, first + take);
    return {first, take};
  }

  // ---- publishing completion (circular_queue) -----------------------------------------------------------------

  /// Marks the claimed slots r complete on the `ready` counter, on the path chosen by the promise.
  void publish(queue_path path, ring_word ready, slot_range r) {
    switch (path) {
      case queue_path::local: publish_local(ready, r.first + r.count); break;
      case queue_path::phase: publish_any_order(ready, r.count); break;
      default: publish_in_order(ready, r.first, r.count); break;
    }
  }

  void publish_in_order(ring_word ready, position first, std::size_t n) {
    // Waits for the earlier claims: spins briefly (the predecessor is usually a few operations from done), then
    // yields, so that a predecessor sharing this core (oversubscribed ranks) gets to finish.
    wait_until([&] { return compare_exchange(word(ready), first, first + n) == first; });
    note(ready, first + n);
  }
  void publish_any_order(ring_word ready, std::size_t n) { note(ready, fetch_add(word(ready), position{n}) + n); }
  void publish_local(ring_word ready, position value) {
    local_ref(ready).store(value, std::memory_order_release);
    note(ready, value);
  }

  // ---- moving values ------------------------------------------------------------------------------------------

  /// Writes n values to the slots starting at `first`; complete at the host on return (W per piece, 2 on wrap).
  void write(position first, const T* src, std::size_t n) {
    for_each_piece(first, n, [&](std::size_t slot, std::size_t done, std::size_t count) {
      put(data_.ptr() + static_cast<std::ptrdiff_t>(slot), src + done, count);
    });
  }
  /// Starts writing `values` (owned by the future until complete); the future is ready with true when the values
  /// are at the host.
  future<bool> async_write(position first, std::vector<T> values) {
    auto state = shoal::layer::make_state<ring_write_state<T>>();
    state->values = std::move(values);
    state->host = data_.ptr().rank();
    for_each_piece(first, state->values.size(), [&](std::size_t slot, std::size_t done, std::size_t count) {
      state->pieces.push_back(async_put(data_.ptr() + static_cast<std::ptrdiff_t>(slot),
                                        state->values.data() + done, count));
    });
    return future<bool>(std::move(state));
  }
  /// Reads n values from the slots starting at `first` (R per piece, 2 on wrap).
  void read(position first, T* dst, std::size_t n) {
    for_each_piece(first, n, [&](std::size_t slot, std::size_t done, std::size_t count) {
      get(data_.ptr() + static_cast<std::ptrdiff_t>(slot), dst + done, count);
    });
  }
  void write_local(position first, const T* src, std::size_t n) {
    T* slots = data_.local();
    for_each_piece(first, n, [&](std::size_t slot, std::size_t done, std::size_t count) {
      std::memcpy(static_cast<void*>(slots + slot), src + done, count * sizeof(T));
    });
  }
  void read_local(position first, T* dst, std::size_t n) {
    const T* slots = data_.local();
    for_each_piece(first, n, [&](std::size_t slot, std::size_t done, std::size_t count) {
      std::memcpy(static_cast<void*>(dst + done), slots + slot, count * sizeof(T));
    });
  }

  /// Writes / reads the claimed slots remotely, or with memcpy on the local path.
  void write(slot_range r, const T* src, queue_path path) {
    if (path == queue_path::local) write_local(r.first, src, r.count);
    else write(r.first, src, r.count);
  }
  void read(slot_range r, T* dst, queue_path path) {
    if (path == queue_path::local) read_local(r.first, dst, r.count);
    else read(r.first, dst, r.count);
  }

  // ---- collective changes of size and place -------------------------------------------------------------------

  /// Collective. Ends the current phase, moves the live values to a ring of `new_capacity` slots on the same host.
  void resize(std::size_t new_capacity) {
    check_valid();
    check_capacity(new_capacity);
    team().barrier();  // every operation of the phase on the old ring is complete
    position live = 0;
    if (is_host()) live = local_ref(ring_word::tail).load() - local_ref(ring_word::head).load();
    live = team().broadcast(live, host());
    if (new_capacity < live) {
      throw usage_error(std::string("shoal::") + container_ + "::resize(" + std::to_string(new_capacity) +
                        "): the queue holds " + std::to_string(live) + " values; pass a capacity of at least " +
                        std::to_string(live) + " (the contents are unchanged)");
    }
    hosted_allocation<T> fresh(reg_, host(), new_capacity);  // on failure every rank throws, contents intact
    if (is_host()) {
      const position head = local_ref(ring_word::head).load();
      read_local(head, fresh.local(), static_cast<std::size_t>(live));
      set_local_positions(0, live);
    }
    reg_.deallocate(data_.ptr());  // the host frees the old ring
    set_data(std::move(fresh));
    reset_cache(live);
    team().barrier();  // nobody claims a slot before the host has rewritten the counters
  }

  /// Collective. Ends the current phase and moves the queue (counters and live values) to `new_host`.
  void migrate(int new_host) {
    check_valid();
    reg_.check_host(new_host);
    team().barrier();
    if (new_host == host()) return;
    hosted_allocation<position> control(reg_, new_host, word_count);
    hosted_allocation<T> data(reg_, new_host, capacity());
    position live = 0;
    if (reg_.rank() == new_host) {
      const position head = atomic_load(word(ring_word::head));
      live = atomic_load(word(ring_word::tail)) - head;
      read(head, data.local(), static_cast<std::size_t>(live));  // nR from the old host
      store_positions(control.local(), 0, live);
    }
    live = team().broadcast(live, new_host);
    team().barrier();  // the old host frees only after the new host has read everything
    reg_.deallocate(control_.ptr());  // the old host frees the old storage here
    reg_.deallocate(data_.ptr());
    control_ = std::move(control);
    set_data(std::move(data));
    reset_cache(live);
  }

 private:
  static constexpr std::size_t word_count = 4;

  void check_capacity(std::size_t capacity) const {
    if (capacity == 0) {
      throw usage_error(std::string("shoal::") + container_ + ": capacity must be at least 1");
    }
  }

  std::atomic_ref<position> local_ref(ring_word w) const {
    return std::atomic_ref<position>(control_.local()[static_cast<std::size_t>(w)]);
  }

  static void store_positions(position* words, position head, position tail) {
    const position values[word_count] = {head, tail, head, tail};  // head, tail, head_ready, tail_ready
    for (std::size_t i = 0; i < word_count; ++i) std::atomic_ref<position>(words[i]).store(values[i]);
  }
  void set_local_positions(position head, position tail) { store_positions(control_.local(), head, tail); }

  position& cached(ring_word w) { return cache_[static_cast<std::size_t>(w)]; }
  void note(ring_word w, position v) { cached(w) = std::max(cached(w), v); }
  void reset_cache(position live) { cache_ = {0, live, 0, live}; }

  /// How many of n slots from `first` fit under bound + slack; re-reads the bound (1 A) only when the cache says
  /// that too few fit.
  std::size_t fitting(position first, ring_word bound, std::size_t slack, std::size_t n, claim how) {
    auto room = [&] {
      const position limit = cached(bound) + slack;
      return limit > first ? static_cast<std::size_t>(limit - first) : std::size_t{0};
    };
    std::size_t r = room();
    if (r < n) {
      load(bound);
      r = room();
    }
    if (how == claim::up_to) return std::min(r, n);
    return r >= n ? n : 0;
  }

  /// The ring's slots, and the division of positions by their number (every operation's first slot is its position
  /// modulo the capacity: without a `div` instruction, fixed_divisor.hpp). The only writer of both.
  void set_data(hosted_allocation<T>&& data) {
    data_ = std::move(data);
    by_capacity_ = fixed_divisor(capacity());
  }

  /// Calls fn(slot, done, count) for the contiguous pieces of n slots starting at position `first`.
  template <class Fn>
  void for_each_piece(position first, std::size_t n, Fn&& fn) const {
    const std::size_t cap = capacity();
    std::size_t slot = static_cast<std::size_t>(by_capacity_.remainder(first));
    for (std::size_t done = 0; done < n;) {
      const std::size_t count = std::min(n - done, cap - slot);
      fn(slot, done, count);
      done += count;
      slot = 0;
    }
  }

  const char* container_ = "queue";
  registration reg_;  // declared before the blocks it owns
  hosted_allocation<position> control_;
  hosted_allocation<T> data_;  // written by set_data only
  fixed_divisor by_capacity_;  // divides by data_'s count (set_data)
  std::array<position, word_count> cache_{};
};

}  // namespace shoal::detail
