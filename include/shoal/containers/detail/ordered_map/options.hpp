// shoal/containers/detail/ordered_map/options.hpp — the settings of shoal::ordered_map.
#pragma once

#include <cstddef>
#include <cstdint>

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
};

}  // namespace shoal
