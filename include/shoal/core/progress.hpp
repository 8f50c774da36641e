// shoal/core/progress.hpp — make progress on outstanding communication.
//
// Every blocking shoal call makes progress while it waits; a program or a container that waits for a condition of
// its own (a remote word to change, a local flag) calls shoal::wait_until(done), which polls the way every wait in
// shoal does (docs/core.md, "How shoal waits"). Layers above the core (active messages) register a hook here.
//
//   progress()        any rank, any time   runs every progress hook once (delivers active messages, serves
//                                          requests from other hosts)
//   wait_until(done)  any rank, any time   calls done() until it returns true, making progress and backing off
//                                          between calls (when this machine runs more ranks than it has CPUs for:
//                                          yield after 64 empty polls, 20 us sleeps after 4,096; else spin, and
//                                          yield after 4,096)
#pragma once

#include <chrono>
#include <concepts>
#include <thread>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/runtime.hpp"

namespace shoal {

/// Runs every registered progress hook once (delivers pending active messages, completes sends).
inline void progress() {
  auto& r = detail::rt();
  for (auto& hook : r.progress_hooks) hook();
}

}  // namespace shoal

namespace shoal::detail {

/// One step of every wait loop in shoal: makes progress and, once the wait is no longer short, gives the CPU away,
/// so a rank that shares its core with the rank it waits for (more ranks than cores) lets that rank run instead of
/// burning its time slice: after `spins_before_yield` empty polls it yields; after `spins_before_sleep` it sleeps
/// `sleep_step` per poll (a yield alone does not let a busy peer run under Linux's scheduler; a wait that has already
/// lasted that long pays at most one step more). That is when the environment decided that waits may sleep
/// (detail/wait_sleep.hpp: this machine runs more of the job's ranks than the CPUs they may run on). Otherwise no
/// rank of the job needs this CPU: the wait spins for `spins_before_sleep` polls and only then yields per poll (a
/// sleep would only hand the CPU to other processes and wake late; a yield is a system call, about 0.6 us on the
/// machine of docs/am.md's session 48, which a waiter that yielded adds to the answer it waits for — the K-V
/// replay's server and client each yielded between blocks). A poll that received something (progress_arrivals
/// moved) starts the count again: a rank that serves a stream of requests while it waits (rpc) stays hot between
/// them.
/// Construct one per wait; call it once per unsuccessful poll.
class spin_waiter {
 public:
  static constexpr int spins_before_yield = 64;  // when waits may sleep; else spins_before_sleep
  static constexpr int spins_before_sleep = 4096;
  static constexpr std::chrono::microseconds sleep_step{20};
  void operator()() {
    auto& r = rt();
    const std::uint64_t arrivals = r.progress_arrivals;
    progress();
    backoff(r.progress_arrivals != arrivals);
  }

  /// The back-off alone, for a wait loop that polls by other means (the AM layer's wait for a send slot, which must
  /// not run handlers): `moved` says whether its poll achieved anything.
  void backoff(bool moved) {
    if (moved) {
      spins_ = 0;
      return;
    }
    if (spins_ <= spins_before_sleep) ++spins_;  // stops counting there: a wait may last any number of polls
    if (spins_ <= (sleeps_ ? spins_before_yield : spins_before_sleep)) return;
    if (spins_ > spins_before_sleep && sleeps_) {
      std::this_thread::sleep_for(sleep_step);
    } else {
      std::this_thread::yield();
    }
    if (g_runtime != nullptr) ++g_runtime->wait_backoffs;
  }

 private:
  int spins_ = 0;
  bool sleeps_ = g_runtime == nullptr || g_runtime->waits.sleep;  // outside an environment: the safe side
};

/// Marks a wait for a one-sided operation (an owner-applied get, put or atomic) on this thread. Such a wait is
/// completed by the owner's progress alone, never by an active-message handler here, so while one runs inside a
/// handler the handler layer only sends and does not start more handlers: a handler that does one remote atomic
/// per message would otherwise nest one handler per queued message, without bound, on the stack.
class one_sided_wait {
 public:
  one_sided_wait() { ++rt().one_sided_waits; }
  ~one_sided_wait() { --rt().one_sided_waits; }
  one_sided_wait(const one_sided_wait&) = delete;
  one_sided_wait& operator=(const one_sided_wait&) = delete;
};

/// Waits for an MPI request while making progress, so a rank that waits never starves its peers.
inline void wait_request(MPI_Request& req) {
  spin_waiter pause;
  int done = 0;
  for (;;) {
    SHOAL_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    pause();
  }
}

}  // namespace shoal::detail

namespace shoal {

/// Waits until `done()` returns true. Calls it at once; while it returns false, makes progress and backs off the way
/// every wait in shoal does. When this machine runs more ranks than it has CPUs for: after 64 calls in a row during
/// which nothing arrived from another rank it yields the CPU, after 4,096 it sleeps 20 us per call (so a rank that
/// shares its core with the rank it waits for lets that rank run). Otherwise it spins, and yields per call after
/// 4,096. A call during which something arrived starts the count again. `done` runs on the calling thread and
/// may itself communicate (a remote atomic, a get). Any rank, any time; inside an active-message handler the
/// progress runs further handlers (docs/core.md, "How shoal waits").
template <class Done>
  requires std::predicate<Done&>
void wait_until(Done&& done) {
  detail::spin_waiter pause;
  while (!done()) pause();
}

}  // namespace shoal
