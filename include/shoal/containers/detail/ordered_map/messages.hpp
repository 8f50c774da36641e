// shoal/containers/detail/ordered_map/messages.hpp — the messages of the skip-list service.
//
// Requests travel forward from node to node; replies go to the client that issued the operation; the rest are the
// control messages of linking, unlinking, splitting, allocation and channel hand-over (fences). Each message lists
// its fields once, in `fields(ar)`, which drives both directions of the byte format (wire.hpp): a field that only
// some messages carry is listed under the condition that says so, and the reader has read that condition by then.
#pragma once

#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "shoal/containers/key_box.hpp"
#include "shoal/containers/ordered_map_operation.hpp"

namespace shoal::detail::ordered_map {

/// Where a skip-list node lives: its rank, its slot in that rank's node table, and the slot's generation (a reused
/// slot gets a new generation, so a stale reference is detected instead of reaching the wrong node).
struct node_ref {
  std::int32_t rank = -1;
  std::uint32_t slot = 0;
  std::uint32_t gen = 0;
  bool valid() const { return rank >= 0; }
  friend bool operator==(const node_ref&, const node_ref&) = default;
};

template <class H>
H AbslHashValue(H h, const node_ref& r) {
  return H::combine(std::move(h), r.rank, r.slot, r.gen);
}

/// One level of a predecessor that waits for a min-key DELETE to finish (paper Figure 7).
struct waiter {
  node_ref node;
  std::int32_t level = 0;
  node_ref target;  // the node it waits for (its next node on that level, whose min key is the deleted key)
};

/// What a request does: a client's operation (the values of shoal::ordered_map_op), or the service's own SPLIT.
enum class op_kind : std::uint8_t { find, insert, erase, lower_bound, successor, range, split };

inline op_kind kind_of(ordered_map_op op) { return static_cast<op_kind>(op); }
static_assert(static_cast<int>(op_kind::find) == static_cast<int>(ordered_map_op::find) &&
              static_cast<int>(op_kind::insert) == static_cast<int>(ordered_map_op::insert) &&
              static_cast<int>(op_kind::erase) == static_cast<int>(ordered_map_op::erase) &&
              static_cast<int>(op_kind::lower_bound) == static_cast<int>(ordered_map_op::lower_bound) &&
              static_cast<int>(op_kind::successor) == static_cast<int>(ordered_map_op::successor) &&
              static_cast<int>(op_kind::range) == static_cast<int>(ordered_map_op::range));

inline bool reads_only(op_kind k) {
  return k == op_kind::find || k == op_kind::lower_bound || k == op_kind::successor || k == op_kind::range;
}

/// Operations that look past their key's node for the next key (answered with probes, see service_reads.hpp).
inline bool seeks_neighbour(op_kind k) { return k == op_kind::lower_bound || k == op_kind::successor; }

namespace flag {
inline constexpr std::uint16_t entry = 1;          // not yet started at its first node (validate, start at the top)
inline constexpr std::uint16_t via_shortcut = 2;   // entered at a shortcut, not at the head
inline constexpr std::uint16_t min_target = 4;     // an erase of the target node's min key (Figure 7b)
inline constexpr std::uint16_t hi_inclusive = 8;   // range part [key, hi] rather than [key, hi)
inline constexpr std::uint16_t synchronous = 16;   // the sender node waits until this request has arrived (k reached)
inline constexpr std::uint16_t node_removal = 32;  // internal erase that unlinks an emptied node, never a key
inline constexpr std::uint16_t split_check = 64;   // internal: the target node splits if it holds more than G
inline constexpr std::uint16_t unmark = 128;       // with split_check: the node's SPLIT went elsewhere; clear the mark
inline constexpr std::uint16_t probe = 256;        // lower_bound / successor: the first key of the target node
inline constexpr std::uint16_t with_probes = 512;  // lower_bound / successor: this pass probes (the first one does not)
inline constexpr std::uint16_t merge = 1024;       // with node_removal: an under-full node gives its keys to its
                                                   // level-0 predecessor and is unlinked
inline constexpr std::uint16_t capped = 2048;      // lower_bound / successor: answers only with a key below `hi`
inline constexpr std::uint16_t expect_min = 4096;  // with probe: the probed node answers only while its min key is
                                                   // still `expected_min` (none of its keys moved to a node before it)
}  // namespace flag

/// A request: one operation of one client, or one part of a range query.
template <class K, class V>
struct request {
  op_kind op = op_kind::find;
  std::uint16_t flags = 0;
  std::int32_t client = 0;
  std::uint64_t seq = 0;
  node_ref target;
  std::int32_t level = 0;
  std::int32_t entry_height = 0;
  std::uint64_t head_stamp = 0;
  K key{};
  K hi{};                      // range: end of the part; lower_bound / successor with flag::capped: the cap
  V value{};                   // insert
  key_box box;                 // range over dimensions
  node_ref new_node;           // split: the node being linked in
  node_ref marked;             // split: the node that asked for it
  std::int32_t new_height = 0;
  std::vector<waiter> waiters;  // erase: predecessors waiting for the min-key delete; split: relinked predecessors
  node_ref sender;              // flag::synchronous: the node to tell when this request has arrived
  std::uint8_t attempt = 0;     // lower_bound / successor: which pass of the operation (replies of older ones are late)
  std::uint16_t probes = 0;     // lower_bound / successor: probes sent so far
  node_ref probed;              // lower_bound / successor: the node probed last
  K expected_min{};             // lower_bound / successor probe with flag::expect_min: the probed node's min key

