// shoal/containers/detail/ordered_map/service.hpp — one rank's share of the skip-list service: its nodes (active
// objects handling requests one at a time), its node manager, its bulletin board of shortcuts, and its client (the
// application side: window, sequence numbers, hold-back queue, range reassembly).
//
// The service only sees bytes: `deliver` takes a message from the network, and the transport sends messages to other
// ranks. A message to a node of this rank is handled right away, after the handler that sent it, through a local FIFO
// (so one incoming message and everything it causes on this rank run as one atomic step). Messages from one rank to
// another must be handled in send order; the service needs nothing else from the network.
//
// Order (paper §2.4): requests only move forward and each node handles one at a time, so requests cannot overtake
// one another on a path — provided the channel into a node stays FIFO when its sender changes. Two mechanisms keep it:
//   fence   when a node takes over the sending to a successor from a node on another rank (link, unlink), the old
//           sender sends a fence behind its last request; the successor's rank acknowledges it to the new sender,
//           which holds its messages to that successor until then;
//   marker  a predecessor that starts waiting for a min-key DELETE sends a marker to the target; the target finishes
//           the delete only once every waiting predecessor's marker has arrived (their earlier requests came first).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "shoal/containers/detail/ordered_map/bulletin_board.hpp"
#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/detail/ordered_map/node.hpp"
#include "shoal/containers/detail/ordered_map/node_manager.hpp"
#include "shoal/containers/detail/ordered_map/options.hpp"

namespace shoal::detail::ordered_map {

/// How the service reaches other ranks.
struct transport {
  int rank = 0;
  int ranks = 1;
  std::function<void(int, std::vector<std::byte>&&)> send;
  std::function<void()> flush;  // push buffered messages out (may be empty)
};

/// What an operation returns to its client.
template <class K, class V>
struct op_result {
  status st = status::ok;
  std::optional<K> key;
  std::optional<V> value;
  std::vector<K> keys;  // range
  std::vector<V> values;
  std::uint64_t head_stamp = 0;  // position in the head's order (total order; 0 when not entered at the head)
};

/// An operation as a client issues it.
template <class K, class V>
struct op_spec {
  op_kind op = op_kind::find;
  K key{};
  K hi{};  // range: inclusive end
  V value{};
  key_box box;
};

/// Counters of one rank (for tests, benchmarks and the documentation's cost figures).
struct service_stats {
  std::uint64_t requests_handled = 0;
  std::uint64_t remote_messages = 0;
  std::uint64_t range_parts = 0;
  std::uint64_t shortcuts_taken = 0;
  std::uint64_t bounces = 0;
  std::uint64_t splits = 0;
  std::uint64_t fences = 0;
  std::uint64_t nodes_freed = 0;
  std::uint64_t synchronous_forwards = 0;  // forwards that made their node wait for their arrival (k reached)
  std::uint64_t split_checks = 0;          // nodes above G without an insert (after a SPLIT), asked to split
};

template <class K, class V>
class service {
 public:
  using node_type = node<K, V>;
  using request_type = request<K, V>;
  using message_type = message<K, V>;
  using reply_type = reply<K, V>;
  using result_type = op_result<K, V>;
  using completion = std::function<void(result_type&&)>;
  using codec_type = codec<K, V>;

  static constexpr node_ref head_ref{0, 0, 0};

  service(const ordered_map_options& opts, transport net)
      : opt_(opts), net_(std::move(net)), me_(net_.rank), np_(net_.ranks),
        manager_(net_.rank, opts.nodes_per_rank),
        heights_(opts.tower_p, opts.max_height, opts.seed + static_cast<std::uint64_t>(net_.rank) * 0x9e3779b97f4a7c15ULL),
        spread_next_(net_.rank), window_(std::clamp(opts.window, opts.window_min, opts.window_max)) {
    if (me_ == 0) {
      const node_ref h = manager_.acquire();
      auto& head = *manager_.get(h);
      head.is_head = true;
      head.tower.resize(static_cast<std::size_t>(opt_.max_height));
    }
  }

  // ---- network side ------------------------------------------------------------------------------------------

  /// A message from another rank.
  void deliver(std::span<const std::byte> bytes) {
    local_.push_back(codec_type::decode(bytes));
    pump();
  }

  // ---- client side -------------------------------------------------------------------------------------------

  /// Issues an operation unless the window is full or (sequential consistency) it would have to wait for an earlier
  /// operation of this client; `done` runs once with the result (in issue order under sequential consistency).
  bool try_issue(const op_spec<K, V>& spec, completion done) {
    if (ops_.size() >= window_) return false;
    const bool strict = spec.op == op_kind::erase;
    // The keys an operation may touch: [key, hi] for a range, [key, +inf) for lower_bound / successor, else key.
    const K& region_hi = spec.op == op_kind::range ? spec.hi : spec.key;
    const bool unbounded = seeks_neighbour(spec.op);
    std::optional<typename bulletin_board<K>::shortcut> sc;
    if (opt_.semantics != consistency::total_order) sc = board_.lookup(spec.key, strict);
    bool via_head = !sc.has_value();
    if (opt_.semantics == consistency::sequential) {
      const bool shortcut_ok = sc && !conflicts(false, sc->min, region_hi, unbounded);
      if (!shortcut_ok) {
        if (conflicts(true, spec.key, region_hi, unbounded)) return false;
        via_head = true;
      }
    }
    const std::uint64_t seq = next_seq_++;
    auto& o = ops_[seq];
    o.op = spec.op;
    o.key = spec.key;
    o.done = std::move(done);
    open_.push_back({seq, via_head ? K{} : sc->min, region_hi, via_head, unbounded});
    if (spec.op == op_kind::range) o.cursor = spec.key;

    request_type r;
    r.op = spec.op;
    r.client = me_;
    r.seq = seq;
    r.key = spec.key;
    r.hi = spec.hi;
    r.value = spec.value;
    r.box = spec.box;
    if (spec.op == op_kind::range) r.set(flag::hi_inclusive);
    enter(std::move(r), via_head ? head_ref : sc->node);
    return true;
  }

