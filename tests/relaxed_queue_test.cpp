// Tests of relaxed_queue (every algorithm, lock mode and locality option) and of its strict FIFO baseline.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "linked_fifo_queue.hpp"  // bench/: the strict baseline
#include "shoal/containers/relaxed_queue.hpp"
#include "shoal_test.hpp"

namespace {


int me() { return shoal::rank(); }
int np() { return shoal::size(); }

/// Every rank's values, concatenated on rank 0 (empty elsewhere). The barrier first: MPI_Gather makes no shoal
/// progress, and on the message path another rank may still wait for this one to serve its last operation.
std::vector<std::uint64_t> gather_to_root(const std::vector<std::uint64_t>& mine) {
  shoal::barrier();
  const MPI_Comm comm = shoal::world().comm();
  int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<std::size_t>(np())), displs(static_cast<std::size_t>(np()));
  MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int r = 0; r < np(); ++r) {
    displs[static_cast<std::size_t>(r)] = total;
    total += counts[static_cast<std::size_t>(r)];
  }
  std::vector<std::uint64_t> all(me() == 0 ? static_cast<std::size_t>(total) : 0);
  MPI_Gatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T, 0, comm);
  return all;
}

/// Operations per rank in the stress tests: fewer where every remote atomic may wait for a busy target's CPU
/// (MPICH on the MPI path; ctest -j2 runs two of these binaries side by side on a small machine).
int stress_ops() {
  if (shoal::testing::oversubscribed()) return shoal::testing::scaled(300);
  return shoal::current_rma_path() != shoal::rma_path::shared_memory ? 400 : 2000;
}

std::uint64_t id_of(int rank, std::uint64_t i) { return static_cast<std::uint64_t>(rank) << 32 | i; }

struct config {
  const char* name;
  shoal::relaxed::algorithm algorithm;
  shoal::relaxed::lock_mode mode;
  shoal::relaxed::locality locality;
};

const config configs[] = {
    {"lock_exclusive", shoal::relaxed::algorithm::lock_based, shoal::relaxed::lock_mode::exclusive,
     shoal::relaxed::locality::random},
    {"lock_shared", shoal::relaxed::algorithm::lock_based, shoal::relaxed::lock_mode::shared,
     shoal::relaxed::locality::random},
    {"lock_free", shoal::relaxed::algorithm::lock_free, shoal::relaxed::lock_mode::exclusive,
     shoal::relaxed::locality::random},
    {"lock_exclusive_local_first", shoal::relaxed::algorithm::lock_based, shoal::relaxed::lock_mode::exclusive,
     shoal::relaxed::locality::local_first},
    {"lock_free_local_first", shoal::relaxed::algorithm::lock_free, shoal::relaxed::lock_mode::exclusive,
     shoal::relaxed::locality::local_first},
};

class RelaxedQueue : public ::testing::TestWithParam<config> {
 protected:
  shoal::relaxed_queue_options make(std::size_t capacity, int ncand = 2) const {
    shoal::relaxed_queue_options o;
    o.capacity_per_rank = capacity;
    o.ncand = ncand;
    o.algorithm = GetParam().algorithm;
    o.mode = GetParam().mode;
    o.locality = GetParam().locality;
    o.seed = 42;
    o.clock_sync_rounds = 2;
    return o;
  }
};

TEST_P(RelaxedQueue, EmptyQueuePopsNothing) {
  shoal::relaxed_queue<std::uint64_t> q(make(16));
  for (int ncand : {1, 2, np() + 2}) EXPECT_FALSE(q.try_pop(ncand).has_value()) << "ncand " << ncand;
  EXPECT_EQ(q.size(), 0u);
  // The clock's error bound is one number for the whole team (a maximum over the ranks), and with one rank there is
  // nothing to synchronise.
  const auto bounds = shoal::allgather(q.clock_error_bound_ns());
  for (auto b : bounds) EXPECT_EQ(b, bounds[0]);
  if (np() == 1) { EXPECT_EQ(bounds[0], 0); }
}

TEST_P(RelaxedQueue, FullWhenEveryRingIsFullThenDrainsExactly) {
  // Small rings: under oversubscription every remote atomic waits for a time slice of its target.
  const std::size_t capacity = shoal::testing::oversubscribed() ? 2 : 8;
  shoal::relaxed_queue<std::uint64_t> q(make(capacity));
  // Every rank pushes until `full`: with no pop running, the rings hold exactly capacity() elements in the end.
  std::vector<std::uint64_t> pushed;
  for (std::uint64_t i = 0;; ++i) {
    if (!q.try_push(id_of(me(), i))) break;
    pushed.push_back(id_of(me(), i));
  }
  EXPECT_FALSE(q.try_push(id_of(me(), 999)));  // still full
  try {
    q.push(id_of(me(), 998));
    ADD_FAILURE() << "push into a full queue did not throw";
  } catch (const shoal::container_full& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("every ring was full (" + std::to_string(capacity) + " slots"), std::string::npos) << what;
    EXPECT_NE(what.find("try_push"), std::string::npos) << what;
  }
  const auto total = shoal::allreduce(static_cast<std::uint64_t>(pushed.size()), shoal::op::sum{});
  EXPECT_EQ(total, q.capacity());
  EXPECT_EQ(q.size(), q.capacity());

  auto all_pushed = gather_to_root(pushed);
  if (me() == 0) {
    std::vector<std::uint64_t> popped;
    while (auto v = q.try_pop()) popped.push_back(*v);
    std::sort(popped.begin(), popped.end());
    std::sort(all_pushed.begin(), all_pushed.end());
    EXPECT_EQ(popped, all_pushed);
  }
  EXPECT_EQ(q.size(), 0u);
  // Room again: a push succeeds, and so does the throwing form.
  EXPECT_TRUE(q.try_push(id_of(me(), 1000)));
  EXPECT_EQ(q.size(), static_cast<std::size_t>(np()));
  q.push(id_of(me(), 1001));
  EXPECT_EQ(q.size(), 2 * static_cast<std::size_t>(np()));
}

