// Checked histories of the hash maps: hash_map (one-sided; insert, insert_or_assign, find and erase promised fully
// atomic under promise::any) and dist_map (owner-applied active messages, blocking and through futures). Every
// rank runs random operations on a few shared keys at once; rank 0 checks each key's history against a sequential
// map (linearizability is local, so keys are checked one by one).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "shoal/containers/dist_map.hpp"
#include "shoal/containers/hash_map.hpp"
#include "shoal_test.hpp"
#include "support/checked_history.hpp"
#include "support/history.hpp"
#include "support/in_flight.hpp"

namespace {

using namespace shoal::testing::history;

constexpr std::uint64_t keys = 32;

// A value no other operation of the run writes: the rank in the high bits, a counter below.
std::int64_t unique_value(int i) { return (static_cast<std::int64_t>(shoal::rank()) << 32) | i; }

// Picks the next operation: insert 35 %, insert_or_assign 10 %, find 40 %, erase 15 %.
op_kind random_kind(std::mt19937_64& rng, op_kind erase_kind) {
  const auto d = rng() % 20;
  return d < 7 ? op_kind::insert : d < 9 ? op_kind::insert_or_assign : d < 17 ? op_kind::find : erase_kind;
}

TEST(History, HashMapOperationsAreLinearizable) {
  shoal::hash_map<std::int64_t, std::int64_t> m(4096 * static_cast<std::size_t>(shoal::size()));
  recorder rec;
  shoal::barrier();
  std::mt19937_64 rng(0x4a5 + static_cast<unsigned>(shoal::rank()));
  const int n = shoal::testing::scaled(2000);
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::int64_t>(rng() % keys);
    const auto v = unique_value(i);
    switch (random_kind(rng, op_kind::erase)) {
      case op_kind::insert: {
        const auto h = rec.invoke(op_kind::insert, k, v);
        rec.respond(h, m.insert(k, v));
        break;
      }
      case op_kind::insert_or_assign: {
        const auto h = rec.invoke(op_kind::insert_or_assign, k, v);
        rec.respond(h, m.insert_or_assign(k, v));
        break;
      }
      case op_kind::find: {
        const auto h = rec.invoke(op_kind::find, k);
        const auto found = m.find(k);
        rec.respond(h, found.has_value(), found.value_or(0));
        break;
      }
      default: {
        const auto h = rec.invoke(op_kind::erase, k);
        rec.respond(h, m.erase(k));
      }
    }
  }
  shoal::barrier();
  expect_history(rec, map_model{}, "hash_map, " + std::to_string(shoal::size()) + " ranks");
  shoal::barrier();
}

// dist_map: up to `window` operations in flight per rank, each recorded from its call to the return of its future's
// get(), so futures that complete out of issue order are checked too.
TEST(History, DistMapOperationsThroughFuturesAreLinearizable) {
  shoal::dist_map<std::int64_t, std::int64_t> m;
  recorder rec;
  shoal::barrier();
  std::mt19937_64 rng(0xd15 + static_cast<unsigned>(shoal::rank()));
  const int n = shoal::testing::scaled(2000);
  in_flight pending(rng);  // each completes one recorded operation
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::int64_t>(rng() % keys);
    const auto v = unique_value(i);
    const std::size_t window = 1 + rng() % 4;
    switch (random_kind(rng, op_kind::erase_value)) {
      case op_kind::insert: {
        const auto h = rec.invoke(op_kind::insert, k, v);
        pending.add([&rec, h, f = m.async_insert(k, v)]() mutable { rec.respond(h, f.get()); }, window);
        break;
      }
      case op_kind::insert_or_assign: {
        const auto h = rec.invoke(op_kind::insert_or_assign, k, v);
        pending.add([&rec, h, f = m.async_insert_or_assign(k, v)]() mutable { rec.respond(h, f.get()); }, window);
        break;
      }
      case op_kind::find: {
        const auto h = rec.invoke(op_kind::find, k);
        pending.add([&rec, h, f = m.async_find(k)]() mutable {
          const auto found = f.get();
          rec.respond(h, found.has_value(), found.value_or(0));
        }, window);
        break;
      }
      default: {
        const auto h = rec.invoke(op_kind::erase_value, k);
        pending.add([&rec, h, f = m.async_erase(k)]() mutable {
          const auto removed = f.get();
          rec.respond(h, removed.has_value(), removed.value_or(0));
        }, window);
      }
    }
  }
  pending.drain();
  m.flush();
  expect_history(rec, map_model{}, "dist_map, " + std::to_string(shoal::size()) + " ranks");
  shoal::barrier();
}

}  // namespace
