// shoal/am/detail/quiescence.hpp — the counts quiescence is decided on, and the decision (docs/am.md, "Quiescence").
//
// Every rank counts the messages it appended to buffers (sent) and the handlers that finished here (handled), in
// total and per team. Mattern's four-counter method over waves of MPI_Iallreduce: wave k sums (sent, handled) over
// all ranks; when the `handled` sum of wave k-1 equals the `sent` sum of wave k, the system was quiescent at the end
// of wave k-1 and, since only handlers send while every rank is in here, it still is.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "shoal/core/layer.hpp"

namespace shoal::am::detail {

/// Messages of closed groups sent from here, and handlers finished here: of every team (world()'s messages count
/// only there), and per team id.
class message_counts {
 public:
  struct per_team {
    std::uint64_t sent = 0;
    std::uint64_t handled = 0;
  };

  std::uint64_t sent() const { return sent_; }
  std::uint64_t handled() const { return handled_; }
  per_team& of(std::uint32_t team) {
    if (team >= teams_.size()) teams_.resize(team + 1);
    return teams_[team];
  }
  void add_sent(std::uint32_t team, std::uint64_t n) {
    sent_ += n;
    if (team != 0) of(team).sent += n;
  }
  void add_handled(std::uint32_t team, std::uint64_t n = 1) {
    handled_ += n;
    if (team != 0) of(team).handled += n;
  }

 private:
  std::uint64_t sent_ = 0;
  std::uint64_t handled_ = 0;
  std::vector<per_team> teams_;
};

/// Returns once the ranks of `comm` are quiescent: poll() makes progress, counts() gives this rank's
/// {sent, handled} (both after the poll). Collective over comm.
template <class Poll, class Counts>
void wait_for_quiescence(MPI_Comm comm, Poll&& poll, Counts&& counts) {
  std::uint64_t previous_handled = ~std::uint64_t{0};
  for (;;) {
    poll();
    const auto [sent, handled] = counts();
    std::uint64_t local[2] = {sent, handled};
    std::uint64_t global[2] = {0, 0};
    MPI_Request req;
    SHOAL_MPI(MPI_Iallreduce(local, global, 2, MPI_UINT64_T, MPI_SUM, comm, &req));
    shoal::layer::wait(req);  // runs shoal::progress(), hence poll()
    if (global[0] == previous_handled) break;
    previous_handled = global[1];
  }
}

}  // namespace shoal::am::detail
