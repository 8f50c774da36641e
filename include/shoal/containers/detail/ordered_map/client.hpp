// shoal/containers/detail/ordered_map/client.hpp — the application side of one rank's skip-list service.
//
// The client issues operations (window W of outstanding ones, sequence numbers, the entry point: the head or a
// shortcut of this rank's bulletin board), and turns the replies of nodes into results: it reassembles range parts,
// picks the answer of a lower_bound / successor among its probes, and delivers results — in issue order under
// sequential consistency (the hold-back queue). It decides, it does not send: the service enters the requests it
// returns into the list.
//
// Sequential consistency (paper §1.3): a new operation enters at a shortcut only where none of this client's
// operations still on the way could be overtaken (their regions: open_region); otherwise at the head, where the list
// keeps order — unless an earlier operation that entered at a shortcut could still be overtaken, in which case the
// new one waits (try_issue returns nothing).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "shoal/containers/detail/ordered_map/bulletin_board.hpp"
#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/ordered_map_operation.hpp"
#include "shoal/containers/ordered_map_options.hpp"

namespace shoal::detail::ordered_map {

/// The first node of the list (the head lives on rank 0, slot 0, generation 0).
inline constexpr node_ref head_node{0, 0, 0};

template <class K, class V>
class client {
 public:
  using request_type = request<K, V>;
  using reply_type = reply<K, V>;
  using result_type = ordered_map_operation_result<K, V>;
  using completion = std::function<void(result_type&&)>;

  /// A request to enter into the list at `entry`.
  struct entering {
    request_type req;
    node_ref entry;
  };

  /// `opt` (its semantics and window settings) and `board` are the service's and outlive the client.
  client(const ordered_map_options& opt, int rank, const bulletin_board<K>& board)
      : opt_(opt), me_(rank), board_(board), window_(std::clamp(opt.window, opt.window_min, opt.window_max)) {}

  /// Issues an operation unless the window is full or (sequential consistency) it would have to wait for an earlier
  /// operation of this client; `done` runs once with the result (in issue order under sequential consistency). `done`
  /// is moved from only when the operation is issued (a caller retries with the same one).
  std::optional<entering> try_issue(const ordered_map_operation<K, V>& spec, completion&& done) {
    if (ops_.size() >= window_) return std::nullopt;
    const op_kind kind = kind_of(spec.op);
    const bool strict = kind == op_kind::erase;
    // The keys an operation may touch: [key, hi] for a range, [key, +inf) for lower_bound / successor, else key.
    const K& region_hi = kind == op_kind::range ? spec.hi : spec.key;
    const bool unbounded = seeks_neighbour(kind);
    std::optional<typename bulletin_board<K>::shortcut> sc;
    if (opt_.semantics != consistency::total_order) sc = board_.lookup(spec.key, strict);
    bool via_head = !sc.has_value();
    if (opt_.semantics == consistency::sequential) {
      const bool shortcut_ok = sc && !conflicts(false, sc->min, region_hi, unbounded);
      if (!shortcut_ok) {
        if (conflicts(true, spec.key, region_hi, unbounded)) return std::nullopt;
        // A lower_bound / successor that has a shortcut waits for the operations it conflicts with instead of entering
        // at the head behind them: from the head it probes at every level where it descends (3-4 times the messages of
        // a shortcut's pass), and while it is on its way every later one would have to follow it there.
        if (sc && unbounded) return std::nullopt;
        via_head = true;
      }
    }
    const std::uint64_t seq = next_seq_++;
    if (ops_.empty()) next_delivery_ = seq;  // every earlier operation has been delivered
    auto& o = ops_[seq];
    o.op = kind;
    o.key = spec.key;
    o.done = std::move(done);
    open_.push_back({seq, via_head ? K{} : sc->min, region_hi, via_head, unbounded});
    if (kind == op_kind::range) o.cursor = spec.key;

    request_type r;
    r.op = kind;
    r.client = me_;
    r.seq = seq;
    r.key = spec.key;
    r.hi = spec.hi;
    r.value = spec.value;
    r.box = spec.box;
    if (kind == op_kind::range) r.set(flag::hi_inclusive);
    // Sequential consistency probes from the first pass when it enters at the head: a second pass would re-enter there
    // behind this client's later operations (which may enter at the head behind this one) and could see their
    // effects, out of issue order. From a shortcut it does not: while it is on its way, a later operation of this
    // client enters at the head only if every key it touches lies below the shortcut's min key (conflicts), so none of
    // them can change the answer (a key >= `key`) of the second pass that the first one may need.
    if (unbounded && opt_.semantics == consistency::sequential && via_head) r.set(flag::with_probes);
    return entering{std::move(r), via_head ? head_node : sc->node};
  }

