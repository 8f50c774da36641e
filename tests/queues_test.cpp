// Tests of shoal::fast_queue and shoal::circular_queue: every operation, full and empty queues, each concurrency
// promise, concurrent stress with exactly-once verification, resize, migrate, and handles that are moved (BCL's
// moved-temporary defect).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "shoal/containers/circular_queue.hpp"
#include "shoal/containers/darray.hpp"
#include "shoal/containers/fast_queue.hpp"
#include "shoal/core.hpp"
#include "shoal_test.hpp"

namespace {

using shoal::testing::all_ranks;
using shoal::testing::scaled;
using value = std::uint64_t;

int me() { return shoal::rank(); }
int np() { return shoal::size(); }

/// Counts, for every value 0..n-1, how often it was popped anywhere (remote fetch_add into a darray), and checks at
/// the end that every value was popped exactly once.
class exactly_once {
 public:
  explicit exactly_once(std::size_t n) : seen_(n) {}
  void saw(value v) {
    ASSERT_LT(v, seen_.size());
    shoal::fetch_add(seen_.ptr(static_cast<std::size_t>(v)), value{1});
  }
  /// Collective. True on every rank iff every value was seen exactly once.
  bool verify() {
    shoal::barrier();
    bool ok = true;
    seen_.local_for_each([&](std::size_t i, value& count) {
      if (std::atomic_ref<value>(count).load() != 1) {
        ADD_FAILURE() << "value " << i << " popped " << count << " times";
        ok = false;
      }
    });
    return all_ranks(ok);
  }

 private:
  shoal::darray<value> seen_;
};

/// The values rank r pushes: r * per_rank ... r * per_rank + per_rank - 1.
std::vector<value> values_of(int rank, std::size_t per_rank) {
  std::vector<value> v(per_rank);
  std::iota(v.begin(), v.end(), static_cast<value>(rank) * per_rank);
  return v;
}

/// push (not try_push) on a full queue: container_full naming the capacity and try_push, nothing written; the values
/// that fit are all there, in order. Shared by both hosted queues, with the promises of their push and pop phases.
template <class Queue>
void check_throwing_push(shoal::concurrency pushes, shoal::concurrency pops) {
  constexpr std::size_t capacity = 5;
  Queue q(np() - 1, capacity);
  if (me() == 0) {
    q.push(values_of(0, 3), pushes);  // 0, 1, 2
    q.push(value{3}, pushes);
    const std::vector<value> two = {100, 101};
    try {
      q.push(two, pushes);  // 4 + 2 > 5: nothing written
      ADD_FAILURE() << "push into a full queue did not throw";
    } catch (const shoal::container_full& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("::push: 2 value(s) do not fit"), std::string::npos) << what;
      EXPECT_NE(what.find("capacity 5"), std::string::npos) << what;
      EXPECT_NE(what.find("try_push"), std::string::npos) << what;
    }
    q.push(std::span<const value>(two.data(), 1), pushes);  // exactly fits
    EXPECT_THROW(q.push(value{7}, pushes), shoal::container_full);
  }
  shoal::barrier();
  EXPECT_EQ(q.size(), capacity);
  shoal::barrier();
  if (me() == 0) {
    std::vector<value> all;
    EXPECT_EQ(q.try_pop(all, 100, pops), capacity);
    EXPECT_EQ(all, (std::vector<value>{0, 1, 2, 3, 100}));
  }
  shoal::barrier();
  EXPECT_TRUE(q.empty());
}

// ---- fast_queue -------------------------------------------------------------------------------------------------

TEST(FastQueue, PushPhaseThenPopPhaseEveryValueOnce) {
  const std::size_t per_rank = static_cast<std::size_t>(scaled(400));
  for (int host : {np() - 1}) {  // host 0 is covered by the other tests
    shoal::fast_queue<value> q(host, per_rank * static_cast<std::size_t>(np()));
    EXPECT_EQ(q.host(), host);
    auto mine = values_of(me(), per_rank);
    // Half one by one, half as vectors of 7.
    std::size_t i = 0;
    for (; i < per_rank / 2; ++i) ASSERT_TRUE(q.try_push(mine[i]));
    for (; i < per_rank; i += 7) {
      const std::size_t n = std::min<std::size_t>(7, per_rank - i);
      ASSERT_TRUE(q.try_push(std::span<const value>(mine.data() + i, n)));
    }
    shoal::barrier();
    EXPECT_EQ(q.size(), per_rank * static_cast<std::size_t>(np()));
    shoal::barrier();
    exactly_once check(per_rank * static_cast<std::size_t>(np()));
    std::vector<value> got;
    for (;;) {
      if (got.size() % 3 == 0) {
        auto v = q.try_pop();
        if (!v) break;
        got.push_back(*v);
      } else if (q.try_pop(got, 5) == 0) {
        break;
      }
    }
    for (value v : got) check.saw(v);
    EXPECT_TRUE(check.verify());
    EXPECT_EQ(q.size(), 0u);
    shoal::barrier();
  }
}

