// Helpers shared by shoal's MPI tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "shoal/core.hpp"

namespace shoal::testing {

/// True on every rank iff `ok` is true on every rank (collective).
inline bool all_ranks(bool ok) { return shoal::allreduce(ok ? 1 : 0, shoal::op::min{}) == 1; }

/// True when more ranks share this machine's cores than it has. Emulated hosts (scripts/multihost.sh sets
/// SHOAL_TEST_HOSTS for the tests it spreads over them) are namespaces of one machine: every rank shares its cores.
inline bool oversubscribed() {
  const int sharing = std::getenv("SHOAL_TEST_HOSTS") != nullptr ? shoal::size() : shoal::node_team().size();
  return static_cast<unsigned>(sharing) > std::thread::hardware_concurrency();
}

/// `n` iterations, or a twentieth of them when ranks are oversubscribed and some target is off the shared-memory
/// path: a remote atomic then needs the target's CPU (MPICH's ch4 atomics, or the owner applying a message), and
/// with more ranks than cores each one waits for a scheduler time slice (milliseconds). Full counts still run at 1
/// and 2 ranks and on the shared-memory path.
inline int scaled(int n) {
  return (oversubscribed() && shoal::current_rma_path() != shoal::rma_path::shared_memory) ? std::max(1, n / 20) : n;
}

}  // namespace shoal::testing
