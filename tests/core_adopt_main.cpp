// An MPI program that initialises MPI itself and hands shoal a communicator of its own (every rank of the same
// parity). shoal must work inside that communicator only and must not finalize MPI.
#include <gtest/gtest.h>
#include <mpi.h>

#include "shoal_test.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  auto* stall = new shoal::testing::abort_on_stall(rank);
  listeners.Append(stall);  // owned by GoogleTest
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);  // MPI is still alive after shoal ended
  stall->stop();
  MPI_Finalize();
  return any;
}
