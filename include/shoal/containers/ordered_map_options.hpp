// shoal/containers/ordered_map_options.hpp — the settings of shoal::ordered_map: its consistency semantics and
// ordered_map_options (every field defaulted; validate() names the field and its accepted range, and the map's
// constructor calls it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "shoal/containers/detail/option_check.hpp"

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
    constexpr std::string_view o = "ordered_map_options::";
    auto field = [&](const char* name) { return std::string(o) + name; };
    detail::check_option(semantics == consistency::total_order || semantics == consistency::sequential ||
                             semantics == consistency::none,
                         field("semantics"), "total_order, sequential or none", semantics);
    detail::check_option(granularity >= 2, field("granularity"), "at least 2", granularity);
    detail::check_option(tower_p > 0 && tower_p < 1, field("tower_p"), "in (0, 1)", tower_p);
    detail::check_option(max_height >= 1 && max_height <= 64, field("max_height"), "in 1..64", max_height);
    detail::check_option(nodes_per_rank >= 1 && nodes_per_rank <= std::numeric_limits<std::uint32_t>::max(),
                         field("nodes_per_rank"), "in 1..4294967295", nodes_per_rank);
    detail::check_option(window_min >= 1, field("window_min"), "at least 1", window_min);
    detail::check_option(window_max >= window_min, field("window_max"),
                         "at least window_min = " + std::to_string(window_min), window_max);
    detail::check_option(window >= window_min && window <= window_max, field("window"),
                         "in [window_min, window_max] = [" + std::to_string(window_min) + ", " +
                             std::to_string(window_max) + "]",
                         window);
  }
};

}  // namespace shoal
