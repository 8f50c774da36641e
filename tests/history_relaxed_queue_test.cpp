// Checked histories of shoal::relaxed_queue: the rank error of every pop (how many older elements were still queued
// when it took effect) computed from the recorded history (support/rank_error.hpp), never from the queue's stamps,
// and checked against the bounds stated in docs/containers/relaxed_queue.md ("Promises checked"):
//   lock_based with ncand = p (every ring a candidate)   exact FIFO: no pop surely skips an older element
//   ncand = 2, lock_based and lock_free                  mean rank error <= 2p
// A history proves a lower bound of each pop's error (rank_error.hpp): the test fails when the history proves a
// violation, i.e. when a lower bound breaks the promise. The upper bounds are printed too.
// Each rank prefills a few elements, runs random pushes and pops, and then every rank pops until the queue is
// empty; the history must also pop every pushed value exactly once.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "shoal/containers/relaxed_queue.hpp"
#include "shoal_test.hpp"
#include "support/history.hpp"
#include "support/rank_error.hpp"

namespace {

using namespace shoal::testing::history;

struct setting {
  shoal::relaxed::algorithm algorithm;
  int ncand;  // 0: every ring (p)
  std::string name;
};

class RelaxedQueueHistory : public ::testing::TestWithParam<setting> {};

TEST_P(RelaxedQueueHistory, RankErrorWithinItsDocumentedBound) {
  const int p = shoal::size();
  const int ncand = GetParam().ncand == 0 ? p : GetParam().ncand;
  shoal::relaxed_queue_options o;
  o.capacity_per_rank = 4096;
  o.ncand = ncand;
  o.algorithm = GetParam().algorithm;
  o.seed = 7;
  shoal::relaxed_queue<std::int64_t> q(o);
  recorder rec;
  shoal::barrier();

  std::mt19937_64 rng(0x3e1 + static_cast<unsigned>(shoal::rank()));
  std::int64_t next = static_cast<std::int64_t>(shoal::rank()) << 32;
  auto push = [&] {
    const auto h = rec.invoke(op_kind::push, 0, next);
    const bool pushed = q.try_push(next++);
    rec.respond(h, pushed);
    ASSERT_TRUE(pushed) << "the rings are large enough for the whole test";
  };
  auto pop = [&] {
    const auto h = rec.invoke(op_kind::pop, 0);
    const auto v = q.try_pop();
    rec.respond(h, v.has_value(), v.value_or(0));
    return v.has_value();
  };
  for (int i = 0; i < 16; ++i) push();
  shoal::barrier();
  // Fewer operations where remote atomics are MPI calls (each may wait for a busy target's CPU).
  const int n = shoal::current_rma_path() != shoal::rma_path::shared_memory ? shoal::testing::scaled(300) : 1000;
  for (int i = 0; i < n; ++i) {
    if (rng() % 2 == 0) push();
    else pop();
  }
  shoal::barrier();
  while (pop()) {
  }
  shoal::barrier();
  const auto all = rec.gather(0);
  const std::uint64_t slack = rec.cross_client_slack_ns() + 2 * static_cast<std::uint64_t>(q.clock_error_bound_ns());
  if (shoal::rank() == 0) {
    const auto r = measure_rank_errors(all, slack);
    ASSERT_TRUE(r.malformed.empty()) << r.malformed;
    std::size_t pushed = 0;
    for (const auto& op : all) pushed += op.kind == op_kind::push && op.ok != 0;
    EXPECT_EQ(r.surely.size(), pushed) << "every pushed value is popped once by the end";
    std::printf("[rank error] %s, ncand %d, %d ranks: %zu pops; lower bounds: mean %.2f (promise <= %d), max %zu; "
                "upper bounds: mean %.2f\n",
                GetParam().name.c_str(), ncand, p, r.surely.size(), r.mean_surely(), 2 * p, r.max_surely(),
                r.mean_possibly());
    if (GetParam().algorithm == shoal::relaxed::algorithm::lock_based && ncand == p) {
      EXPECT_EQ(r.max_surely(), 0u) << "lock_based with every ring a candidate is exactly FIFO";
    }
    EXPECT_LE(r.mean_surely(), 2.0 * p) << "the history proves a mean rank error above the documented bound 2p";
  }
  EXPECT_EQ(q.size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Settings, RelaxedQueueHistory,
    ::testing::Values(setting{shoal::relaxed::algorithm::lock_based, 0, "lock_based"},
                      setting{shoal::relaxed::algorithm::lock_based, 2, "lock_based"},
                      setting{shoal::relaxed::algorithm::lock_free, 2, "lock_free"}),
    [](const auto& info) { return info.param.name + "_ncand" + (info.param.ncand == 0 ? std::string("p") : std::to_string(info.param.ncand)); });

}  // namespace
