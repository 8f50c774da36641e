// shoal/containers/fast_queue.hpp — shoal::fast_queue<T>: BCL's FastQueue, a hosted ring buffer for phases of
// pushes or phases of pops.
//
// Model: one-sided (RDMA), hosted. The values and two counters (head, tail) live in the symmetric heap of one rank,
// the host; every rank pushes and pops with remote atomics, puts and gets, never interrupting the host's CPU.
// Contract: a phase (the code between two barriers) holds only pushes or only pops — from any number of ranks.
// For pushes and pops in the same phase use shoal::circular_queue.
//
// Operations (n = number of values; R read, W write, A atomic, B barrier, l local CPU work; "+ wrap" = one more W
// or R when the values wrap around the end of the ring). Who: collective = every rank of the queue's team, in the
// same order; any rank = one rank's call; host only = the host's call alone:
//   fast_queue<T> q(host, capacity, team = world())  collective  B + 2 broadcasts  allocates on the host (a team rank)
//   q.try_push(v) / q.try_push(span)  any rank     A + W (+ wrap)        false (nothing written) if it does not fit
//   q.push(v) / q.push(span)          any rank     A + W (+ wrap)        as try_push; container_full if it does not
//                                                                          fit (nothing written)
//   q.async_try_push(std::vector<T>)  any rank     A + W started         future<bool>: true once the values are at
//                                                                          the host; ready false if it does not fit
//   q.try_pop() / q.try_pop(out, n)   any rank     A + R (+ wrap)        std::optional / count appended to out (up
//                                                                          to n, fewer when fewer are there)
//   q.try_pop(std::span<T> into)      any rank     A + R (+ wrap)        count read into the front of `into` (up to
//                                                                          into.size(); no allocation)
//   push / pop with promise::local    host only    l                     memcpy and local counters, no remote op
//   q.size(), q.empty()               any rank     2 A                   values in the queue, exact between phases
//                                                                          (0 while pops that do not fit are handing
//                                                                          slots back)
//   q.resize(capacity)                collective   2 B + l               keeps the values; capacity >= size()
//   q.migrate(new_host)               collective   2 B + n R + 2 A       keeps the values
//   ~fast_queue                       collective   B                     then the host frees (no-op after finalize)
// The bound of a claim is cached per handle (BCL): a push re-reads head (one more A) only when its cached copy says
// the queue is full; a pop re-reads tail only when the cached copy says empty. A push to a full queue (a pop of an
// empty one) costs 1 A and changes nothing; when this handle's cached counters are stale it claims first and hands
// the slots back: 3 A.
//
// Concurrency promises (containers/promise.hpp): pushes default to promise::push and pops to promise::pop (the
// phase contract). promise::local (host only: only the host works on the queue in this phase) uses CPU operations
// only. A wider promise (e.g. promise::push | promise::pop) is rejected with usage_error: use circular_queue.
//
// Full queue: try_push returns false ([[nodiscard]]) and writes nothing, push throws container_full (naming the
// capacity) and writes nothing; the queue's capacity is the constructor's argument (or resize). Near capacity, a
// push may also see "full" while another push that does not fit is handing its slots back; values are never lost or
// overwritten. Empty queue: try_pop returns std::nullopt / 0 (an empty queue is an answer, not an error).
// Errors: usage_error (host rank outside the team, capacity 0, resize below size(), a moved-from handle, promise
// misuse), heap_exhausted (the host's heap cannot hold the ring; raise SHOAL_HEAP_SIZE) — thrown on every rank.
//
// Handles: move-only. The object on the host owns the storage; moving it (into a vector, out of a function)
// transfers ownership and leaves an empty handle, so no temporary ever frees a live queue (BCL's defect).
// Element types: trivially copyable (concept shoal::remote_storable); other types are rejected at compile time.
//
// Example (each rank hosts one queue; everyone pushes to rank 0's, then rank 0 drains it):
//   std::vector<shoal::fast_queue<int>> queues;
//   for (int r = 0; r < shoal::size(); ++r) queues.emplace_back(r, 1 << 20);   // collective, in the same order
//   std::vector<int> mine = {1, 2, 3};
//   queues[0].push(std::span<const int>(mine));                              // container_full if it is full
//   shoal::barrier();                                                        // push phase ends
//   if (shoal::rank() == 0) {
//     std::vector<int> all;
//     queues[0].try_pop(all, queues[0].capacity(), shoal::promise::local);   // 3 * size() values
//   }
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "shoal/containers/detail/hosted_ring.hpp"
#include "shoal/containers/detail/ring_queue.hpp"
#include "shoal/containers/promise.hpp"