  /// Changes the semantics of this rank's client and nodes (every rank must change it, between quiescent points).
  void set_semantics(consistency c) { opt_.semantics = c; }
  /// Changes k for this rank's nodes (every rank must change it, between quiescent points).
  void set_asynchrony(std::size_t k) { opt_.asynchrony = k; }

  /// Operations issued by this rank and not yet delivered.
  std::size_t outstanding() const { return ops_.size(); }
  std::size_t window() const { return window_; }

  /// Pushes buffered messages out.
  void flush() {
    if (net_.flush) net_.flush();
    unflushed_ = 0;
  }

  // ---- inspection (local) ----------------------------------------------------------------------------------------

  std::size_t local_keys() const {
    std::size_t n = 0;
    for (auto& s : manager_.slots())
      if (s.in_use) n += s.keys.size();
    return n;
  }
  std::size_t local_nodes() const { return manager_.in_use(); }
  const service_stats& stats() const { return stats_; }

  /// Every key-value held on this rank, with the node min keys (for invariant checks).
  template <class F>
  void for_each_local_node(F&& f) const {
    for (auto& s : manager_.slots())
      if (s.in_use) f(s);
  }

  /// Posts a shortcut by hand (tests: a stale shortcut must fail over to the head).
  void post_shortcut(const K& min, node_ref node, int height) { board_.post(min, node, height); }
  std::optional<typename bulletin_board<K>::shortcut> shortcut_for(const K& key) const {
    return board_.lookup(key, false);
  }

 private:
  struct client_op {
    op_kind op = op_kind::find;
    K key{};
    bool completed = false;
    completion done;
    result_type result;
    // range reassembly: parts by start key, and the start of the first part not yet received
    struct part {
      K hi;
      bool inclusive = false;
      std::vector<K> keys;
      std::vector<V> values;
    };
    std::map<K, part> parts;
    K cursor{};
    // lower_bound / successor: the current pass, its probes (expected once the search has answered) and the best
    // probe answer so far
    std::uint8_t attempt = 0;
    int probes_expected = -1;
    int probes_received = 0;
    bool probe_failed = false;
  };

  /// The keys an operation still on its way may visit (sequential consistency): from its entry (the head, or a
  /// shortcut's min key) to its largest key (none: unbounded). A flat list, scanned on every issue.
  struct open_region {
    std::uint64_t seq = 0;
    K entry_min{};
    K hi{};
    bool via_head = true;
    bool unbounded = false;  // lower_bound / successor: the keys above hi too
  };

  /// The outgoing messages of one node while it waits for fences. One FIFO for all its successors: a message held
  /// for one successor must also hold back the node's later messages to other successors, since a later request
  /// can reach the first successor through another (a lower_bound / successor continuing on level 0).
  struct sender_outbox {
    absl::flat_hash_map<node_ref, int> pending;  // per successor: fence acks still expected (negative: acks that
                                                 // came before the hand-over was known)
    std::deque<std::pair<node_ref, message_type>> queue;
    bool holds(const node_ref& dest) const {
      auto it = pending.find(dest);
      return it != pending.end() && it->second > 0;
    }
  };

  static double clock_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

  // ---- sending ---------------------------------------------------------------------------------------------------

  void post(int rank, message_type&& m) {
    if (rank == me_) {
      local_.push_back(std::move(m));
      return;
    }
    ++stats_.remote_messages;
    net_.send(rank, codec_type::encode(m));
    if (++unflushed_ > opt_.batch) flush();
  }

  /// A message from node `from` to node `dest`: held while `from` waits for a fence on that channel, or while it
  /// holds earlier messages to any node.
  void send_from(const node_ref& from, const node_ref& dest, message_type&& m) {
    auto it = outbox_.find(from);
    if (it != outbox_.end() && (!it->second.queue.empty() || it->second.holds(dest))) {
      it->second.queue.emplace_back(dest, std::move(m));
      return;
    }
    post(dest.rank, std::move(m));
  }

  void expect_fence(const node_ref& from, const node_ref& dest) { adjust_fence(from, dest, +1); }

  void adjust_fence(const node_ref& from, const node_ref& dest, int delta) {
    auto& box = outbox_[from];
    if ((box.pending[dest] += delta) == 0) box.pending.erase(dest);
    // Release in send order, up to the first message whose successor still waits for a fence.
    while (!box.queue.empty() && !box.holds(box.queue.front().first)) {
      auto [to, m] = std::move(box.queue.front());
      box.queue.pop_front();
      post(to.rank, std::move(m));
    }
    if (box.queue.empty() && box.pending.empty()) outbox_.erase(from);
  }

  /// A fence is needed when the new sender is on another rank than the old one and the old one's requests to `dest`
  /// may still be on the way (it is not on dest's rank, where they were handled at once) — or when the old sender
  /// still holds messages or waits for a fence to `dest` itself (what it waits for — requests of the sender before
  /// it, or the node_init that creates `dest` — must not be overtaken either: the new sender inherits the wait).
  bool needs_fence(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) const {
    if (!dest.valid()) return false;
    if (old_sender.rank != new_sender.rank && old_sender.rank != dest.rank) return true;
    auto it = outbox_.find(old_sender);
    return it != outbox_.end() && (!it->second.queue.empty() || it->second.holds(dest));
  }

  void hand_over(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) {
    ++stats_.fences;
    send_from(old_sender, dest, fence{new_sender, dest});
  }

  void pump() {
    if (pumping_) return;
    pumping_ = true;
    while (!local_.empty()) {
      auto m = std::move(local_.front());
      local_.pop_front();
      std::visit([&](auto& x) { handle(x); }, m);
    }
    pumping_ = false;
  }

  // ---- requests at nodes -----------------------------------------------------------------------------------------

