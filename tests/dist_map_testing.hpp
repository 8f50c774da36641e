// Helpers of the dist_map tests (dist_map_test.cpp, kv_apps_test.cpp).
#pragma once

#include <algorithm>

#include "shoal_test.hpp"

namespace shoal::testing {

/// `n` iterations of a loop of blocking remote operations, or a twentieth of them when ranks are oversubscribed:
/// every round trip then waits for the owner's scheduler time slice (milliseconds under MPICH's busy polling),
/// whichever RMA path the run uses.
inline int round_trips(int n) { return oversubscribed() ? std::max(1, n / 20) : n; }

}  // namespace shoal::testing
