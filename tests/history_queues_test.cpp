// Checked histories of the FIFO queues: circular_queue under promise::any (pushes and pops at once), fast_queue
// under its phase contract (a phase of pushes, a barrier, a phase of pops) and the strict linked-list queue
// (bench/linked_fifo_queue.hpp, relaxed_queue's baseline in shoal-bench). Each round starts with an empty queue, runs one phase of
// operations from every rank and ends with every rank popping until the queue is empty; a round is one segment of
// the history (the operation key), checked against a sequential FIFO queue on rank 0. Values are unique.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "linked_fifo_queue.hpp"  // bench/
#include "shoal/containers/circular_queue.hpp"
#include "shoal/containers/fast_queue.hpp"
#include "shoal_test.hpp"
#include "support/checked_history.hpp"
#include "support/history.hpp"

namespace {

using namespace shoal::testing::history;

enum class first_phase { pushes_and_pops, pushes_only };

// About 60 operations of all ranks per round, plus the drain: the search over a FIFO queue grows quickly with the
// number of pushes that overlap (their order shows only at their pops), so segments stay near 100 operations.
// A push-only phase is the hardest case (every push overlaps the others; the pops tell their order only at the
// end), so fast_queue rounds hold about 16 pushes.
int ops_per_round(first_phase phase) { return (phase == first_phase::pushes_only ? 16 : 60) / shoal::size(); }
int rounds(first_phase phase) { return std::max(2, shoal::testing::scaled(2000) / ops_per_round(phase)); }

// Search budget of the FIFO checks: on a loaded machine (oversubscribed ranks, fault delays) more pushes overlap and
// the default 5M steps were seen to end `undecided` (never a violation); 4x that bounds time and the memo's memory.
constexpr std::size_t fifo_search_steps = 20'000'000;

// Runs the rounds: `push(v)` -> bool (a try_push), `pop()` -> std::optional<std::int64_t> (a try_pop).
template <class Push, class Pop>
void run_rounds(recorder& rec, first_phase phase, Push push, Pop pop) {
  std::mt19937_64 rng(0x9e0 + static_cast<unsigned>(shoal::rank()));
  std::int64_t next_value = static_cast<std::int64_t>(shoal::rank()) << 32;
  auto recorded_pop = [&](std::int64_t round) {
    const auto h = rec.invoke(op_kind::pop, round);
    const std::optional<std::int64_t> v = pop();
    rec.respond(h, v.has_value(), v.value_or(0));
    return v.has_value();
  };
  for (std::int64_t round = 0; round < rounds(phase); ++round) {
    for (int i = 0; i < ops_per_round(phase); ++i) {
      if (phase == first_phase::pushes_only || rng() % 10 < 6) {
        const auto h = rec.invoke(op_kind::push, round, next_value);
        const bool pushed = push(next_value++);
        rec.respond(h, pushed);
        ASSERT_TRUE(pushed) << "the queue is large enough for every round";
      } else {
        recorded_pop(round);
      }
    }
    shoal::barrier();
    while (recorded_pop(round)) {
    }
    shoal::barrier();
  }
}

std::string ranks() { return std::to_string(shoal::size()) + " ranks"; }

TEST(History, CircularQueueIsALinearizableFifo) {
  shoal::circular_queue<std::int64_t> q(0, static_cast<std::size_t>(4 * 60));
  recorder rec;
  shoal::barrier();
  run_rounds(
      rec, first_phase::pushes_and_pops, [&](std::int64_t v) { return q.try_push(v); },
      [&]() -> std::optional<std::int64_t> { return q.try_pop(); });
  expect_history(rec, fifo_model{}, "circular_queue (promise::any), " + ranks(), promise_kind::linearizable,
                 fifo_search_steps);
  shoal::barrier();
}

TEST(History, FastQueueIsALinearizableFifoUnderItsPhaseContract) {
  shoal::fast_queue<std::int64_t> q(shoal::size() - 1, static_cast<std::size_t>(4 * 60));
  recorder rec;
  shoal::barrier();
  run_rounds(
      rec, first_phase::pushes_only, [&](std::int64_t v) { return q.try_push(v); },
      [&]() -> std::optional<std::int64_t> { return q.try_pop(); });
  expect_history(rec, fifo_model{}, "fast_queue (push phase, pop phase), " + ranks(), promise_kind::linearizable,
                 fifo_search_steps);
  shoal::barrier();
}

TEST(History, StrictLinkedQueueIsALinearizableFifo) {
  shoal::bench::linked_fifo_queue<std::int64_t> q(static_cast<std::size_t>(rounds(first_phase::pushes_and_pops) * ops_per_round(first_phase::pushes_and_pops)));
  recorder rec;
  shoal::barrier();
  run_rounds(
      rec, first_phase::pushes_and_pops,
      [&](std::int64_t v) { return q.try_push(v); },
      [&]() -> std::optional<std::int64_t> { return q.try_pop(); });
  expect_history(rec, fifo_model{}, "linked_fifo_queue, " + ranks(), promise_kind::linearizable,
                 fifo_search_steps);
  shoal::barrier();
}

}  // namespace