  void enter(request_type&& r, const node_ref& entry) {
    r.target = entry;
    r.set(flag::entry);
    r.set(flag::via_shortcut, !(entry == head_ref));
    if (!(entry == head_ref)) ++stats_.shortcuts_taken;
    r.waiters.clear();
    post(entry.rank, std::move(r));
    pump();
  }

  void handle(request_type& r) {
    if (r.has(flag::synchronous)) {
      r.set(flag::synchronous, false);
      post(r.sender.rank, arrived{r.sender});
    }
    node_type* x = manager_.get(r.target);
    if (x == nullptr) return send_back(std::move(r));
    if (x->held_back()) {
      x->held.push_back(std::move(r));
      return;
    }
    run(*x, r);
  }

  void drain(const node_ref& ref) {
    for (;;) {
      node_type* x = manager_.get(ref);
      if (x == nullptr || x->held_back()) return;
      if (x->held.empty()) return settle(*x);
      auto r = std::move(x->held.front());
      x->held.pop_front();
      run(*x, r);
    }
  }

  /// True when `x` may serve as the first node of `r` (a shortcut names a node that may have changed since).
  bool valid_entry(const node_type& x, const request_type& r) const {
    if (x.is_head) return true;
    if (r.op == op_kind::erase || r.op == op_kind::split) {
      if (!(x.min < r.key)) return false;
      return r.op != op_kind::split || x.height() >= r.new_height;
    }
    return !(r.key < x.min);
  }

  void run(node_type& x, request_type& r) {
    ++stats_.requests_handled;
    if (r.has(flag::probe)) return answer_probe(x, r);
    if (r.has(flag::entry)) {
      if (!valid_entry(x, r)) return send_back(std::move(r));
      r.set(flag::entry, false);
      r.level = x.height() - 1;
      r.entry_height = x.height();
      if (x.is_head) r.head_stamp = ++head_stamp_;
    }
    if (r.has(flag::min_target)) return min_target_arrived(x, std::move(r));
    if (r.op == op_kind::range) return run_range(x, r);

    const bool strict = r.op == op_kind::erase || r.op == op_kind::split;
    for (int lvl = std::min(r.level, x.height() - 1); lvl >= 0; --lvl) {
      auto& l = x.tower[static_cast<std::size_t>(lvl)];
      if (next_step(l, r.key, strict) == step::hop) {
        if (reads_only(r.op) && opt_.semantics == consistency::none && jump(x, l, r)) return;
        return forward(x, l.next, lvl, std::move(r));
      }
      if (seeks_neighbour(r.op) && l.has_next() && !(l.next == r.probed)) send_probe(x, lvl, r);
      if (r.op == op_kind::erase && l.has_next() && l.next_min == r.key) {
        // Figure 7(b): the next node's min key is deleted; this level waits until the delete has finished there.
        ++x.waiting_levels;
        r.waiters.push_back({x.self, lvl, l.next});
        send_from(x.self, l.next, marker{l.next, r.client, r.seq});
        if (lvl == 0) {
          r.set(flag::min_target);
          return forward(x, l.next, 0, std::move(r));
        }
        continue;
      }
      if (r.op == op_kind::split && lvl < r.new_height) {
        const link<K> old = link_new_node(x, lvl, r);
        if (old.next == r.marked) {
          // Requests this level sent to the marked node must reach it before it hands keys to the new node.
          r.waiters.push_back({x.self, lvl, r.marked});
          send_from(x.self, r.marked, marker{r.marked, r.client, r.seq});
        }
        if (lvl == 0) return finish_split_link(x, old, r);
      }
    }
    at_bottom(x, std::move(r));
  }

  /// No consistency: a node may jump ahead to a shortcut of its rank that is past its next node.
  bool jump(node_type& x, const link<K>& l, request_type& r) {
    auto sc = board_.lookup(r.key, false);
    if (!sc || !(l.next_min < sc->min) || sc->node == x.self) return false;
    ++stats_.shortcuts_taken;
    r.target = sc->node;
    r.set(flag::entry);
    r.set(flag::via_shortcut);
    post(me_, std::move(r));
    return true;
  }

  void forward(node_type& x, const node_ref& next, int lvl, request_type&& r) {
    r.target = next;
    r.level = lvl;
    if (next.rank != me_) throttle(x, r);
    send_from(x.self, next, std::move(r));
  }

  /// k (paper §3): after k eager forwards to other ranks a node's next one is synchronous, and the node holds new
  /// requests until that one has arrived. Arrival is acknowledged unconditionally, so a wait never depends on
  /// another node's state (no cycle of waits).
  void throttle(node_type& x, request_type& r) {
    if (x.eager_forwards++ < opt_.asynchrony) return;
    x.eager_forwards = 0;
    x.throttled = true;
    r.set(flag::synchronous);
    r.sender = x.self;
    ++stats_.synchronous_forwards;
  }

  void handle(arrived& a) {
    node_type* x = manager_.get(a.sender);
    if (x == nullptr) return;
    x->throttled = false;
    drain(x->self);
  }

  void at_bottom(node_type& x, request_type&& r) {
    switch (r.op) {
      case op_kind::find: {
        const V* v = x.find(r.key);
        reply_type p = reply_for(r, v ? status::ok : status::absent);
        if (v) p.value = *v;
        return post_reply(std::move(p));
      }
      case op_kind::insert: return local_insert(x, std::move(r));
      case op_kind::erase: {
        const bool found = !r.has(flag::node_removal) && x.erase(r.key);
        if (found) remove_if_empty(x);  // its min key was not a key (a SPLIT's new node), its last key was
        return post_reply(reply_for(r, found ? status::ok : status::absent));
      }
      case op_kind::lower_bound:
      case op_kind::successor: {
        reply_type p = first_key_from(x, r);
        p.probes = r.probes;
        return post_reply(std::move(p));
      }
      default: return;
    }
  }

