// tests/support/in_flight.hpp — keeps up to a window of recorded asynchronous operations in flight and completes
// them in random order, so that histories include futures that complete out of issue order (no MPI).
//   in_flight pending(rng);
//   const auto h = rec.invoke(op_kind::find, k);
//   pending.add([&rec, h, f = m.async_find(k)]() mutable { ... rec.respond(h, ...); }, 1 + rng() % 4);
//   pending.drain();
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <random>

namespace shoal::testing::history {

class in_flight {
 public:
  explicit in_flight(std::mt19937_64& rng) : rng_(rng) {}

  /// Adds one completion (it waits for its future and records the response), then completes random ones until fewer
  /// than `window` are left.
  void add(std::function<void()> complete, std::size_t window) {
    pending_.push_back(std::move(complete));
    while (!pending_.empty() && pending_.size() >= window) {
      const auto pick = static_cast<std::ptrdiff_t>(rng_() % pending_.size());
      auto done = std::move(pending_[static_cast<std::size_t>(pick)]);
      pending_.erase(pending_.begin() + pick);
      done();
    }
  }

  /// Completes every operation still in flight, oldest first.
  void drain() {
    while (!pending_.empty()) {
      auto done = std::move(pending_.front());
      pending_.pop_front();
      done();
    }
  }

 private:
  std::mt19937_64& rng_;
  std::deque<std::function<void()>> pending_;
};

}  // namespace shoal::testing::history
