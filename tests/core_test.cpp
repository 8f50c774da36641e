// Tests of the core runtime: heap, global pointers, get/put, atomics, collectives, futures, errors.
// Registered twice: on the path chosen at start and with SHOAL_FORCE_MPI=1 (see tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <vector>
#include <atomic>
#include <chrono>
#include <thread>

#include "shoal/core.hpp"
#include "shoal/core/layer.hpp"
#include "shoal_test.hpp"

namespace {

int me() { return shoal::rank(); }
int np() { return shoal::size(); }
int right() { return (me() + 1) % np(); }
int left() { return (me() + np() - 1) % np(); }

TEST(Environment, PathMatchesSetting) {
  const bool messages = shoal::detail::env_flag("SHOAL_FORCE_MESSAGES");
  const bool forced = shoal::detail::env_flag("SHOAL_FORCE_MPI") || messages;
  // The hosts of the job, as MPI sees them (MPI_COMM_TYPE_SHARED): one leader per host.
  const int leaders = shoal::allreduce(shoal::node_team().rank() == 0 ? 1 : 0, shoal::op::sum{});
  EXPECT_EQ(shoal::host_count(), leaders);
  // Same host <=> in node_team(): every rank learns every rank's host leader (its lowest world rank on the host).
  const int my_leader = shoal::node_team().allreduce(me(), shoal::op::min{});
  const std::vector<int> leader_of = shoal::allgather(my_leader);
  for (int t = 0; t < np(); ++t) {
    const bool same = leader_of[static_cast<std::size_t>(t)] == my_leader;
    if (messages) {
      EXPECT_EQ(shoal::path_to(t), shoal::rma_path::messages) << "target " << t;
      EXPECT_EQ(shoal::atomic_path_to(t), shoal::rma_path::messages) << "target " << t;
    } else if (forced) {
      EXPECT_NE(shoal::path_to(t), shoal::rma_path::shared_memory) << "target " << t;
      EXPECT_NE(shoal::atomic_path_to(t), shoal::rma_path::shared_memory) << "target " << t;
    } else if (same) {
      EXPECT_EQ(shoal::path_to(t), shoal::rma_path::shared_memory) << "target " << t;
      EXPECT_EQ(shoal::atomic_path_to(t), shoal::rma_path::shared_memory) << "target " << t;
    } else {
      EXPECT_NE(shoal::path_to(t), shoal::rma_path::shared_memory) << "target " << t;
      // Atomics to another host are applied by its owner, coherent with that host's CPU atomics.
      EXPECT_EQ(shoal::atomic_path_to(t), shoal::rma_path::messages) << "target " << t;
    }
  }
  if (forced) {
    EXPECT_NE(shoal::current_rma_path(), shoal::rma_path::shared_memory);
  } else {
    EXPECT_EQ(shoal::current_rma_path() == shoal::rma_path::shared_memory, shoal::host_count() == 1);
  }
  EXPECT_FALSE(shoal::describe_paths().empty());
  EXPECT_EQ(shoal::world().rank(), me());
  EXPECT_THROW(shoal::environment{}, shoal::usage_error);
}

// A remote atomic completes while its target computes without calling shoal: the progress thread (or, on one host,
// the CPU) applies it. Rank 0 waits on its own word with plain loads only.
TEST(Progress, RemoteAtomicsCompleteWhileTheTargetComputes) {
  constexpr int per_rank = 50;
  auto words = shoal::allocate_collective<std::int64_t>(1);
  *words[static_cast<std::size_t>(me())].local() = 0;
  shoal::barrier();
  // Without a progress thread, a target off this host's shared memory needs its owner in shoal: poll then.
  const bool target_needs_calls = shoal::allreduce(shoal::atomic_path_to(0) != shoal::rma_path::shared_memory ? 1 : 0,
                                        shoal::op::max{}) == 1 &&
                       !shoal::progress_thread_running();
  if (me() == 0) {
    std::atomic_ref<std::int64_t> word(*words[0].local());
    const std::int64_t expected = static_cast<std::int64_t>(np() - 1) * per_rank;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (word.load() != expected && std::chrono::steady_clock::now() < deadline) {
      if (target_needs_calls) shoal::progress();
      std::this_thread::yield();
    }
    EXPECT_EQ(word.load(), expected) << "remote atomics did not complete while rank 0 computed";
  } else {
    for (int i = 0; i < per_rank; ++i) shoal::fetch_add(words[0], std::int64_t{1});
  }
  shoal::barrier();
}

// shoal::wait_until calls its condition until it holds, and keeps the rank making progress meanwhile: a word set by
// the left neighbour with a remote atomic (applied by this rank's progress on the message path) ends the wait.
TEST(Progress, WaitUntilCallsTheConditionUntilItHolds) {
  int calls = 0;
  shoal::wait_until([&] { return ++calls == 5; });
  EXPECT_EQ(calls, 5);
  shoal::wait_until([&] { return ++calls > 0; });
  EXPECT_EQ(calls, 6) << "a condition that holds at once is called once";
  auto words = shoal::allocate_collective<std::int64_t>(1);
  *words[static_cast<std::size_t>(me())].local() = 0;
  shoal::barrier();
  shoal::atomic_store(words[static_cast<std::size_t>(right())], std::int64_t{me() + 1});
  shoal::wait_until([&] { return shoal::atomic_load(words[static_cast<std::size_t>(me())]) != 0; });
  EXPECT_EQ(shoal::atomic_load(words[static_cast<std::size_t>(me())]), left() + 1);
  shoal::barrier();
  shoal::deallocate(words[static_cast<std::size_t>(me())]);
}


// The rule of detail/wait_sleep.hpp: waits sleep only when the machine runs more ranks than it has CPUs for them (a
// sleeping waiter then lets a rank that shares its CPU run); an unknown CPU count (0) is the safe side, sleeping.
TEST(Waits, SleepOnlyWithMoreRanksOnTheMachineThanCpus) {
  using shoal::detail::waits_may_sleep;
  EXPECT_FALSE(waits_may_sleep(1, 1));
  EXPECT_FALSE(waits_may_sleep(1, 2));
  EXPECT_FALSE(waits_may_sleep(2, 2)) << "a CPU per rank: waits spin and yield";
  EXPECT_TRUE(waits_may_sleep(3, 2));
  EXPECT_TRUE(waits_may_sleep(4, 2)) << "4 ranks on 2 cores (the oversubscribed tests): waits sleep";
  EXPECT_TRUE(waits_may_sleep(2, 1));
  EXPECT_FALSE(waits_may_sleep(64, 128));
  EXPECT_TRUE(waits_may_sleep(129, 128));
  EXPECT_TRUE(waits_may_sleep(1, 0)) << "unknown CPU count";
  static_assert(!waits_may_sleep(2, 2) && waits_may_sleep(4, 2));
}

// The environment's decision: this machine holds at least this node's ranks (emulated hosts share one machine),
// their CPUs are at least one and at most what the machine has, and the decision is the rule's unless
// SHOAL_WAIT_SLEEP set it; every rank of a machine decides alike.
TEST(Waits, EnvironmentDecidesByTheRule) {
  const auto& w = shoal::detail::rt().waits;
  EXPECT_GE(w.ranks, shoal::node_team().size());
  EXPECT_LE(w.ranks, np());
  EXPECT_GE(w.cpus, 1);
  EXPECT_LE(w.cpus, static_cast<int>(std::thread::hardware_concurrency()));
  const char* forced = std::getenv("SHOAL_WAIT_SLEEP");
  if (forced == nullptr || *forced == '\0' || std::string(forced) == "auto") {
    EXPECT_FALSE(w.forced);
    EXPECT_EQ(w.sleep, shoal::detail::waits_may_sleep(w.ranks, w.cpus));
  } else {
    EXPECT_TRUE(w.forced);
    EXPECT_EQ(w.sleep, shoal::detail::parse_flag(forced, "SHOAL_WAIT_SLEEP"));
  }
  const auto& nodes = shoal::node_team();
  EXPECT_EQ(nodes.allreduce(w.ranks, shoal::op::max{}), nodes.allreduce(w.ranks, shoal::op::min{}));
  EXPECT_NE(shoal::describe_paths().find("long waits"), std::string::npos) << shoal::describe_paths();
}
TEST(GlobalPtr, ArithmeticComparisonNull) {
  shoal::global_ptr<int> null;
  EXPECT_TRUE(null.is_null());
  EXPECT_FALSE(static_cast<bool>(null));
  EXPECT_EQ(null, nullptr);
  shoal::global_ptr<std::int64_t> p(3, 128);
  EXPECT_EQ(p.rank(), 3);
  EXPECT_EQ(p.offset(), 128u);
  auto q = p + 4;
  EXPECT_EQ(q.offset(), 128u + 32u);
  EXPECT_EQ(q - p, 4);
  EXPECT_LT(p, q);
  --q;
  EXPECT_EQ(q.offset(), 128u + 24u);
  shoal::global_ptr<const std::int64_t> c = p;
  EXPECT_EQ(c.raw(), p.raw());
  EXPECT_EQ(shoal::global_ptr<int>::from_raw(p.raw()).rank(), 3);
  shoal::global_ptr<int> r0(0, 64);
  EXPECT_FALSE(r0.is_null());
}

TEST(Heap, AllocateLocalAndFree) {
  auto p = shoal::allocate<double>(100);
  ASSERT_FALSE(p.is_null());
  EXPECT_EQ(p.rank(), me());
  EXPECT_TRUE(p.is_local());
  double* local = p.local();
  for (int i = 0; i < 100; ++i) local[i] = i;
  EXPECT_EQ(shoal::get(p + 99), 99.0);
  const auto used = shoal::heap_in_use();
  EXPECT_GE(used, 800u);
  shoal::deallocate(p);
  EXPECT_EQ(shoal::heap_in_use(), used - 800);
  EXPECT_THROW(shoal::deallocate(p), shoal::usage_error);
}

TEST(Heap, ExhaustionNamesTheSetting) {
  try {
    (void)shoal::allocate<char>(shoal::heap_capacity() * 2);
    FAIL() << "expected heap_exhausted";
  } catch (const shoal::heap_exhausted& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SHOAL_HEAP_SIZE"), std::string::npos) << what;
    EXPECT_NE(what.find("rank"), std::string::npos) << what;
  }
  // Nothing was lost: the heap still serves allocations.
  auto p = shoal::allocate<int>(16);
  EXPECT_FALSE(p.is_null());
  shoal::deallocate(p);
}

TEST(Heap, CollectiveExhaustionIsCollective) {
  const std::size_t n = me() == 0 ? shoal::heap_capacity() * 2 : 8;
  EXPECT_THROW((void)shoal::allocate_collective<char>(n), shoal::heap_exhausted);
  shoal::barrier();
}

TEST(Heap, ReuseAfterFreeCoalesces) {
  std::vector<shoal::global_ptr<char>> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(shoal::allocate<char>(1000));
  for (auto& b : blocks) shoal::deallocate(b);
  auto big = shoal::allocate<char>(60000);  // fits only if the freed blocks were merged back
  EXPECT_FALSE(big.is_null());
  shoal::deallocate(big);
}

TEST(Heap, ForeignPointerErrors) {
  if (np() < 2) GTEST_SKIP() << "needs two ranks";
  auto ptrs = shoal::allocate_collective<int>(4);
  EXPECT_THROW((void)ptrs[static_cast<std::size_t>(right())].local(), shoal::usage_error);
  EXPECT_THROW(shoal::deallocate(ptrs[static_cast<std::size_t>(right())]), shoal::usage_error);
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Rma, PutGetRing) {
  auto ptrs = shoal::allocate_collective<std::int64_t>(1024);
  ASSERT_EQ(ptrs.size(), static_cast<std::size_t>(np()));
  for (int r = 0; r < np(); ++r) EXPECT_EQ(ptrs[static_cast<std::size_t>(r)].rank(), r);
  std::vector<std::int64_t> src(1024);
  std::iota(src.begin(), src.end(), me() * 10000);
  shoal::put(ptrs[static_cast<std::size_t>(right())], src.data(), src.size());
  shoal::put(ptrs[static_cast<std::size_t>(right())] + 1023, std::int64_t{-me()});
  shoal::barrier();
  const std::int64_t* mine = ptrs[static_cast<std::size_t>(me())].local();
  EXPECT_EQ(mine[0], left() * 10000);
  EXPECT_EQ(mine[1022], left() * 10000 + 1022);
  EXPECT_EQ(mine[1023], -left());
  std::vector<std::int64_t> back(1023);
  shoal::get(ptrs[static_cast<std::size_t>(right())], back.data(), back.size());
  EXPECT_EQ(back[500], me() * 10000 + 500);
  EXPECT_EQ(shoal::get(ptrs[static_cast<std::size_t>(right())] + 7), me() * 10000 + 7);
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Rma, GetManyReadsEveryPointerInItsOwnSlot) {
  // Every rank's 64 elements hold rank * 1000 + index; each rank reads a scrambled mix of all ranks' elements (its
  // own, same-host peers', others') with one get_many, each pointer at most once and some twice.
  constexpr int per_rank = 64;
  auto ptrs = shoal::allocate_collective<std::uint64_t>(per_rank);
  std::uint64_t* mine = ptrs[static_cast<std::size_t>(me())].local();
  for (int i = 0; i < per_rank; ++i) mine[i] = static_cast<std::uint64_t>(me() * 1000 + i);
  shoal::barrier();
  std::vector<shoal::global_ptr<const std::uint64_t>> from;
  std::vector<std::uint64_t> expected;
  for (int j = 0; j < 3 * per_rank; ++j) {
    const int r = (me() + j) % np();
    const int i = (j * 37 + me()) % per_rank;
    from.push_back(ptrs[static_cast<std::size_t>(r)] + i);
    expected.push_back(static_cast<std::uint64_t>(r * 1000 + i));
  }
  std::vector<std::uint64_t> got(from.size(), ~std::uint64_t{0});
  shoal::get_many(std::span<const shoal::global_ptr<const std::uint64_t>>(from), got.data());
  EXPECT_EQ(got, expected);
  shoal::get_many(std::span<const shoal::global_ptr<const std::uint64_t>>(), got.data());  // nothing to read
  EXPECT_EQ(got, expected);
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Rma, AsyncPutGetAndFutures) {
  auto ptrs = shoal::allocate_collective<std::uint32_t>(256);
  auto target = ptrs[static_cast<std::size_t>(right())];
  std::vector<shoal::future<>> puts;
  std::vector<std::uint32_t> data(128, 0xABCD0000u + static_cast<std::uint32_t>(me()));
  puts.push_back(shoal::async_put(target, data.data(), data.size()));
  for (int i = 128; i < 256; ++i) puts.push_back(shoal::async_put(target + i, static_cast<std::uint32_t>(i)));
  shoal::wait_all(puts);
  shoal::flush_all();
  shoal::barrier();
  auto f1 = shoal::async_get(target + 200);
  std::vector<std::uint32_t> got(128);
  auto f2 = shoal::async_get(target, got.data(), got.size());
  shoal::wait_all(f1, f2);
  EXPECT_TRUE(f1.ready());
  EXPECT_EQ(f1.get(), 200u);
  EXPECT_FALSE(f1.valid());
  EXPECT_THROW(f1.get(), shoal::usage_error);
  f2.get();
  EXPECT_EQ(got[127], 0xABCD0000u + static_cast<std::uint32_t>(me()));
  auto ready = shoal::make_ready_future(std::string("done"));
  EXPECT_TRUE(ready.ready());
  EXPECT_EQ(ready.get(), "done");
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

/// A state that says when it is destroyed (layer::make_state; the future's count is intrusive and plain).
struct noted_state final : shoal::layer::future_state<int> {
  explicit noted_state(bool* gone) : gone_(gone) {}
  ~noted_state() override { *gone_ = true; }
  bool* gone_;
};

/// Cells allocated together: futures point into the chunk and own a share of it.
struct noted_chunk final : shoal::layer::future_cells<int, 2> {
  explicit noted_chunk(bool* gone) : gone_(gone) {}
  ~noted_chunk() override { *gone_ = true; }
  bool* gone_;
};

struct other_base {
  virtual ~other_base() = default;
  std::uint64_t padding[3] = {};
};
struct noted_string_chunk final : other_base, shoal::layer::future_cells<std::string, 64> {
  explicit noted_string_chunk(bool* gone) : gone_(gone) {}
  ~noted_string_chunk() override { *gone_ = true; }
  bool* gone_;
};

TEST(Futures, CopiesShareOneStateFreedWithTheLastOwner) {
  bool gone = false;
  {
    auto state = shoal::layer::make_state<noted_state>(&gone);
    EXPECT_EQ(state->use_count(), 1u);
    shoal::future<int> f(state);
    EXPECT_EQ(state->use_count(), 2u);
    shoal::future<int> copy = f;
    EXPECT_EQ(state->use_count(), 3u);
    shoal::future<int> moved = std::move(copy);
    EXPECT_FALSE(copy.valid());  // NOLINT(bugprone-use-after-move): a moved-from future is empty
    EXPECT_EQ(state->use_count(), 3u);
    state->set_value(7);
    state = {};  // the producer lets go: the futures keep the state
    EXPECT_FALSE(gone);
    EXPECT_TRUE(f.ready());
    EXPECT_EQ(moved.get(), 7);  // takes the value; f still shares the state (its value was moved out)
    EXPECT_FALSE(moved.valid());
    EXPECT_TRUE(f.valid());
    EXPECT_FALSE(gone);
  }
  EXPECT_TRUE(gone);

  bool chunk_gone = false;
  shoal::future<int> first, second;
  {
    auto chunk = shoal::layer::make_state<noted_chunk>(&chunk_gone);
    first = chunk->future_of<int>(0);
    second = chunk->future_of<int>(1);
    EXPECT_FALSE(first.ready());
    chunk->set_error(1, std::make_exception_ptr(shoal::remote_error("failed there")));
    chunk->set_value(0, 1);
    EXPECT_TRUE(second.ready());
  }
  EXPECT_FALSE(chunk_gone);
  EXPECT_EQ(first.get(), 1);
  EXPECT_FALSE(chunk_gone);
  EXPECT_THROW(second.get(), shoal::remote_error);
  EXPECT_TRUE(chunk_gone);

  // A future is one pointer (to its cell; the owner is found from the cell), whatever owns the cell and wherever the
  // cells sit in it: here behind another base, 64 cells of strings.
  static_assert(sizeof(shoal::future<std::string>) == sizeof(void*));
  bool strings_gone = false;
  std::vector<shoal::future<std::string>> strings;
  {
    auto chunk = shoal::layer::make_state<noted_string_chunk>(&strings_gone);
    for (std::uint32_t i = 0; i < 64; ++i) strings.push_back(chunk->future_of<std::string>(i));
    EXPECT_EQ(chunk->use_count(), 65u);
    shoal::future<std::string> copy = strings[63];
    EXPECT_EQ(chunk->use_count(), 66u);
    copy = strings[0];  // copy-assigning shares the same owner: the count does not move
    EXPECT_EQ(chunk->use_count(), 66u);
    copy = {};
    EXPECT_EQ(chunk->use_count(), 65u);
    for (std::uint32_t i = 0; i < 64; ++i) chunk->set_value(i, std::string(40, static_cast<char>('A' + i % 26)));
  }
  for (std::uint32_t i = 0; i < 64; ++i) {
    EXPECT_FALSE(strings_gone);
    EXPECT_EQ(strings[i].get(), std::string(40, static_cast<char>('A' + i % 26)));
  }
  EXPECT_TRUE(strings_gone);

  auto plain = shoal::detail::make_counted<noted_state>(&gone);
  shoal::detail::counted_ptr<shoal::layer::counted> as_base = plain;
  EXPECT_EQ(plain->use_count(), 2u);
  auto back = shoal::detail::static_counted_cast<noted_state>(std::move(as_base));
  EXPECT_FALSE(as_base);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(back.get(), plain.get());
  EXPECT_EQ(plain->use_count(), 2u);
}

template <class T>
void concurrent_fetch_add_total() {
  auto ptrs = shoal::allocate_collective<T>(1);
  auto counter = ptrs[0];
  if (me() == 0) *counter.local() = 0;
  shoal::barrier();
  const int per_rank = shoal::testing::scaled(10000);
  T last = 0;
  for (int i = 0; i < per_rank; ++i) {
    T before = shoal::fetch_add(counter, T{1});
    EXPECT_GE(before, last);
    last = before;
  }
  shoal::barrier();
  EXPECT_EQ(shoal::atomic_load(counter), static_cast<T>(per_rank * np()));
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Atomics, ConcurrentFetchAdd64ExactTotal) { concurrent_fetch_add_total<std::int64_t>(); }
TEST(Atomics, ConcurrentFetchAdd32ExactTotal) { concurrent_fetch_add_total<std::uint32_t>(); }

template <class T>
void bitwise_and_exchange() {
  auto ptrs = shoal::allocate_collective<T>(2);
  auto word = ptrs[0];
  if (me() == 0) {
    word.local()[0] = 0;
    word.local()[1] = 0;
  }
  shoal::barrier();
  // Each rank sets its own bit; the result has every bit.
  const T bit = T{1} << (me() % (sizeof(T) * 8 - 1));
  shoal::fetch_or(word, bit);
  shoal::barrier();
  T all = 0;
  for (int r = 0; r < np(); ++r) all |= T{1} << (r % (sizeof(T) * 8 - 1));
  EXPECT_EQ(shoal::atomic_load(word), all);
  shoal::barrier();
  shoal::fetch_xor(word, bit);  // each rank flips its bit back
  shoal::barrier();
  EXPECT_EQ(shoal::atomic_load(word), T{0});
  shoal::barrier();
  if (me() == 0) {
    shoal::atomic_store(word + 1, static_cast<T>(0x0F0F0F0F));
    EXPECT_EQ(shoal::fetch_and(word + 1, static_cast<T>(0x00FF00FF)), static_cast<T>(0x0F0F0F0F));
    EXPECT_EQ(shoal::atomic_load(word + 1), static_cast<T>(0x000F000F));
    EXPECT_EQ(shoal::exchange(word + 1, T{42}), static_cast<T>(0x000F000F));
    EXPECT_EQ(shoal::atomic_load(word + 1), T{42});
    // compare_exchange: success returns expected, failure returns the current value.
    EXPECT_EQ(shoal::compare_exchange(word + 1, T{42}, T{7}), T{42});
    EXPECT_EQ(shoal::compare_exchange(word + 1, T{42}, T{9}), T{7});
    EXPECT_EQ(shoal::atomic_load(word + 1), T{7});
  }
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Atomics, Bitwise64) { bitwise_and_exchange<std::uint64_t>(); }
TEST(Atomics, Bitwise32) { bitwise_and_exchange<std::int32_t>(); }

template <class T>
void mixed_operations_on_one_word() {
  // fetch_add, compare_exchange, atomic_load and fetch_xor race on one word; every update is kept only if all of
  // them are atomic with respect to each other. Across hosts (scripts/test.sh's multihost runs, 2 hosts x 2 ranks)
  // rank 1 updates rank 0's word with CPU atomics and ranks 2 and 3 through rank 0's messages: both mechanisms on
  // one word.
  auto ptrs = shoal::allocate_collective<T>(1);
  auto word = ptrs[0];
  if (me() == 0) *word.local() = 0;
  shoal::barrier();
  const int rounds = shoal::testing::scaled(2000);
  const T flag = T{1} << (me() % 8);  // low byte: per-rank flag bits, toggled twice
  for (int i = 0; i < rounds; ++i) {
    shoal::fetch_add(word, T{256});
    T seen = shoal::atomic_load(word);
    while (true) {
      const T old = shoal::compare_exchange(word, seen, static_cast<T>(seen + 256));
      if (old == seen) break;
      seen = old;
    }
    shoal::fetch_xor(word, flag);
    shoal::fetch_xor(word, flag);
  }
  shoal::barrier();
  EXPECT_EQ(shoal::atomic_load(word), static_cast<T>(static_cast<std::uint64_t>(rounds) * 512u * static_cast<std::uint64_t>(np())));
  shoal::barrier();
  shoal::deallocate(ptrs[static_cast<std::size_t>(me())]);
}

TEST(Atomics, MixedOperationsOnOneWord64) { mixed_operations_on_one_word<std::uint64_t>(); }
TEST(Atomics, MixedOperationsOnOneWord32) { mixed_operations_on_one_word<std::uint32_t>(); }

TEST(Atomics, CompareExchangeLockKeepsMutualExclusion) {
  // A spin lock on rank 0 guards a plain (non-atomic) counter on the last rank; every increment is a get + put.
  auto locks = shoal::allocate_collective<std::int64_t>(1);
  auto data = shoal::allocate_collective<std::int64_t>(2);
  auto lock = locks[0];
  auto counter = data[static_cast<std::size_t>(np() - 1)];
  if (me() == 0) *lock.local() = 0;
  if (me() == np() - 1) counter.local()[0] = counter.local()[1] = 0;
  shoal::barrier();
  const int per_rank = shoal::testing::scaled(300);
  for (int i = 0; i < per_rank; ++i) {
    shoal::wait_until([&] { return shoal::compare_exchange(lock, std::int64_t{0}, std::int64_t{me() + 1}) == 0; });
    // Inside: nobody else may hold the lock; the "inside" word must be 0 when we enter.
    EXPECT_EQ(shoal::get(counter + 1), 0);
    shoal::put(counter + 1, std::int64_t{1});
    shoal::put(counter, shoal::get(counter) + 1);
    shoal::put(counter + 1, std::int64_t{0});
    shoal::flush(counter.rank());
    EXPECT_EQ(shoal::exchange(lock, std::int64_t{0}), me() + 1);
  }
  shoal::barrier();
  EXPECT_EQ(shoal::get(counter), static_cast<std::int64_t>(per_rank) * np());
  shoal::barrier();
  shoal::deallocate(locks[static_cast<std::size_t>(me())]);
  shoal::deallocate(data[static_cast<std::size_t>(me())]);
}

struct digits {
  std::int64_t value;
  int count;
};

struct min_loc {
  double value;
  int rank;
};

TEST(Collectives, AllreduceBuiltinAndUserOps) {
  EXPECT_EQ(shoal::allreduce(me() + 1, shoal::op::sum{}), np() * (np() + 1) / 2);
  EXPECT_EQ(shoal::allreduce(me(), shoal::op::min{}), 0);
  EXPECT_EQ(shoal::allreduce(me(), shoal::op::max{}), np() - 1);
  EXPECT_DOUBLE_EQ(shoal::allreduce(0.5 * me(), shoal::op::sum{}), 0.25 * np() * (np() - 1));
  EXPECT_EQ(shoal::allreduce(std::uint64_t{1} << me(), shoal::op::bit_or{}), (std::uint64_t{1} << np()) - 1);
  // Unsigned order above 2^63 / 2^31 (MPICH 4.0.2's built-in MIN/MAX get this wrong; shoal must not).
  const std::uint64_t big = me() == 0 ? 5 : ~std::uint64_t{0} - static_cast<std::uint64_t>(me());
  EXPECT_EQ(shoal::allreduce(big, shoal::op::min{}), std::uint64_t{5});
  EXPECT_EQ(shoal::allreduce(big, shoal::op::max{}), np() == 1 ? std::uint64_t{5} : ~std::uint64_t{0} - 1);
  const std::uint32_t big32 = me() == 0 ? 7u : 0xFFFFFFF0u;
  EXPECT_EQ(shoal::allreduce(big32, shoal::op::min{}), 7u);
  EXPECT_EQ(shoal::allreduce(big32, shoal::op::max{}), np() == 1 ? 7u : 0xFFFFFFF0u);
  // A user operation on a trivially copyable struct: the location of the minimum.
  min_loc mine{100.0 - me(), me()};
  auto lowest = shoal::allreduce(mine, [](const min_loc& a, const min_loc& b) { return a.value <= b.value ? a : b; });
  EXPECT_EQ(lowest.rank, np() - 1);
  EXPECT_DOUBLE_EQ(lowest.value, 100.0 - (np() - 1));
  // An associative user operation that is not commutative: concatenation of decimal digits in rank order.
  digits mine_digits{me() % 10, 1};
  auto joined = shoal::allreduce(mine_digits, [](const digits& a, const digits& b) {
    std::int64_t scale = 1;
    for (int i = 0; i < b.count; ++i) scale *= 10;
    return digits{a.value * scale + b.value, a.count + b.count};
  });
  std::int64_t expect = 0;
  for (int r = 0; r < np(); ++r) expect = expect * 10 + r % 10;
  EXPECT_EQ(joined.value, expect);
  EXPECT_EQ(joined.count, np());
}

TEST(Collectives, BroadcastAndAllgather) {
  EXPECT_EQ(shoal::broadcast(me() == 0 ? 4242 : -1, 0), 4242);
  const int root = np() - 1;
  std::vector<int> v;
  if (me() == root) v = {1, 2, 3, 5, 8};
  EXPECT_EQ(shoal::broadcast(v, root), (std::vector<int>{1, 2, 3, 5, 8}));
  EXPECT_EQ(shoal::broadcast(std::string(me() == 0 ? "hello shoal" : ""), 0), "hello shoal");
  auto all = shoal::allgather(me() * 3);
  ASSERT_EQ(all.size(), static_cast<std::size_t>(np()));
  for (int r = 0; r < np(); ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], r * 3);
  EXPECT_THROW((void)shoal::broadcast(1, np()), shoal::usage_error);
}

// A synchronized clock on `team`: team rank 0 is the reference; on rank 0's host the offset is exactly zero (one
// monotonic clock, nothing estimated), and on one host so is the bound; the bound is the same everywhere; and stamps
// taken before a barrier on any rank precede stamps taken after it on any rank, up to twice the bound (plus drift
// across hosts).
void check_clock(const shoal::synchronized_clock& clock, const shoal::team& team) {
  const auto bounds = team.allgather(clock.error_bound_ns());
  for (const auto b : bounds) EXPECT_EQ(b, clock.error_bound_ns());
  EXPECT_GE(clock.error_bound_ns(), 0);
  if (team.rank() == 0) {
    EXPECT_EQ(clock.offset_ns(), 0);
  }
  if (team.node().from_world(team.to_world(0)) >= 0) {
    EXPECT_EQ(clock.offset_ns(), 0) << "one host reads one monotonic clock";
  }
  if (team.size() == 1 || shoal::host_count() == 1) {
    EXPECT_EQ(clock.error_bound_ns(), 0);
  }
  const std::uint64_t before = clock.now();
  team.barrier();
  const std::uint64_t after = clock.now();
  EXPECT_GE(after, before);
  const std::uint64_t latest_before = team.allreduce(before, shoal::op::max{});
  const std::uint64_t earliest_after = team.allreduce(after, shoal::op::min{});
  const std::uint64_t drift = shoal::host_count() > 1 ? 50'000 : 0;
  EXPECT_LE(latest_before, earliest_after + 2 * static_cast<std::uint64_t>(clock.error_bound_ns()) + drift);
}

TEST(Clock, SynchronizedOnWorld) {
  const shoal::synchronized_clock clock;
  check_clock(clock, shoal::world());
  const shoal::synchronized_clock few(3);
  check_clock(few, shoal::world());
}

TEST(Clock, SynchronizedOnATeamNotRankContiguousAndOnOneRank) {
  // Even and odd ranks, each in reverse order: team rank 0 is the highest world rank of each half.
  const shoal::team half = shoal::world().split(me() % 2, -me());
  const shoal::synchronized_clock clock(half);
  check_clock(clock, half);
  const shoal::team alone = shoal::world().split(me());
  const shoal::synchronized_clock mine(4, alone);
  check_clock(mine, alone);
}

TEST(Clock, BadRoundsAreUsageErrorsOnEveryRank) {
  EXPECT_THROW(shoal::synchronized_clock(0), shoal::usage_error);
  if (np() > 1) {
    try {
      shoal::synchronized_clock clock(1 + me());
      ADD_FAILURE() << "different rounds on different ranks went unnoticed";
    } catch (const shoal::usage_error& e) {
      EXPECT_NE(std::string(e.what()).find("same rounds"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(shoal::synchronized_clock(1, shoal::team()), shoal::usage_error);
  shoal::barrier();
}

#if SHOAL_CHECKS >= 1
TEST(Checks, OutOfRangeRankAndOffset) {
  shoal::global_ptr<int> bad_rank(np() + 3, 64);
  EXPECT_THROW((void)shoal::get(bad_rank), shoal::usage_error);
  shoal::global_ptr<int> bad_offset(me(), shoal::heap_capacity() - 2);
  EXPECT_THROW((void)shoal::get(bad_offset), shoal::usage_error);
  EXPECT_THROW((void)shoal::get(shoal::global_ptr<int>{}), shoal::usage_error);
}
#endif

#if SHOAL_CHECKS >= 2
// Ranks that call different collectives get a usage_error naming both calls, on every rank, instead of a hang.
TEST(Checks, CollectiveMismatchNamesBothCalls) {
  if (np() < 2) GTEST_SKIP() << "needs two ranks";
  try {
    if (me() == 0) shoal::barrier();
    else (void)shoal::allreduce(1, shoal::op::sum{});
    ADD_FAILURE() << "the mismatch went unnoticed";
  } catch (const shoal::usage_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("barrier"), std::string::npos) << what;
    EXPECT_NE(what.find("allreduce"), std::string::npos) << what;
  }
  // The team is usable afterwards: every rank took part in the same two exchanges.
  EXPECT_EQ(shoal::allreduce(1, shoal::op::sum{}), np());
}
#endif

// shoal's communicators and windows return MPI errors, which come back as mpi_error with MPI's error string.
TEST(Errors, MpiErrorsComeBackAsExceptions) {
  try {
    SHOAL_MPI(MPI_Send(nullptr, 0, MPI_BYTE, np() + 5, 0, shoal::world().comm()));
    ADD_FAILURE() << "a send to rank " << np() + 5 << " succeeded";
  } catch (const shoal::mpi_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("MPI_Send"), std::string::npos) << what;
    EXPECT_NE(what.find("failed: "), std::string::npos) << what;
    EXPECT_GT(what.size(), what.find("failed: ") + 8) << "no MPI error string: " << what;
  }
  const auto& r = shoal::detail::rt();
  for (MPI_Win w : {r.win, r.node_win}) {
    if (w == MPI_WIN_NULL) continue;
    MPI_Errhandler h;
    ASSERT_EQ(MPI_Win_get_errhandler(w, &h), MPI_SUCCESS);
    EXPECT_TRUE(h == MPI_ERRORS_RETURN) << "a window of shoal's aborts on errors";
    MPI_Errhandler_free(&h);
  }
  for (MPI_Comm c : {r.comm, r.node_comm}) {
    MPI_Errhandler h;
    ASSERT_EQ(MPI_Comm_get_errhandler(c, &h), MPI_SUCCESS);
    EXPECT_TRUE(h == MPI_ERRORS_RETURN) << "a communicator of shoal's aborts on errors";
    MPI_Errhandler_free(&h);
  }
}

}  // namespace

namespace {

// Settings read from the environment accept only documented spellings; anything else names the variable.
TEST(Settings, BooleansAreStrict) {
  const char* name = "SHOAL_TEST_BOOLEAN_SETTING";
  for (const char* yes : {"1", "on", "On", "YES", "true"}) {
    setenv(name, yes, 1);
    EXPECT_TRUE(shoal::detail::env_flag(name)) << yes;
  }
  for (const char* no : {"", "0", "off", "Off", "no", "False"}) {
    setenv(name, no, 1);
    EXPECT_FALSE(shoal::detail::env_flag(name)) << no;
  }
  setenv(name, "maybe", 1);
  try {
    shoal::detail::env_flag(name);
    ADD_FAILURE() << "\"maybe\" was accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("maybe"), std::string::npos) << e.what();
  }
  unsetenv(name);
  EXPECT_FALSE(shoal::detail::env_flag(name));
}

// Sizes: units, and anything that does not fit in 64 bits, is an error naming the variable, the value and what is
// accepted.
TEST(Settings, SizesAreStrictAndOverflowChecked) {
  EXPECT_EQ(shoal::detail::parse_size("4096", "X"), 4096u);
  EXPECT_EQ(shoal::detail::parse_size("64K", "X"), 64u << 10);
  EXPECT_EQ(shoal::detail::parse_size("512MiB", "X"), 512u << 20);
  EXPECT_EQ(shoal::detail::parse_size("16T", "X"), std::size_t{16} << 40);
  EXPECT_EQ(shoal::detail::parse_size("18446744073709551615", "X"), ~std::size_t{0});
  const char* name = "SHOAL_TEST_SIZE_SETTING";
  for (const char* bad : {"99999999999999G", "18446744073709551616", "16777216T", "12Q", "1K2", "", "-1", "M"}) {
    setenv(name, bad, 1);
    if (*bad == '\0') {  // empty is unset
      EXPECT_FALSE(shoal::detail::env_size(name).has_value());
      continue;
    }
    try {
      (void)shoal::detail::env_size(name);
      ADD_FAILURE() << "\"" << bad << "\" was accepted";
    } catch (const shoal::usage_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_NE(what.find(bad), std::string::npos) << what;
      EXPECT_NE(what.find("K, M, G or T"), std::string::npos) << what;
    }
  }
  unsetenv(name);
  EXPECT_FALSE(shoal::detail::env_size(name).has_value());
}

TEST(Settings, ProgressThreadSetting) {
  const char* saved = std::getenv("SHOAL_PROGRESS_THREAD");
  const std::string keep = saved ? saved : "";
  setenv("SHOAL_PROGRESS_THREAD", "auto", 1);
  EXPECT_FALSE(shoal::detail::env_progress_thread().has_value());
  setenv("SHOAL_PROGRESS_THREAD", "off", 1);
  EXPECT_EQ(shoal::detail::env_progress_thread(), std::optional<bool>(false));
  setenv("SHOAL_PROGRESS_THREAD", "on", 1);
  EXPECT_EQ(shoal::detail::env_progress_thread(), std::optional<bool>(true));
  setenv("SHOAL_PROGRESS_THREAD", "sometimes", 1);
  EXPECT_THROW(shoal::detail::env_progress_thread(), shoal::usage_error);
  if (saved) setenv("SHOAL_PROGRESS_THREAD", keep.c_str(), 1);
  else unsetenv("SHOAL_PROGRESS_THREAD");
}

}  // namespace
