// shoal/am/detail/quiescence.hpp — the counts quiescence is decided on, and the decision (docs/am.md, "Quiescence").
//
// Every rank counts the messages it appended to buffers (sent) and the handlers that finished here (handled), in
// total and per team. Mattern's four-counter method over waves: wave k sums (sent, handled) over the ranks; when the
// `handled` sum of wave k-1 equals the `sent` sum of wave k, the system was quiescent at the end of wave k-1 and,
// since only handlers send while every rank is in here, it still is. A wave's sum travels in messages of its own
// (counter_sum), not in an MPI_Iallreduce: see there why.
#pragma once

#include <mpi.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"

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

/// The sum of two counters over a group of ranks, by point-to-point messages on the AM layer's own communicator:
/// recursive doubling (log2 p exchanges with partners r ^ 1, r ^ 2, ...), the ranks beyond the largest power of two
/// folded into the first ones before and sent the result after. Not an MPI_Iallreduce: while a nonblocking
/// collective is pending, Open MPI runs its schedule (libnbc: a lock and a pass over the schedules) inside every MPI
/// call the rank makes, and a rank that serves requests while it waits in a barrier makes one per poll; posted
/// receives cost nothing until their message comes.
///
/// Why one set of tags serves every wave, barrier and team: between two ranks, per tag, a wave sends at most one
/// message each way, and both ranks run the barriers they share in the same order (a program that ran two of them in
/// opposite orders would deadlock), hence their waves too; MPI keeps messages between two ranks with one tag in
/// order, so each receive takes the message of its own wave.
class counter_sum {
 public:
  using values = std::array<std::uint64_t, 2>;
  static constexpr int fold_tag = 0x5a51;      // a rank beyond the power of two to its partner below
  static constexpr int exchange_tag = 0x5a52;  // the recursive-doubling exchanges
  static constexpr int result_tag = 0x5a53;    // the sum back to a rank beyond the power of two

  /// `comm`: the communicator the messages travel on; `ranks`: the group's ranks on it in group order (empty: every
  /// rank of comm, in order); `me`: this rank's place in the group of `size` ranks.
  counter_sum(MPI_Comm comm, std::span<const int> ranks, int me, int size) : comm_(comm), ranks_(ranks), me_(me) {
    pof2_ = 1;
    while (pof2_ * 2 <= size) pof2_ *= 2;
    rest_ = size - pof2_;
    for (int mask = 1; mask < pof2_; mask *= 2) ++rounds_;
    outgoing_.reserve(static_cast<std::size_t>(rounds_) + 1);  // a wave's sends: never more, so never moved
  }
  counter_sum(const counter_sum&) = delete;
  counter_sum& operator=(const counter_sum&) = delete;
  /// Completes the sends; receives still posted (a wave left by an exception) are cancelled.
  ~counter_sum() {
    finish_sends(/*cleanup=*/true);
    for (std::size_t i = 0; i < receives_.size(); ++i) {
      if (receives_[i] == MPI_REQUEST_NULL) continue;
      SHOAL_MPI_CLEANUP(MPI_Cancel(&receives_[i]));
      SHOAL_MPI_CLEANUP(MPI_Wait(&receives_[i], MPI_STATUS_IGNORE));
    }
  }

  /// Starts a wave with this rank's values: posts the wave's receives (and, beyond the power of two, its send).
  void start(values local) {
    finish_sends(/*cleanup=*/false);
    sum_ = local;
    round_ = 0;
    folded_ = false;
    done_ = false;
    receives_.assign(static_cast<std::size_t>(rounds_) + 1, MPI_REQUEST_NULL);
    incoming_.assign(receives_.size(), values{});
    if (me_ >= pof2_) {  // folded in: send to the partner below, wait for the sum
      receive(0, me_ - pof2_, result_tag);
      send(me_ - pof2_, fold_tag);
      return;
    }
    if (me_ < rest_) receive(0, me_ + pof2_, fold_tag);
    for (int k = 0; k < rounds_; ++k) receive(static_cast<std::size_t>(k) + 1, me_ ^ (1 << k), exchange_tag);
  }

