// Tests of active messages: remote calls, aggregation, progress, quiescence, ordering, errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "shoal/am.hpp"
#include "shoal_test.hpp"

namespace {

int me() { return shoal::rank(); }
int np() { return shoal::size(); }
int right() { return (me() + 1) % np(); }

// ---- state touched by handlers (each rank has its own copy) ----
std::vector<std::int64_t> received_from;  // per source
std::int64_t counter = 0;

void count_from_source(std::int64_t expected_source) {
  EXPECT_EQ(shoal::am::current_source(), expected_source);
  ++received_from[static_cast<std::size_t>(shoal::am::current_source())];
}

int add(int a, int b) { return a + b; }

void reset() {
  received_from.assign(static_cast<std::size_t>(np()), 0);
  counter = 0;
  shoal::am::barrier();
}

TEST(Am, PingPong) {
  reset();
  constexpr int rounds = 200;
  if (me() == 0) {
    for (int i = 0; i < rounds; ++i) {
      const int peer = np() > 1 ? 1 : 0;
      int got = shoal::rpc(peer, [](int x) { return x + 1; }, i).get();
      ASSERT_EQ(got, i + 1);
    }
  }
  shoal::am::barrier();
}

TEST(Am, RpcFunctionPointerAndVoid) {
  reset();
  EXPECT_EQ(shoal::rpc(right(), &add, 20, 22).get(), 42);
  auto f = shoal::rpc(right(), [] { ++counter; });
  f.get();
  shoal::am::barrier();
  EXPECT_EQ(counter, 1);
}

TEST(Am, AllToAllFloodExactCounts) {
  reset();
  const std::int64_t per_pair = shoal::testing::scaled(20000);
  for (std::int64_t i = 0; i < per_pair; ++i) {
    for (int d = 0; d < np(); ++d) shoal::async(d, &count_from_source, static_cast<std::int64_t>(me()));
  }
  shoal::am::barrier();
  for (int s = 0; s < np(); ++s) EXPECT_EQ(received_from[static_cast<std::size_t>(s)], per_pair) << "from " << s;
}

}  // namespace
