// The dist_map applications at 1-4 ranks: parallel BSGS against the sequential solver, the matrix scatter (both
// the dist_multimap and the MPI_Alltoallv version) verified row by row, and K-V trace replay on the service layout
// (batched: GETs that follow or precede a PUT of the same key in one block see exactly what the trace order says).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

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

// A trace of client `client` whose keys are its own (client * 1000 + k) and whose blocks mix every order of a PUT and a
// GET of one key: GET after PUT, GET between two PUTs, two PUTs then a GET, GET then PUT then GET.
std::vector<kv_trace::request> ordered_trace(int client) {
  const auto key = [&](int k) { return std::to_string(static_cast<std::uint64_t>(client) * 1000 + 1 + k); };
  std::ostringstream text;
  text << "# order test\n";
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < 12; ++k) text << "PUT " << key(k) << " " << round * 100 + k << "\n";
    text << "GET " << key(0) << "\n";                                           // after its PUT
    text << "PUT " << key(0) << " " << round * 100 + 50 << "\nGET " << key(0) << "\n";
    text << "GET " << key(1) << "\nPUT " << key(1) << " " << round * 100 + 51 << "\n";  // GET then PUT
    text << "GET " << key(1) << "\n";
    text << "PUT " << key(2) << " 7\nPUT " << key(2) << " " << round * 100 + 52 << "\nGET " << key(2) << "\n";
    for (int k = 3; k < 12; ++k) text << "GET " << key(k) << "\n";
    for (int k = 3; k < 12; k += 2) {
      text << "PUT " << key(k) << " " << round * 100 + 60 + k << "\nGET " << key(k) << "\n";
    }
  }
  std::istringstream in(text.str());
  return kv_trace::read_trace(in, "ordered");
}

TEST(kv_trace, batched_replay_keeps_the_trace_order) {
  const int np = shoal::size();
  const int servers = np == 1 ? 1 : np / 2;
  const int clients = np == 1 ? 1 : np - servers;
  const auto trace = ordered_trace(0);
  for (std::size_t block : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{40},
                            std::size_t{100}, std::size_t{0}}) {
    const auto r = kv_trace::run_service<shoal::local::flat>(servers, clients, block, ordered_trace);
    EXPECT_EQ(r.requests, trace.size() * static_cast<std::size_t>(clients)) << block;
    EXPECT_EQ(r.wrong, 0u) << "block " << block;
    // Co-located: every rank replays its own trace into one map; its keys go to every owner.
    shoal::dist_map<std::uint64_t, std::uint64_t> m;
    const auto mine = ordered_trace(shoal::rank());
    const auto got = kv_trace::replay(m, mine, block);
    m.flush();
    EXPECT_EQ(got.wrong, 0u) << "block " << block;
    if (block == 1) {
      EXPECT_EQ(got.segments, mine.size());
    }
  }
  // The whole trace as one block: a segment ends before each PUT of a key that a GET of the open segment read —
  // round 0: PUT key 0 (after GET 0), PUT key 1 (after GET 1), PUT key 3 (after GET 3..11); rounds 1 and 2 also at
  // their first PUT of key 3 (GET 3, 5, 7, 9, 11 of the round before are still open): 11 cuts, 12 segments.
  shoal::dist_map<std::uint64_t, std::uint64_t> m;
  const auto mine = ordered_trace(shoal::rank());
  const auto whole = kv_trace::replay(m, mine, 0);
  EXPECT_EQ(whole.wrong, 0u);
  EXPECT_EQ(whole.segments, 12u);
  // The check is live: a wrong expected value is counted (so is a GET that would see a later PUT).
  auto broken = mine;
  for (auto& r : broken) {
    if (r.kind == kv_trace::op_kind::get) {
      ++r.expected;
      break;
    }
  }
  EXPECT_EQ(kv_trace::replay(m, broken, 5).wrong, 1u);
  m.flush();
}

}  // namespace
