// The sequential parts of the dist_map applications: BSGS number theory, the MatrixMarket reader and generator,
// and the K-V trace generator and reader.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <vector>

#include "bsgs/number_theory.hpp"
#include "kv_trace/trace.hpp"
#include "matrix_scatter/matrix_market.hpp"

namespace {

TEST(number_theory, modular_arithmetic_near_2_to_the_44) {
  const bsgs::u64 c = bsgs::largest_prime_below_power_of_two(44);
  EXPECT_TRUE(bsgs::is_prime(c));
  EXPECT_LT(c, bsgs::u64{1} << 44);
  for (bsgs::u64 n = c + 1; n < (bsgs::u64{1} << 44); ++n) EXPECT_FALSE(bsgs::is_prime(n));
  // Fermat and inverses at the top of the range.
  for (bsgs::u64 a : {bsgs::u64{2}, bsgs::u64{3}, c - 1, bsgs::u64{123456789012}}) {
    EXPECT_EQ(bsgs::pow_mod(a, c - 1, c), 1u);
    EXPECT_EQ(bsgs::mul_mod(a, bsgs::inverse_mod_prime(a, c), c), 1u);
  }
  EXPECT_EQ(bsgs::mul_mod(c - 1, c - 1, c), 1u);  // (-1)^2, a product near 2^88
  EXPECT_TRUE(bsgs::is_prime(18446744073709551557ull));   // largest 64-bit prime
  EXPECT_FALSE(bsgs::is_prime(3215031751ull));            // strong pseudoprime to bases 2, 3, 5, 7
  EXPECT_FALSE(bsgs::is_prime(1));
  EXPECT_TRUE(bsgs::is_prime(2));
}

TEST(number_theory, step_count_is_the_ceiling_square_root) {
  for (bsgs::u64 c : {bsgs::u64{2}, bsgs::u64{3}, bsgs::u64{5}, bsgs::u64{101}, bsgs::u64{65537}, bsgs::u64{1000003},
                      (bsgs::u64{1} << 44) - 21}) {
    const bsgs::u64 m = bsgs::step_count(c);
    EXPECT_GE(m * m, c - 1) << c;
    if (m > 1) { EXPECT_LT((m - 1) * (m - 1), c - 1) << c; }
  }
}

TEST(number_theory, geometric_run_gives_every_power_in_order_and_where_the_next_run_starts) {
  const bsgs::u64 c = bsgs::largest_prime_below_power_of_two(44);
  for (bsgs::u64 count : {0, 1, 3, 4, 5, 8, 11, 4096}) {
    const bsgs::u64 x = c - 2, s = 123456789012;
    std::vector<bsgs::u64> got;
    const bsgs::u64 next = bsgs::geometric_run(x, s, c, count, [&](bsgs::u64 i, bsgs::u64 v) {
      EXPECT_EQ(i, got.size());
      got.push_back(v);
    });
    ASSERT_EQ(got.size(), count);
    bsgs::u64 want = x;
    for (bsgs::u64 i = 0; i < count; ++i) {
      ASSERT_EQ(got[i], want) << "count " << count << ", i " << i;
      want = bsgs::mul_mod(want, s, c);
    }
    EXPECT_EQ(next, want) << count;
  }
  // x at or above the modulus is reduced first.
  std::vector<bsgs::u64> small;
  bsgs::geometric_run(12, 3, 7, 3, [&](bsgs::u64, bsgs::u64 v) { small.push_back(v); });
  EXPECT_EQ(small, (std::vector<bsgs::u64>{5, 1, 3}));
}

TEST(number_theory, sequential_bsgs_finds_the_smallest_exponent) {
  const bsgs::u64 c = 1000003;
  for (bsgs::u64 x : {0, 1, 999, 500000, 1000001}) {
    const bsgs::u64 b = bsgs::pow_mod(5, x, c);
    auto got = bsgs::solve_sequential(5, b, c);
    ASSERT_TRUE(got.has_value()) << x;
    EXPECT_TRUE(bsgs::verify(5, b, c, *got));
    EXPECT_LE(*got, x);
  }
  // 1 has order 1: only B = 1 is reachable.
  EXPECT_FALSE(bsgs::solve_sequential(1, 7, c).has_value());
}

TEST(matrix_market, round_trip_and_symmetric_expansion) {
  const auto m = matrix_scatter::random_sparse_matrix(50, 40, 4, 3);
  EXPECT_EQ(m.rows, 50u);
  std::stringstream text;
  matrix_scatter::write_matrix_market(text, m, "test");
  const auto back = matrix_scatter::read_matrix_market(text);
  ASSERT_EQ(back.entries.size(), m.entries.size());
  for (std::size_t i = 0; i < m.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].row, m.entries[i].row);
    EXPECT_EQ(back.entries[i].col, m.entries[i].col);
    EXPECT_EQ(back.entries[i].value, m.entries[i].value);
  }
  std::istringstream sym("%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 2\n1 1\n3 1\n");
  const auto s = matrix_scatter::read_matrix_market(sym);
  ASSERT_EQ(s.entries.size(), 3u);  // (1,1), (3,1) and the mirrored (1,3)
  EXPECT_EQ(s.entries[2].row, 0u);
  EXPECT_EQ(s.entries[2].col, 2u);
  EXPECT_EQ(s.entries[2].value, 1.0);
}

TEST(matrix_market, errors_name_the_line) {
  auto error_of = [](const std::string& text) {
    std::istringstream in(text);
    try {
      matrix_scatter::read_matrix_market(in, "m.mtx");
    } catch (const shoal::error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("hello\n").find("m.mtx:1"), std::string::npos);
  EXPECT_NE(error_of("%%MatrixMarket matrix array real general\n").find("coordinate"), std::string::npos);
  EXPECT_NE(error_of("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n").find("m.mtx:4"),
            std::string::npos);
  EXPECT_NE(error_of("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1.0\n").find("out of range"),
            std::string::npos);
}

TEST(kv_trace, get_share_rises_and_reads_only_written_keys) {
  const auto trace = kv_trace::generate_trace(20000, 9);
  ASSERT_EQ(trace.size(), 20000u);
  EXPECT_EQ(trace.front().kind, kv_trace::op_kind::put);
  std::map<std::uint64_t, std::uint64_t> latest;
  std::size_t gets_first = 0, gets_last = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto& r = trace[i];
    if (r.kind == kv_trace::op_kind::put) {
      latest[r.key] = r.value;
    } else {
      ASSERT_TRUE(latest.count(r.key));
      ASSERT_EQ(latest[r.key], r.expected);
      if (i < trace.size() / 4) ++gets_first;
      if (i >= 3 * trace.size() / 4) ++gets_last;
    }
  }
  EXPECT_LT(gets_first, 5000u * 2 / 10);  // about 12.5% GETs in the first quarter
  EXPECT_GT(gets_last, 5000u * 8 / 10);   // about 87.5% in the last
  std::stringstream text;
  kv_trace::write_trace(text, trace, 9);
  const auto back = kv_trace::read_trace(text);
  ASSERT_EQ(back.size(), trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    EXPECT_EQ(back[i].kind, trace[i].kind);
    EXPECT_EQ(back[i].key, trace[i].key);
    EXPECT_EQ(back[i].kind == kv_trace::op_kind::put ? back[i].value : back[i].expected,
              trace[i].kind == kv_trace::op_kind::put ? trace[i].value : trace[i].expected);
  }
  std::istringstream bad("GET 5\n");
  EXPECT_THROW(kv_trace::read_trace(bad), shoal::error);
}

}  // namespace
