// The sequential tables of shoal/local/: both against std::unordered_map, plus linear hashing's growth invariants.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "shoal/local/flat_table.hpp"
#include "shoal/local/linear_hash_table.hpp"

namespace {

static_assert(shoal::local::table<shoal::local::flat_table<std::uint64_t, int>>);
static_assert(shoal::local::table<shoal::local::linear_hash_table<std::uint64_t, int>>);
static_assert(shoal::local::table<shoal::local::linear_hash_table<std::string, std::vector<double>>>);

template <class Family>
class local_table_test : public ::testing::Test {};
using families = ::testing::Types<shoal::local::flat, shoal::local::linear>;
TYPED_TEST_SUITE(local_table_test, families);

TYPED_TEST(local_table_test, random_operations_match_unordered_map) {
  typename TypeParam::template table<std::uint64_t, std::uint64_t> t;
  std::unordered_map<std::uint64_t, std::uint64_t> oracle;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    const std::uint64_t key = rng() % 5000;
    const std::uint64_t value = rng();
    switch (rng() % 5) {
      case 0: {
        auto [v, inserted] = t.try_emplace(key, value);
        auto [it, oracle_inserted] = oracle.try_emplace(key, value);
        ASSERT_EQ(inserted, oracle_inserted);
        ASSERT_EQ(*v, it->second);
        break;
      }
      case 1: {
        auto [v, inserted] = t.insert_or_assign(key, value);
        auto [it, oracle_inserted] = oracle.insert_or_assign(key, value);
        ASSERT_EQ(inserted, oracle_inserted);
        ASSERT_EQ(*v, value);
        break;
      }
      case 2: {
        auto got = t.extract(key);
        auto it = oracle.find(key);
        ASSERT_EQ(got.has_value(), it != oracle.end());
        if (got) {
          ASSERT_EQ(*got, it->second);
          oracle.erase(it);
        }
        break;
      }
      case 3: {
        ASSERT_EQ(t.erase(key), oracle.erase(key) == 1);
        break;
      }
      default: {
        const std::uint64_t* v = std::as_const(t).find(key);
        auto it = oracle.find(key);
        ASSERT_EQ(v != nullptr, it != oracle.end());
        if (v) { ASSERT_EQ(*v, it->second); }
        ASSERT_EQ(t.contains(key), v != nullptr);
      }
    }
    ASSERT_EQ(t.size(), oracle.size());
  }
  std::size_t seen = 0;
  t.for_each([&](const std::uint64_t& k, std::uint64_t& v) {
    ++seen;
    EXPECT_EQ(oracle.at(k), v);
  });
  EXPECT_EQ(seen, oracle.size());
  t.clear();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.find(oracle.empty() ? 0 : oracle.begin()->first), nullptr);
}

TYPED_TEST(local_table_test, non_trivial_keys_and_values) {
  typename TypeParam::template table<std::string, std::vector<int>> t;
  for (int i = 0; i < 3000; ++i) t.try_emplace("key-" + std::to_string(i), std::vector<int>(i % 7, i));
  ASSERT_EQ(t.size(), 3000u);
  for (int i = 0; i < 3000; ++i) {
    auto* v = t.find("key-" + std::to_string(i));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, std::vector<int>(i % 7, i));
  }
  t.find("key-5")->push_back(99);
  EXPECT_EQ(t.extract("key-5")->back(), 99);
  EXPECT_FALSE(t.contains("key-5"));
  EXPECT_FALSE(t.extract("absent").has_value());
}

TEST(linear_hash_table, grows_one_split_at_a_time_and_shrinks_back) {
  shoal::local::linear_hash_table<std::uint64_t, std::uint64_t> t(4, /*max_load=*/2.0, /*min_load=*/0.5);
  EXPECT_EQ(t.bucket_count(), 4u);
  std::size_t previous = t.bucket_count();
  for (std::uint64_t k = 0; k < 100000; ++k) {
    t.try_emplace(k, k * 3);
    // Each insert adds at most one bucket, and the mean bucket length stays at or below the limit.
    ASSERT_LE(t.bucket_count(), previous + 1);
    ASSERT_LE(static_cast<double>(t.size()), 2.0 * static_cast<double>(t.bucket_count()));
    previous = t.bucket_count();
  }
  EXPECT_GE(t.level(), 13u);  // 4·2^13 = 32768 buckets hold 65536 entries at load 2
  EXPECT_LT(t.split_pointer(), std::size_t{4} << t.level());
  for (std::uint64_t k = 0; k < 100000; ++k) ASSERT_EQ(*t.find(k), k * 3) << k;
  for (std::uint64_t k = 0; k < 99990; ++k) {
    ASSERT_TRUE(t.erase(k));
    ASSERT_GE(t.bucket_count() + 2, previous);  // at most 1/min_load merges per erase
    previous = t.bucket_count();
  }
  EXPECT_LE(t.bucket_count(), 64u);
  for (std::uint64_t k = 99990; k < 100000; ++k) ASSERT_EQ(*t.find(k), k * 3);
  t.reserve(10000);
  EXPECT_GE(2.0 * static_cast<double>(t.bucket_count()), 10000.0);
  for (std::uint64_t k = 99990; k < 100000; ++k) ASSERT_EQ(*t.find(k), k * 3);
}

TEST(linear_hash_table, rejects_bad_load_factors) {
  using table = shoal::local::linear_hash_table<int, int>;
  EXPECT_THROW(table(16, 0.0, 0.0), shoal::usage_error);
  EXPECT_THROW(table(16, 2.0, 1.5), shoal::usage_error);
}

}  // namespace