TEST(FastQueue, FullQueueWritesNothingAndReportsFalse) {
  constexpr std::size_t capacity = 10;
  shoal::fast_queue<value> q(np() - 1, capacity);
  if (me() == 0) {
    auto v = values_of(0, capacity);
    ASSERT_TRUE(q.try_push(std::span<const value>(v.data(), 6)));
    std::vector<value> five = {100, 101, 102, 103, 104};
    EXPECT_FALSE(q.try_push(five));  // 6 + 5 > 10: nothing written
    ASSERT_TRUE(q.try_push(std::span<const value>(v.data() + 6, 4)));
    EXPECT_FALSE(q.try_push(value{999}));
  }
  shoal::barrier();
  EXPECT_EQ(q.size(), capacity);
  shoal::barrier();
  if (me() == 0) {
    std::vector<value> all;
    EXPECT_EQ(q.try_pop(all, 100), capacity);
    EXPECT_EQ(all, values_of(0, capacity));
    EXPECT_FALSE(q.try_pop().has_value());
  }
  shoal::barrier();
}

TEST(FastQueue, PushThrowsContainerFullAndWritesNothing) {
  check_throwing_push<shoal::fast_queue<value>>(shoal::promise::push, shoal::promise::pop);
}

TEST(FastQueue, ConcurrentPushesToAFullQueueFillItExactly) {
  constexpr std::size_t capacity = 37;
  shoal::fast_queue<value> q(0, capacity);
  std::size_t pushed = 0;
  const auto mine = values_of(me(), capacity);
  while (pushed < capacity && q.try_push(mine[pushed])) ++pushed;
  const auto total = shoal::allreduce(pushed, shoal::op::sum{});
  EXPECT_EQ(total, capacity);
  EXPECT_EQ(q.size(), capacity);
  shoal::barrier();
}

TEST(FastQueue, EmptyQueuePopsNothingAndStaysUsable) {
  shoal::fast_queue<value> q(np() - 1, 4);
  EXPECT_FALSE(q.try_pop().has_value());
  std::vector<value> out = {42};
  EXPECT_EQ(q.try_pop(out, 3), 0u);
  EXPECT_EQ(out, std::vector<value>{42});
  shoal::barrier();  // size() is exact between phases: other ranks' failed claims are handed back by now
  EXPECT_TRUE(q.empty());
  shoal::barrier();
  if (me() == 0) { ASSERT_TRUE(q.try_push(value{7})); }
  shoal::barrier();
  if (me() == 0) {
    EXPECT_EQ(q.try_pop(), std::optional<value>(7));
  }
  shoal::barrier();
}

TEST(FastQueue, WrapsAroundTheRing) {
  // Capacity 5 and rounds of 3 values: positions wrap many times, with vector pushes split over the end.
  shoal::fast_queue<value> q(0, 5);
  for (value round = 0; round < 8; ++round) {
    if (me() == np() - 1) {
      std::vector<value> three = {round * 3, round * 3 + 1, round * 3 + 2};
      ASSERT_TRUE(q.try_push(three));
    }
    shoal::barrier();
    if (me() == 0) {
      std::vector<value> out;
      ASSERT_EQ(q.try_pop(out, 10), 3u);
      EXPECT_EQ(out, (std::vector<value>{round * 3, round * 3 + 1, round * 3 + 2}));
    }
    shoal::barrier();
  }
}

