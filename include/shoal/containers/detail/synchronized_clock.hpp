// shoal/containers/detail/synchronized_clock.hpp — a team-wide clock for insertion stamps.
//
// Each rank reads its own std::chrono::steady_clock and adds an offset to rank 0's clock, estimated when the clock is
// built (collective) by ping-pong rounds with rank 0 (Cristian's method): rank r notes t1, rank 0 answers with its
// time t0, rank r notes t2; the estimate is t0 - (t1 + t2) / 2 and its error is at most (t2 - t1) / 2 if the two
// legs may be arbitrarily asymmetric. Of `rounds` rounds the one with the smallest round trip is kept. The residual
// error bound of every rank (half its best round trip) is shared, so two stamps taken on different ranks order
// correctly whenever they differ by more than 2 * error_bound_ns() (plus the drift since construction, a few
// microseconds per second between nodes). Ranks on rank 0's host need no estimate: they read the same monotonic clock,
// so their offset is 0 and their error none.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <limits>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

class synchronized_clock {
 public:
  /// Collective over `team`: estimates this rank's offset to the team's rank 0 with `rounds` ping-pong rounds per
  /// rank.
  explicit synchronized_clock(int rounds, const team& team = world()) {
    MPI_Comm comm;
    SHOAL_MPI(MPI_Comm_dup(team.comm(), &comm));
    const int me = team.rank();
    const int np = team.size();
    // A rank on rank 0's host reads the same monotonic clock (CLOCK_MONOTONIC is system-wide): its offset is exactly
    // 0, and estimating it would only add the ping-pong's error (milliseconds when ranks share busy cores).
    const shoal::team node = team.node();
    auto on_my_host = [&](int r) { return node.from_world(team.to_world(r)) >= 0; };
    std::int64_t best_rtt = 0;
    if (me == 0) {
      for (int peer = 1; peer < np; ++peer) {
        if (on_my_host(peer)) continue;
        for (int i = 0; i < rounds; ++i) {
          std::int64_t ping = 0;
          exchange(comm, &ping, peer, /*send_first=*/false);
          std::int64_t t0 = local_ns();
          exchange(comm, &t0, peer, /*send_first=*/true);
        }
      }
    } else if (!on_my_host(0)) {
      best_rtt = std::numeric_limits<std::int64_t>::max();
      for (int i = 0; i < rounds; ++i) {
        std::int64_t t0 = 0;
        const std::int64_t t1 = local_ns();
        exchange(comm, &t0, 0, /*send_first=*/true);
        exchange(comm, &t0, 0, /*send_first=*/false);
        const std::int64_t t2 = local_ns();
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          offset_ns_ = t0 - (t1 + t2) / 2;
        }
      }
    }
    SHOAL_MPI(MPI_Comm_free(&comm));
    error_bound_ns_ = team.allreduce((best_rtt + 1) / 2, op::max{});
  }

  /// Nanoseconds on rank 0's steady clock (as estimated on this rank).
  std::uint64_t now() const { return static_cast<std::uint64_t>(local_ns() + offset_ns_); }
  /// This rank's estimated offset to rank 0 (0 on rank 0).
  std::int64_t offset_ns() const { return offset_ns_; }
  /// The largest residual error of any rank's offset (half its best round trip), the same on every rank.
  std::int64_t error_bound_ns() const { return error_bound_ns_; }

 private:
  static std::int64_t local_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // One message of the ping-pong; waits with progress so active messages keep flowing.
  static void exchange(MPI_Comm comm, std::int64_t* value, int peer, bool send_first) {
    MPI_Request req;
    if (send_first) {
      SHOAL_MPI(MPI_Isend(value, 1, MPI_INT64_T, peer, 0, comm, &req));
    } else {
      SHOAL_MPI(MPI_Irecv(value, 1, MPI_INT64_T, peer, 0, comm, &req));
    }
    wait_request(req);
  }

  std::int64_t offset_ns_ = 0;
  std::int64_t error_bound_ns_ = 0;
};

}  // namespace shoal::detail
