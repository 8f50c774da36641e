// shoal/core/progress.hpp — make progress on outstanding communication.
//
// Every blocking shoal call makes progress while it waits; programs that poll (future::ready in a loop, a spin on
// a local word) call shoal::progress() themselves. Layers above the core (active messages) register a hook here.
#pragma once

#include <thread>

#include "shoal/core/detail/runtime.hpp"

namespace shoal {

/// Runs every registered progress hook once (delivers pending active messages, completes sends).
inline void progress() {
  auto& r = detail::rt();
  for (auto& hook : r.progress_hooks) hook();
}

}  // namespace shoal

namespace shoal::detail {

/// One step of every wait loop in shoal: makes progress and, once the wait is no longer short, yields the CPU, so a
/// rank that shares its core with the rank it waits for (more ranks than cores) lets that rank run instead of
/// burning its time slice. A poll that received something (progress_arrivals moved) starts the count again: a rank
/// that serves a stream of requests while it waits (rpc) stays hot between them. Construct one per wait; call it
/// once per unsuccessful poll.
class spin_waiter {
 public:
  static constexpr int spins_before_yield = 64;
  void operator()() {
    auto& r = rt();
    const std::uint64_t arrivals = r.progress_arrivals;
    progress();
    if (r.progress_arrivals != arrivals) {
      spins_ = 0;
    } else if (++spins_ > spins_before_yield) {
      std::this_thread::yield();
    }
  }

 private:
  int spins_ = 0;
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
