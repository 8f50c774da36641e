// shoal/containers/dist_map_results.hpp — what users name besides the options when they call dist_map and
// dist_multimap: the counts a batch insert returns.
#pragma once

#include <cstddef>

namespace shoal {

/// Outcome of a batch insert: how many entries went in, how many keys were already present (dist_map only), and
/// how many did not fit under capacity_per_rank.
struct batch_insert_result {
  std::size_t inserted = 0;
  std::size_t existing = 0;
  std::size_t rejected = 0;
  batch_insert_result& operator+=(const batch_insert_result& o) {
    inserted += o.inserted;
    existing += o.existing;
    rejected += o.rejected;
    return *this;
  }
  friend bool operator==(const batch_insert_result&, const batch_insert_result&) = default;
};

}  // namespace shoal
