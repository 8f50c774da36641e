// Tests of the ISx application (apps/isx/isx.hpp): the fast_queue exchange sorts exactly like MPI_Alltoallv.
#include <gtest/gtest.h>

#include "isx.hpp"
#include "shoal_test.hpp"

namespace {

isx::outcome run(std::uint64_t keys, std::size_t message, std::uint64_t max_key = 0, std::uint64_t seed = 3) {
  isx::parameters p;
  p.keys_per_rank = keys;
  p.message_size = message;
  p.max_key = max_key;
  p.seed = seed;
  return isx::sorter(p).run();
}

TEST(Isx, SortsAndMatchesAlltoallv) {
  for (std::size_t message : {std::size_t{1}, std::size_t{7}, std::size_t{1024}}) {
    const auto keys = static_cast<std::uint64_t>(shoal::testing::scaled(message == 1 ? 3000 : 20000));
    const auto r = run(keys, message);
    EXPECT_TRUE(r.verified) << "message size " << message << ": " << r.problem;
    EXPECT_EQ(r.total_keys, keys * static_cast<std::uint64_t>(shoal::size()));
  }
}

TEST(Isx, UnevenKeyRangeAndFewKeys) {
  // A key range that does not divide by the rank count, and fewer keys than ranks * message size.
  const auto r = run(101, 64, 1000003, 9);
  EXPECT_TRUE(r.verified) << r.problem;
  const auto tiny = run(1, 1, 5, 2);
  EXPECT_TRUE(tiny.verified) << tiny.problem;
}

TEST(Isx, FullQueueIsReportedOnEveryRank) {
  isx::parameters p;
  p.keys_per_rank = 5000;
  p.message_size = 100;
  p.queue_capacity = 200;  // far below the ~5000 keys each rank receives
  try {
    (void)isx::sorter(p).run();
    FAIL() << "expected container_full";
  } catch (const shoal::container_full& e) {
    EXPECT_NE(std::string(e.what()).find("--queue-capacity"), std::string::npos) << e.what();
  }
  shoal::barrier();
}

}  // namespace