  /// Advances the wave as far as the messages that came allow; true once result() is the group's sum.
  bool test() {
    if (done_) return true;
    if (me_ >= pof2_) {
      if (!arrived(0)) return false;
      sum_ = incoming_[0];
      return done_ = true;
    }
    if (!folded_) {  // a rank with a partner beyond the power of two adds its values first
      if (me_ < rest_) {
        if (!arrived(0)) return false;
        add(incoming_[0]);
      }
      folded_ = true;
    }
    while (round_ < rounds_) {
      const auto k = static_cast<std::size_t>(round_) + 1;
      if (!sent_round_) {
        send(me_ ^ (1 << round_), exchange_tag);
        sent_round_ = true;
      }
      if (!arrived(k)) return false;
      add(incoming_[k]);
      ++round_;
      sent_round_ = false;
    }
    if (me_ < rest_) send(me_ + pof2_, result_tag);
    return done_ = true;
  }

  values result() const { return sum_; }

 private:
  int world(int r) const { return ranks_.empty() ? r : ranks_[static_cast<std::size_t>(r)]; }
  void add(const values& v) {
    sum_[0] += v[0];
    sum_[1] += v[1];
  }
  void receive(std::size_t i, int from, int tag) {
    SHOAL_MPI(MPI_Irecv(incoming_[i].data(), 2, MPI_UINT64_T, world(from), tag, comm_, &receives_[i]));
  }
  /// Sends the current sum (a copy that stays put until the send completes).
  void send(int to, int tag) {
    outgoing_.push_back(sum_);
    sends_.push_back(MPI_REQUEST_NULL);
    SHOAL_MPI(MPI_Isend(outgoing_.back().data(), 2, MPI_UINT64_T, world(to), tag, comm_, &sends_.back()));
  }
  bool arrived(std::size_t i) {
    if (receives_[i] == MPI_REQUEST_NULL) return true;
    int flag = 0;
    SHOAL_MPI(MPI_Test(&receives_[i], &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }
  /// The sends are a few bytes each (eager: they complete without the receiver).
  void finish_sends(bool cleanup) {
    if (sends_.empty()) return;
    const int rc = MPI_Waitall(static_cast<int>(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
    if (cleanup) SHOAL_MPI_CLEANUP(rc);
    else SHOAL_MPI(rc);
    sends_.clear();
    outgoing_.clear();
  }

  MPI_Comm comm_;
  std::span<const int> ranks_;
  int me_;
  int pof2_ = 1;
  int rest_ = 0;
  int rounds_ = 0;
  int round_ = 0;
  bool folded_ = false;
  bool sent_round_ = false;
  bool done_ = false;
  values sum_{};
  std::vector<MPI_Request> receives_;  // [0]: the fold or the result; [k]: round k-1's exchange
  std::vector<values> incoming_;
  std::vector<MPI_Request> sends_;
  std::vector<values> outgoing_;  // parallel to sends_; reserved for a wave's sends (rounds + 1)
};

/// Returns once the group (`ranks` on `comm`, as counter_sum) is quiescent: poll() makes progress, counts() gives
/// this rank's {sent, handled} (both after the poll). Collective over the group.
template <class Poll, class Counts>
void wait_for_quiescence(MPI_Comm comm, std::span<const int> ranks, int me, int size, Poll&& poll, Counts&& counts) {
  counter_sum wave(comm, ranks, me, size);
  std::uint64_t previous_handled = ~std::uint64_t{0};
  for (;;) {
    poll();
    const auto [sent, handled] = counts();
    wave.start({sent, handled});
    shoal::wait_until([&] { return wave.test(); });  // runs shoal::progress(), hence poll(), between tests
    const auto global = wave.result();
    if (global[0] == previous_handled) break;
    previous_handled = global[1];
  }
}

}  // namespace shoal::am::detail
