// shoal::ordered_map on real ranks (active messages): random concurrent operations against a std::map oracle, the
// head-order replay under total order, issue order under sequential consistency, ranges, deletes of everything,
// list full, stale shortcuts, multi-dimensional ranges and floods.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>

#include "shoal/containers/ordered_map.hpp"
#include "shoal_test.hpp"

namespace {

using shoal::consistency;
using shoal::ordered_map;
using shoal::ordered_map_options;
using op_kind = shoal::ordered_map_op;
using status = shoal::ordered_map_status;
using operation = shoal::ordered_map<long, long>::operation;
using operation_result = shoal::ordered_map<long, long>::operation_result;

ordered_map_options small(consistency c) {
  ordered_map_options o;
  o.semantics = c;
  o.granularity = 4;
  o.tower_p = 0.5;
  o.max_height = 6;
  o.window = 16;
  o.nodes_per_rank = 4096;
  return o;
}

/// One completed operation, flattened so that ranks can exchange them.
struct record {
  std::uint64_t stamp;
  std::int32_t rank;
  std::int32_t index;
  std::int32_t op;
  std::int32_t st;
  long key, hi, value;
  long out_key, out_value;
  std::int32_t has_out;
  std::uint64_t range_n, range_sum;
};

std::uint64_t checksum(const std::vector<std::pair<long, long>>& items) {
  std::uint64_t s = 0;
  for (const auto& [k, v] : items) s = s * 1000003u + static_cast<std::uint64_t>(k * 31 + v);
  return s;
}

/// What the oracle answers, in the same flattened form.
record replay(std::map<long, long>& m, record r) {
  r.st = 0;
  r.has_out = 0;
  r.out_key = r.out_value = 0;
  r.range_n = r.range_sum = 0;
  switch (static_cast<op_kind>(r.op)) {
    case op_kind::insert: r.st = static_cast<int>(m.emplace(r.key, r.value).second ? status::ok : status::duplicate); break;
    case op_kind::erase: r.st = static_cast<int>(m.erase(r.key) ? status::ok : status::absent); break;
    case op_kind::find: {
      auto it = m.find(r.key);
      r.st = static_cast<int>(it == m.end() ? status::absent : status::ok);
      if (it != m.end()) r.has_out = 1, r.out_value = it->second;
      break;
    }
    case op_kind::range: {
      std::vector<std::pair<long, long>> items(m.lower_bound(r.key), m.upper_bound(r.hi));
      r.range_n = items.size();
      r.range_sum = checksum(items);
      break;
    }
    case op_kind::lower_bound:
    case op_kind::successor: {
      auto it = static_cast<op_kind>(r.op) == op_kind::lower_bound ? m.lower_bound(r.key) : m.upper_bound(r.key);
      r.st = static_cast<int>(it == m.end() ? status::absent : status::ok);
      if (it != m.end()) r.has_out = 1, r.out_key = it->first, r.out_value = it->second;
      break;
    }
    default: break;
  }
  return r;
}

record flatten(int rank, int index, const operation& s,
               const operation_result& res) {
  record r{};
  r.stamp = res.head_stamp;
  r.rank = rank;
  r.index = index;
  r.op = static_cast<int>(s.op);
  r.st = s.op == op_kind::range ? 0 : static_cast<int>(res.st);
  r.key = s.key;
  r.hi = s.hi;
  r.value = s.value;
  r.has_out = (res.value.has_value() || res.key.has_value()) ? 1 : 0;
  r.out_key = res.key.value_or(0);
  r.out_value = res.value.value_or(0);
  r.range_n = res.items.size();
  r.range_sum = checksum(res.items);
  return r;
}

operation random_op(std::mt19937_64& rng, long keyspace, int own_rank, int ranks) {
  std::uniform_int_distribution<long> key(0, keyspace - 1);
  long k = key(rng);
  if (own_rank >= 0) k = k - (k % ranks) + own_rank;
  operation s;
  s.key = k;
  const int kind = std::uniform_int_distribution<int>(0, 99)(rng);
  if (kind < 35) s.op = op_kind::insert, s.value = k * 10 + 1;
  else if (kind < 60) s.op = op_kind::erase;
  else if (kind < 80) s.op = op_kind::find;
  else if (kind < 92) s.op = op_kind::range, s.hi = k + std::uniform_int_distribution<long>(0, 30)(rng);
  else if (kind < 96) s.op = op_kind::lower_bound;
  else s.op = op_kind::successor;
  return s;
}

/// Every rank's records, on every rank.
std::vector<record> gather(const std::vector<record>& mine) {
  std::vector<record> all;
  for (int r = 0; r < shoal::size(); ++r) {
    auto part = shoal::broadcast(mine, r);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

bool same(const record& a, const record& b) {
  return a.st == b.st && a.has_out == b.has_out && a.out_key == b.out_key && a.out_value == b.out_value &&
         a.range_n == b.range_n && a.range_sum == b.range_sum;
}

TEST(OrderedMap, TotalOrderResultsEqualASequentialReplayInHeadOrder) {
  auto o = small(consistency::total_order);
  o.window = o.window_max = 128;  // deep pipelines: splits, stale SPLITs and min-key deletes overlap
  o.adaptive_window = false;
  ordered_map<long, long> m(o);
  std::mt19937_64 rng(17 + static_cast<std::uint64_t>(shoal::rank()));
  const int n = shoal::testing::scaled(300);
  std::vector<operation> specs;
  std::vector<shoal::future<operation_result>> futures;
  for (int i = 0; i < n; ++i) {
    specs.push_back(random_op(rng, 150, -1, shoal::size()));
    futures.push_back(m.async_operation(specs.back()));
  }
  std::vector<record> mine;
  for (int i = 0; i < n; ++i) mine.push_back(flatten(shoal::rank(), i, specs[static_cast<std::size_t>(i)], futures[static_cast<std::size_t>(i)].get()));
  m.barrier();  // other ranks' requests still need this rank's nodes: quiesce before a plain collective
  auto all = gather(mine);
  std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.stamp < b.stamp; });
  std::map<long, long> oracle;
  int mismatches = 0;
  for (auto& r : all) {
    EXPECT_GT(r.stamp, 0u);
    if (!same(replay(oracle, r), r)) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  // The head's rank sequenced every rank's operations (the finds below are sequenced too, after this count).
  const auto sequenced = shoal::allreduce(m.stats().sequenced, shoal::op::sum{});
  EXPECT_EQ(sequenced, static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(shoal::size()));
  if (shoal::rank() != 0) { EXPECT_EQ(m.stats().sequenced, 0u); }
  EXPECT_EQ(m.size(), oracle.size());
  for (auto& [k, v] : oracle)
    if (k % shoal::size() == shoal::rank()) { EXPECT_EQ(m.find(k), std::optional<long>(v)); }
}

// Under total order the head's rank issues its operations through the sequencer (service.hpp), so its window() is the
// sequencer's: 300 finds of rank 0 alone give the sequencer 300 replies, one sample of 256, after which an adaptive
// window grows once (x 1.25 + 1: 8 -> 11; the first sample never shrinks it). The rank's own client, unused, stays at 8.
TEST(OrderedMap, TheHeadsRankReportsTheSequencersWindowUnderTotalOrder) {
  auto o = small(consistency::total_order);
  o.window = o.window_min = 8;
  o.window_max = 1024;
  o.adaptive_window = true;
  ordered_map<long, long> m(o);
  if (shoal::rank() == 0) {
    std::vector<shoal::future<std::optional<long>>> found;
    for (long k = 0; k < 300; ++k) found.push_back(m.async_find(k));
    for (auto& f : found) EXPECT_EQ(f.get(), std::nullopt);
  }
  m.barrier();
  EXPECT_EQ(m.window(), shoal::rank() == 0 ? 11u : 8u);
  m.set_consistency(consistency::sequential);  // rank 0's own client again, which never adapted
  EXPECT_EQ(m.window(), 8u);
}

TEST(OrderedMap, SequentialConsistencyAnswersEachRankInIssueOrder) {
  ordered_map<long, long> m(small(consistency::sequential));
  std::mt19937_64 rng(29 + static_cast<std::uint64_t>(shoal::rank()));
  const int n = shoal::testing::scaled(300);
  std::vector<operation> specs;
  std::vector<shoal::future<operation_result>> futures;
  bool in_order = true;
  auto check_ready_prefix = [&] {
    // From the last to the first: once a later future was seen ready, every earlier one must be ready too.
    bool later_ready = false;
    for (auto f = futures.rbegin(); f != futures.rend(); ++f) {
      const bool ready = f->ready();
      if (later_ready && !ready) in_order = false;
      later_ready = later_ready || ready;
    }
  };
  for (int i = 0; i < n; ++i) {
    specs.push_back(random_op(rng, 240, shoal::rank(), shoal::size()));
    futures.push_back(m.async_operation(specs.back()));
    if (i % 16 == 0) check_ready_prefix();
  }
  check_ready_prefix();
  EXPECT_TRUE(in_order) << "a later operation's future was ready before an earlier one's";
  std::map<long, long> oracle;  // this rank's keys only: nobody else touches them
  for (int i = 0; i < n; ++i) {
    auto& s = specs[static_cast<std::size_t>(i)];
    auto res = futures[static_cast<std::size_t>(i)].get();
    if (s.op == op_kind::lower_bound || s.op == op_kind::successor) continue;  // other ranks' keys interleave
    if (s.op == op_kind::range) {
      std::erase_if(res.items, [](const auto& kv) { return kv.first % shoal::size() != shoal::rank(); });
    }
    auto want = replay(oracle, flatten(shoal::rank(), i, s, {}));
    EXPECT_TRUE(same(want, flatten(shoal::rank(), i, s, res))) << "operation " << i << " key " << s.key;
  }
  const std::size_t size = m.size();  // quiesces first: a plain collective must not start while requests still flow
  EXPECT_EQ(size, static_cast<std::size_t>(shoal::allreduce(static_cast<std::uint64_t>(oracle.size()), shoal::op::sum{})));
}

TEST(OrderedMap, RangesNeighboursAndFindsAgreeWithTheOracle) {
  for (auto c : {consistency::total_order, consistency::sequential, consistency::none}) {
    ordered_map<long, long> m(small(c));
    const long n = shoal::testing::scaled(300);
    for (long k = shoal::rank(); k < n; k += shoal::size()) m.async_insert(k * 3, k);
    m.barrier();
    std::mt19937_64 rng(5 + static_cast<std::uint64_t>(shoal::rank()));
    for (int i = 0; i < 10; ++i) {
      const long lo = std::uniform_int_distribution<long>(-5, n * 3)(rng);
      const long hi = lo + std::uniform_int_distribution<long>(0, 120)(rng);
      auto got = m.range(lo, hi);
      std::vector<std::pair<long, long>> want;
      for (long k = std::max(0L, (lo + 2) / 3); k < n && k * 3 <= hi; ++k)
        if (k * 3 >= lo) want.emplace_back(k * 3, k);
      EXPECT_EQ(got, want) << lo << ".." << hi;
      auto lb = m.lower_bound(lo);
      const long first = std::max(0L, (lo + 2) / 3);
      if (first < n) { EXPECT_EQ(lb, std::optional(std::pair{first * 3, first})); }
      else { EXPECT_FALSE(lb); }
      auto sc = m.successor(lo);
      const long next = lo < 0 ? 0 : lo / 3 + 1;
      if (next < n) { EXPECT_EQ(sc, std::optional(std::pair{next * 3, next})); }
      EXPECT_EQ(m.find(lo), lo >= 0 && lo % 3 == 0 && lo / 3 < n ? std::optional<long>(lo / 3) : std::nullopt);
    }
    m.barrier();
  }
}

TEST(OrderedMap, RangeRepliesOfEverySizeArriveWhole) {
  // Default nodes (G = 512): a range's part is one reply of up to G key-values, written from the node's arrays into
  // one active message (one that outgrows the AM buffer travels alone): sizes from one key-value to beyond a node,
  // across power-of-two sizes and the 4 KB eager buffer.
  ordered_map<long, long> m;
  const long n = 2000;
  for (long k = shoal::rank(); k < n; k += shoal::size()) m.async_insert(k, -k);
  m.barrier();
  for (long count : {1L, 3L, 4L, 7L, 8L, 15L, 16L, 31L, 32L, 63L, 64L, 127L, 128L, 255L, 256L, 400L, 511L, 1200L, n}) {
    const long lo = (count * 37 + shoal::rank() * 11) % (n - count + 1);
    std::vector<std::pair<long, long>> want;
    for (long k = lo; k < lo + count; ++k) want.emplace_back(k, -k);
    EXPECT_EQ(m.range(lo, lo + count - 1), want) << count << " key-values from " << lo;
  }
  m.barrier();
}

TEST(OrderedMap, ARangePartWrittenInPlaceIsTheMessageTheCodecWrites) {
  // A part whose key-values are plain bytes is written where it travels from: its fields up to the pairs' count
  // (encode_head), then the pairs from the node's arrays. Byte for byte the message encode writes, and it decodes to
  // the same part.
  namespace om = shoal::detail::ordered_map;
  using codec = om::codec<long, long>;
  const std::vector<long> keys = {3, 5, 8, 13, 21}, values = {-3, -5, -8, -13, -21};
  for (std::size_t n : {0u, 1u, 5u}) {
    om::reply<long, long> p;
    p.client = 1;
    p.seq = 77;
    p.op = om::op_kind::range;
    p.head_stamp = 9;
    p.key = 3;
    p.hi = 34;
    p.hi_inclusive = true;
    const om::pairs_source<long, long> items{std::span(keys).first(n), std::span(values).first(n)};
    const codec::message_type m(p);
    std::vector<std::byte> whole_buffer, head_buffer;
    const auto whole = codec::encode(m, whole_buffer, &items);
    const auto head = codec::encode_head(m, head_buffer, items);
    std::vector<std::byte> in_place(head.begin(), head.end());
    in_place.resize(head.size() + n * 2 * sizeof(long));
    om::put_packed_pairs(in_place.data() + head.size(), items);
    EXPECT_TRUE(std::ranges::equal(in_place, whole)) << n << " key-values";
    const auto back = std::get<om::reply<long, long>>(codec::decode(in_place));
    ASSERT_EQ(back.items.size(), n);
    for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(back.items[i], std::pair(keys[i], values[i]));
    EXPECT_EQ(back.hi, 34);
    EXPECT_TRUE(back.hi_inclusive);
  }
}

TEST(OrderedMap, DeletingEverythingLeavesOnlyTheHead) {
  ordered_map<long, long> m(small(consistency::sequential));
  const long n = shoal::testing::scaled(400);
  for (long k = shoal::rank(); k < n; k += shoal::size()) EXPECT_TRUE(m.async_insert(k, k).get());
  EXPECT_EQ(m.size(), static_cast<std::size_t>(n));
  for (long k = n - 1 - shoal::rank(); k >= 0; k -= shoal::size()) m.async_erase(k);
  m.barrier();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(shoal::allreduce(static_cast<std::uint64_t>(m.local_nodes()), shoal::op::sum{}), 1u);
  EXPECT_FALSE(m.erase(3));
  EXPECT_TRUE(m.range(0, n).empty());
}

TEST(OrderedMap, ThinningAListMergesUnderFullNodes) {
  for (auto c : {consistency::total_order, consistency::sequential, consistency::none}) {
    ordered_map<long, long> m(small(c));
    // Not scaled down on slow paths: with 20 keys (400 / 20, oversubscribed across hosts) the list has a handful of
    // nodes and the 3 keys left may each keep a node without any merge. 400 keys are a few hundred messages anywhere.
    const long n = 400;
    for (long k = shoal::rank(); k < n; k += shoal::size()) m.async_insert(k, k);
    m.barrier();
    const auto nodes_before = shoal::allreduce(static_cast<std::uint64_t>(m.local_nodes()), shoal::op::sum{});
    for (long k = shoal::rank(); k < n; k += shoal::size())
      if (k % 8 != 0) m.async_erase(k);
    m.barrier();
    const auto nodes_after = shoal::allreduce(static_cast<std::uint64_t>(m.local_nodes()), shoal::op::sum{});
    EXPECT_GT(shoal::allreduce(m.stats().nodes_merged, shoal::op::sum{}), 0u);
    std::vector<std::pair<long, long>> want;
    for (long k = 0; k < n; k += 8) want.emplace_back(k, k);
    // Without merging each key left would keep a node of its own (they lie 8 apart, G = 4). How many merge depends on
    // how the ranks' erases interleave: 16-22 nodes for the 50 keys in 2- and 4-rank runs with 64-byte AM buffers,
    // under every semantics, since a delete of a node's min key merges it too (before, 30-35 and, under total order,
    // 36-48 remained; the simulator's test asks for the same bound).
    EXPECT_LT(nodes_after * 3, want.size() * 2) << "nodes before " << nodes_before << ", after " << nodes_after;
    EXPECT_EQ(m.range(0, n), want);
    EXPECT_EQ(m.size(), want.size());
  }
}

TEST(OrderedMap, ListFullIsAClearErrorAndKeepsEverythingElse) {
  auto o = small(consistency::total_order);
  o.nodes_per_rank = 2;
  o.granularity = 3;
  ordered_map<long, long> m(o);
  int full = 0, inserted = 0;
  for (long k = 0; k < 60; ++k) {
    try {
      if (m.insert(k * shoal::size() + shoal::rank(), k)) ++inserted;
    } catch (const shoal::container_full& e) {
      ++full;
      EXPECT_NE(std::string(e.what()).find("nodes_per_rank"), std::string::npos);
    }
  }
  m.barrier();
  EXPECT_GT(shoal::allreduce(full, shoal::op::sum{}), 0);
  const std::size_t size = m.size();
  EXPECT_EQ(size, static_cast<std::size_t>(shoal::allreduce(inserted, shoal::op::sum{})));
}

TEST(OrderedMap, BadOptionsAreRejectedOnEveryRankNamingTheField) {
  auto o = small(consistency::sequential);
  o.granularity = 1;
  try {
    ordered_map<long, long> m(o);
    ADD_FAILURE() << "granularity 1 accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("ordered_map_options::granularity must be at least 2 (got 1)"),
              std::string::npos)
        << e.what();
  }
  ordered_map<long, long> good(small(consistency::sequential));  // the team is still usable
  EXPECT_TRUE(good.insert(shoal::rank(), 1));
  EXPECT_EQ(good.size(), static_cast<std::size_t>(shoal::size()));
}

TEST(OrderedMap, StaleShortcutsFailOverToTheHead) {
  ordered_map<long, long> m(small(consistency::sequential));
  for (long k = shoal::rank(); k < 200; k += shoal::size()) m.async_insert(k, k + 1);
  m.barrier();
  m.local_add_shortcut(50, {0, 99999, 0}, 4);
  m.local_add_shortcut(120, {shoal::size() - 1, 0, 41}, 4);
  EXPECT_EQ(m.find(50), std::optional<long>(51));
  EXPECT_EQ(m.find(130), std::optional<long>(131));
  EXPECT_EQ(m.range(120, 125).size(), 6u);
  m.barrier();  // every rank's range ran before any erase
  EXPECT_TRUE(m.erase(121 + 2 * shoal::rank()));
  m.barrier();
}

TEST(OrderedMap, MultiDimensionalRanges) {
  using key = std::tuple<int, int, int>;
  ordered_map<key, int> m(small(consistency::none));
  int v = 0;
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 5; ++c, ++v)
        if (v % shoal::size() == shoal::rank()) m.async_insert({a, b, c}, v);
  m.barrier();
  for (const char* text : {"4.[2,4].3", "[1,2].[0,4].[3,4]", "0.0.0", "[0,4].3.[1,3]", "2.2.[0,9]"}) {
    const auto box = shoal::key_box::parse(text);
    auto got = m.range(text);
    std::vector<std::pair<key, int>> want;
    int w = 0;
    for (int a = 0; a < 5; ++a)
      for (int b = 0; b < 5; ++b)
        for (int c = 0; c < 5; ++c, ++w)
          if (box.contains(key{a, b, c})) want.emplace_back(key{a, b, c}, w);
    EXPECT_EQ(got, want) << text;
  }
  EXPECT_THROW(m.range("1.[2,"), shoal::usage_error);
  EXPECT_THROW(m.range("1.2"), shoal::usage_error);
  m.barrier();
}