  /// A reply of a node to one of this client's operations. Returns the request of a new pass from the head when a
  /// lower_bound / successor pass met an empty node.
  std::optional<request_type> on_reply(reply_type& p) {
    auto it = ops_.find(p.seq);
    if (it == ops_.end()) return std::nullopt;
    auto& o = it->second;
    if (o.completed) return std::nullopt;  // a late probe of a lower_bound answered by its key's node
    auto& res = o.result;
    if (seeks_neighbour(p.op)) {
      std::optional<request_type> again;
      if (!neighbour_answered(o, it->first, p, again)) return again;
    } else if (p.op == op_kind::range) {
      res.head_stamp = p.head_stamp;
      // Parts are appended in key order as soon as they join the prefix received so far (a range of one part, the
      // common case, moves straight into the result); the others wait in `parts` by start key.
      if (!(p.key == o.cursor)) {
        o.parts.emplace(p.key, typename client_op::part{p.hi, p.hi_inclusive, std::move(p.items)});
        return std::nullopt;
      }
      typename client_op::part next{p.hi, p.hi_inclusive, std::move(p.items)};
      for (;;) {
        append(res, next);
        if (next.inclusive) break;
        o.cursor = next.hi;
        auto part = o.parts.find(o.cursor);
        if (part == o.parts.end()) return std::nullopt;
        next = std::move(part->second);
        o.parts.erase(part);
      }
    } else {
      res.head_stamp = p.head_stamp;
      res.st = result_status(p.st == status::split_needed ? status::ok : p.st);
      if (p.op == op_kind::find && p.st == status::ok) res.value = std::move(p.value);
    }
    o.completed = true;
    close_region(it->first);
    adapt_window();
    deliver_completed(it);
    return std::nullopt;
  }

  /// One of this client's requests came back (stale shortcut, entry too low): it re-enters at the head.
  void on_bounce(request_type& r) {
    auto it = ops_.find(r.seq);
    if (it == ops_.end()) return;  // a request of the service itself
    reenter_at_head(it->first);
    if (seeks_neighbour(r.op)) {
      r.attempt = next_pass(it->second);
      // Now at the head, later operations may follow it there: as a first pass from the head, it probes.
      if (opt_.semantics == consistency::sequential) r.set(flag::with_probes);
    }
  }

  /// Operations issued and not yet delivered.
  std::size_t outstanding() const { return ops_.size(); }
  std::size_t window() const { return window_; }

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
      std::vector<std::pair<K, V>> items;
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
  /// A flat table: no allocation per operation (moved out before its completion runs, which may issue more).
  using op_table = absl::flat_hash_map<std::uint64_t, client_op>;

  /// The keys an operation still on its way may visit (sequential consistency): from its entry (the head, or a
  /// shortcut's min key) to its largest key (none: unbounded). A flat list, scanned on every issue.
  struct open_region {
    std::uint64_t seq = 0;
    K entry_min{};
    K hi{};
    bool via_head = true;
    bool unbounded = false;  // lower_bound / successor: the keys above hi too
  };

  /// Appends a range part to the result (moves its vector in when the result is still empty).
  static void append(result_type& res, typename client_op::part& part) {
    if (res.items.empty()) {
      res.items = std::move(part.items);
      return;
    }
    res.items.insert(res.items.end(), std::make_move_iterator(part.items.begin()),
                     std::make_move_iterator(part.items.end()));
  }

  static double clock_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
  /// has its answer; a pass that met an empty node runs again from the head (`again`).
  bool neighbour_answered(client_op& o, std::uint64_t seq, reply_type& p, std::optional<request_type>& again) {
    if (p.attempt != o.attempt) return false;
    auto& res = o.result;
    res.head_stamp = std::max(res.head_stamp, p.head_stamp);
    if (p.probes >= 0 && p.st == status::retry) {
      // A pass without probes found no key past `key` in the node of the key: again from the head, probing.
      again = new_pass(o, seq, true);
      return false;
    }
    if (p.probes >= 0) {
      // The search's own answer: found in the node of the key, it is the answer (every probed node lies beyond).
      o.probes_expected = p.st == status::ok ? 0 : p.probes;
      if (p.st == status::ok) {
        res.st = ordered_map_status::ok;
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
      again = new_pass(o, seq, true);
      return false;
    }
    if (!res.key) res.st = ordered_map_status::absent;
    return true;
  }

  /// The request of a new pass of a lower_bound / successor from the head (`probing`: it probes the nodes past
  /// its key's node, for when that node has no key past `key`).
  request_type new_pass(client_op& o, std::uint64_t seq, bool probing) {
    request_type r;
    r.op = o.op;
    r.client = me_;
    r.seq = seq;
    r.key = o.key;
    r.set(flag::with_probes, probing);
    r.attempt = next_pass(o);
    reenter_at_head(seq);
    return r;
  }

  void deliver_completed(typename op_table::iterator it) {
    if (opt_.semantics != consistency::sequential) {
      auto o = std::move(it->second);
      ops_.erase(it);
      o.done(std::move(o.result));
      return;
    }
    // Hold-back queue: deliver in issue order (a completion may issue operations: look each one up afresh).
    for (;;) {
      auto next = ops_.find(next_delivery_);
      if (next == ops_.end() || !next->second.completed) return;
      auto o = std::move(next->second);
      ops_.erase(next);
      ++next_delivery_;
      o.done(std::move(o.result));
    }
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

  const ordered_map_options& opt_;
  int me_;
  const bulletin_board<K>& board_;
  op_table ops_;  // the operations issued and not yet delivered, by sequence number
  std::uint64_t next_delivery_ = 1;  // sequential consistency: the sequence number delivered next
  std::vector<open_region> open_;  // regions of the operations in ops_ not yet completed
  std::uint64_t next_seq_ = 1;
  std::size_t window_;
  int sample_count_ = 0;
  double sample_start_ = clock_now();
  double last_rate_ = 0;
  bool growing_ = true;
};

}  // namespace shoal::detail::ordered_map