TEST(FastQueue, PopIntoASpanFillsItsFrontAcrossTheWrap) {
  // Capacity 5: the second round's three values wrap around the end of the ring; pops read straight into a buffer.
  shoal::fast_queue<value> q(np() - 1, 5);
  std::array<value, 4> buffer{};
  for (value round = 0; round < 2; ++round) {
    if (me() == 0) {
      std::vector<value> three = {round * 3 + 1, round * 3 + 2, round * 3 + 3};
      ASSERT_TRUE(q.try_push(three));
    }
    shoal::barrier();
    if (me() == np() - 1) {
      buffer.fill(99);
      EXPECT_EQ(q.try_pop(std::span<value>(buffer).first(2)), 2u);  // no more than the span holds
      EXPECT_EQ(buffer, (std::array<value, 4>{round * 3 + 1, round * 3 + 2, 99, 99}));
      EXPECT_EQ(q.try_pop(std::span<value>(buffer)), 1u);  // fewer than the span holds: the front only
      EXPECT_EQ(buffer, (std::array<value, 4>{round * 3 + 3, round * 3 + 2, 99, 99}));
      EXPECT_EQ(q.try_pop(std::span<value>(buffer)), 0u);  // empty
    }
    shoal::barrier();
  }
  EXPECT_TRUE(q.empty());
  shoal::barrier();
}

TEST(FastQueue, AsyncPushCompletesAtTheHost) {
  const std::size_t per_rank = static_cast<std::size_t>(scaled(600));
  const int host = np() / 2;
  shoal::fast_queue<value> q(host, per_rank * static_cast<std::size_t>(np()));
  const auto mine = values_of(me(), per_rank);
  std::vector<shoal::future<bool>> pending;
  for (std::size_t i = 0; i < per_rank; i += 64) {
    pending.push_back(q.async_try_push(std::vector<value>(mine.begin() + static_cast<std::ptrdiff_t>(i),
                                                      mine.begin() + static_cast<std::ptrdiff_t>(
                                                                         std::min(per_rank, i + 64)))));
  }
  for (auto& f : pending) EXPECT_TRUE(f.get());
  // A push that cannot fit is ready at once with false.
  auto too_big = q.async_try_push(std::vector<value>(q.capacity() + 1, 0));
  EXPECT_TRUE(too_big.ready());
  EXPECT_FALSE(too_big.get());
  shoal::barrier();
  exactly_once check(per_rank * static_cast<std::size_t>(np()));
  if (me() == host) {
    std::vector<value> all;
    EXPECT_EQ(q.try_pop(all, q.capacity(), shoal::promise::local), per_rank * static_cast<std::size_t>(np()));
    for (value v : all) check.saw(v);
  }
  EXPECT_TRUE(check.verify());
}

TEST(FastQueue, LocalPromiseOnTheHostOnly) {
  const int host = np() - 1;
  shoal::fast_queue<value> q(host, 16);
  if (me() == host) {
    for (value v = 0; v < 10; ++v) ASSERT_TRUE(q.try_push(v, shoal::promise::local));
    std::vector<value> seven(7, 1);
    EXPECT_FALSE(q.try_push(seven, shoal::promise::local));  // 10 + 7 > 16
  } else {
    EXPECT_THROW((void)q.try_push(value{1}, shoal::promise::local), shoal::usage_error);
    EXPECT_THROW((void)q.try_pop(shoal::promise::local), shoal::usage_error);
  }
  shoal::barrier();
  // Pop phase: remote pops and then the host drains the rest locally.
  std::vector<value> got;
  if (me() != host) q.try_pop(got, 2);
  shoal::barrier();
  if (me() == host) q.try_pop(got, 100, shoal::promise::local);
  const auto total = shoal::allreduce(got.size(), shoal::op::sum{});
  EXPECT_EQ(total, 10u);
  shoal::barrier();
}

TEST(FastQueue, WiderPromiseIsRejected) {
  shoal::fast_queue<value> q(0, 4);
  EXPECT_THROW((void)q.try_push(value{1}, shoal::promise::any), shoal::usage_error);
  EXPECT_THROW((void)q.try_pop(shoal::promise::push | shoal::promise::pop), shoal::usage_error);
  try {
    (void)q.try_push(value{1}, shoal::promise::any);
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("circular_queue"), std::string::npos) << e.what();
  }
  shoal::barrier();
}

TEST(FastQueue, ConstructionErrorsOnEveryRank) {
  EXPECT_THROW(shoal::fast_queue<value>(np(), 4), shoal::usage_error);
  EXPECT_THROW(shoal::fast_queue<value>(0, 0), shoal::usage_error);
  try {
    shoal::fast_queue<value> q(0, shoal::heap_capacity());  // 8x the heap
    FAIL() << "expected heap_exhausted";
  } catch (const shoal::heap_exhausted& e) {
    EXPECT_NE(std::string(e.what()).find("SHOAL_HEAP_SIZE"), std::string::npos) << e.what();
  }
  shoal::barrier();
}

// ---- resize and migrate (both queues) --------------------------------------------------------------------------