// Floods: deep windows, with k large (nodes forward freely) and k = 0 (every forward to another rank waits for its
// arrival before the node takes its next request).
// A wait that lasts gives the CPU away, as every wait in shoal does (docs/core.md, "How shoal waits"). Under total
// order every request goes to the head's rank (rank 0), which sleeps without serving while the others wait for it:
// in wait() and, with a window of one, in an operation waiting for room.
TEST(OrderedMap, WaitsBackOffWhileTheHeadsRankIsBusy) {
  auto o = small(consistency::total_order);
  o.window = o.window_min = o.window_max = 1;
  o.adaptive_window = false;
  ordered_map<long, long> m(o);
  const std::uint64_t before = shoal::detail::rt().wait_backoffs;
  MPI_Barrier(MPI_COMM_WORLD);  // runs no shoal handler: rank 0 answers nothing before it sleeps
  if (shoal::rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::vector<shoal::future<std::optional<long>>> found;
  for (long k = 0; k < 3; ++k) found.push_back(m.async_find(k));  // the second waits for the first one's room
  m.wait();
  for (auto& f : found) EXPECT_EQ(f.get(), std::nullopt);
  if (shoal::rank() != 0) { EXPECT_GT(shoal::detail::rt().wait_backoffs, before); }
  m.barrier();
}

TEST(OrderedMap, FloodsOfConcurrentRequestsDoNotDeadlock) {
  struct setting {
    consistency c;
    std::size_t asynchrony;
  };
  for (auto [c, k] : {setting{consistency::total_order, 1024}, setting{consistency::sequential, 1024},
                      setting{consistency::none, 1024}, setting{consistency::total_order, 0},
                      setting{consistency::sequential, 0}}) {
    SCOPED_TRACE("semantics " + std::to_string(static_cast<int>(c)) + ", asynchrony " + std::to_string(k));
    auto o = small(c);
    o.window = 256;
    o.window_max = 512;
    o.asynchrony = k;
    ordered_map<long, long> m(o);
    const long n = shoal::testing::scaled(400);
    std::vector<shoal::future<bool>> inserted, erased;
    for (long i = 0; i < n; ++i) inserted.push_back(m.async_insert(i * shoal::size() + shoal::rank(), i));
    for (long i = 0; i < n; ++i) {
      m.async_find(((i * 7919) % n) * shoal::size());
      if (i % 3 == 0) erased.push_back(m.async_erase(i * shoal::size() + shoal::rank()));
    }
    m.barrier();
    for (auto& f : inserted) EXPECT_TRUE(f.get());
    long removed = 0;
    for (auto& f : erased) removed += f.get() ? 1 : 0;
    // Without consistency an erase may overtake the insert of its key (then it finds nothing); otherwise never.
    if (c != consistency::none) { EXPECT_EQ(removed, (n + 2) / 3); }
    const std::size_t size = m.size();
    EXPECT_EQ(size, static_cast<std::size_t>(shoal::allreduce(n - removed, shoal::op::sum{})));
  }
}

}  // namespace
