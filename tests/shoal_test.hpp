// Helpers shared by shoal's MPI tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "shoal/core.hpp"

namespace shoal::testing {

/// True on every rank iff `ok` is true on every rank (collective).
inline bool all_ranks(bool ok) { return shoal::allreduce(ok ? 1 : 0, shoal::op::min{}) == 1; }

/// True when more ranks share this node than it has cores.
inline bool oversubscribed() {
  return static_cast<unsigned>(shoal::node_team().size()) > std::thread::hardware_concurrency();
}

/// `n` iterations, or a twentieth of them when ranks are oversubscribed on the MPI RMA path: MPICH's ch4 atomics
/// need the target's CPU, and with more ranks than cores each remote atomic then waits for a scheduler time slice
/// (milliseconds). Full counts still run at 1 and 2 ranks and on the shared-memory path.
inline int scaled(int n) {
  return (oversubscribed() && shoal::current_rma_path() == shoal::rma_path::mpi) ? std::max(1, n / 20) : n;
}

}  // namespace shoal::testing