  bool has(std::uint16_t f) const { return (flags & f) != 0; }
  void set(std::uint16_t f, bool on = true) {
    flags = static_cast<std::uint16_t>(on ? (flags | f) : (flags & ~f));
  }

  template <class Ar>
  void fields(Ar& ar) {
    ar(op, flags, client, seq, target, level, entry_height, head_stamp, key);
    switch (op) {
      case op_kind::insert: ar(value); break;
      case op_kind::range: ar(hi, box); break;
      case op_kind::split: ar(new_node, marked, new_height); break;
      default: break;
    }
    if (op == op_kind::erase || op == op_kind::split) ar(waiters);
    if (has(flag::synchronous)) ar(sender);
    if (seeks_neighbour(op)) ar(attempt, probes, probed);
    if (seeks_neighbour(op) && has(flag::capped)) ar(hi);
    if (seeks_neighbour(op) && has(flag::expect_min)) ar(expected_min);
  }
};

/// How a node answers: a client-visible outcome (the values of shoal::ordered_map_status), or the service's own.
enum class status : std::uint8_t { ok, absent, duplicate, list_full, split_needed, retry };

static_assert(static_cast<int>(status::ok) == static_cast<int>(ordered_map_status::ok) &&
              static_cast<int>(status::absent) == static_cast<int>(ordered_map_status::absent) &&
              static_cast<int>(status::duplicate) == static_cast<int>(ordered_map_status::duplicate) &&
              static_cast<int>(status::list_full) == static_cast<int>(ordered_map_status::list_full));
/// A client-visible status (not split_needed or retry, which the client consumes).
inline ordered_map_status result_status(status s) { return static_cast<ordered_map_status>(s); }

/// The answer of one node to a client.
template <class K, class V>
struct reply {
  std::int32_t client = 0;
  std::uint64_t seq = 0;
  status st = status::ok;
  op_kind op = op_kind::find;
  std::uint64_t head_stamp = 0;
  K key{};  // lower_bound/successor: the key found; range: part start; split_needed: split key
  V value{};
  K hi{};   // range: part end
  bool hi_inclusive = false;
  std::vector<std::pair<K, V>> items;  // range: the part's key-values (written straight from the node's arrays)
  node_ref new_node;  // split_needed
  node_ref marked;
  std::int32_t new_height = 0;
  std::uint8_t attempt = 0;  // lower_bound / successor: the pass it answers
  std::int32_t probes = -1;  // lower_bound / successor: -1 from a probe, else the probes the search sent
  node_ref next;  // lower_bound / successor, retry: the next node of a key's node that holds nothing from the key up
  K next_min{};   // and its min key as that node knew it

  template <class Ar>
  void fields(Ar& ar) {
    ar(client, seq, st, op, head_stamp, key, value);
    if (op == op_kind::range) ar(hi, hi_inclusive, items);
    if (st == status::split_needed) ar(new_node, marked, new_height);
    if (seeks_neighbour(op)) ar(attempt, probes);
    if (seeks_neighbour(op) && st == status::retry) ar(next, next_min);
  }
};

/// A request that could not be served where it arrived (stale shortcut, entry too low): sent back whole to its client,
/// which re-issues it at the head.
template <class K, class V>
struct bounce {
  request<K, V> req;

