// shoal/core/detail/faults.hpp — the test-only fault mode (SHOAL_FAULTS; docs/testing.md, "Faults"): what a rank
// receives is held back for a seeded random number of steps and released in a random order across senders, never
// out of order from one sender (per-sender order is all that message passing promises, so that is all the mode
// keeps). One mechanism, `fault_scheduler`, serves both message channels of shoal:
//  * the active-message layer (am/detail/engine.hpp, through core/layer.hpp): received buffers, one lane per sender;
//  * the owner-applied one-sided operations (detail/remote_ops.hpp): requests, one lane per requester, and replies,
//    one lane per requester as well (a reply leaves the owner late, so the requester learns late of an operation that
//    has already taken effect).
//
//   SHOAL_FAULTS unset, "" or "off"    no faults
//   SHOAL_FAULTS=delay:SEED            hold each item 0..8 steps (at most 64 held per scheduler)
//   SHOAL_FAULTS=delay:SEED:STEPS      ... 0..STEPS steps, STEPS in 1..1000
// SEED is an unsigned decimal (each rank and each scheduler of it mixes in its own number). Anything else is a
// usage_error naming the setting.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"

namespace shoal::detail {

struct fault_settings {
  std::uint64_t seed = 0;
  std::uint32_t max_steps = 8;  // a held item is released within this many steps of its arrival
  std::uint32_t max_held = 64;  // past this many held items, one goes at once
};

/// Parses SHOAL_FAULTS' text (see above); nullopt: no faults.
inline std::optional<fault_settings> parse_faults(std::string_view text) {
  if (text.empty() || text == "off") return std::nullopt;
  auto fail = [&]() -> std::optional<fault_settings> {
    throw usage_error("SHOAL_FAULTS=\"" + std::string(text) +
                      "\" is not a fault mode; use delay:SEED or delay:SEED:STEPS (SEED an unsigned integer, STEPS in "
                      "1..1000), or off");
  };
  auto number = [](std::string_view s, std::uint64_t& out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
  };
  constexpr std::string_view prefix = "delay:";
  if (text.substr(0, prefix.size()) != prefix) return fail();
  std::string_view rest = text.substr(prefix.size());
  const auto colon = rest.find(':');
  fault_settings f;
  if (!number(rest.substr(0, colon), f.seed)) return fail();
  if (colon != std::string_view::npos) {
    std::uint64_t steps = 0;
    if (!number(rest.substr(colon + 1), steps) || steps < 1 || steps > 1000) return fail();
    f.max_steps = static_cast<std::uint32_t>(steps);
  }
  return f;
}

inline std::optional<fault_settings> env_faults() {
  const char* v = std::getenv("SHOAL_FAULTS");
  return parse_faults(v == nullptr ? std::string_view{} : std::string_view{v});
}

/// The schedulers of one rank draw their numbers from different streams of the seed.
enum class fault_stream : std::uint64_t { am_buffers = 0, requests = 1, replies = 2 };

/// Holds items that arrived on `lanes` lanes (one per sender) and releases each within max_steps steps of its
/// arrival: due items in a random order across lanes, only a lane's oldest held item at a time, so each lane's order
/// is kept and every interleaving of the lanes is possible. Not thread-safe (its owner serialises the calls).
template <class Item>
class fault_scheduler {
 public:
  fault_scheduler(const fault_settings& s, int rank, int lanes, fault_stream stream)
      : settings_(s), lanes_(static_cast<std::size_t>(lanes)) {
    rng_.seed(s.seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(rank) +
              static_cast<std::uint64_t>(stream) * 0xbf58476d1ce4e5b9ull);
  }

  /// One step of every held item's delay (an owner calls it once per receive attempt).
  void step() { ++step_; }

  /// Holds `item` of `lane` for 0..max_steps steps, behind the lane's earlier items; past max_held held items, one
  /// (a random lane's oldest, due or not) goes to out(Item&&) at once.
  template <class Out>
  void hold(int lane, Item&& item, Out&& out) {
    const std::uint64_t delay = rng_() % (settings_.max_steps + 1);
    delayed_ += delay > 0 ? 1 : 0;
    lanes_[static_cast<std::size_t>(lane)].push_back(held{std::move(item), step_ + delay, arrivals_++});
    if (++held_count_ > settings_.max_held) release(out, true);
  }

  /// Moves due items (`one_now`: one item, due or not) to out(Item&&), picking the lane at random each time. True
  /// when one was moved.
  template <class Out>
  bool release(Out&& out, bool one_now = false) {
    bool moved = false;
    for (;;) {
      ready_.clear();
      std::uint64_t oldest = arrivals_;
      for (std::size_t lane = 0; lane < lanes_.size(); ++lane) {
        if (lanes_[lane].empty()) continue;
        const held& front = lanes_[lane].front();
        if (front.arrival < oldest) oldest = front.arrival;
        if (one_now || front.due <= step_) ready_.push_back(lane);
      }
      if (ready_.empty()) return moved;
      auto& q = lanes_[ready_[rng_() % ready_.size()]];
      overtaking_ += q.front().arrival > oldest ? 1 : 0;
      Item item = std::move(q.front().item);
      q.pop_front();
      --held_count_;
      moved = true;
      out(std::move(item));
      if (one_now) return moved;
    }
  }

  std::size_t held_count() const { return held_count_; }
  /// Items held for at least one step.
  std::uint64_t delayed() const { return delayed_; }
  /// Items released before an item of another lane that had arrived earlier and was still held: the reorderings.
  std::uint64_t overtaking() const { return overtaking_; }

 private:
  struct held {
    Item item;
    std::uint64_t due;      // the step from which it may be released
    std::uint64_t arrival;  // arrival number, for overtaking()
  };
  fault_settings settings_;
  std::mt19937_64 rng_;
  std::vector<std::deque<held>> lanes_;  // per lane, oldest first
  std::vector<std::size_t> ready_;
  std::size_t held_count_ = 0;
  std::uint64_t step_ = 0;
  std::uint64_t arrivals_ = 0;
  std::uint64_t delayed_ = 0;
  std::uint64_t overtaking_ = 0;
};

}  // namespace shoal::detail
