// Containers on teams, and the lifetime of containers across environments. MPI is initialised by the test's main
// (core_adopt_main.cpp), so each test starts and ends its own shoal::environment.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "shoal/containers/bloom_filter.hpp"
#include "shoal/containers/circular_queue.hpp"
#include "shoal/containers/darray.hpp"
#include "shoal/containers/dist_map.hpp"
#include "shoal/containers/fast_queue.hpp"
#include "shoal/containers/dist_multimap.hpp"
#include "shoal/containers/hash_map.hpp"
#include "shoal/containers/hash_map_buffer.hpp"
#include "shoal/containers/ordered_map.hpp"
#include "shoal/containers/relaxed_queue.hpp"
#include "shoal/shoal.hpp"

namespace {

/// The environment ranks of a team, in team order.
std::vector<int> members(const shoal::team& t) {
  std::vector<int> out;
  for (int r = 0; r < t.size(); ++r) out.push_back(t.to_world(r));
  return out;
}

template <class F>
void expect_usage_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected shoal::usage_error containing \"" << fragment << "\"";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

/// Uses one of every kind of container on team t at once and checks exact end states. Every rank of t calls it.
void exercise(const shoal::team& t) {
  const int me = shoal::rank();
  const int n = t.size();
  const std::vector<int> world_ranks = members(t);

  shoal::hash_map<std::uint64_t, std::uint64_t> hm(64, {}, t);
  shoal::hash_map<std::string, std::string> hs(64, {}, t);  // blobs: returned to team ranks
  shoal::dist_map<int, int> dm({}, t);
  shoal::dist_multimap<int, int> mm({}, t);
  shoal::hash_map<int, int> buffered(64, {}, t);
  shoal::hash_map_buffer<int, int> buffer(buffered);
  shoal::darray<int> da(static_cast<std::size_t>(3 * n), t);
  shoal::array<int> ar(n - 1, static_cast<std::size_t>(n), t);
  shoal::bloom_filter<int> bf(1024, 3, {}, t);
  shoal::circular_queue<int> cq(n - 1, static_cast<std::size_t>(n), t);
  shoal::fast_queue<int> fq(0, static_cast<std::size_t>(n), t);
  shoal::relaxed_queue_options ro;
  ro.capacity_per_rank = 4;
  shoal::relaxed_queue<int> rq(ro, t);
  shoal::ordered_map<int, int> om({}, t);
  EXPECT_EQ(da.team().size(), n);
  EXPECT_EQ(ar.host(), n - 1);

  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(hm.insert(static_cast<std::uint64_t>(me * 100 + i), static_cast<std::uint64_t>(me)));
    EXPECT_TRUE(hs.insert("k" + std::to_string(me * 100 + i), std::to_string(me)));
  }
  hs.insert_or_assign("k" + std::to_string(me * 100), "again");  // releases a value blob
  dm.insert(me, me * 7);
  mm.insert(0, me);  // every rank's value under one key, at one owner
  buffer.post_insert(me, me + 3);
  for (int k = 0; k < 3; ++k) da.put(static_cast<std::size_t>(3 * t.rank() + k), me * 10 + k);
  ar.put(static_cast<std::size_t>(t.rank()), me + 1);
  bf.insert(me);
  ASSERT_TRUE(cq.try_push(me));
  ASSERT_TRUE(fq.try_push(me));
  ASSERT_TRUE(rq.try_push(me));
  EXPECT_TRUE(om.insert(me, me + 1));
  dm.flush();
  mm.flush();
  buffer.flush();
  om.barrier();  // quiescence of this team's messages only
  t.barrier();

