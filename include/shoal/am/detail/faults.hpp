// shoal/am/detail/faults.hpp — the test-only fault mode of the active-message layer (SHOAL_FAULTS; docs/testing.md,
// "Faults"): received buffers are held back for a seeded random number of progress steps and released in a random
// order across senders, never out of order from one sender (docs/am.md, "Ordering": per-pair order is all the layer
// promises, so that is all the mode keeps).
//
//   SHOAL_FAULTS unset, "" or "off"    no faults
//   SHOAL_FAULTS=delay:SEED            hold each buffer from another rank 0..8 progress steps (at most 64 held)
//   SHOAL_FAULTS=delay:SEED:STEPS      ... 0..STEPS steps, STEPS in 1..1000
// SEED is an unsigned decimal (each rank mixes in its rank). Anything else is a usage_error naming the setting.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "shoal/core/error.hpp"

namespace shoal::am::detail {

struct fault_settings {
  std::uint64_t seed = 0;
  std::uint32_t max_steps = 8;  // a held buffer is released within this many progress steps
  std::uint32_t max_held = 64;  // past this many held buffers, the oldest due one goes at once
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

}  // namespace shoal::am::detail
