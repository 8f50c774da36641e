// Checked histories of the core atomics (shoal/core/rma.hpp promises them linearizable): every rank runs random
// fetch_add, fetch_xor, exchange, compare_exchange, atomic_load and atomic_store on one word per rank at once, and
// rank 0 checks that one order of all of them, consistent with real time, explains every result (tests/support/).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "shoal/core.hpp"
#include "shoal_test.hpp"
#include "support/checked_history.hpp"
#include "support/history.hpp"

namespace {

using namespace shoal::testing::history;

TEST(History, CoreAtomicsAreLinearizable) {
  auto words = shoal::allocate_collective<std::int64_t>(1);
  *words[static_cast<std::size_t>(shoal::rank())].local() = 0;
  recorder rec;
  shoal::barrier();
  std::mt19937_64 rng(0xa70 + static_cast<unsigned>(shoal::rank()));
  const int n = shoal::testing::scaled(2000);
  for (int i = 0; i < n; ++i) {
    const auto w = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(shoal::size()));
    const auto p = words[static_cast<std::size_t>(w)];
    const auto small = static_cast<std::int64_t>(rng() % 8);
    switch (rng() % 6) {
      case 0: {
        const auto h = rec.invoke(op_kind::fetch_add, w, small + 1);
        rec.respond(h, true, shoal::fetch_add(p, small + 1));
        break;
      }
      case 1: {
        const auto h = rec.invoke(op_kind::fetch_xor, w, small);
        rec.respond(h, true, shoal::fetch_xor(p, small));
        break;
      }
      case 2: {
        const auto h = rec.invoke(op_kind::exchange, w, small);
        rec.respond(h, true, shoal::exchange(p, small));
        break;
      }
      case 3: {
        // Expect what this rank last saw (often still there) so that swaps succeed as well as fail.
        std::int64_t expected = small;
        for (auto it = rec.local().rbegin(); it != rec.local().rend(); ++it) {
          if (it->key == w) {
            expected = it->out;
            break;
          }
        }
        const auto h = rec.invoke(op_kind::compare_exchange, w, expected, expected + small + 1);
        rec.respond(h, true, shoal::compare_exchange(p, expected, expected + small + 1));
        break;
      }
      case 4: {
        const auto h = rec.invoke(op_kind::load, w);
        rec.respond(h, true, shoal::atomic_load(p));
        break;
      }
      default: {
        const auto h = rec.invoke(op_kind::store, w, small);
        shoal::atomic_store(p, small);
        rec.respond(h, true);
      }
    }
  }
  shoal::barrier();
  expect_history(rec, register_model{}, "core atomics, " + std::to_string(shoal::size()) + " ranks");
  shoal::barrier();
  shoal::deallocate(words[static_cast<std::size_t>(shoal::rank())]);
}

}  // namespace