  // ---- lower_bound / successor ---------------------------------------------------------------------------------
  //
  // The answer is the first key >= k (> k) of the node X that covers k, or else the first key of a node after X. A
  // request that went on from X to its next node B along level 0 could be overtaken there by a later operation that
  // reached B over a higher level (an insert into B), so instead every node where the search descends sends a probe
  // to its next node on that level — once per node, from the highest level that links to it: over the link every
  // later operation for that node takes, like a range part. The client takes X's answer, else the smallest probe
  // answer. An empty probed node (a stale SPLIT's node waiting for removal) cannot say what lies behind it: the
  // operation runs again from the head.

  void send_probe(node_type& x, int lvl, request_type& r) {
    request_type p;
    p.op = r.op;
    p.set(flag::probe);
    p.client = r.client;
    p.seq = r.seq;
    p.key = r.key;
    p.attempt = r.attempt;
    p.head_stamp = r.head_stamp;
    ++r.probes;
    r.probed = x.tower[static_cast<std::size_t>(lvl)].next;
    forward(x, x.tower[static_cast<std::size_t>(lvl)].next, lvl, std::move(p));
  }

  reply_type first_key_from(const node_type& x, const request_type& r) {
    const auto i = x.first_from(r.key, r.op == op_kind::successor);
    if (!i) return reply_for(r, status::absent);
    reply_type p = reply_for(r, status::ok);
    p.key = x.keys[*i];
    p.value = x.values[*i];
    return p;
  }

  void answer_probe(const node_type& x, const request_type& r) {
    reply_type p = x.keys.empty() ? reply_for(r, status::retry) : first_key_from(x, r);
    p.probes = -1;
    post_reply(std::move(p));
  }

  // ---- range queries (Listing 2): split at every tower level whose next node starts inside the range --------------

  void run_range(node_type& x, request_type& r) {
    for (int lvl = std::min(r.level, x.height() - 1); lvl >= 0; --lvl) {
      auto& l = x.tower[static_cast<std::size_t>(lvl)];
      if (!l.has_next()) continue;
      if (!(r.key < l.next_min)) return forward(x, l.next, lvl, std::move(r));
      const bool reaches = r.has(flag::hi_inclusive) ? !(r.hi < l.next_min) : l.next_min < r.hi;
      if (reaches) {
        request_type rest = r;
        rest.key = l.next_min;
        forward(x, l.next, lvl, std::move(rest));
        r.hi = l.next_min;
        r.set(flag::hi_inclusive, false);
      }
    }
    ++stats_.range_parts;
    reply_type p = reply_for(r, status::ok);
    p.key = r.key;
    p.hi = r.hi;
    p.hi_inclusive = r.has(flag::hi_inclusive);
    x.collect(r.key, r.hi, p.hi_inclusive, [&](const K& k) { return keep_in_box(r.box, k); }, p.keys, p.values);
    post_reply(std::move(p));
  }

  static bool keep_in_box(const key_box& box, const K& k) {
    if constexpr (multi_dimensional_key<K>) {
      return box.empty_box() || box.contains(k);
    } else {
      return true;
    }
  }

  // ---- insert and split (Figures 5 and 6) --------------------------------------------------------------------------

  struct pending_split {
    int height = 1;
    bool before = false;
  };

  void local_insert(node_type& x, request_type&& r) {
    if (r.has(flag::split_check)) {
      if (r.has(flag::unmark)) x.marked = false;
      if (x.size() <= opt_.granularity || x.marked) return;
    } else if (!x.insert(r.key, r.value)) {
      return post_reply(reply_for(r, status::duplicate));
    }
    if (x.size() <= opt_.granularity || x.marked) return post_reply(reply_for(r, status::ok));
    // Too many key-values: split. A tower no taller than this node's goes right after it (6b); a taller one must go
    // before it, which only a traversal from the head can link (6c): this node is marked and the client asks for it.
    const int h = heights_.draw();
    const bool before = !x.is_head && h > x.height();
    const int start = opt_.spread_nodes ? (spread_next_ = (spread_next_ + 1) % np_) : me_;
    if (start == me_) {
      const node_ref got = manager_.acquire();
      if (got.valid()) {
        prepare_new(*manager_.get(got), h, before, x.min);
        return complete_split(x, std::move(r), got, {h, before});
      }
    }
    x.allocating = true;
    split_heights_[x.self] = {h, before};
    const int first = start == me_ ? node_manager<K, V>::next_in_ring(me_, 0, np_) : start;
    const int hops = start == me_ ? 1 : 0;
    x.pending_insert = std::move(r);
    if (first < 0) return on_alloc(x, node_ref{});
    post(first, alloc_request<K>{x.self, start, hops, h, before, x.min});
  }

  void prepare_new(node_type& n, int height, bool before, const K& min) {
    n.tower.assign(static_cast<std::size_t>(height), link<K>{});
    n.min = min;
    if (before) {
      n.initializing = true;
      n.links_missing = height;
      n.data_missing = true;
    }
  }

  void on_alloc(node_type& x, const node_ref& granted) {
    x.allocating = false;
    auto r = std::move(*x.pending_insert);
    x.pending_insert.reset();
    const auto ps = split_heights_[x.self];
    split_heights_.erase(x.self);
    complete_split(x, std::move(r), granted, ps);
    drain(x.self);
  }

  void complete_split(node_type& x, request_type&& r, const node_ref& got, pending_split ps) {
    if (!got.valid()) {
      if (r.has(flag::split_check)) return;  // stays above G until an insert finds a free node
      x.erase(r.key);
      return post_reply(reply_for(r, status::list_full));
    }
    ++stats_.splits;
    if (!ps.before) {
      split_after(x, got, ps.height);
      split_check_if_above_g(x);
      return post_reply(reply_for(r, status::ok));
    }
    x.marked = true;
    reply_type p = reply_for(r, status::split_needed);
    p.key = x.min;
    p.new_node = got;
    p.marked = x.self;
    p.new_height = ps.height;
    post_reply(std::move(p));
  }

