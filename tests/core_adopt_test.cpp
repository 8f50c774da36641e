#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "shoal/core.hpp"

TEST(Adopt, UserCommunicatorAndNoFinalize) {
  int world_rank = 0, world_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &half);
  int half_size = 0;
  MPI_Comm_size(half, &half_size);
  {
    shoal::options opts;
    opts.comm = half;
    opts.heap_size = 1 << 20;
    shoal::environment env(opts);
    EXPECT_EQ(shoal::size(), half_size);
    EXPECT_EQ(shoal::rank(), world_rank / 2);
    EXPECT_EQ(shoal::heap_capacity(), std::size_t{1} << 20);
    // A sum over the team counts only the ranks of this parity.
    EXPECT_EQ(shoal::allreduce(1, shoal::op::sum{}), half_size);
    auto ptrs = shoal::allocate_collective<int>(1);
    shoal::put(ptrs[0], 0);
    shoal::barrier();
    shoal::fetch_add(ptrs[0], 1);
    shoal::barrier();
    EXPECT_EQ(shoal::atomic_load(ptrs[0]), half_size);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  EXPECT_EQ(finalized, 0);
  EXPECT_FALSE(shoal::is_initialized());
  EXPECT_THROW((void)shoal::rank(), shoal::usage_error);
  // The user's communicator is untouched.
  int hs = 0;
  MPI_Comm_size(half, &hs);
  EXPECT_EQ(hs, half_size);
  MPI_Comm_free(&half);
}

// A heap larger than a global pointer can address, and a size setting that does not fit in 64 bits, stop the
// environment with an error that names the setting.
TEST(Adopt, HeapSizesOutOfRangeAreErrors) {
  shoal::options opts;
  opts.heap_size = std::size_t{1} << 45;
  try {
    shoal::environment env(opts);
    ADD_FAILURE() << "a heap of 32 TiB per rank was accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("SHOAL_HEAP_SIZE"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(shoal::is_initialized());
  const char* saved = std::getenv("SHOAL_HEAP_SIZE");
  const std::string keep = saved ? saved : "";
  setenv("SHOAL_HEAP_SIZE", "99999999999999G", 1);
  try {
    shoal::environment env;
    ADD_FAILURE() << "SHOAL_HEAP_SIZE=99999999999999G was accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("SHOAL_HEAP_SIZE=\"99999999999999G\""), std::string::npos) << e.what();
  }
  if (saved) setenv("SHOAL_HEAP_SIZE", keep.c_str(), 1);
  else unsetenv("SHOAL_HEAP_SIZE");
  EXPECT_FALSE(shoal::is_initialized());
  // A good environment still starts afterwards.
  opts.heap_size = 1 << 20;
  shoal::environment env(opts);
  EXPECT_EQ(shoal::heap_capacity(), std::size_t{1} << 20);
}

// This program initialised MPI with MPI_Init: asking for the progress thread with less than MPI_THREAD_MULTIPLE is
// an error that says what to change; left to `auto`, shoal starts without it.
TEST(Adopt, ProgressThreadNeedsThreadMultiple) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided >= MPI_THREAD_MULTIPLE) GTEST_SKIP() << "this MPI provides MPI_THREAD_MULTIPLE to MPI_Init";
  shoal::options opts;
  opts.heap_size = 1 << 20;
  opts.progress_thread = true;
  try {
    shoal::environment env(opts);
    ADD_FAILURE() << "the progress thread was accepted without MPI_THREAD_MULTIPLE";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("MPI_THREAD_MULTIPLE"), std::string::npos) << e.what();
  }
  opts.progress_thread.reset();
  shoal::environment env(opts);
  EXPECT_FALSE(shoal::detail::rt().helper != nullptr);
}
