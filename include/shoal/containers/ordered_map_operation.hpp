// shoal/containers/ordered_map_operation.hpp — the low-level interface of shoal::ordered_map: one operation as a
// value (ordered_map::async_operation), its raw result, and the counters of one rank's share of the map (stats()).
//
// The typed functions (find, insert, range, ...) are the usual way in; an operation value serves code that issues a
// mix of operations from data (tests replaying histories, benchmarks) and wants the raw status and the head's order
// stamp. Who may call: any rank, like the typed forms.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "shoal/containers/key_box.hpp"

namespace shoal {

/// What an ordered_map operation does.
enum class ordered_map_op : std::uint8_t { find, insert, erase, lower_bound, successor, range };

/// How an operation ended.
enum class ordered_map_status : std::uint8_t {
  ok,         ///< found / inserted / erased
  absent,     ///< find, erase, lower_bound, successor: no such key
  duplicate,  ///< insert: the key was present (its value is unchanged)
  list_full,  ///< insert: every rank's nodes are in use. ordered_map's futures raise shoal::container_full instead,
              ///< so a result obtained through ordered_map never holds it.
};

/// One operation. `key` is the key (range: the lowest key); `hi` the inclusive end of a range; `value` what an insert
/// stores; `box` restricts a range to the keys inside a multi-dimensional box (empty: every key in [key, hi]).
template <class K, class V>
struct ordered_map_operation {
  ordered_map_op op = ordered_map_op::find;
  K key{};
  K hi{};
  V value{};
  key_box box;
};

/// The raw result of an operation: its status; find: the value; lower_bound / successor: the key-value found; range:
/// the key-values in key order (the pairs ordered_map::range returns, moved out without a copy); and, for an operation that entered the list at the head, its position in
/// the head's order (total order: results equal a sequential replay in this order; 0 when it did not enter there).
template <class K, class V>
struct ordered_map_operation_result {
  ordered_map_status st = ordered_map_status::ok;
  std::optional<K> key;
  std::optional<V> value;
  std::vector<std::pair<K, V>> items;
  std::uint64_t head_stamp = 0;
};

/// Counters of one rank (ordered_map::stats(): for tests, benchmarks and the documentation's cost figures).
struct ordered_map_stats {
  std::uint64_t requests_handled = 0;
  std::uint64_t remote_messages = 0;
  std::uint64_t range_parts = 0;
  std::uint64_t shortcuts_taken = 0;
  std::uint64_t bounces = 0;
  std::uint64_t splits = 0;
  std::uint64_t fences = 0;
  std::uint64_t nodes_freed = 0;
  std::uint64_t nodes_merged = 0;          ///< under-full nodes whose keys went to their predecessor (then freed)
  std::uint64_t synchronous_forwards = 0;  ///< forwards that made their node wait for their arrival (k reached)
  std::uint64_t split_checks = 0;          ///< nodes above G without an insert (after a SPLIT), asked to split
  std::uint64_t reads_run_again = 0;       ///< sequential consistency: reads held beside the second pass of an
                                           ///< earlier lower_bound / successor that read one of their keys, run
                                           ///< again so as not to see it older than that pass did
  std::uint64_t sequenced = 0;             ///< total order, the head's rank: operations it put in order for their
                                           ///< ranks and entered into the list (at a shortcut where it could)
  std::uint64_t sequencer_waits = 0;       ///< of those, the ones that arrived while the sequencer's window was full
                                           ///< or an earlier operation kept them out, and waited in arrival order
};

}  // namespace shoal