  /// Figure 6(b): the upper half moves to a new node linked right after this one on its lowest `height` levels.
  void split_after(node_type& x, const node_ref& b, int height) {
    node_init<K, V> init;
    init.target = b;
    x.take_tail(x.size() / 2, init.keys, init.values);
    init.min = init.keys.front();
    for (int lvl = 0; lvl < height; ++lvl) {
      auto& l = x.tower[static_cast<std::size_t>(lvl)];
      const bool fenced = needs_fence(x.self, b, l.next);
      if (fenced) hand_over(x.self, b, l.next);
      init.next.push_back(l.next);
      init.next_min.push_back(l.next_min);
      init.fenced.push_back(fenced ? 1 : 0);
      l = {b, init.min};
    }
    post(b.rank, std::move(init));
  }

  void handle(node_init<K, V>& m) {
    node_type* b = manager_.get(m.target);
    if (b == nullptr) return;
    b->min = m.min;
    b->keys = std::move(m.keys);
    b->values = std::move(m.values);
    for (std::size_t lvl = 0; lvl < m.next.size(); ++lvl) {
      b->tower[lvl] = {m.next[lvl], m.next_min[lvl]};
      if (m.fenced[lvl]) expect_fence(b->self, m.next[lvl]);
    }
    board_.post(b->min, b->self, b->height());
    split_check_if_above_g(*b);
    drain(b->self);
  }

  /// Figure 6(c), at a predecessor on a level below the new tower's height: link the new node in.
  link<K> link_new_node(node_type& x, int lvl, const request_type& r) {
    auto& l = x.tower[static_cast<std::size_t>(lvl)];
    const link<K> old = l;
    const bool fenced = needs_fence(x.self, r.new_node, old.next);
    if (fenced) hand_over(x.self, r.new_node, old.next);
    post(r.new_node.rank, set_link<K>{r.new_node, lvl, old.next, old.next_min, true, false, fenced});
    l = {r.new_node, r.key};
    return old;
  }

  /// The level-0 predecessor of the new node gives it its keys >= the split key, and asks the marked node for the
  /// lower half of its own.
  void finish_split_link(node_type& x, const link<K>& old, const request_type& r) {
    std::vector<K> keys;
    std::vector<V> values;
    x.take_tail(x.position(r.key), keys, values);
    remove_if_empty(x);
    if (old.next == r.marked) {
      send_from(x.self, r.marked,
                split_take<K, V>{r.marked, r.new_node, r.client, r.seq, static_cast<std::int32_t>(r.waiters.size()),
                                 std::move(keys), std::move(values)});
    } else {
      post(r.new_node.rank, split_data<K, V>{r.new_node, node_ref{}, K{}, std::move(keys), std::move(values)});
      split_check(r.marked, true);  // the marked node hands nothing over: unmarked, it may split again
    }
  }

  /// Asks node `x` to split if it holds more than G key-values — a node can get there without an insert: a marked
  /// node keeps taking inserts, and a node created by a SPLIT gets keys from two nodes. As a request, it waits its
  /// turn at the node like any other. `unmark` clears the mark of a node whose SPLIT linked its node elsewhere.
  void split_check(const node_ref& x, bool unmark = false) {
    request_type r = internal_request(op_kind::insert);
    r.set(flag::split_check);
    r.set(flag::unmark, unmark);
    r.target = x;
    r.level = -1;  // straight to the local insert step, no level to walk
    ++stats_.split_checks;
    post(x.rank, std::move(r));
  }

  /// A request of the service itself (SPLIT, split check, node removal): its replies come to this rank, where no
  /// client operation waits for them.
  request_type internal_request(op_kind op) {
    request_type r;
    r.op = op;
    r.client = me_;
    r.seq = next_internal_seq_++;
    return r;
  }

  void split_check_if_above_g(const node_type& x) {
    if (x.size() > opt_.granularity && !x.marked) split_check(x.self);
  }

  void handle(split_take<K, V>& m) {
    node_type* mk = manager_.get(m.target);
    if (mk == nullptr) return give_lower_half(nullptr, m);
    // The hand-off waits for the relinked predecessors' markers and for every request this node already holds:
    // all of them were sent before the split passed, so they must find the keys where they were.
    mk->parked_split = std::move(m);
    settle(*mk);
  }

  /// Finishes what waits for markers: a split's key hand-off and a min-key delete. A marker only says its sender's
  /// earlier requests have *arrived*; they may still sit in this node's held queue (it was held back when they came),
  /// behind the parked operation. So both wait until the node is free and its held queue is empty: in total order
  /// nothing reaches the node from a waiting predecessor after its marker, so every held request came first.
  void settle(node_type& x) {
    if (x.held_back() || !x.held.empty()) return;
    if (x.parked_split &&
        markers_arrived(x.parked_split->client, x.parked_split->seq, x.self, x.parked_split->markers)) {
      auto take = std::move(*x.parked_split);
      x.parked_split.reset();
      give_lower_half(&x, take);
    }
    if (x.parked_delete && markers_arrived(x.parked_delete->client, x.parked_delete->seq, x.self,
                                           waiting_for(*x.parked_delete, x.self))) {
      auto r = std::move(*x.parked_delete);
      x.parked_delete.reset();
      finish_min_delete(x, std::move(r));  // may free x: last
    }
  }

  /// True (and forgets the count) once `expected` markers of operation (client, seq) have arrived at `target`.
  bool markers_arrived(std::int32_t client, std::uint64_t seq, const node_ref& target, int expected) {
    auto it = markers_.find(std::tuple{client, seq, target});
    if ((it == markers_.end() ? 0 : it->second) < expected) return false;
    if (it != markers_.end()) markers_.erase(it);
    return true;
  }

