#include <gtest/gtest.h>
#include <mpi.h>

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
