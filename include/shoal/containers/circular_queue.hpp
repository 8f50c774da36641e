// shoal/containers/circular_queue.hpp — shoal::circular_queue<T>: BCL's CircularQueue, a hosted multi-reader,
// multi-writer ring buffer whose atomicity is chosen per call by a concurrency promise (BCL Table 4).
//
// Model: one-sided (RDMA), hosted. The values and four counters live in the host's symmetric heap: head / tail
// count claimed slots, head_ready / tail_ready count completed pops / pushes. A push may only overwrite slots whose
// pop completed (below head_ready + capacity); a pop only reads slots whose push completed (below tail_ready).
//
// Operations and their implementations (n values; R read, W write, A atomic, B barrier, l local CPU work; a
// value that wraps around the end of the ring costs one more W or R). Who: collective = every rank of the queue's
// team, in the same order; any rank = one rank's call; host only = the host's call alone:
//   circular_queue<T> q(host, capacity, team = world())  collective  B + 2 broadcasts  (host: a team rank)
//   try_push(v | span)    any rank, promise::any (default)  2 A + W   CAS tail (claim), put + flush, CAS tail_ready
//                                                                     from the claim's start (waits for earlier
//                                                                     pushes)                              Table 4a
//                         any rank, promise::push           2 A + W   fetch_add tail, put + flush, fetch_add
//                                                                     tail_ready                           4b
//                         host only, promise::local         l         memcpy and local counters            4c
//   push(v | span)        as try_push                                 container_full instead of false
//   try_pop() / try_pop(out, n)
//                         any rank, promise::any (default)  2 A + R   CAS head, get, CAS head_ready in claim order
//                                                                                                          4d
//                         any rank, promise::pop            2 A + R   fetch_add head, get, fetch_add head_ready 4e
//                         host only, promise::local         l                                              4f
//   size(), empty()       any rank                          2 A       values in the queue, exact between phases
//   resize(capacity)      collective                        2 B + l   keeps the values; capacity >= size()
//   migrate(new_host)     collective                        2 B + n R + 2 A
//   ~circular_queue       collective                        B, then the host frees (no-op after finalize)
// Each handle caches the counters it last saw: a push re-reads head_ready (one more A) only when the cache says
// full, a pop re-reads tail_ready only when it says empty, and the default path starts its CAS from the cached
// claim counter (one more A per claim of another rank that got in first). The fully atomic paths cost 2 A + W / R
// when uncontended, as in BCL; they never use BCL's fetch_add-then-undo claim, which can leave a hole that blocks
// every later push when pops run concurrently.
// In the promise::push / promise::pop paths a claim that does not fit hands its slots back with one more A.
//
// Promises (containers/promise.hpp): the promise names what may run concurrently, anywhere, until the next
// barrier. try_push(v, promise::push): only pushes; try_pop(promise::pop): only pops; promise::local: only the host
// works on the queue. promise::push | promise::pop (or the default promise::any) selects the fully atomic path. Each
// variant gives the same results in the phases it allows.
//
// Full queue: try_push returns false ([[nodiscard]]) and writes nothing (all or nothing for a span); push throws
// container_full (naming the capacity) and writes nothing; capacity is the constructor's argument (or resize).
// Empty queue: try_pop returns std::nullopt / 0 (try_pop(out, n) takes up to n; empty is an answer, not an error).
// Errors: usage_error (host outside the team, capacity 0, resize below size(), a moved-from handle,
// promise::local on a rank other than the host), heap_exhausted (raise SHOAL_HEAP_SIZE) — on every rank.
// Handles are move-only; only the host's object frees the storage, and a moved-from handle owns nothing (see
// fast_queue.hpp). Element types: trivially copyable (concept shoal::remote_storable).
//
// Example (a work queue on rank 0 that every rank feeds and drains at the same time):
//   shoal::circular_queue<std::uint64_t> work(0, 4096);                  // collective
//   if (!work.try_push(shoal::rank())) { /* full: retry later */ }        // fully atomic
//   while (auto task = work.try_pop()) process(*task);                    // concurrent with other ranks' pushes
//   shoal::barrier();
//   std::vector<std::uint64_t> batch(64, 7);
//   work.push(std::span<const std::uint64_t>(batch), shoal::promise::push);   // a push-only phase: 4b; throws
//                                                                             // container_full if it is full
//   shoal::barrier();
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "shoal/containers/detail/hosted_ring.hpp"
#include "shoal/containers/detail/ring_queue.hpp"
#include "shoal/containers/promise.hpp"

namespace shoal {

template <remote_storable T>
class circular_queue : public detail::ring_queue<circular_queue<T>, T> {
  using base = detail::ring_queue<circular_queue<T>, T>;
  friend base;

 public:
  /// A push without a promise is fully atomic (pushes and pops may run at once).
  static constexpr concurrency default_push = promise::any;

  /// Collective: every rank constructs the queue with the same host and capacity.
  circular_queue(int host, std::size_t capacity, const shoal::team& team = shoal::world())
      : base(host, capacity, "circular_queue", team) {}

  /// Pops one value; std::nullopt when the queue is empty.
  std::optional<T> try_pop(concurrency promised = promise::any) {
    const auto path = checked_path(promised, promise::pop, "try_pop");
    const auto r = ring_.reserve(path, head, tail_ready, 0, 1, detail::claim::up_to);
    if (r.count == 0) return std::nullopt;
    T value;
    ring_.read(r, &value, path);
    ring_.publish(path, head_ready, r);
    return value;
  }

  /// Pops up to n values and appends them to out; returns how many (0 when empty).
  std::size_t try_pop(std::vector<T>& out, std::size_t n, concurrency promised = promise::any) {
    const auto path = checked_path(promised, promise::pop, "try_pop");
    if (n == 0) return 0;
    const auto r = ring_.reserve(path, head, tail_ready, 0, n, detail::claim::up_to);
    if (r.count == 0) return 0;
    out.resize(out.size() + r.count);
    ring_.read(r, out.data() + (out.size() - r.count), path);
    ring_.publish(path, head_ready, r);
    return r.count;
  }

 private:
  using base::ring_;
  using word = detail::ring_word;
  static constexpr auto head = word::head;
  static constexpr auto tail = word::tail;
  static constexpr auto head_ready = word::head_ready;
  static constexpr auto tail_ready = word::tail_ready;

  bool push_values(std::span<const T> values, concurrency promised, const char* name) {
    const auto path = checked_path(promised, promise::push, name);
    if (values.empty()) return true;
    const auto r =
        ring_.reserve(path, tail, head_ready, this->capacity(), values.size(), detail::claim::all_or_nothing);
    if (r.count == 0) return false;
    ring_.write(r, values.data(), path);
    ring_.publish(path, tail_ready, r);
    return true;
  }

  detail::queue_path checked_path(concurrency promised, concurrency operation, const char* name) const {
    const auto path = detail::select_queue_path(promised, operation);
    if (path == detail::queue_path::local) ring_.check_host(name);
    else ring_.check_valid();
    return path;
  }
};

}  // namespace shoal