  void give_lower_half(node_type* mk, split_take<K, V>& m) {
    split_data<K, V> data{m.new_node, node_ref{}, K{}, std::move(m.keys), std::move(m.values)};
    if (mk != nullptr) {
      mk->take_head(mk->size() / 2, data.keys, data.values);
      if (!mk->keys.empty() && !(mk->keys.front() == mk->min)) set_min(*mk, mk->keys.front());
      mk->marked = false;
      data.giver = mk->self;
      data.giver_min = mk->min;
      split_check_if_above_g(*mk);
    }
    post(m.new_node.rank, std::move(data));
  }

  void handle(split_data<K, V>& m) {
    node_type* n = manager_.get(m.target);
    if (n == nullptr) return;
    n->data = std::move(m);
    n->data_missing = false;
    maybe_activate(*n);
  }

  void handle(set_link<K>& m) {
    node_type* p = manager_.get(m.target);
    if (p == nullptr) return;
    p->tower[static_cast<std::size_t>(m.level)] = {m.next, m.next_min};
    if (m.fenced) expect_fence(p->self, m.next);
    if (m.init) {
      --p->links_missing;
      maybe_activate(*p);
    }
    if (m.release && --p->waiting_levels == 0) drain(p->self);
  }

  void maybe_activate(node_type& n) {
    if (!n.initializing || n.links_missing > 0 || n.data_missing) return;
    auto& d = *n.data;
    n.keys = std::move(d.keys);
    n.values = std::move(d.values);
    if (d.giver.valid()) {
      for (auto& l : n.tower)
        if (l.next == d.giver) l.next_min = d.giver_min;
    }
    n.data.reset();
    n.initializing = false;
    board_.post(n.min, n.self, n.height());
    split_check_if_above_g(n);
    remove_if_empty(n);  // the marked node was deleted before the split reached it: nothing to hold
    drain(n.self);
  }

  /// A node left empty other than by a delete of its min key (a stale SPLIT's new node; a split's level-0 predecessor
  /// that gave all its keys away; a node whose min key is not one of its keys losing its last key) removes itself
  /// with a delete of its own min key, unlinked level by level like any emptied node. It is a node removal, not an
  /// erase: by the time it passes, a client may have inserted that key again (into this node or, if its min moved
  /// up, into its predecessor), and that key must stay. If the node is no longer empty when the removal reaches it,
  /// it only refreshes its min key.
  void remove_if_empty(const node_type& n) {
    if (!n.keys.empty() || n.is_head) return;
    request_type r = internal_request(op_kind::erase);
    r.set(flag::node_removal);
    r.key = n.min;
    enter(std::move(r), head_ref);
  }

  void set_min(node_type& x, const K& m) {
    board_.remove(x.min, x.self);
    x.min = m;
    board_.post(m, x.self, x.height());
  }

  // ---- allocation ring -----------------------------------------------------------------------------------------

  void handle(alloc_request<K>& a) {
    const node_ref got = manager_.acquire();
    if (got.valid()) {
      prepare_new(*manager_.get(got), a.height, a.for_split_before, a.min);
      return post(a.requester.rank, alloc_reply{a.requester, got});
    }
    const int next = node_manager<K, V>::next_in_ring(me_, a.hops, np_);
    if (next < 0) return post(a.requester.rank, alloc_reply{a.requester, node_ref{}});
    ++a.hops;
    post(next, std::move(a));
  }

  void handle(alloc_reply& a) {
    node_type* x = manager_.get(a.requester);
    if (x != nullptr) on_alloc(*x, a.granted);
  }

  // ---- delete of a min key (Figure 7b) ---------------------------------------------------------------------------

  void handle(marker& m) {
    node_type* t = manager_.get(m.target);
    if (t == nullptr) return;
    ++markers_[std::tuple{m.client, m.seq, m.target}];
    settle(*t);
  }

  void min_target_arrived(node_type& t, request_type&& r) {
    // Earlier requests of the waiting predecessors may still be on their way here, or held here behind this delete:
    // they go first (settle).
    t.parked_delete = std::move(r);
    settle(t);
  }

  static int waiting_for(const request_type& r, const node_ref& target) {
    return static_cast<int>(std::count_if(r.waiters.begin(), r.waiters.end(), [&](const waiter& w) { return w.target == target; }));
  }

  void finish_min_delete(node_type& t, request_type&& r) {
    if (t.height() > r.entry_height) {
      // Entered at a shortcut below this tower: the predecessors above were not visited. Undo, retry at the head.
      for (const auto& w : r.waiters)
        post(w.node.rank, set_link<K>{w.node, w.level, w.target, w.target == t.self ? t.min : r.key, false, true, false});
      return send_back(std::move(r));
    }
    // Only behind a stale SPLIT's empty node N with the same min key k as its successor M do the waiters differ:
    // the predecessors of N wait for N, those of M above N's tower for M. Split them.
    std::vector<waiter> mine;
    std::vector<waiter> beyond;
    for (auto& w : r.waiters) (w.target == t.self ? mine : beyond).push_back(w);
    r.waiters = std::move(mine);
    const bool same_min_ahead = t.keys.empty() && !t.is_head && t.tower[0].has_next() && t.tower[0].next_min == r.key;
    if (same_min_ahead && !r.has(flag::node_removal)) return pass_on(t, std::move(r), std::move(beyond));
    const bool found = !r.has(flag::node_removal) && t.erase(r.key);
    if (t.keys.empty() && !t.is_head) {
      // A node removal of N in front of M (same min key): M's waiting predecessors above N's tower still wait for
      // M, so the removal goes on to M and replies there (M refreshes its min key, or is removed too if empty). N's
      // own predecessors on the levels where M follows N wait for M from now on — if M goes too, they must learn
      // what follows M — and N sends M their markers behind everything it forwarded to M.
      if (!beyond.empty()) {
        const node_ref m = t.tower[0].next;
        std::vector<waiter> released;
        for (auto w : r.waiters) {
          if (!(t.tower[static_cast<std::size_t>(w.level)].next == m)) {
            released.push_back(w);
            continue;
          }
          w.target = m;
          beyond.push_back(w);
          send_from(t.self, m, marker{m, r.client, r.seq});
        }
        r.waiters = std::move(released);
        request_type rest = r;
        rest.waiters = std::move(beyond);
        forward(t, m, 0, std::move(rest));
        return unlink_and_free(t, r);
      }
      unlink_and_free(t, r);
    } else {
      if (!t.keys.empty() && !(t.keys.front() == t.min)) set_min(t, t.keys.front());
      for (const auto& w : r.waiters)
        post(w.node.rank, set_link<K>{w.node, w.level, t.self, t.min, false, true, false});
    }
    post_reply(reply_for(r, found ? status::ok : status::absent));
  }

