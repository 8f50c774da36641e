// shoal/containers/dist_map_options.hpp — the settings of shoal::dist_map and shoal::dist_multimap (one struct for
// both: they share one engine). Every field is defaulted; the container's constructor validates them (validate(),
// plus the key-type check of key_placement::cyclic) and names the field and its accepted range on a usage_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shoal/containers/detail/option_check.hpp"

namespace shoal {

/// How keys are spread over the owners.
enum class key_placement {
  hashed,  ///< XXH3 of the key, modulo the number of owners (any key type)
  cyclic,  ///< key modulo the number of owners (integral keys; CSE_Hash's k % p, row-cyclic matrix scatter)
};

/// Settings of dist_map and dist_multimap (all ranks of the team must pass the same).
struct dist_map_options {
  /// Entries (key-value pairs) each owner may hold; 0 = unlimited. Inserts that do not fit are reported, never
  /// dropped silently: a batch returns how many went in, a single insert fails with container_full.
  std::size_t capacity_per_rank = 0;
  /// CSE_Hash's blocking factor L: requests a rank may have outstanding before it waits; 0 = unlimited.
  std::size_t blocking_factor = 0;
  /// Empty: co-located layout (every rank owns a shard). Otherwise the service layout: these team ranks own the data
  /// and run serve(); every other rank is a client and ends with close().
  std::vector<int> servers;
  key_placement placement = key_placement::hashed;
  /// Seed of the hash that picks the owner.
  std::uint64_t seed = 0x73686f616c646d70ull;

  /// Throws shoal::usage_error naming the first field out of its range, for a team of `team_size` ranks: servers
  /// distinct team ranks in 0..team_size-1; placement hashed or cyclic. (Whether cyclic suits the key type is
  /// checked by the container, which knows it.)
  void validate(int team_size) const {
    std::vector<char> seen(static_cast<std::size_t>(team_size), 0);
    for (int s : servers) {
      const bool in_team = s >= 0 && s < team_size;
      detail::check_option(in_team && !seen[static_cast<std::size_t>(s)], "dist_map_options::servers",
                           "distinct team ranks in 0.." + std::to_string(team_size - 1),
                           "rank " + std::to_string(s) + (in_team ? " twice" : ""));
      seen[static_cast<std::size_t>(s)] = 1;
    }
    detail::check_option(placement == key_placement::hashed || placement == key_placement::cyclic,
                         "dist_map_options::placement", "key_placement::hashed or key_placement::cyclic", placement);
  }
};

}  // namespace shoal
