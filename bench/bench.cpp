#include "bench.hpp"

#include <fmt/core.h>

#include <algorithm>

namespace shoal::bench {

std::vector<workload>& registry() {
  static std::vector<workload> all;
  return all;
}

void context::report(const std::string& operation, const std::string& variant, double value, const std::string& unit,
                     const std::string& baseline, double baseline_value, better b) {
  row r;
  r.workload = workload_;
  r.operation = operation;
  r.variant = prefix_.empty() ? variant : (variant.empty() ? prefix_ : prefix_ + "/" + variant);
  r.ranks = shoal::size();
  r.value = value;
  r.unit = unit;
  r.baseline = baseline;
  r.baseline_value = baseline_value;
  if (value > 0 && baseline_value > 0) r.ratio = b == better::higher ? value / baseline_value : baseline_value / value;
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
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace shoal::bench