  /// The min-key delete of k reached an empty node N whose level-0 successor M has the same min key k (a stale SPLIT
  /// linked N there). k is M's: N keeps its min and releases its own waiting predecessors unchanged, then becomes a
  /// waiting predecessor of M itself on every level where its next node has min k (marker, hold) and sends the delete
  /// on to M. Order is kept: N already handled every earlier request of its predecessors (markers, empty held queue)
  /// and sent them to M ahead of the delete; later ones wait at N until M's delete has finished.
  void pass_on(node_type& t, request_type&& r, std::vector<waiter>&& beyond) {
    for (const auto& w : r.waiters) post(w.node.rank, set_link<K>{w.node, w.level, t.self, t.min, false, true, false});
    r.waiters = std::move(beyond);
    for (int lvl = t.height() - 1; lvl >= 0; --lvl) {
      const auto& l = t.tower[static_cast<std::size_t>(lvl)];
      if (!l.has_next() || !(l.next_min == r.key)) continue;
      ++t.waiting_levels;
      r.waiters.push_back({t.self, lvl, l.next});
      send_from(t.self, l.next, marker{l.next, r.client, r.seq});
    }
    forward(t, t.tower[0].next, 0, std::move(r));  // still a min-key delete (flag::min_target)
  }

  void unlink_and_free(node_type& t, const request_type& r) {
    for (const auto& w : r.waiters) {
      const auto& l = t.tower[static_cast<std::size_t>(w.level)];
      const bool fenced = needs_fence(t.self, w.node, l.next);
      if (fenced) hand_over(t.self, w.node, l.next);
      post(w.node.rank, set_link<K>{w.node, w.level, l.next, l.next_min, false, true, fenced});
    }
    board_.remove(t.min, t.self);
    auto held = std::move(t.held);
    ++stats_.nodes_freed;
    manager_.release(t.self.slot);
    for (auto& q : held) send_back(std::move(q));
  }

  // ---- fences ----------------------------------------------------------------------------------------------------

  void handle(fence& f) { post(f.from.rank, fence_ack{f.from, f.dest}); }
  void handle(fence_ack& f) { adjust_fence(f.from, f.dest, -1); }

  // ---- replies and bounces at the client -------------------------------------------------------------------------

  static reply_type reply_for(const request_type& r, status st) {
    reply_type p;
    p.client = r.client;
    p.seq = r.seq;
    p.st = st;
    p.op = r.op;
    p.head_stamp = r.head_stamp;
    p.attempt = r.attempt;
    return p;
  }

  void post_reply(reply_type&& p) {
    const int to = p.client;
    post(to, std::move(p));
  }

  /// A request that cannot go on where it is returns to its client, which re-enters it at the head.
  void send_back(request_type&& r) {
    if (r.has(flag::split_check)) return;  // the node is gone: nothing to split
    ++stats_.bounces;
    r.flags &= static_cast<std::uint16_t>(flag::hi_inclusive | flag::node_removal | flag::probe);
    r.waiters.clear();
    r.head_stamp = 0;
    r.probes = 0;
    r.probed = {};
    const int to = r.client;
    post(to, bounce<K, V>{std::move(r)});
  }

  void handle(bounce<K, V>& b) {
    auto it = ops_.find(b.req.seq);
    if (b.req.has(flag::probe)) {  // the probed node is gone: like an empty one
      reply_type p = reply_for(b.req, status::retry);
      return handle(p);
    }
    if (it != ops_.end()) {
      reenter_at_head(it->first);
      if (seeks_neighbour(b.req.op)) b.req.attempt = next_pass(it->second);
    }
    enter(std::move(b.req), head_ref);
  }

  /// Starts a new pass of a lower_bound / successor: probes of the failed pass may still answer, and are recognised
  /// by their old attempt number and ignored. Returns the new attempt number.
  static std::uint8_t next_pass(client_op& o) {
    o.probes_expected = -1;
    o.probes_received = 0;
    o.probe_failed = false;
    o.result = {};
    return ++o.attempt;
  }

  /// A reply of a lower_bound / successor pass: the search's own (probes >= 0) or a probe's. True once the operation
  /// has its answer; a pass that met an empty node runs again from the head.
  bool neighbour_answered(client_op& o, std::uint64_t seq, reply_type& p) {
    if (p.attempt != o.attempt) return false;
    auto& res = o.result;
    res.head_stamp = std::max(res.head_stamp, p.head_stamp);
    if (p.probes >= 0) {
      // The search's own answer: found in the node of the key, it is the answer (every probed node lies beyond).
      o.probes_expected = p.st == status::ok ? 0 : p.probes;
      if (p.st == status::ok) {
        res.st = status::ok;
        res.key = std::move(p.key);
        res.value = std::move(p.value);
        o.probe_failed = false;
      }
    } else {
      ++o.probes_received;
      if (p.st == status::retry) o.probe_failed = true;
      if (p.st == status::ok && (!res.key || p.key < *res.key)) {
        res.key = std::move(p.key);
        res.value = std::move(p.value);
      }
    }
    if (o.probes_expected < 0 || (o.probes_expected > 0 && o.probes_received < o.probes_expected)) return false;
    if (o.probes_expected > 0 && o.probe_failed) {
      request_type r;
      r.op = o.op;
      r.client = me_;
      r.seq = seq;
      r.key = o.key;
      r.attempt = next_pass(o);
      reenter_at_head(seq);
      ++stats_.bounces;
      enter(std::move(r), head_ref);
      return false;
    }
    if (!res.key) res.st = status::absent;
    return true;
  }

