// shoal/core/clock.hpp — a clock shared by the ranks of a team, for stamps that order across ranks.
//
// Each rank reads its own std::chrono::steady_clock and adds an offset to the steady clock of the team's rank 0,
// estimated when the clock is built by ping-pong rounds with rank 0 (Cristian's method): rank r notes t1, rank 0
// answers with its time t0, rank r notes t2; the estimate is t0 - (t1 + t2) / 2. Of `rounds` rounds the one with the
// smallest round trip is kept.
//
// Error bound. However asymmetric the two legs of that round trip were, the estimate is off by at most half of it;
// error_bound_ns() is the largest such half round trip of any rank, the same on every rank. So at construction every
// rank's now() is within error_bound_ns() of rank 0's clock, and two stamps taken on different ranks order correctly
// whenever they differ by more than 2 * error_bound_ns(), plus the drift since construction: a few microseconds per
// second between nodes. Ranks on rank 0's host need no estimate: they read the same monotonic clock, so their offset
// is 0 and their error none (on one host error_bound_ns() is 0 and no ping-pong runs).
//
//   synchronized_clock c(rounds = 16, team = world())
//                         collective over the team: one allreduce (the rounds agree), one communicator duplicate,
//                         `rounds` ping-pongs between rank 0 and each rank on another host (rank 0 serves them one
//                         rank after the other), one allreduce (the bound)
//   c.now()               any rank: nanoseconds on rank 0's steady clock as estimated here (one clock read)
//   c.offset_ns()         any rank: this rank's estimated offset to rank 0 (0 on rank 0)
//   c.error_bound_ns()    any rank: the bound above
//
// A clock is a value (two numbers): copies share nothing and it outlives its team and environment harmlessly (now()
// keeps reading the local clock). While it is built, every wait makes progress, so active messages keep flowing.
//
// Errors: shoal::usage_error when rounds < 1, when the ranks pass different rounds, or for an empty team.
//
// Example (the relaxed queue stamps elements so; tests/support/history.hpp stamps operations so):
//   shoal::synchronized_clock clock;          // collective over world()
//   const std::uint64_t stamp = clock.now();  // comparable with other ranks' stamps up to 2 * error_bound_ns()
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

class synchronized_clock {
 public:
  /// Ping-pong rounds per rank unless told otherwise.
  static constexpr int default_rounds = 16;

  /// Collective over `team`: synchronises with default_rounds rounds per rank.
  explicit synchronized_clock(const shoal::team& team = world()) : synchronized_clock(default_rounds, team) {}

  /// Collective over `team`: estimates this rank's offset to the team's rank 0 with `rounds` (>= 1, the same on every
  /// rank) ping-pong rounds per rank.
  explicit synchronized_clock(int rounds, const shoal::team& team = world()) {
    if (!team.valid()) {
      throw usage_error("shoal::synchronized_clock: the team is empty (a rank that split itself out holds no team)");
    }
    check_rounds(rounds, team);
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request dup;
    SHOAL_MPI(MPI_Comm_idup(team.comm(), &comm, &dup));  // the ping-pongs never match the program's messages
    detail::wait_request(dup);
    const detail::comm_freer free_comm{comm};
    // A rank on rank 0's host reads the same monotonic clock (CLOCK_MONOTONIC is system-wide): its offset is exactly
    // 0, and estimating it would only add the ping-pong's error (milliseconds when ranks share busy cores).
    const shoal::team node = team.node();
    auto on_my_host = [&](int r) { return node.from_world(team.to_world(r)) >= 0; };
    std::int64_t best_rtt = 0;
    if (team.rank() == 0) {
      for (int peer = 1; peer < team.size(); ++peer) {
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
    error_bound_ns_ = team.allreduce((best_rtt + 1) / 2, op::max{});
  }

  /// Nanoseconds on the team's rank 0's steady clock, as estimated on this rank.
  std::uint64_t now() const noexcept { return static_cast<std::uint64_t>(local_ns() + offset_ns_); }
  /// This rank's estimated offset to rank 0's clock (0 on rank 0).
  std::int64_t offset_ns() const noexcept { return offset_ns_; }
  /// The largest error of any rank's offset at construction (half its best round trip), the same on every rank.
  std::int64_t error_bound_ns() const noexcept { return error_bound_ns_; }

 private:
  static std::int64_t local_ns() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Every rank must run the same number of rounds, else the ping-pongs of rank 0 and a peer never pair up: one
  // allreduce of (-rounds, rounds) under max gives the smallest and the largest.
  static void check_rounds(int rounds, const shoal::team& team) {
    struct span {
      int neg_lo;
      int hi;
    };
    const span all = team.allreduce(span{-rounds, rounds}, [](const span& a, const span& b) {
      return span{a.neg_lo > b.neg_lo ? a.neg_lo : b.neg_lo, a.hi > b.hi ? a.hi : b.hi};
    });
    if (-all.neg_lo < 1) {
      throw usage_error("shoal::synchronized_clock: rounds must be at least 1 on every rank (the smallest was " +
                        std::to_string(-all.neg_lo) + ")");
    }
    if (-all.neg_lo != all.hi) {
      throw usage_error("shoal::synchronized_clock: every rank of the team must pass the same rounds (got " +
                        std::to_string(-all.neg_lo) + " to " + std::to_string(all.hi) + ")");
    }
  }

  // One message of the ping-pong; waits with progress so active messages keep flowing.
  static void exchange(MPI_Comm comm, std::int64_t* value, int peer, bool send_first) {
    MPI_Request req;
    if (send_first) {
      SHOAL_MPI(MPI_Isend(value, 1, MPI_INT64_T, peer, 0, comm, &req));
    } else {
      SHOAL_MPI(MPI_Irecv(value, 1, MPI_INT64_T, peer, 0, comm, &req));
    }
    detail::wait_request(req);
  }

  std::int64_t offset_ns_ = 0;
  std::int64_t error_bound_ns_ = 0;
};

}  // namespace shoal