  template <class Ar>
  void fields(Ar& ar) {
    ar(req);
  }
};

/// Ask a manager for a free node; forwarded around the ring of managers.
template <class K>
struct alloc_request {
  node_ref requester;
  std::int32_t start_rank = 0;
  std::int32_t hops = 0;
  std::int32_t height = 0;   // of the new node
  bool for_split_before = false;  // taller-tower split: the node waits for its links and data
  K min{};

  template <class Ar>
  void fields(Ar& ar) {
    ar(requester, start_rank, hops, height, for_split_before, min);
  }
};
struct alloc_reply {
  node_ref requester;
  node_ref granted;  // invalid: list full

  template <class Ar>
  void fields(Ar& ar) {
    ar(requester, granted);
  }
};

/// Full content of a node created by a split after an existing node (remote case).
template <class K, class V>
struct node_init {
  node_ref target;
  K min{};
  std::vector<node_ref> next;
  std::vector<K> next_min;
  std::vector<std::uint8_t> fenced;
  std::vector<K> keys;
  std::vector<V> values;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, min, next, next_min, fenced, keys, values);
  }
};

/// Set one level of a node's tower. Sent by a predecessor linking a new node (init), and by a node whose min-key
/// DELETE finished to each waiting predecessor (release).
template <class K>
struct set_link {
  node_ref target;
  std::int32_t level = 0;
  node_ref next;
  K next_min{};
  bool init = false;
  bool release = false;
  bool fenced = false;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, level, next, next_min);
    ar.bits(init, release, fenced);  // one byte
  }
};

/// A merge: the keys of an under-full node for its level-0 predecessor (which waits for the node's removal), sent
/// just before that predecessor's release.
template <class K, class V>
struct merge_data {
  node_ref target;
  std::vector<K> keys;
  std::vector<V> values;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, keys, values);
  }
};

/// Sent by each waiting predecessor to the node whose min key is deleted, after its last earlier request.
struct marker {
  node_ref target;
  std::int32_t client = 0;
  std::uint64_t seq = 0;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, client, seq);
  }
};

/// Split before a marked node: the level-0 predecessor hands its keys >= split key to the marked node, which adds
/// the lower half of its own and sends all to the new node.
template <class K, class V>
struct split_take {
  node_ref target;
  node_ref new_node;
  std::int32_t client = 0;  // the split's id and the number of relinked predecessors whose markers must come first
  std::uint64_t seq = 0;
  std::int32_t markers = 0;
  std::vector<K> keys;
  std::vector<V> values;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, new_node, client, seq, markers, keys, values);
  }
};
template <class K, class V>
struct split_data {
  node_ref target;
  node_ref giver;     // invalid: the marked node was gone
  K giver_min{};
  std::vector<K> keys;
  std::vector<V> values;

  template <class Ar>
  void fields(Ar& ar) {
    ar(target, giver, giver_min, keys, values);
  }
};

/// The arrival of a synchronous request (paper §1.2: the MPI_Ssend after k eager sends), back to the node that sent it.
struct arrived {
  node_ref sender;

  template <class Ar>
  void fields(Ar& ar) {
    ar(sender);
  }
};

/// Channel hand-over: `from` will send to `dest` instead of an old sender on another rank; the fence travels behind
/// the old sender's requests and the ack releases `from`'s held messages to `dest`.
struct fence {
  node_ref from;
  node_ref dest;

  template <class Ar>
  void fields(Ar& ar) {
    ar(from, dest);
  }
};
struct fence_ack {
  node_ref from;
  node_ref dest;

  template <class Ar>
  void fields(Ar& ar) {
    ar(from, dest);
  }
};

template <class K, class V>
using message = std::variant<request<K, V>, reply<K, V>, bounce<K, V>, alloc_request<K>, alloc_reply, node_init<K, V>,
                             set_link<K>, marker, split_take<K, V>, split_data<K, V>, fence, fence_ack, arrived,
                             merge_data<K, V>>;

}  // namespace shoal::detail::ordered_map
