// The dist_map applications at 1-4 ranks: parallel BSGS against the sequential solver, the matrix scatter (both
// the dist_multimap and the MPI_Alltoallv version) verified row by row, and K-V trace replay on the service layout.
#include <gtest/gtest.h>

#include "bsgs/parallel_bsgs.hpp"
#include "kv_trace/replay.hpp"
#include "matrix_scatter/scatter.hpp"
#include "dist_map_testing.hpp"

namespace {

TEST(bsgs, parallel_answer_is_the_smallest_and_verifies) {
  const bsgs::u64 c = bsgs::largest_prime_below_power_of_two(24);
  for (bsgs::u64 secret : {bsgs::u64{0}, bsgs::u64{1}, bsgs::u64{4095}, c / 3, c - 2}) {
    const bsgs::u64 a = 3, b = bsgs::pow_mod(a, secret, c);
    const auto expected = bsgs::solve_sequential(a, b, c);
    ASSERT_TRUE(expected.has_value());
    const auto got = bsgs::solve_parallel(a, b, c, /*chunk=*/64);
    ASSERT_TRUE(got.x.has_value()) << secret;
    EXPECT_EQ(*got.x, *expected) << secret;
    EXPECT_TRUE(bsgs::verify(a, b, c, *got.x));
  }
  // No solution: 1 generates only 1; the linear-hashing table gives the same answers.
  EXPECT_FALSE(bsgs::solve_parallel<shoal::local::linear>(1, 5, c, 64).x.has_value());
  const auto lin = bsgs::solve_parallel<shoal::local::linear>(7, 1234567, c, 128);
  ASSERT_TRUE(lin.x.has_value());
  EXPECT_EQ(lin.x, bsgs::solve_sequential(7, 1234567, c));
}

TEST(matrix_scatter, rows_arrive_at_their_cyclic_owner) {
  const auto matrix = matrix_scatter::random_sparse_matrix(300, 200, 5, 11);
  shoal::dist_map_options options;
  options.placement = shoal::key_placement::cyclic;
  for (std::size_t blocking_factor : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    shoal::dist_multimap<std::uint32_t, matrix_scatter::column_value> rows(options);
    const auto t = matrix_scatter::scatter_rows(matrix, rows, blocking_factor);
    EXPECT_TRUE(shoal::testing::all_ranks(matrix_scatter::verify_rows(matrix, rows))) << blocking_factor;
    EXPECT_LE(t.immediate, t.completion);
    EXPECT_LE(t.completion, t.barrier);
    EXPECT_EQ(rows.size(), matrix.entries.size());
  }
  double seconds = 0;
  const auto received = matrix_scatter::scatter_alltoallv(matrix, MPI_COMM_WORLD, seconds);
  EXPECT_TRUE(shoal::testing::all_ranks(
      matrix_scatter::verify_triplets(matrix, received, shoal::rank(), shoal::size())));
}

TEST(kv_trace, clients_replay_against_servers) {
  const int np = shoal::size();
  const int servers = np == 1 ? 1 : np / 2;
  const int clients = np == 1 ? 1 : np - servers;
  const std::size_t ops = static_cast<std::size_t>(shoal::testing::round_trips(3000));
  auto trace_of = [&](int client) { return kv_trace::generate_trace(ops, 100 + static_cast<std::uint64_t>(client)); };
  const auto r = kv_trace::run_service<shoal::local::flat>(servers, clients, 16, trace_of);
  EXPECT_EQ(r.requests, ops * static_cast<std::size_t>(clients));
  EXPECT_EQ(r.wrong, 0u);
  const auto lin = kv_trace::run_service<shoal::local::linear>(servers, clients, 0, trace_of);
  EXPECT_EQ(lin.wrong, 0u);
}

}  // namespace