  EXPECT_EQ(hm.size(), static_cast<std::size_t>(5 * n));
  EXPECT_EQ(hs.size(), static_cast<std::size_t>(5 * n));
  EXPECT_EQ(dm.size(), static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const int w = world_ranks[static_cast<std::size_t>(r)];
    for (int i = 0; i < 5; ++i) {
      EXPECT_EQ(hm.find(static_cast<std::uint64_t>(w * 100 + i)), std::optional<std::uint64_t>(w));
      EXPECT_EQ(hs.find("k" + std::to_string(w * 100 + i)), std::optional<std::string>(i == 0 ? "again" : std::to_string(w)));
    }
    EXPECT_EQ(dm.find(w), std::optional<int>(w * 7));
    EXPECT_EQ(buffered.find(w), std::optional<int>(w + 3));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(da.get(static_cast<std::size_t>(3 * r + k)), w * 10 + k);
    EXPECT_EQ(da.ptr(static_cast<std::size_t>(3 * r)).rank(), w);  // team rank r's block is on environment rank w
    EXPECT_EQ(ar.get(static_cast<std::size_t>(r)), w + 1);
    EXPECT_TRUE(bf.find(w));
    EXPECT_EQ(om.find(w), std::optional<int>(w + 1));
  }
  EXPECT_EQ(om.size(), static_cast<std::size_t>(n));
  auto all = mm.find(0);
  std::sort(all.begin(), all.end());
  std::vector<int> sorted_members = world_ranks;
  std::sort(sorted_members.begin(), sorted_members.end());
  EXPECT_EQ(all, sorted_members);
  EXPECT_EQ(buffered.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(ar.ptr(0).rank(), world_ranks.back());
  EXPECT_EQ(cq.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(rq.size(), static_cast<std::size_t>(n));
  // Exactly the team's ranks went into each map's shards / each queue.
  std::size_t owned = dm.local_size();
  EXPECT_EQ(t.allreduce(owned, shoal::op::sum{}), static_cast<std::size_t>(n));
  t.barrier();
  // Everything a hosted queue holds, sorted (each team rank pushed its environment rank).
  const auto drained_sorted = [](auto& queue) {
    std::vector<int> popped;
    while (auto v = queue.try_pop()) popped.push_back(*v);
    std::sort(popped.begin(), popped.end());
    return popped;
  };
  std::vector<int> expected = world_ranks;
  std::sort(expected.begin(), expected.end());
  if (t.rank() == n - 1) {
    EXPECT_EQ(drained_sorted(cq), expected);
  }
  if (t.rank() == 0) {
    EXPECT_EQ(drained_sorted(fq), expected);
  }
  t.barrier();
  std::vector<int> mine;
  while (auto v = rq.try_pop()) mine.push_back(*v);
  const auto total = t.allreduce(mine.size(), shoal::op::sum{});
  EXPECT_EQ(total, static_cast<std::size_t>(n));
  const auto sum = t.allreduce(std::accumulate(mine.begin(), mine.end(), std::int64_t{0}), shoal::op::sum{});
  EXPECT_EQ(sum, std::accumulate(world_ranks.begin(), world_ranks.end(), std::int64_t{0}));
}

TEST(Teams, TwoDisjointTeamsAtTheSameTime) {
  shoal::environment env;
  const std::size_t before = shoal::heap_in_use();
  const shoal::team half = shoal::world().split(shoal::rank() % 2, shoal::rank());
  EXPECT_EQ(half.size(), (shoal::size() + 1 - shoal::rank() % 2) / 2);
  EXPECT_EQ(half.rank(), shoal::rank() / 2);
  for (int r = 0; r < half.size(); ++r) EXPECT_EQ(half.to_world(r), 2 * r + shoal::rank() % 2);
  EXPECT_EQ(half.from_world(shoal::rank()), half.rank());
  if (shoal::size() > 1) {
    EXPECT_EQ(half.from_world(shoal::rank() % 2 == 0 ? 1 : 0), -1);  // the other parity
  }
  exercise(half);
  shoal::barrier();
  EXPECT_EQ(shoal::heap_in_use(), before);  // every container freed what it took, on its own team
}

TEST(Teams, TeamOfOneRank) {
  shoal::environment env;
  const shoal::team alone = shoal::world().split(shoal::rank());
  EXPECT_EQ(alone.size(), 1);
  EXPECT_EQ(alone.to_world(0), shoal::rank());
  EXPECT_EQ(alone.node().size(), 1);
  exercise(alone);
}

TEST(Teams, ReversedOrderAndOddRanks) {
  shoal::environment env;
  const shoal::team reversed = shoal::world().split(0, -shoal::rank());
  EXPECT_EQ(reversed.size(), shoal::size());
  EXPECT_EQ(reversed.rank(), shoal::size() - 1 - shoal::rank());
  EXPECT_EQ(reversed.is_world(), shoal::size() == 1);
  exercise(reversed);

  const bool odd = shoal::rank() % 2 == 1;
  const shoal::team odds = shoal::world().split(odd ? 0 : -1);
  EXPECT_EQ(odds.valid(), odd);
  if (odd) {
    exercise(odds);
  } else {
    expect_usage_error([&] { shoal::darray<int> d(4, odds); }, "team is empty");
  }
  shoal::barrier();
}

TEST(Teams, FromTheUsersCommSplit) {
  shoal::environment env;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm mine = MPI_COMM_NULL;
  // Thirds, ordered backwards: not contiguous from 4 ranks on, and not in environment order.
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 3, -world_rank, &mine);
  const shoal::team t(mine);
  MPI_Comm_free(&mine);  // the team holds its own duplicate
  int expected_size = 0;
  for (int r = 0; r < shoal::size(); ++r) expected_size += r % 3 == world_rank % 3 ? 1 : 0;
  ASSERT_EQ(t.size(), expected_size);
  for (int r = 0; r < t.size(); ++r) EXPECT_EQ(t.to_world(r) % 3, world_rank % 3);
  if (t.size() > 1) {
    EXPECT_GT(t.to_world(0), t.to_world(1));
  }
  EXPECT_EQ(t.to_world(t.rank()), shoal::rank());
  EXPECT_NE(t.comm(), shoal::world().comm());
  EXPECT_LE(t.node().size(), t.size());
  expect_usage_error([&] { (void)t.to_world(t.size()); }, "outside the team");
  exercise(t);
  // A split of the team is a team too.
  const shoal::team pair = t.split(t.rank() / 2, t.rank());
  EXPECT_EQ(pair.to_world(pair.rank()), shoal::rank());
  exercise(pair);
  shoal::barrier();
}

TEST(Teams, MisuseIsAClearUsageError) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm parity = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &parity);
  {
    shoal::options opts;
    opts.comm = parity;  // the environment holds the ranks of one parity only
    shoal::environment env(opts);
    if (world_size > 1) {
      expect_usage_error([] { shoal::team foreign(MPI_COMM_WORLD); }, "not a rank of the environment");
    } else {
      const shoal::team all(MPI_COMM_WORLD);
      EXPECT_EQ(all.size(), 1);
    }
    expect_usage_error([] { shoal::team none(MPI_COMM_NULL); }, "MPI_COMM_NULL");
    shoal::array<int> a(0, 1);
    expect_usage_error([] { shoal::array<int> b(shoal::size(), 1); }, "host rank");
    shoal::barrier();
  }
  MPI_Comm_free(&parity);
}

