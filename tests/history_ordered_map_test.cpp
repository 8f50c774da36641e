// Checked histories of shoal::ordered_map (ordered_map.hpp, "Consistency"): under total_order every operation takes
// effect in the order the head received it, so the history must be linearizable; under sequential (the default)
// each rank's operations take effect in its issue order, key by key, so the history must be linearizable key by key
// in issue order: single-key operations as they are, a range or lower_bound as what it saw of each key (it reads its
// nodes at different moments, and another rank's shortcut operations need not fall between the same two of them).
//
// Keys live in groups of `width` keys; each group is one partition of the check (ordered_map_model) and ends with a
// sentinel key that nobody erases, so a lower_bound inside a group never leaves it. Each round works on fresh
// groups (the rounds keep every partition to a few dozen operations: the per-client search over interleavings of
// 2-4 clients grows quickly with a partition's length). Every rank keeps 1-4 operations in flight (futures
// completed in random order); an operation's interval runs from its call to its future's get().
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/ordered_map.hpp"
#include "shoal_test.hpp"
#include "support/checked_history.hpp"
#include "support/history.hpp"
#include "support/in_flight.hpp"

namespace {

using namespace shoal::testing::history;

constexpr std::int64_t width = 8;             // keys per group; the last one is the sentinel
constexpr std::int64_t groups_per_round = 2;
constexpr std::int64_t sentinel_value = -1;
const ordered_map_model model{.group_width = width, .sentinel_value = sentinel_value};

int ops_per_round() { return 48 / shoal::size(); }  // of one rank; ~24 operations per partition
int rounds() { return std::max(2, shoal::testing::scaled(600) / ops_per_round()); }

shoal::ordered_map_options options(shoal::consistency c) {
  shoal::ordered_map_options o;
  o.semantics = c;
  o.granularity = 4;  // small nodes: splits and node-min erases happen under concurrency
  o.tower_p = 0.5;
  o.max_height = 6;
  o.nodes_per_rank = 4096;
  return o;
}

// A value no other operation of the run writes: the rank in the high bits, a counter below.
std::int64_t unique_value(int i) { return (static_cast<std::int64_t>(shoal::rank()) << 32) | i; }

// `per_key`: record a range or lower_bound as what it saw of each key (key_observations) instead of as one read.
void record_rounds(shoal::ordered_map<std::int64_t, std::int64_t>& m, recorder& rec, bool per_key) {
  std::mt19937_64 rng(0x0d3 + static_cast<unsigned>(shoal::rank()));
  in_flight pending(rng);
  int counter = 0;
  for (int round = 0; round < rounds(); ++round) {
    for (int i = 0; i < ops_per_round(); ++i) {
      const std::int64_t base = (round * groups_per_round + static_cast<std::int64_t>(rng() % groups_per_round)) * width;
      const std::int64_t k = base + static_cast<std::int64_t>(rng() % (width - 1));  // never the sentinel
      const std::size_t window = 1 + rng() % 4;
      const auto d = rng() % 20;
      if (d < 6) {  // insert 30 %
        const auto v = unique_value(counter++);
        const auto h = rec.invoke(op_kind::insert, k, v);
        pending.add([&rec, h, f = m.async_insert(k, v)]() mutable { rec.respond(h, f.get()); }, window);
      } else if (d < 10) {  // erase 20 %
        const auto h = rec.invoke(op_kind::erase, k);
        pending.add([&rec, h, f = m.async_erase(k)]() mutable { rec.respond(h, f.get()); }, window);
      } else if (d < 14) {  // find 20 %
        const auto h = rec.invoke(op_kind::find, k);
        pending.add([&rec, h, f = m.async_find(k)]() mutable {
          const auto found = f.get();
          rec.respond(h, found.has_value(), found.value_or(0));
        }, window);
      } else if (d < 17) {  // lower_bound 15 %
        const auto h = rec.invoke(op_kind::lower_bound, k);
        pending.add([&rec, h, k, base, per_key, f = m.async_lower_bound(k)]() mutable {
          const auto lb = f.get();
          if (!per_key) return rec.respond(h, lb.has_value(), lb ? lb->first : 0, lb ? lb->second : 0);
          std::vector<std::pair<std::int64_t, std::int64_t>> seen;
          if (lb) seen.push_back(*lb);
          rec.respond_per_key(h, [&](const operation& o) {
            return key_observations(o, k, lb ? lb->first : base + width - 1, seen);
          });
        }, window);
      } else {  // range 15 %, from k to a key of the same group (maybe the sentinel)
        const std::int64_t hi = k + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(base + width - k));
        const auto h = rec.invoke(op_kind::range, k, hi);
        pending.add([&rec, h, k, hi, per_key, f = m.async_range(k, hi)]() mutable {
          const auto kv = f.get();
          if (!per_key) return rec.respond(h, true, static_cast<std::int64_t>(kv.size()), range_digest(kv));
          rec.respond_per_key(h, [&](const operation& o) { return key_observations(o, k, hi, kv); });
        }, window);
      }
    }
    pending.drain();
    m.barrier();
  }
}

template <class Model>
void run(shoal::consistency c, const Model& check_model, promise_kind promise, const std::string& what) {
  shoal::ordered_map<std::int64_t, std::int64_t> m(options(c));
  if (shoal::rank() == 0) {
    for (std::int64_t g = 0; g < rounds() * groups_per_round; ++g) ASSERT_TRUE(m.insert(g * width + width - 1, sentinel_value));
  }
  m.barrier();
  recorder rec;
  shoal::barrier();
  record_rounds(m, rec, promise == promise_kind::linearizable_in_issue_order);
  expect_history(rec, check_model, what + ", " + std::to_string(shoal::size()) + " ranks", promise);
  shoal::barrier();
}

TEST(History, OrderedMapUnderTotalOrderIsLinearizable) {
  run(shoal::consistency::total_order, model, promise_kind::linearizable, "ordered_map (total_order)");
}

TEST(History, OrderedMapUnderSequentialIsLinearizablePerKeyInIssueOrder) {
  const ordered_map_key_model per_key{{}, width, sentinel_value};
  run(shoal::consistency::sequential, per_key, promise_kind::linearizable_in_issue_order, "ordered_map (sequential)");
}

}  // namespace
