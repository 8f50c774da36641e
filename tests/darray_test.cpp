// Tests of shoal::darray (block-distributed) and shoal::array (hosted): layout, get/put of single elements and of
// ranges that span rank boundaries, local access, errors, and move-only handles.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "shoal/containers/array.hpp"
#include "shoal/containers/darray.hpp"
#include "shoal/core.hpp"
#include "shoal_test.hpp"

namespace {

using shoal::testing::all_ranks;

int me() { return shoal::rank(); }
int np() { return shoal::size(); }

TEST(DArray, LayoutCoversEveryIndexOnce) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{10}, std::size_t{1001}}) {
    shoal::darray<int> d(n);
    EXPECT_EQ(d.size(), n);
    std::size_t next = 0;
    for (int r = 0; r < np(); ++r) {
      const auto range = d.owned_range(r);
      EXPECT_EQ(range.first, next);
      for (std::size_t i = range.first; i < range.last; ++i) EXPECT_EQ(d.owner(i), r);
      next = range.last;
    }
    EXPECT_EQ(next, n);
    EXPECT_EQ(d.local_range().first, d.owned_range(me()).first);
    EXPECT_EQ(d.local_size(), d.owned_range(me()).size());
    EXPECT_EQ(d.local_span().size(), d.local_size());
    EXPECT_EQ(shoal::allreduce(d.local_size(), shoal::op::sum{}), n);  // size() is the whole array
    for (int x : d.local_span()) EXPECT_EQ(x, 0);  // value-initialised
    shoal::barrier();
  }
}

TEST(DArray, SingleGetPutAcrossRanks) {
  const std::size_t n = 97;
  shoal::darray<std::int64_t> d(n);
  for (std::size_t i = static_cast<std::size_t>(me()); i < n; i += static_cast<std::size_t>(np())) {
    d.put(i, static_cast<std::int64_t>(i * 3 + 1));
  }
  shoal::barrier();
  bool ok = true;
  for (std::size_t i = 0; i < n; ++i) ok = ok && d.get(i) == static_cast<std::int64_t>(i * 3 + 1);
  d.local_for_each([&](std::size_t i, std::int64_t& x) { ok = ok && x == static_cast<std::int64_t>(i * 3 + 1); });
  EXPECT_TRUE(all_ranks(ok));
}

TEST(DArray, RangesSpanRankBoundaries) {
  const std::size_t n = 1000;
  shoal::darray<std::uint32_t> d(n);
  // The last rank writes the whole array in one call (a piece per owner).
  if (me() == np() - 1) {
    std::vector<std::uint32_t> all(n);
    std::iota(all.begin(), all.end(), 5u);
    d.put(0, std::span<const std::uint32_t>(all));
  }
  shoal::barrier();
  // Every rank reads windows centred on every block boundary.
  bool ok = true;
  for (int r = 1; r < np(); ++r) {
    const std::size_t boundary = d.owned_range(r).first;
    const std::size_t first = boundary >= 7 ? boundary - 7 : 0;
    std::vector<std::uint32_t> window(std::min<std::size_t>(15, n - first));
    d.get(first, window);
    for (std::size_t k = 0; k < window.size(); ++k) ok = ok && window[k] == first + k + 5;
  }
  std::vector<std::uint32_t> whole(n);
  d.get(0, whole);
  for (std::size_t k = 0; k < n; ++k) ok = ok && whole[k] == k + 5;
  EXPECT_TRUE(all_ranks(ok));
  shoal::barrier();
  // Overwrite a middle range spanning every rank, from rank 0.
  if (me() == 0) {
    std::vector<std::uint32_t> ones(n - 20, 1);
    d.put(10, std::span<const std::uint32_t>(ones));
  }
  shoal::barrier();
  bool ok2 = true;
  d.local_for_each([&](std::size_t i, std::uint32_t& x) { ok2 = ok2 && x == ((i >= 10 && i < n - 10) ? 1 : i + 5); });
  EXPECT_TRUE(all_ranks(ok2));
}

TEST(DArray, AtomicsThroughPointers) {
  shoal::darray<std::uint64_t> counters(static_cast<std::size_t>(np()) * 3);
  for (std::size_t i = 0; i < counters.size(); ++i) shoal::fetch_add(counters.ptr(i), std::uint64_t{1});
  shoal::barrier();
  bool ok = true;
  for (auto x : counters.local_span()) ok = ok && x == static_cast<std::uint64_t>(np());
  EXPECT_TRUE(all_ranks(ok));
}

TEST(DArray, ErrorsAndMoves) {
  const std::size_t in_use = shoal::heap_in_use();
  {
    shoal::darray<int> d(10);
    EXPECT_THROW((void)d.get(10), shoal::usage_error);
    std::vector<int> three(3);
    EXPECT_THROW(d.get(8, three), shoal::usage_error);
    EXPECT_THROW(d.put(9, std::span<const int>(three)), shoal::usage_error);
    std::vector<shoal::darray<int>> many;
    many.push_back(std::move(d));
    many.push_back(shoal::darray<int>(5));
    EXPECT_THROW((void)d.get(0), shoal::usage_error);  // moved from
    if (me() == 0) many[0].put(9, 42);
    shoal::barrier();
    EXPECT_EQ(many[0].get(9), 42);
    shoal::barrier();
  }
  EXPECT_EQ(shoal::heap_in_use(), in_use);
}

TEST(Array, HostedGetPut) {
  const int host = np() - 1;
  shoal::array<double> a(host, 50);
  EXPECT_EQ(a.host(), host);
  EXPECT_EQ(a.size(), 50u);
  EXPECT_EQ(a.local_span().size(), me() == host ? 50u : 0u);
  a.put(static_cast<std::size_t>(me()), 1.5 * me());
  shoal::barrier();
  for (int r = 0; r < np(); ++r) EXPECT_EQ(a.get(static_cast<std::size_t>(r)), 1.5 * r);
  shoal::barrier();
  if (me() == 0) {
    std::vector<double> v(20, 2.0);
    a.put(30, std::span<const double>(v));
  }
  shoal::barrier();
  std::vector<double> tail(20);
  a.get(30, tail);
  for (double x : tail) EXPECT_EQ(x, 2.0);
  if (me() == host) { EXPECT_EQ(a.local_span()[49], 2.0); }
  EXPECT_THROW((void)a.get(50), shoal::usage_error);
  EXPECT_THROW(a.get(45, tail), shoal::usage_error);
  EXPECT_THROW(shoal::array<int>(np(), 3), shoal::usage_error);
  shoal::barrier();
}

}  // namespace