TEST(Teams, OrderedMapOnWorld) {
  shoal::environment env;
  shoal::ordered_map<int, int> m({}, shoal::world());
  m.insert(shoal::rank(), shoal::rank() + 1);
  m.barrier();
  EXPECT_EQ(m.size(), static_cast<std::size_t>(shoal::size()));
  EXPECT_EQ(m.find(0), std::optional<int>(1));
}

// ---- lifetime ----------------------------------------------------------------------------------------------------

struct run_one_containers {
  shoal::darray<int> da{8};
  shoal::hash_map<std::string, std::string> hm{16};
  shoal::bloom_filter<int> bf{256, 2};
  shoal::dist_map<int, int> dm;
  shoal::circular_queue<int> cq{0, 4};
  shoal::array<int> ar{0, 4};
  std::optional<shoal::ordered_map<int, int>> om{std::in_place};
};

TEST(Lifetime, ContainersOutliveTheirEnvironment) {
  std::optional<run_one_containers> old;
  {
    shoal::environment env;
    old.emplace();
    old->da.put(static_cast<std::size_t>(shoal::rank()) % 8, 1);
    old->hm.insert(std::to_string(shoal::rank()), "x");
    old->dm.insert(shoal::rank(), 1);
    old->dm.flush();
  }
  // Run 2: the run-1 containers are unusable, and destroying them frees nothing of run 2.
  shoal::environment env;
  const std::size_t before = shoal::heap_in_use();
  shoal::darray<int> fresh(4);  // takes the offsets run 1 had used
  const std::size_t with_fresh = shoal::heap_in_use();
  expect_usage_error([&] { (void)old->da.get(0); }, "made in environment run");
  expect_usage_error([&] { (void)old->hm.find("0"); }, "made in environment run");
  expect_usage_error([&] { (void)old->bf.find(0); }, "made in environment run");
  expect_usage_error([&] { (void)old->dm.find(0); }, "made in environment run");
  expect_usage_error([&] { (void)old->cq.try_push(1); }, "made in environment run");
  expect_usage_error([&] { (void)old->ar.get(0); }, "made in environment run");
  expect_usage_error([&] { (void)old->om->find(0); }, "made in environment run");
  expect_usage_error([&] { old->da.team().barrier(); }, "environment that has ended");
  EXPECT_FALSE(old->da.team().live());
  EXPECT_TRUE(fresh.team().live());
  EXPECT_FALSE(shoal::team().live());
  old.reset();  // destructors of run 1: no communication, no free
  EXPECT_EQ(shoal::heap_in_use(), with_fresh);
  fresh.put(static_cast<std::size_t>(shoal::rank()) % 4, 5);
  shoal::barrier();
  EXPECT_GT(with_fresh, before);
}