namespace shoal {

template <remote_storable T>
class fast_queue : public detail::ring_queue<fast_queue<T>, T> {
  using base = detail::ring_queue<fast_queue<T>, T>;
  friend base;

 public:
  /// A push without a promise is one of a phase of pushes (the phase contract).
  static constexpr concurrency default_push = promise::push;

  /// Collective: every rank constructs the queue with the same host and capacity.
  fast_queue(int host, std::size_t capacity, const shoal::team& team = shoal::world())
      : base(host, capacity, "fast_queue", team) {}

  /// Claims slots now and starts writing; the future owns the values and becomes ready with true once they are at
  /// the host (so waiting for it, then a barrier, ends the push phase). Ready with false when they do not fit.
  [[nodiscard]] future<bool> async_try_push(std::vector<T> values) {
    checked_path(promise::push, promise::push, "async_try_push");
    if (values.empty()) return make_ready_future(true);
    auto r = ring_.reserve_in_phase(tail, head, this->capacity(), values.size(), detail::claim::all_or_nothing);
    if (r.count == 0) return make_ready_future(false);
    return ring_.async_write(r.first, std::move(values));
  }

  /// Pops one value; std::nullopt when the queue is empty.
  std::optional<T> try_pop(concurrency promised = promise::pop) {
    const auto path = checked_path(promised, promise::pop, "try_pop");
    const auto r = claim_pop(path, 1);
    if (r.count == 0) return std::nullopt;
    T value;
    ring_.read(r, &value, path);
    return value;
  }

  /// Pops up to n values and appends them to out; returns how many (0 when empty).
  std::size_t try_pop(std::vector<T>& out, std::size_t n, concurrency promised = promise::pop) {
    const auto path = checked_path(promised, promise::pop, "try_pop");
    const auto r = claim_pop(path, n);
    out.resize(out.size() + r.count);
    ring_.read(r, out.data() + (out.size() - r.count), path);
    return r.count;
  }

  /// Pops up to into.size() values into the front of `into`; returns how many (0 when empty). Reads straight into
  /// the caller's buffer: no allocation, and none of the zero-filling a vector's resize does before the read.
  std::size_t try_pop(std::span<T> into, concurrency promised = promise::pop) {
    const auto path = checked_path(promised, promise::pop, "try_pop");
    const auto r = claim_pop(path, into.size());
    ring_.read(r, into.data(), path);
    return r.count;
  }

 private:
  using base::ring_;
  static constexpr auto head = detail::ring_word::head;
  static constexpr auto tail = detail::ring_word::tail;

  bool push_values(std::span<const T> values, concurrency promised, const char* name) {
    const auto path = checked_path(promised, promise::push, name);
    if (values.empty()) return true;
    const auto r = ring_.reserve(path, tail, head, this->capacity(), values.size(), detail::claim::all_or_nothing);
    if (r.count == 0) return false;
    ring_.write(r, values.data(), path);
    return true;
  }

  detail::queue_path checked_path(concurrency promised, concurrency operation, const char* name) const {
    const auto path = detail::select_queue_path(promised, operation);
    if (path == detail::queue_path::atomic) {
      throw usage_error(std::string("shoal::fast_queue::") + name +
                        ": the promise allows pushes and pops in the same phase, which fast_queue does not support; "
                        "separate push and pop phases by a barrier, or use shoal::circular_queue");
    }
    if (path == detail::queue_path::local) ring_.check_host(name);
    else ring_.check_valid();
    return path;
  }

  detail::slot_range claim_pop(detail::queue_path path, std::size_t n) {
    if (n == 0) return {};
    return ring_.reserve(path, head, tail, 0, n, detail::claim::up_to);
  }
};

}  // namespace shoal