template <class Q>
class BothQueues : public ::testing::Test {};
using queue_types = ::testing::Types<shoal::fast_queue<value>, shoal::circular_queue<value>>;
TYPED_TEST_SUITE(BothQueues, queue_types);

/// Every rank pushes `per_rank` of its values (in a push phase).
template <class Q>
void fill(Q& q, std::size_t per_rank) {
  auto mine = values_of(me(), per_rank);
  ASSERT_TRUE(q.try_push(std::span<const value>(mine), shoal::promise::push));
  shoal::barrier();
}

/// Pops everything (rank 0, pop phase) and returns it sorted on every rank's behalf.
template <class Q>
std::vector<value> drain_on_rank0(Q& q) {
  std::vector<value> all;
  if (me() == 0) {
    q.try_pop(all, q.capacity(), shoal::promise::pop);
    std::sort(all.begin(), all.end());
  }
  shoal::barrier();
  return all;
}

std::vector<value> everyone(std::size_t per_rank) {
  std::vector<value> all;
  for (int r = 0; r < np(); ++r) {
    auto v = values_of(r, per_rank);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TYPED_TEST(BothQueues, ResizeKeepsContents) {
  TypeParam q(np() - 1, 8);
  // Move the positions off zero so the live values wrap in the old ring.
  if (me() == 0) {
    std::vector<value> five(5, 0);
    ASSERT_TRUE(q.try_push(five, shoal::promise::push));
  }
  shoal::barrier();
  if (me() == 0) { EXPECT_EQ(q.try_pop(*std::make_unique<std::vector<value>>(), 5, shoal::promise::pop), 5u); }
  shoal::barrier();
  q.resize(static_cast<std::size_t>(np()) * 2);
  EXPECT_EQ(q.capacity(), static_cast<std::size_t>(np()) * 2);
  fill(q, 2);  // full now
  q.resize(static_cast<std::size_t>(np()) * 5);
  EXPECT_EQ(q.size(), static_cast<std::size_t>(np()) * 2);
  EXPECT_THROW(q.resize(1), shoal::usage_error);  // below size(): refused on every rank, contents unchanged
  fill(q, 3);
  const auto all = drain_on_rank0(q);
  if (me() == 0) {
    std::vector<value> expect = everyone(2);
    for (int r = 0; r < np(); ++r) {
      auto v = values_of(r, 3);
      expect.insert(expect.end(), v.begin(), v.end());
    }
    std::sort(expect.begin(), expect.end());
    EXPECT_EQ(all, expect);
  }
}

TYPED_TEST(BothQueues, MigrateKeepsContentsOnEveryHost) {
  TypeParam q(0, 64);
  fill(q, 3);
  for (int step = 1; step <= np(); ++step) {
    const int to = step % np();
    q.migrate(to);
    EXPECT_EQ(q.host(), to);
    EXPECT_EQ(q.size(), static_cast<std::size_t>(np()) * 3);
    shoal::barrier();
  }
  const auto all = drain_on_rank0(q);
  if (me() == 0) {
    auto expect = everyone(3);
    EXPECT_EQ(all, expect);
  }
  // The migrated queue keeps working.
  fill(q, 1);
  EXPECT_EQ(q.size(), static_cast<std::size_t>(np()));
  shoal::barrier();
}

// BCL's defect: a queue built from a moved temporary freed its own storage, so pushes overwrote head and tail.
// Here queues are built as temporaries, moved into a vector (which reallocates and moves them again), returned
// from a function and move-assigned; then every rank pushes and pops heavily through them.
template <class Q>
Q make_queue(int host, std::size_t capacity) {
  Q q(host, capacity);
  return q;
}

TYPED_TEST(BothQueues, MovedTemporariesStayIntact) {
  const std::size_t in_use = shoal::heap_in_use();
  {
    const std::size_t per_rank = static_cast<std::size_t>(scaled(600));
    const std::size_t capacity = per_rank * static_cast<std::size_t>(np());
    std::vector<TypeParam> queues;  // no reserve: growth moves the elements
    for (int r = 0; r < np(); ++r) queues.push_back(TypeParam(r, capacity));
    TypeParam spare = make_queue<TypeParam>(0, 4);
    spare = std::move(queues.back());  // move-assign frees the 4-slot queue on its host, keeps the big one
    queues.back() = std::move(spare);
    EXPECT_THROW((void)spare.size(), shoal::usage_error);  // the moved-from handle owns nothing

    for (int round = 0; round < 2; ++round) {
      // Push phase: every rank sends its values to every queue, in chunks of 13 and single values.
      auto mine = values_of(me(), per_rank);
      for (auto& q : queues) {
        std::size_t i = 0;
        for (; i + 13 <= per_rank; i += 13) ASSERT_TRUE(q.try_push(std::span<const value>(mine.data() + i, 13),
                                                                shoal::promise::push));
        for (; i < per_rank; ++i) ASSERT_TRUE(q.try_push(mine[i], shoal::promise::push));
      }
      shoal::barrier();
      // Pop phase: each host drains its own queue and checks every value arrived once.
      auto& own = queues[static_cast<std::size_t>(me())];
      std::vector<value> got;
      EXPECT_EQ(own.try_pop(got, capacity + 5, shoal::promise::pop), capacity);
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, everyone(per_rank));
      shoal::barrier();
    }
  }
  shoal::barrier();
  EXPECT_EQ(shoal::heap_in_use(), in_use);  // every ring freed exactly once
}

// ---- circular_queue ---------------------------------------------------------------------------------------------

/// Each promise variant, in the phases it allows, gives the same results: a push phase then a pop phase.
void push_then_pop_with(shoal::concurrency push_promise, shoal::concurrency pop_promise, bool host_only) {
  const std::size_t per_rank = static_cast<std::size_t>(scaled(300));
  const int host = np() - 1;
  shoal::circular_queue<value> q(host, per_rank * static_cast<std::size_t>(np()));
  const bool active = !host_only || me() == host;
  const int pushers = host_only ? 1 : np();
  bool pushed = true;
  if (active) {
    // The host alone pushes every rank's values in the local case.
    for (int r = host_only ? 0 : me(); pushed && r < (host_only ? np() : me() + 1); ++r) {
      auto v = values_of(r, per_rank);
      for (std::size_t i = 0; pushed && i < per_rank; i += 11) {
        const std::size_t n = std::min<std::size_t>(11, per_rank - i);
        pushed = q.try_push(std::span<const value>(v.data() + i, n), push_promise);
      }
    }
  }
  (void)pushers;
  // Every rank learns whether a push failed anywhere before the next collective, so all of them stop together.
  ASSERT_TRUE(shoal::testing::all_ranks(pushed)) << "a push into a queue with room for every value was refused";
  shoal::barrier();
  EXPECT_EQ(q.size(), per_rank * static_cast<std::size_t>(np()));
  shoal::barrier();
  exactly_once check(per_rank * static_cast<std::size_t>(np()));
  if (active) {
    std::vector<value> got;
    while (auto v = q.try_pop(pop_promise)) {
      got.push_back(*v);
      if (q.try_pop(got, 4, pop_promise) == 0) break;
    }
    for (value v : got) check.saw(v);
  }
  EXPECT_TRUE(check.verify());
  EXPECT_EQ(q.size(), 0u);
  shoal::barrier();
}

TEST(CircularQueue, FullyAtomicVariant) { push_then_pop_with(shoal::promise::any, shoal::promise::any, false); }
TEST(CircularQueue, PushOnlyAndPopOnlyVariants) {
  push_then_pop_with(shoal::promise::push, shoal::promise::pop, false);
}
TEST(CircularQueue, LocalVariant) { push_then_pop_with(shoal::promise::local, shoal::promise::local, true); }
TEST(CircularQueue, ExplicitPushOrPopPromiseIsFullyAtomic) {
  push_then_pop_with(shoal::promise::push | shoal::promise::pop, shoal::promise::push | shoal::promise::pop, false);
}

TEST(CircularQueue, ConcurrentPushesAndPopsEveryValueOnce) {
  // A small queue on rank 0 that every rank fills and drains at once (fully atomic), with wrap-around, full and
  // empty queues all along the way.
  const std::size_t per_rank = static_cast<std::size_t>(scaled(3000));
  shoal::circular_queue<value> q(0, 16);
  exactly_once check(per_rank * static_cast<std::size_t>(np()));
  const auto mine = values_of(me(), per_rank);
  std::mt19937 rng(static_cast<unsigned>(me()) + 11);
  std::size_t pushed = 0;
  std::vector<value> got;
  while (pushed < per_rank) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % 4, per_rank - pushed);
    if (q.try_push(std::span<const value>(mine.data() + pushed, n))) pushed += n;
    if (rng() % 2) {
      if (auto v = q.try_pop()) got.push_back(*v);
    } else {
      q.try_pop(got, 1 + rng() % 3);
    }
  }
  shoal::barrier();
  while (q.try_pop(got, 8) > 0) {
  }
  for (value v : got) check.saw(v);
  EXPECT_TRUE(check.verify());
  EXPECT_EQ(q.size(), 0u);
  shoal::barrier();
}