TEST(Lifetime, DestroyedAfterFinalizeWithNoEnvironment) {
  std::optional<run_one_containers> old;
  {
    shoal::environment env;
    old.emplace();
  }
  expect_usage_error([&] { (void)old->da.get(0); }, "finalized");
  expect_usage_error([&] { old->da.team().barrier(); }, "finalized");
  old.reset();  // no environment at all: a no-op, no error
  SUCCEED();
}

TEST(Lifetime, TwoEnvironmentsWithContainersInBoth) {
  for (int run = 0; run < 2; ++run) {
    shoal::environment env;
    const std::size_t before = shoal::heap_in_use();
    {
      run_one_containers c;
      const int n = shoal::size();
      c.dm.insert(shoal::rank(), run);
      c.hm.insert("r" + std::to_string(shoal::rank()), std::to_string(run));
      c.bf.insert(shoal::rank() + 100 * run);
      c.dm.flush();
      shoal::barrier();
      EXPECT_EQ(c.dm.size(), static_cast<std::size_t>(n));
      EXPECT_EQ(c.hm.size(), static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(c.dm.find(r), std::optional<int>(run));
        // Not "r" + std::to_string(r): GCC 12 at -O3 warns (-Wrestrict) about its own inlined copy here.
        const std::string key = std::string("r").append(std::to_string(r));
        EXPECT_EQ(c.hm.find(key), std::optional<std::string>(std::to_string(run)));
        EXPECT_TRUE(c.bf.find(r + 100 * run));
      }
    }
    EXPECT_EQ(shoal::heap_in_use(), before);
  }
}

TEST(Lifetime, MovedFromContainersDestroyed) {
  shoal::environment env;
  const std::size_t before = shoal::heap_in_use();
  {
    shoal::darray<int> a(8);
    shoal::darray<int> b(std::move(a));
    shoal::hash_map<int, int> h(8);
    shoal::hash_map<int, int> h2(std::move(h));
    shoal::bloom_filter<int> f(64, 2);
    shoal::bloom_filter<int> f2(std::move(f));
    shoal::circular_queue<int> q(0, 2);
    shoal::circular_queue<int> q2(std::move(q));
    expect_usage_error([&] { (void)a.get(0); }, "moved from");
    expect_usage_error([&] { (void)q.try_push(1); }, "moved from");
    b.put(0, 3);
    shoal::barrier();
    EXPECT_EQ(b.get(0), 3);
    {
      shoal::darray<int> gone(std::move(b));  // destroyed here (collectively); b is left moved-from
    }
    expect_usage_error([&] { (void)b.get(0); }, "moved from");
  }  // the moved-from handles are destroyed alongside: nothing freed twice
  EXPECT_EQ(shoal::heap_in_use(), before);
}

}  // namespace