TEST_P(RelaxedQueue, NcandLargerThanTheNonEmptyRings) {
  shoal::relaxed_queue<std::uint64_t> q(make(32));
  // Only the last rank pushes, into its own ring when local_first (otherwise into random rings).
  constexpr std::uint64_t n = 3;
  if (me() == np() - 1) {
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(q.try_push(i));
  }
  shoal::barrier();
  if (me() == 0) {
    // Asking for more candidates than there are rings (or non-empty rings) shrinks the candidate set.
    std::vector<std::uint64_t> popped;
    while (auto s = q.try_pop_stamped(np() + 3)) {
      popped.push_back(s->value);
      if (GetParam().locality == shoal::relaxed::locality::local_first) { EXPECT_EQ(s->ring, np() - 1); }
      // Pushed on another rank's clock: ordered up to the synchronised clocks' error bound.
      EXPECT_LE(s->pushed_at, s->popped_at + static_cast<std::uint64_t>(q.clock_error_bound_ns()));
    }
    // With every ring examined and nobody else working, the pop order is the push order (oldest head first).
    std::vector<std::uint64_t> expected(n);
    for (std::uint64_t i = 0; i < n; ++i) expected[i] = i;
    EXPECT_EQ(popped, expected);
  }
  EXPECT_EQ(q.size(), 0u);
}

TEST_P(RelaxedQueue, OneRankWithEveryRingAsCandidateIsFifo) {
  shoal::relaxed_queue<std::uint64_t> q(make(64));
  if (me() == 0) {
    const std::uint64_t n = std::min<std::uint64_t>(shoal::testing::oversubscribed() ? 6 : 40, q.capacity());
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_TRUE(q.try_push(i));
    for (std::uint64_t i = 0; i < n; ++i) {
      auto v = q.try_pop(np());
      ASSERT_TRUE(v.has_value());
      EXPECT_EQ(*v, i);
    }
    EXPECT_FALSE(q.try_pop(np()).has_value());
  }
  shoal::barrier();
}

TEST_P(RelaxedQueue, ConcurrentPushPopLosesNothingAndDuplicatesNothing) {
  // Small rings so that pushes also meet full rings under concurrency.
  shoal::relaxed_queue<std::uint64_t> q(make(16));
  const int ops = stress_ops();
  std::mt19937_64 rng(static_cast<std::uint64_t>(me()) * 7919 + 1);
  std::vector<std::uint64_t> pushed, popped;
  std::uint64_t next = 0;
  for (int i = 0; i < ops; ++i) {
    if (rng() % 2 == 0) {
      const auto id = id_of(me(), next++);
      if (q.try_push(id)) pushed.push_back(id);
    } else {
      const int ncand = 1 + static_cast<int>(rng() % 4);
      if (auto v = q.try_pop(ncand)) popped.push_back(*v);
    }
  }
  const std::size_t left = q.size();
  EXPECT_EQ(shoal::allreduce(static_cast<std::uint64_t>(pushed.size() - popped.size()), shoal::op::sum{}),
            static_cast<std::uint64_t>(left));
  auto all_pushed = gather_to_root(pushed);
  auto all_popped = gather_to_root(popped);
  if (me() == 0) {
    while (auto v = q.try_pop(np())) all_popped.push_back(*v);
    std::sort(all_pushed.begin(), all_pushed.end());
    std::sort(all_popped.begin(), all_popped.end());
    EXPECT_EQ(all_popped, all_pushed);
    EXPECT_EQ(std::adjacent_find(all_popped.begin(), all_popped.end()), all_popped.end()) << "an element popped twice";
  }
  EXPECT_EQ(q.size(), 0u);
}

