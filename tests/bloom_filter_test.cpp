// shoal::bloom_filter: no false negatives, insert reports presence, all 64 bits of a block are used, the measured
// false-positive rate is within 10% of the blocked filter's theory, and local_insert at the owners (sent there by
// shoal::post) builds the same blocks as insert.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <string>

#include "shoal/am.hpp"
#include "shoal/containers/bloom_filter.hpp"
#include "shoal_test.hpp"

namespace {

int me() { return shoal::rank(); }
int np() { return shoal::size(); }

TEST(BloomFilter, NoFalseNegativesAndInsertReportsPresence) {
  const int n = shoal::testing::scaled(500);
  shoal::bloom_filter<std::string> f(std::size_t{1} << 16, 5);
  int already = 0;
  for (int i = 0; i < n; ++i) already += f.insert("r" + std::to_string(me()) + "v" + std::to_string(i));
  EXPECT_LT(already, n / 20) << "a fresh value is rarely reported present";
  for (int i = 0; i < n; ++i) EXPECT_TRUE(f.insert("r" + std::to_string(me()) + "v" + std::to_string(i)));
  shoal::barrier();
  for (int r = 0; r < np(); ++r) {
    for (int i = 0; i < n; ++i) EXPECT_TRUE(f.find("r" + std::to_string(r) + "v" + std::to_string(i)));
  }
  f.clear();
  EXPECT_FALSE(f.find("r0v0"));
  shoal::barrier();
}

// Owner-computes: every value goes to owner(v) as an active message and is inserted there with local_insert (each
// twice, in order, so the second reports it present). The blocks equal those of a filter filled with insert.
shoal::bloom_filter<std::uint64_t>* owner_side = nullptr;
std::uint64_t owner_side_present = 0;

TEST(BloomFilter, LocalInsertAtTheOwnerBuildsTheSameBlocksAsInsert) {
  const auto n = static_cast<std::uint64_t>(shoal::testing::scaled(2000));
  shoal::bloom_filter<std::uint64_t> by_owner(std::size_t{1} << 14, 5), by_insert(std::size_t{1} << 14, 5);
  owner_side = &by_owner;
  owner_side_present = 0;
  shoal::barrier();
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t v = i * static_cast<std::uint64_t>(np()) + static_cast<std::uint64_t>(me());
    by_insert.insert(v);
    for (int twice = 0; twice < 2; ++twice) {
      shoal::post(by_owner.owner(v), [](std::uint64_t x) {
        owner_side->local_prefetch(x);  // a hint only: the blocks below must come out the same
        owner_side_present += owner_side->local_insert(x);
      }, v);
    }
  }
  shoal::am::barrier();
  shoal::barrier();
  EXPECT_EQ(by_owner.local_blocks(), by_insert.local_blocks());
  EXPECT_GE(shoal::allreduce(owner_side_present, shoal::op::sum{}), n * static_cast<std::uint64_t>(np()));
  if (np() > 1) {
    std::uint64_t foreign = 0;
    while (by_owner.owner(foreign) == me()) ++foreign;
    EXPECT_THROW(by_owner.local_insert(foreign), shoal::usage_error);
    by_owner.local_prefetch(foreign);  // another rank's value: does nothing
    EXPECT_EQ(by_owner.local_blocks(), by_insert.local_blocks());
  }
  owner_side = nullptr;
  shoal::barrier();
}

// BCL shifts a 32-bit int, so bits 32-63 of each block stay zero; every one of the 64 positions must be used here.
// 400 values in all, whatever the rank count (1,600 bit positions drawn): the test needs that many to see every
// position, so the count is not scaled down for slow paths (scaled(400) at 2 oversubscribed ranks left bits unset).
TEST(BloomFilter, EveryBitOfA64BitBlockIsUsed) {
  shoal::bloom_filter<std::uint64_t> f(64 * 64 * static_cast<std::size_t>(np()), 4);
  for (std::uint64_t i = 0; i < 400 / static_cast<std::uint64_t>(np()); ++i) {
    f.insert(i * static_cast<std::uint64_t>(np()) + static_cast<std::uint64_t>(me()));
  }
  shoal::barrier();
  std::uint64_t seen = 0;
  for (auto block : f.local_blocks()) seen |= block;
  seen = shoal::allreduce(seen, shoal::op::bit_or{});
  EXPECT_EQ(seen, ~std::uint64_t{0}) << std::hex << seen;
  shoal::barrier();
}

// 12 values per block on average with k = 5: the blocked theory predicts 0.103, the classic formula 0.083, so the
// test tells the two apart. The inserted and queried values are fixed, so the outcome is the same on every run.
TEST(BloomFilter, FalsePositiveRateWithinTenPercentOfBlockedTheory) {
  const std::size_t blocks = 1024;
  const unsigned k = 5;
  const std::size_t n = 12 * blocks;
  const std::size_t queries = 30000;
  shoal::bloom_filter<std::uint64_t> f(blocks * 64, k);
  // Each rank inserts and queries the values whose block it holds (self-targeted operations stay fast when MPICH
  // runs oversubscribed); the statistics do not depend on who asks.
  for (std::uint64_t i = 0; i < n; ++i) {
    if (f.owner(i) == me()) f.insert(i);
  }
  shoal::barrier();
  std::size_t positives = 0;
  for (std::uint64_t q = 0; q < queries; ++q) {
    const std::uint64_t v = std::uint64_t{1} << 40 | q;
    if (f.owner(v) == me()) positives += f.find(v);
  }
  positives = shoal::allreduce(positives, shoal::op::sum{});
  const double measured = static_cast<double>(positives) / queries;
  const double theory = f.expected_false_positive_rate(n);
  const double classic = std::pow(1 - std::exp(-double(k) * n / (blocks * 64.0)), k);
  EXPECT_NEAR(measured, theory, 0.1 * theory) << "classic formula: " << classic;
  EXPECT_GT(theory, classic * 1.1) << "the parameters must tell the blocked theory (" << theory
                                   << ") from the classic one (" << classic << ")";
  shoal::barrier();
}

}  // namespace