  void handle(reply_type& p) {
    if (p.st == status::split_needed) issue_split(p);
    auto it = ops_.find(p.seq);
    if (it == ops_.end()) return;
    auto& o = it->second;
    if (o.completed) return;  // a late probe of a lower_bound answered by its key's node
    auto& res = o.result;
    if (seeks_neighbour(p.op)) {
      if (!neighbour_answered(o, it->first, p)) return;
    } else if (p.op == op_kind::range) {
      res.head_stamp = p.head_stamp;
      o.parts.emplace(p.key, typename client_op::part{p.hi, p.hi_inclusive, std::move(p.keys), std::move(p.values)});
      for (;;) {
        auto part = o.parts.find(o.cursor);
        if (part == o.parts.end()) return;
        if (part->second.inclusive) break;
        o.cursor = part->second.hi;
      }
      for (auto& [lo, part] : o.parts) {
        res.keys.insert(res.keys.end(), std::make_move_iterator(part.keys.begin()),
                        std::make_move_iterator(part.keys.end()));
        res.values.insert(res.values.end(), std::make_move_iterator(part.values.begin()),
                          std::make_move_iterator(part.values.end()));
      }
      o.parts.clear();
    } else {
      res.head_stamp = p.head_stamp;
      res.st = p.st == status::split_needed ? status::ok : p.st;
      if (p.op == op_kind::find && p.st == status::ok) res.value = std::move(p.value);
    }
    o.completed = true;
    close_region(it->first);
    adapt_window();
    deliver_completed(it);
  }

  void deliver_completed(typename std::map<std::uint64_t, client_op>::iterator it) {
    if (opt_.semantics != consistency::sequential) {
      auto o = std::move(it->second);
      ops_.erase(it);
      o.done(std::move(o.result));
      return;
    }
    // Hold-back queue: deliver in issue order.
    while (!ops_.empty() && ops_.begin()->second.completed) {
      auto o = std::move(ops_.begin()->second);
      ops_.erase(ops_.begin());
      o.done(std::move(o.result));
    }
  }

  void issue_split(const reply_type& p) {
    request_type r = internal_request(op_kind::split);
    r.key = p.key;
    r.new_node = p.new_node;
    r.marked = p.marked;
    r.new_height = p.new_height;
    node_ref entry = head_ref;
    if (opt_.semantics != consistency::total_order) {
      if (auto sc = board_.lookup(r.key, true, r.new_height)) entry = sc->node;
    }
    enter(std::move(r), entry);
  }

  /// Sequential consistency: may a new operation covering keys up to `hi`, entering at the head (`at_head`) or at a
  /// shortcut whose min key is `entry_min`, overtake one of this client's operations still on its way?
  bool conflicts(bool at_head, const K& entry_min, const K& hi, bool unbounded) const {
    for (const auto& o : open_) {
      if (at_head && o.via_head) continue;  // both enter at the head: the list keeps their order
      // The nodes an operation visits lie between its entry and its largest key (no largest key: unbounded).
      const bool below = !at_head && !o.unbounded && o.hi < entry_min;
      const bool above = !o.via_head && !unbounded && hi < o.entry_min;
      if (!below && !above) return true;
    }
    return false;
  }

  open_region* find_region(std::uint64_t seq) {
    for (auto& o : open_)
      if (o.seq == seq) return &o;
    return nullptr;
  }

  void reenter_at_head(std::uint64_t seq) {
    if (auto* o = find_region(seq)) o->via_head = true;
  }

  void close_region(std::uint64_t seq) {
    if (auto* o = find_region(seq)) {
      *o = std::move(open_.back());
      open_.pop_back();
    }
  }

  /// Section 3: each client measures its reply rate and moves W towards the best one it has seen.
  void adapt_window() {
    if (!opt_.adaptive_window) return;
    if (++sample_count_ < sample_size) return;
    const double now = clock_now();
    const double rate = sample_count_ / std::max(1e-9, now - sample_start_);
    sample_count_ = 0;
    sample_start_ = now;
    if (last_rate_ > 0 && rate < last_rate_ * 0.97) growing_ = !growing_;
    last_rate_ = rate;
    const double factor = growing_ ? 1.25 : 0.8;
    window_ = std::clamp(static_cast<std::size_t>(static_cast<double>(window_) * factor + (growing_ ? 1 : 0)),
                         opt_.window_min, opt_.window_max);
  }

  static constexpr int sample_size = 256;

  ordered_map_options opt_;
  transport net_;
  int me_;
  int np_;
  node_manager<K, V> manager_;
  bulletin_board<K> board_;
  tower_heights heights_;
  int spread_next_;
  std::deque<message_type> local_;
  bool pumping_ = false;
  std::size_t unflushed_ = 0;
  std::uint64_t head_stamp_ = 0;
  absl::flat_hash_map<node_ref, sender_outbox> outbox_;
  absl::flat_hash_map<std::tuple<std::int32_t, std::uint64_t, node_ref>, int> markers_;  // (client, seq, target)
  absl::flat_hash_map<node_ref, pending_split> split_heights_;
  service_stats stats_;

  // client
  std::map<std::uint64_t, client_op> ops_;
  std::vector<open_region> open_;  // regions of the operations in ops_ not yet completed
  std::uint64_t next_seq_ = 1;
  std::uint64_t next_internal_seq_ = std::uint64_t{1} << 62;  // splits and zombie removals: no client op waits
  std::size_t window_;
  int sample_count_ = 0;
  double sample_start_ = clock_now();
  double last_rate_ = 0;
  bool growing_ = true;
};

}  // namespace shoal::detail::ordered_map
