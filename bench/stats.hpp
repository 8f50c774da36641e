// bench/stats.hpp — the statistics every workload uses: median, percentile, mean, and the element of median key.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace shoal::bench {

/// The q-quantile of `values` (0 <= q <= 1) by nearest rank on the sorted values: q = 0.5 is the median (the upper
/// middle one for an even count), q = 1 the maximum. Throws on an empty sample.
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("shoal-bench: a percentile of no values");
  const auto i = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values.end());
  return values[i];
}

/// The median of `values` (the upper middle one for an even count).
inline double median(std::vector<double> values) { return percentile(std::move(values), 0.5); }

/// The arithmetic mean (0 for no values).
inline double mean(const std::vector<double>& values) {
  return values.empty() ? 0 : std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

/// The element of `items` whose key(item) is the median key (e.g. the run with the median time, kept whole).
template <class T, class Key>
T median_by(std::vector<T> items, Key key) {
  if (items.empty()) throw std::invalid_argument("shoal-bench: a median of no runs");
  const auto mid = items.begin() + static_cast<std::ptrdiff_t>(items.size() / 2);
  std::nth_element(items.begin(), mid, items.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
  return *mid;
}

}  // namespace shoal::bench
