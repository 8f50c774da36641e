// flights/sim_clock.hpp — simulated time: starts at `start`, runs `speedup` times faster than the wall clock, and
// stops at `pause_at` (if set) and at the end of the schedule. speedup 0 freezes it (the tests' deterministic mode).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace flights {

class sim_clock {
 public:
  sim_clock(std::int64_t start, double speedup, std::int64_t stop_at)
      : start_(start), speedup_(speedup), stop_at_(std::max(start, stop_at)) {}

  /// Starts counting from now (call once every rank is ready).
  void restart() { wall0_ = std::chrono::steady_clock::now(); }

  std::int64_t now() const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    return std::min(stop_at_, start_ + static_cast<std::int64_t>(wall * speedup_));
  }
  double speedup() const { return speedup_; }
  std::int64_t stop_at() const { return stop_at_; }

 private:
  std::int64_t start_;
  double speedup_;
  std::int64_t stop_at_;
  std::chrono::steady_clock::time_point wall0_ = std::chrono::steady_clock::now();
};

/// "d:hh:mm" (day, hour, minute), "hh:mm" (day 0) or plain seconds → simulated seconds.
inline std::int64_t parse_sim_time(const std::string& text) {
  int d = 0, h = 0, m = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d:%d:%d%c", &d, &h, &m, &tail) == 3) return d * 86400LL + h * 3600LL + m * 60LL;
  if (std::sscanf(text.c_str(), "%d:%d%c", &h, &m, &tail) == 2) return h * 3600LL + m * 60LL;
  long long s = 0;
  if (std::sscanf(text.c_str(), "%lld%c", &s, &tail) == 1 && s >= 0) return s;
  throw std::invalid_argument("a simulated time must be seconds, hh:mm or d:hh:mm (e.g. 1:08:30), got '" + text + "'");
}

}  // namespace flights