TEST(CircularQueue, ConcurrentPhasesOnOneQueuePerRank) {
  // One queue per rank; every rank pushes to every queue (push-only phase), then every rank pops from every queue
  // (pop-only phase).
  const std::size_t per_rank = static_cast<std::size_t>(scaled(100));
  std::vector<shoal::circular_queue<value>> queues;
  for (int r = 0; r < np(); ++r) queues.emplace_back(r, per_rank * static_cast<std::size_t>(np()));
  exactly_once check(per_rank * static_cast<std::size_t>(np()) * static_cast<std::size_t>(np()));
  for (int r = 0; r < np(); ++r) {
    auto v = values_of(me() * np() + r, per_rank);  // distinct values per (pusher, queue)
    for (value x : v) ASSERT_TRUE(queues[static_cast<std::size_t>(r)].try_push(x, shoal::promise::push));
  }
  shoal::barrier();
  std::vector<value> got;
  for (int k = 0; k < np(); ++k) {
    auto& q = queues[static_cast<std::size_t>((me() + k) % np())];
    while (q.try_pop(got, 3, shoal::promise::pop) > 0) {
    }
  }
  for (value v : got) check.saw(v);
  EXPECT_TRUE(check.verify());
}

TEST(CircularQueue, FullAndEmpty) {
  constexpr std::size_t capacity = 6;
  shoal::circular_queue<value> q(np() - 1, capacity);
  EXPECT_FALSE(q.try_pop().has_value());
  std::vector<value> out;
  EXPECT_EQ(q.try_pop(out, 2), 0u);
  shoal::barrier();
  // Concurrent fully atomic pushes fill it exactly.
  std::size_t pushed = 0;
  while (pushed < capacity && q.try_push(static_cast<value>(me()) * 100 + pushed)) ++pushed;
  EXPECT_EQ(shoal::allreduce(pushed, shoal::op::sum{}), capacity);
  shoal::barrier();
  if (me() == 0) {
    std::vector<value> four(4, 5);
    EXPECT_FALSE(q.try_push(four));  // all or nothing
    EXPECT_FALSE(q.try_push(value{1}, shoal::promise::push));
    EXPECT_EQ(q.try_pop(out, 100), capacity);  // up to n
    EXPECT_TRUE(q.try_push(four));
    EXPECT_EQ(q.size(), 4u);
    EXPECT_EQ(q.try_pop(out, 100), 4u);
  }
  shoal::barrier();
  EXPECT_TRUE(q.empty());
  shoal::barrier();
}

