// shoal/core/progress.hpp — make progress on outstanding communication.
//
// Every blocking shoal call makes progress while it waits; programs that poll (future::ready in a loop, a spin on
// a local word) call shoal::progress() themselves. Layers above the core (active messages) register a hook here.
#pragma once

#include "shoal/core/detail/runtime.hpp"

namespace shoal {

/// Runs every registered progress hook once (delivers pending active messages, completes sends).
inline void progress() {
  auto& r = detail::rt();
  for (auto& hook : r.progress_hooks) hook();
}

}  // namespace shoal

namespace shoal::detail {

/// Waits for an MPI request while making progress, so a rank that waits never starves its peers.
inline void wait_request(MPI_Request& req) {
  int done = 0;
  for (;;) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    progress();
  }
}

}  // namespace shoal::detail
