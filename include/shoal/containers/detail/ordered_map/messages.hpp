// shoal/containers/detail/ordered_map/messages.hpp — the messages of the skip-list service and their byte format.
//
// Requests travel forward from node to node; replies go to the client that issued the operation; the rest are the
// control messages of linking, unlinking, splitting, allocation and channel hand-over (fences). Every message is one
// tag byte followed by its fields, written with shoal's byte_writer (keys and values by shoal::serializable rules).
#pragma once

#include <cstdint>
#include <variant>
#include <vector>

#include "shoal/containers/detail/ordered_map/key_range.hpp"
#include "shoal/core/serialize.hpp"

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

enum class op_kind : std::uint8_t { find, insert, erase, lower_bound, successor, range, split };

inline bool reads_only(op_kind k) {
  return k == op_kind::find || k == op_kind::lower_bound || k == op_kind::successor || k == op_kind::range;
}

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
  K hi{};                      // range: end of the part
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

  bool has(std::uint16_t f) const { return (flags & f) != 0; }
  void set(std::uint16_t f, bool on = true) {
    flags = static_cast<std::uint16_t>(on ? (flags | f) : (flags & ~f));
  }
};

enum class status : std::uint8_t { ok, absent, duplicate, list_full, split_needed, retry };

/// Operations that look past their key's node for the next key (answered with probes, see service.hpp).
inline bool seeks_neighbour(op_kind k) { return k == op_kind::lower_bound || k == op_kind::successor; }

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
  std::vector<K> keys;
  std::vector<V> values;
  node_ref new_node;  // split_needed
  node_ref marked;
  std::int32_t new_height = 0;
  std::uint8_t attempt = 0;  // lower_bound / successor: the pass it answers
  std::int32_t probes = -1;  // lower_bound / successor: -1 from a probe, else the probes the search sent
};

/// A request that could not be served where it arrived (stale shortcut, entry too low): sent back whole to its client,
/// which re-issues it at the head.
template <class K, class V>
struct bounce {
  request<K, V> req;
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
};
struct alloc_reply {
  node_ref requester;
  node_ref granted;  // invalid: list full
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
};

/// Sent by each waiting predecessor to the node whose min key is deleted, after its last earlier request.
struct marker {
  node_ref target;
  std::int32_t client = 0;
  std::uint64_t seq = 0;
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
};
template <class K, class V>
struct split_data {
  node_ref target;
  node_ref giver;     // invalid: the marked node was gone
  K giver_min{};
  std::vector<K> keys;
  std::vector<V> values;
};

/// The arrival of a synchronous request (paper §1.2: the MPI_Ssend after k eager sends), back to the node that sent it.
struct arrived {
  node_ref sender;
};

/// Channel hand-over: `from` will send to `dest` instead of an old sender on another rank; the fence travels behind
/// the old sender's requests and the ack releases `from`'s held messages to `dest`.
struct fence {
  node_ref from;
  node_ref dest;
};
struct fence_ack {
  node_ref from;
  node_ref dest;
};

template <class K, class V>
using message = std::variant<request<K, V>, reply<K, V>, bounce<K, V>, alloc_request<K>, alloc_reply, node_init<K, V>,
                             set_link<K>, marker, split_take<K, V>, split_data<K, V>, fence, fence_ack, arrived>;

// ---- byte format ---------------------------------------------------------------------------------------------------

template <class K, class V>
class codec {
 public:
  static std::vector<std::byte> encode(const message<K, V>& m) {
    std::vector<std::byte> out;
    out.reserve(64);
    byte_writer w(out);
    w.write(static_cast<std::uint8_t>(m.index()));
    std::visit([&](const auto& x) { put(w, x); }, m);
    return out;
  }

  static message<K, V> decode(std::span<const std::byte> bytes) {
    byte_reader r(bytes);
    const auto tag = r.read<std::uint8_t>();
    return decode_as(r, tag, std::make_index_sequence<std::variant_size_v<message<K, V>>>{});
  }

 private:
  template <std::size_t... I>
  static message<K, V> decode_as(byte_reader& r, std::uint8_t tag, std::index_sequence<I...>) {
    message<K, V> out;
    const bool found = ((tag == I ? (out = take<std::variant_alternative_t<I, message<K, V>>>(r), true) : false) || ...);
    if (!found) throw error("shoal::ordered_map: unknown message tag " + std::to_string(tag));
    return out;
  }