TEST_P(RelaxedQueue, StructValuesRoundTrip) {
  struct particle {
    double x, y;
    std::int32_t id;
  };
  shoal::relaxed_queue<particle> q(make(8, 1));
  ASSERT_TRUE(q.try_push(particle{1.5, -2.0, me()}));
  shoal::barrier();
  std::vector<std::uint64_t> seen;
  while (auto p = q.try_pop()) {
    EXPECT_EQ(p->x, 1.5);
    EXPECT_EQ(p->y, -2.0);
    seen.push_back(static_cast<std::uint64_t>(p->id));
  }
  auto all = gather_to_root(seen);
  if (me() == 0) {
    std::sort(all.begin(), all.end());
    std::vector<std::uint64_t> expected(static_cast<std::size_t>(np()));
    for (int r = 0; r < np(); ++r) expected[static_cast<std::size_t>(r)] = static_cast<std::uint64_t>(r);
    EXPECT_EQ(all, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, RelaxedQueue, ::testing::ValuesIn(configs),
                         [](const ::testing::TestParamInfo<config>& info) { return std::string(info.param.name); });

TEST(RelaxedQueueOptions, BadOptionsNameTheSetting) {
  shoal::relaxed_queue_options o;
  o.capacity_per_rank = 0;
  try {
    shoal::relaxed_queue<int> q(o);
    FAIL() << "capacity 0 accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "shoal::relaxed_queue_options::capacity_per_rank must be in [1, 2^31) slots (got 0)");
  }
  o = {};
  o.ncand = 0;
  try {
    shoal::relaxed_queue<int> q(o);
    FAIL() << "ncand 0 accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_EQ(std::string(e.what()), "shoal::relaxed_queue_options::ncand must be at least 1 (got 0)");
  }
  o = {};
  o.clock_sync_rounds = -2;
  EXPECT_THROW(shoal::relaxed_queue<int>{o}, shoal::usage_error);
  if (np() > 1) {
    o = {};
    o.capacity_per_rank = 4 + static_cast<std::size_t>(me());
    try {
      shoal::relaxed_queue<int> q(o);
      FAIL() << "different capacities accepted";
    } catch (const shoal::usage_error& e) {
      EXPECT_NE(std::string(e.what()).find("capacity_per_rank, ::algorithm and ::mode must be equal on every rank"),
                std::string::npos)
          << e.what();
    }
  }
  shoal::relaxed_queue<int> q(shoal::relaxed_queue_options{.capacity_per_rank = 4});
  EXPECT_THROW((void)q.try_pop(0), shoal::usage_error);
}

TEST(RelaxedQueueOptions, DefaultsFollowThePaper) {
  shoal::relaxed_queue<std::uint64_t> q;
  EXPECT_EQ(q.options().capacity_per_rank, 100'000u);
  EXPECT_EQ(q.options().ncand, 2);
  EXPECT_EQ(q.options().mode, shoal::relaxed::lock_mode::exclusive);
  EXPECT_EQ(q.capacity(), 100'000u * static_cast<std::size_t>(np()));
}

// ---- the strict baseline -----------------------------------------------------------------------------------------

TEST(LinkedFifoQueue, EmptyThenFifoFromOneProducer) {
  const int n = shoal::testing::scaled(200);
  shoal::bench::linked_fifo_queue<std::uint64_t> q(static_cast<std::size_t>(n));
  EXPECT_FALSE(q.try_pop().has_value());
  shoal::barrier();
  if (me() == 0) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(q.try_push(static_cast<std::uint64_t>(i)));
    EXPECT_FALSE(q.try_push(0));  // the pool of this rank is used up
  }
  shoal::barrier();
  // Every consumer sees the single producer's values in increasing order; together they see each value once.
  std::vector<std::uint64_t> mine;
  while (auto v = q.try_pop()) {
    if (!mine.empty()) { EXPECT_LT(mine.back(), *v); }
    mine.push_back(*v);
  }
  auto all = gather_to_root(mine);
  if (me() == 0) {
    std::sort(all.begin(), all.end());
    ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) EXPECT_EQ(all[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i));
  }
}

TEST(LinkedFifoQueue, ConcurrentProducersKeepTheirOrder) {
  const int ops = stress_ops();
  shoal::bench::linked_fifo_queue<std::uint64_t> q(static_cast<std::size_t>(ops), np() - 1);
  std::mt19937_64 rng(static_cast<std::uint64_t>(me()) + 5);
  std::vector<std::uint64_t> pushed, popped;
  std::vector<std::uint64_t> last_seen(static_cast<std::size_t>(np()), 0);
  std::uint64_t next = 1;
  for (int i = 0; i < ops; ++i) {
    if (rng() % 2 == 0) {
      const auto id = id_of(me(), next++);
      ASSERT_TRUE(q.try_push(id));
      pushed.push_back(id);
    } else if (auto v = q.try_pop()) {
      // FIFO: each producer's values reach this consumer in the order they were pushed.
      const auto producer = static_cast<std::size_t>(*v >> 32);
      EXPECT_GT(*v & 0xffffffffu, last_seen[producer]);
      last_seen[producer] = *v & 0xffffffffu;
      popped.push_back(*v);
    }
  }
  shoal::barrier();
  auto all_pushed = gather_to_root(pushed);
  auto all_popped = gather_to_root(popped);
  if (me() == 0) {
    while (auto v = q.try_pop()) all_popped.push_back(*v);
    std::sort(all_pushed.begin(), all_pushed.end());
    std::sort(all_popped.begin(), all_popped.end());
    EXPECT_EQ(all_popped, all_pushed);
  }
}

}  // namespace
