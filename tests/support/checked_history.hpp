// tests/support/checked_history.hpp — GoogleTest glue: gather a recorded history and check it on rank 0.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>

#include "support/history.hpp"
#include "support/linearizability.hpp"

namespace shoal::testing::history {

/// One operation per line (operation.hpp's describe()), to keep a failing history as a regression input.
inline void write_history(const std::vector<operation>& ops, const std::string& path) {
  if (std::FILE* f = std::fopen(path.c_str(), "w")) {
    for (const auto& o : ops) std::fprintf(f, "%s\n", describe(o).c_str());
    std::fclose(f);
  }
}

enum class promise_kind { linearizable, sequentially_consistent, linearizable_in_issue_order };

/// Collective: gathers `rec`'s history and, on rank 0, expects `model` to explain it under `promise`. Records the
/// size, the partitions, the search steps and the time as test properties. Returns the verdict on rank 0 (ok
/// elsewhere).
template <class Model>
verdict expect_history(const recorder& rec, const Model& model, const std::string& what,
                       promise_kind promise = promise_kind::linearizable, std::size_t max_steps = 5'000'000) {
  const auto all = rec.gather(0);
  if (shoal::rank() != 0) return verdict::ok;
  check_options opts;
  opts.cross_client_slack_ns = rec.cross_client_slack_ns();
  opts.max_steps = max_steps;
  if (const char* dir = std::getenv("SHOAL_HISTORY_DUMP")) write_history(all, std::string(dir) + "/" + what + ".txt");
  const auto start = std::chrono::steady_clock::now();
  const check_result r = promise == promise_kind::linearizable      ? check_linearizable(all, model, opts)
                         : promise == promise_kind::linearizable_in_issue_order
                             ? check_linearizable_in_issue_order(all, model, opts)
                             : check_sequentially_consistent(all, model, opts);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  // The check's size and time go to the test's properties (--gtest_output=xml), not to the console.
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "%zu operations, %zu partitions, %zu steps, slack %.1f us, checked in %.1f ms: %s", r.operations,
                r.partitions, r.steps, static_cast<double>(opts.cross_client_slack_ns) / 1e3, ms, name(r.outcome));
  ::testing::Test::RecordProperty("history_" + what, summary);
  EXPECT_EQ(r.outcome, verdict::ok) << what << ": " << name(r.outcome) << "\n" << r.explanation;
  return r.outcome;
}

}  // namespace shoal::testing::history