  template <class T>
  static T take(byte_reader& r) {
    T x{};
    get(r, x);
    return x;
  }

  static void put(byte_writer& w, const key_box& b) {
    std::vector<dimension_range> d = b.ranges();
    w.write(d);
  }
  static void get(byte_reader& r, key_box& b) {
    auto d = r.read<std::vector<dimension_range>>();
    b = d.empty() ? key_box() : key_box(std::move(d));
  }

  static void put(byte_writer& w, const request<K, V>& q) {
    w.write(q.op);
    w.write(q.flags);
    w.write(q.client);
    w.write(q.seq);
    w.write(q.target);
    w.write(q.level);
    w.write(q.entry_height);
    w.write(q.head_stamp);
    w.write(q.key);
    switch (q.op) {
      case op_kind::insert: w.write(q.value); break;
      case op_kind::range:
        w.write(q.hi);
        put(w, q.box);
        break;
      case op_kind::split:
        w.write(q.new_node);
        w.write(q.marked);
        w.write(q.new_height);
        break;
      default: break;
    }
    if (q.op == op_kind::erase || q.op == op_kind::split) w.write(q.waiters);
    if (q.has(flag::synchronous)) w.write(q.sender);
    if (seeks_neighbour(q.op)) {
      w.write(q.attempt);
      w.write(q.probes);
      w.write(q.probed);
    }
  }
  static void get(byte_reader& r, request<K, V>& q) {
    q.op = r.read<op_kind>();
    q.flags = r.read<std::uint16_t>();
    q.client = r.read<std::int32_t>();
    q.seq = r.read<std::uint64_t>();
    q.target = r.read<node_ref>();
    q.level = r.read<std::int32_t>();
    q.entry_height = r.read<std::int32_t>();
    q.head_stamp = r.read<std::uint64_t>();
    q.key = r.read<K>();
    switch (q.op) {
      case op_kind::insert: q.value = r.read<V>(); break;
      case op_kind::range:
        q.hi = r.read<K>();
        get(r, q.box);
        break;
      case op_kind::split:
        q.new_node = r.read<node_ref>();
        q.marked = r.read<node_ref>();
        q.new_height = r.read<std::int32_t>();
        break;
      default: break;
    }
    if (q.op == op_kind::erase || q.op == op_kind::split) q.waiters = r.read<std::vector<waiter>>();
    if (q.has(flag::synchronous)) q.sender = r.read<node_ref>();
    if (seeks_neighbour(q.op)) {
      q.attempt = r.read<std::uint8_t>();
      q.probes = r.read<std::uint16_t>();
      q.probed = r.read<node_ref>();
    }
  }

  static void put(byte_writer& w, const reply<K, V>& p) {
    w.write(p.client);
    w.write(p.seq);
    w.write(p.st);
    w.write(p.op);
    w.write(p.head_stamp);
    w.write(p.key);
    w.write(p.value);
    if (p.op == op_kind::range) {
      w.write(p.hi);
      w.write(p.hi_inclusive);
      w.write(p.keys);
      w.write(p.values);
    }
    if (p.st == status::split_needed) {
      w.write(p.new_node);
      w.write(p.marked);
      w.write(p.new_height);
    }
    if (seeks_neighbour(p.op)) {
      w.write(p.attempt);
      w.write(p.probes);
    }
  }
  static void get(byte_reader& r, reply<K, V>& p) {
    p.client = r.read<std::int32_t>();
    p.seq = r.read<std::uint64_t>();
    p.st = r.read<status>();
    p.op = r.read<op_kind>();
    p.head_stamp = r.read<std::uint64_t>();
    p.key = r.read<K>();
    p.value = r.read<V>();
    if (p.op == op_kind::range) {
      p.hi = r.read<K>();
      p.hi_inclusive = r.read<bool>();
      p.keys = r.read<std::vector<K>>();
      p.values = r.read<std::vector<V>>();
    }
    if (p.st == status::split_needed) {
      p.new_node = r.read<node_ref>();
      p.marked = r.read<node_ref>();
      p.new_height = r.read<std::int32_t>();
    }
    if (seeks_neighbour(p.op)) {
      p.attempt = r.read<std::uint8_t>();
      p.probes = r.read<std::int32_t>();
    }
  }

  static void put(byte_writer& w, const bounce<K, V>& b) { put(w, b.req); }
  static void get(byte_reader& r, bounce<K, V>& b) { get(r, b.req); }

