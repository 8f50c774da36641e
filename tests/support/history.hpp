// tests/support/history.hpp — records a concurrent history on every rank and gathers it to one rank.
//
// Each rank stamps an operation's invocation before it starts and its response once its result is known (for a
// future: after get()), on shoal's synchronized clock (shoal/core/clock.hpp: rank 0's steady
// clock as estimated on each rank, with a bound on the error of that estimate). Stamps of one rank order exactly;
// stamps of two ranks only up to twice the bound, which cross_client_slack_ns() returns for the checker
// (linearizability.hpp), plus an allowance for drift between hosts.
//   recorder rec;                                        // collective: synchronises the clocks
//   auto h = rec.invoke(op_kind::fetch_add, word, 5);    // stamps the call
//   rec.respond(h, true, shoal::fetch_add(p, 5));        // stamps the response, with the result
//   auto all = rec.gather();                             // collective: every rank's operations on rank 0
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core.hpp"
#include "shoal/core/clock.hpp"
#include "support/operation.hpp"

namespace shoal::testing::history {

class recorder {
 public:
  /// Collective.
  explicit recorder(int clock_sync_rounds = 16) : clock_(clock_sync_rounds) {}

  /// Stamps the invocation of an operation; returns its handle for respond().
  std::size_t invoke(op_kind kind, std::int64_t key, std::int64_t arg = 0, std::int64_t arg2 = 0) {
    operation o;
    o.kind = kind;
    o.key = key;
    o.arg = arg;
    o.arg2 = arg2;
    o.client = shoal::rank();
    o.seq = static_cast<std::uint32_t>(ops_.size());
    o.call_ns = clock_.now();
    ops_.push_back(o);
    return ops_.size() - 1;
  }

  /// Stamps the response of operation `handle` with its result.
  void respond(std::size_t handle, bool ok, std::int64_t out = 0, std::int64_t out2 = 0) {
    operation& o = ops_[handle];
    o.return_ns = clock_.now();
    o.ok = ok ? 1 : 0;
    o.out = out;
    o.out2 = out2;
    o.done = 1;
  }

  /// Stamps the response of operation `handle` and records it as the key-by-key observations `split` makes of it
  /// (models.hpp's key_observations: a read of several keys as one find per key, with the call's stamps).
  template <class Split>
  void respond_per_key(std::size_t handle, Split&& split) {
    ops_[handle].return_ns = clock_.now();
    ops_[handle].done = 1;
    auto parts = split(ops_[handle]);
    if (parts.empty()) return;
    ops_[handle] = parts.front();
    ops_.insert(ops_.end(), parts.begin() + 1, parts.end());
  }

  /// This rank's operations so far.
  const std::vector<operation>& local() const { return ops_; }
  std::size_t size() const { return ops_.size(); }
  std::uint64_t now() const { return clock_.now(); }

  /// Two stamps of different ranks order correctly when they differ by more than this.
  std::uint64_t cross_client_slack_ns() const {
    const std::uint64_t drift = shoal::host_count() > 1 ? drift_allowance_ns : 0;
    return 2 * static_cast<std::uint64_t>(clock_.error_bound_ns()) + drift;
  }

  /// Collective: every rank's operations, on `root` (empty elsewhere). The barrier first: MPI_Gather makes no shoal
  /// progress, and on the message path another rank may still wait for this one to serve its last operation.
  std::vector<operation> gather(int root = 0) const {
    shoal::barrier();
    const MPI_Comm comm = shoal::world().comm();
    const int bytes = static_cast<int>(ops_.size() * sizeof(operation));
    std::vector<int> counts(static_cast<std::size_t>(shoal::size()));
    SHOAL_MPI(MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm));
    std::vector<int> displs(counts.size(), 0);
    std::size_t total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      displs[r] = static_cast<int>(total);
      total += static_cast<std::size_t>(counts[r]);
    }
    std::vector<operation> all(shoal::rank() == root ? total / sizeof(operation) : 0);
    SHOAL_MPI(MPI_Gatherv(ops_.data(), bytes, MPI_BYTE, all.data(), counts.data(), displs.data(), MPI_BYTE, root, comm));
    return all;
  }

 private:
  // Clocks of two hosts drift apart by a few microseconds per second after synchronisation (core/clock.hpp);
  // a test's history lasts seconds.
  static constexpr std::uint64_t drift_allowance_ns = 50'000;

  shoal::synchronized_clock clock_;
  std::vector<operation> ops_;
};

}  // namespace shoal::testing::history
