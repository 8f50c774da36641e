// shoal/containers/ordered_map_options.hpp — the settings of shoal::ordered_map: its consistency semantics and
// ordered_map_options (every field defaulted; validate() names the field and its accepted range, and the map's
// constructor calls it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "shoal/core/error.hpp"

namespace shoal {

/// The consistency semantics of an ordered_map's operations (paper §1.3).
enum class consistency {
  /// Every request enters at the head: operations take effect in the order the head receives them (linearisable).
  total_order,
  /// A client enters at shortcuts only where none of its earlier outstanding operations can be overtaken, and its
  /// replies come back in issue order (hold-back queue).
  sequential,
  /// Shortcuts everywhere, for clients and for nodes (reads jump ahead): no order between operations.
  none,
};

struct ordered_map_options {
  consistency semantics = consistency::sequential;
  /// G: the most key-values a node holds before it splits. Larger G means fewer nodes and hops per operation and
  /// fewer range parts; 512 measured fastest here at 10^6 keys (finds ~1.3x, ranges ~1.5x over G = 128; 1024 alike).
  std::size_t granularity = 512;
  /// Tower heights: level i+1 with probability tower_p given level i, at most max_height levels.
  double tower_p = 0.25;
  int max_height = 12;
  /// Nodes each rank can hold; a list that needs more is full (shoal::container_full).
  std::size_t nodes_per_rank = std::size_t{1} << 16;
  /// New nodes go to the ranks in turn (true) or to the splitting node's rank first (false); either way a rank with
  /// no free node passes the request to the next rank in the ring.
  bool spread_nodes = true;
  /// W: the most operations one rank may have outstanding; adapted between window_min and window_max when
  /// adaptive_window is set (paper §3: each client measures its reply rate and adjusts W).
  std::size_t window = 64;
  std::size_t window_min = 4;
  std::size_t window_max = 1024;
  bool adaptive_window = true;
  /// k, the degree of asynchrony (paper §1.2 and §3): requests a node forwards to nodes of other ranks before one
  /// must be synchronous — the node then holds new requests until that one has arrived (the paper's MPI_Ssend after
  /// k eager sends). Small k throttles the flow through the list; 0 makes every forward synchronous.
  std::size_t asynchrony = 256;
  /// Messages a rank writes into its active-message buffers before it pushes them out (the rest leave at the next
  /// progress call); 0 pushes every message out at once.
  std::size_t batch = 64;
  /// Seed of the tower heights (each rank adds its rank).
  std::uint64_t seed = 0x5157a11;

  /// Throws shoal::usage_error naming the first field out of its range: semantics one of the three, granularity >= 2,
  /// tower_p in (0, 1), max_height in 1..64, nodes_per_rank in 1..2^32, 1 <= window_min <= window <= window_max.
  void validate() const {
    auto fail = [](const char* field, const std::string& range, const std::string& got) {
      throw usage_error(std::string("shoal::ordered_map_options::") + field + " must be " + range + " (got " + got +
                        ")");
    };
    if (semantics != consistency::total_order && semantics != consistency::sequential && semantics != consistency::none)
      fail("semantics", "total_order, sequential or none", std::to_string(static_cast<int>(semantics)));
    if (granularity < 2) fail("granularity", "at least 2", std::to_string(granularity));
    if (!(tower_p > 0 && tower_p < 1)) fail("tower_p", "in (0, 1)", std::to_string(tower_p));
    if (max_height < 1 || max_height > 64) fail("max_height", "in 1..64", std::to_string(max_height));
    if (nodes_per_rank < 1 || nodes_per_rank > std::numeric_limits<std::uint32_t>::max())
      fail("nodes_per_rank", "in 1..4294967295", std::to_string(nodes_per_rank));
    if (window_min < 1) fail("window_min", "at least 1", std::to_string(window_min));
    if (window_max < window_min)
      fail("window_max", "at least window_min = " + std::to_string(window_min), std::to_string(window_max));
    if (window < window_min || window > window_max) {
      fail("window", "in [window_min, window_max] = [" + std::to_string(window_min) + ", " + std::to_string(window_max) +
                         "]", std::to_string(window));
    }
  }
};

}  // namespace shoal