  static void put(byte_writer& w, const alloc_request<K>& a) {
    w.write(a.requester);
    w.write(a.start_rank);
    w.write(a.hops);
    w.write(a.height);
    w.write(a.for_split_before);
    w.write(a.min);
  }
  static void get(byte_reader& r, alloc_request<K>& a) {
    a.requester = r.read<node_ref>();
    a.start_rank = r.read<std::int32_t>();
    a.hops = r.read<std::int32_t>();
    a.height = r.read<std::int32_t>();
    a.for_split_before = r.read<bool>();
    a.min = r.read<K>();
  }

  static void put(byte_writer& w, const alloc_reply& a) {
    w.write(a.requester);
    w.write(a.granted);
  }
  static void get(byte_reader& r, alloc_reply& a) {
    a.requester = r.read<node_ref>();
    a.granted = r.read<node_ref>();
  }

  static void put(byte_writer& w, const node_init<K, V>& n) {
    w.write(n.target);
    w.write(n.min);
    w.write(n.next);
    w.write(n.next_min);
    w.write(n.fenced);
    w.write(n.keys);
    w.write(n.values);
  }
  static void get(byte_reader& r, node_init<K, V>& n) {
    n.target = r.read<node_ref>();
    n.min = r.read<K>();
    n.next = r.read<std::vector<node_ref>>();
    n.next_min = r.read<std::vector<K>>();
    n.fenced = r.read<std::vector<std::uint8_t>>();
    n.keys = r.read<std::vector<K>>();
    n.values = r.read<std::vector<V>>();
  }

  static void put(byte_writer& w, const set_link<K>& s) {
    w.write(s.target);
    w.write(s.level);
    w.write(s.next);
    w.write(s.next_min);
    w.write(static_cast<std::uint8_t>((s.init ? 1 : 0) | (s.release ? 2 : 0) | (s.fenced ? 4 : 0)));
  }
  static void get(byte_reader& r, set_link<K>& s) {
    s.target = r.read<node_ref>();
    s.level = r.read<std::int32_t>();
    s.next = r.read<node_ref>();
    s.next_min = r.read<K>();
    const auto f = r.read<std::uint8_t>();
    s.init = f & 1;
    s.release = f & 2;
    s.fenced = f & 4;
  }

  static void put(byte_writer& w, const marker& m) {
    w.write(m.target);
    w.write(m.client);
    w.write(m.seq);
  }
  static void get(byte_reader& r, marker& m) {
    m.target = r.read<node_ref>();
    m.client = r.read<std::int32_t>();
    m.seq = r.read<std::uint64_t>();
  }

  static void put(byte_writer& w, const split_take<K, V>& s) {
    w.write(s.target);
    w.write(s.new_node);
    w.write(s.client);
    w.write(s.seq);
    w.write(s.markers);
    w.write(s.keys);
    w.write(s.values);
  }
  static void get(byte_reader& r, split_take<K, V>& s) {
    s.target = r.read<node_ref>();
    s.new_node = r.read<node_ref>();
    s.client = r.read<std::int32_t>();
    s.seq = r.read<std::uint64_t>();
    s.markers = r.read<std::int32_t>();
    s.keys = r.read<std::vector<K>>();
    s.values = r.read<std::vector<V>>();
  }

  static void put(byte_writer& w, const split_data<K, V>& s) {
    w.write(s.target);
    w.write(s.giver);
    w.write(s.giver_min);
    w.write(s.keys);
    w.write(s.values);
  }
  static void get(byte_reader& r, split_data<K, V>& s) {
    s.target = r.read<node_ref>();
    s.giver = r.read<node_ref>();
    s.giver_min = r.read<K>();
    s.keys = r.read<std::vector<K>>();
    s.values = r.read<std::vector<V>>();
  }

  static void put(byte_writer& w, const fence& f) {
    w.write(f.from);
    w.write(f.dest);
  }
  static void get(byte_reader& r, fence& f) {
    f.from = r.read<node_ref>();
    f.dest = r.read<node_ref>();
  }
  static void put(byte_writer& w, const fence_ack& f) {
    w.write(f.from);
    w.write(f.dest);
  }
  static void get(byte_reader& r, fence_ack& f) {
    f.from = r.read<node_ref>();
    f.dest = r.read<node_ref>();
  }
  static void put(byte_writer& w, const arrived& a) { w.write(a.sender); }
  static void get(byte_reader& r, arrived& a) { a.sender = r.read<node_ref>(); }
};

}  // namespace shoal::detail::ordered_map
