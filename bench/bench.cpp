#include "bench.hpp"

#include <algorithm>

#include <fmt/core.h>


namespace shoal::bench {

std::vector<workload>& registry() {
  static std::vector<workload> all;
  return all;
}

double ratio_of(const measurement& m) {
  if (m.direction == better::higher) return m.value > 0 && m.baseline_value > 0 ? m.value / m.baseline_value : 0;
  const double value = m.value + m.resolution;
  const double baseline = m.baseline_value + m.resolution;
  return value > 0 && baseline > 0 ? baseline / value : 0;
}

void context::report(const measurement& m) {
  row r;
  r.workload = workload_;
  r.operation = m.operation;
  r.variant = prefix_.empty() ? m.variant : (m.variant.empty() ? prefix_ : prefix_ + "/" + m.variant);
  r.ranks = shoal::size();
  r.value = m.value;
  r.unit = m.unit;
  r.baseline = m.baseline;
  r.baseline_value = m.baseline_value;
  r.ratio = ratio_of(m);
  rows_.push_back(std::move(r));
}

void context::progress(const std::string& what) const {
  if (!terminal_ || shoal::rank() != 0) return;
  fmt::print(stderr, "\r\033[K[{}] {}", workload_, what);
  std::fflush(stderr);
}

double median_timed(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) t.push_back(timed(fn));
  return median(std::move(t));
}

std::pair<double, double> fastest_timed_pair(int reps, const std::function<void()>& a, const std::function<void()>& b) {
  double ta = 0, tb = 0;
  for (int i = 0; i < reps; ++i) {
    const bool a_first = i % 2 == 0;
    const double first = timed(a_first ? a : b);
    const double second = timed(a_first ? b : a);
    const double ra = a_first ? first : second, rb = a_first ? second : first;
    ta = i == 0 ? ra : std::min(ta, ra);
    tb = i == 0 ? rb : std::min(tb, rb);
  }
  return {ta, tb};
}

void time_in_turns(int round, double& ta, double& tb, const std::function<void()>& a, const std::function<void()>& b) {
  const bool a_first = round % 2 == 0;
  const auto [first, second] = fastest_timed_pair(1, a_first ? a : b, a_first ? b : a);
  ta = std::min(ta, a_first ? first : second);
  tb = std::min(tb, a_first ? second : first);
}

}  // namespace shoal::bench