TEST(CircularQueue, PushThrowsContainerFullAndWritesNothing) {
  check_throwing_push<shoal::circular_queue<value>>(shoal::promise::any, shoal::promise::any);
  check_throwing_push<shoal::circular_queue<value>>(shoal::promise::push, shoal::promise::pop);
}

TEST(CircularQueue, LocalPromiseOnTheHostOnly) {
  shoal::circular_queue<value> q(0, 8);
  if (me() != 0) {
    EXPECT_THROW((void)q.try_push(value{1}, shoal::promise::local), shoal::usage_error);
  } else {
    ASSERT_TRUE(q.try_push(value{3}, shoal::promise::local));
  }
  shoal::barrier();
  // The local push is visible to remote pops in the next phase.
  std::optional<value> v;
  if (me() == np() - 1) v = q.try_pop();
  shoal::barrier();
  if (me() == np() - 1) { EXPECT_EQ(v, std::optional<value>(3)); }
  shoal::barrier();
}

// Element types must be trivially copyable (shoal::remote_storable); fast_queue<std::string> does not compile.
static_assert(shoal::remote_storable<value> && !shoal::remote_storable<std::string>);

struct pair32 {
  std::uint32_t a, b;
  friend bool operator==(const pair32&, const pair32&) = default;
};

TEST(CircularQueue, StructElements) {
  shoal::circular_queue<pair32> q(0, 8);
  if (me() == np() - 1) { ASSERT_TRUE(q.try_push(pair32{1, 2})); }
  shoal::barrier();
  if (me() == 0) { EXPECT_EQ(q.try_pop(), std::optional<pair32>(pair32{1, 2})); }
  shoal::barrier();
}

}  // namespace
