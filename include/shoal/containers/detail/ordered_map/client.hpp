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
//
// Capped lower_bounds. A lower_bound / successor covers every key above its own, so it would conflict with every later
// operation above it. One that enters at a shortcut is therefore *capped* by the min key of the next node on the board
// (a node of this rank, so the node of its key lies before it): on this pass it answers only with a key below the cap,
// and otherwise (rare: its key's node holds nothing between its key and the cap) passes again: a probe of the next node
// of its key's node, which the failed pass names (its first key is the answer while its min key is the one the failed
// pass saw), else from the head with probes. Later reads need to stay clear only of [shortcut, cap] (writes still of
// everything above the shortcut: the second pass reads there). A second pass (after a capped pass, or a pass from the
// head that met an empty node) waits until no earlier operation it could overtake is on its way; the later reads issued
// before it entered that may read its keys are held back and run again if they did (they could have seen a key before
// it did, older than it saw it). A later write at the head keeps clear of the keys of an open lower_bound from the
// head, whose next pass would follow it there.
//
// Plain searches that enter at one shortcut — finds and capped passes — do not wait for each other: like operations
// from the head, they follow the same links in issue order. Only a shortcut that went stale between them can part them
// (the node sends the earlier one back and serves the later one): the later ones that entered there beside it are then
// held until it has its answer, and run again (on_bounce). A capped pass that finds nothing below its cap passes again
// (a probe of the next node, or from the head), and holds the later reads beside it as it holds those above its cap.
// Plain searches that entered at other shortcuts of the same board lie between other shortcuts' min keys: while only
// such searches are on their way and the board has not changed, a new one enters without a scan.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/functional/any_invocable.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "shoal/containers/detail/ordered_map/bulletin_board.hpp"
#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/ordered_map_operation.hpp"
#include "shoal/containers/ordered_map_options.hpp"
#include "shoal/core/checks.hpp"

namespace shoal::detail::ordered_map {

/// The first node of the list (the head lives on rank 0, slot 0, generation 0).
inline constexpr node_ref head_node{0, 0, 0};

template <class K, class V>
class client {
 public:
  using request_type = request<K, V>;
  using reply_type = reply<K, V>;
  using result_type = ordered_map_operation_result<K, V>;
  /// absl::AnyInvocable keeps a callable of two pointers (a future's state and a conversion) inline: std::function
  /// allocated one per operation (its inline storage takes only trivially copyable callables).
  using completion = absl::AnyInvocable<void(result_type&&)>;

  /// A request to enter into the list at `entry`.
  struct entering {
    request_type req;
    node_ref entry;
  };

  /// Why the client asks for a request to be entered outside try_issue.
  enum class entry_reason : std::uint8_t {
    again,   ///< a pass that failed (an empty node, a stale shortcut, a capped pass past its cap) goes again
    rerun,   ///< a read that may have seen a key older than an earlier read of this client did runs again
  };

  /// `opt` (its semantics and window settings) and `board` are the service's and outlive the client. Its operations
  /// are numbered from `first_seq` (the service tells the replies of two clients of one rank apart by it).
  client(const ordered_map_options& opt, int rank, const bulletin_board<K>& board, std::uint64_t first_seq = 1)
      : opt_(opt), me_(rank), board_(board), next_delivery_(first_seq), next_seq_(first_seq),
        window_(std::clamp(opt.window, opt.window_min, opt.window_max)) {}

  /// Issues an operation unless the window is full or (sequential consistency) it would have to wait for an earlier
  /// operation of this client; `done` runs once with the result (in issue order under sequential consistency). `done`
  /// is moved from only when the operation is issued (a caller retries with the same one).
  std::optional<entering> try_issue(const ordered_map_operation<K, V>& spec, completion&& done) {
    if (ops_.size() >= window_) return std::nullopt;
    const op_kind kind = kind_of(spec.op);
    const K& hi = kind == op_kind::range ? spec.hi : spec.key;
    if (still_waits(kind, spec.key, hi)) {
#if SHOAL_CHECKS >= 2
      if (entry_for(kind, spec.key, hi, no_limit)) {
        throw std::logic_error("shoal ordered_map: the client kept an operation waiting that may enter (a shoal bug)");
      }
#endif
      return std::nullopt;
    }
    const auto at = entry_for(kind, spec.key, hi, no_limit);
    if (!at) {
      wait_ = waiting_issue{kind, spec.key, hi, regions_closed_, board_.version(), true};
      return std::nullopt;
    }
    wait_.valid = false;
    const std::uint64_t seq = next_seq_++;
    if (ops_.empty()) next_delivery_ = seq;  // every earlier operation has been delivered
    auto& o = ops_[seq];
    o.op = kind;
    o.key = spec.key;
    o.done = std::move(done);
    if (kind == op_kind::range) {
      o.cursor = spec.key;
      o.hi = spec.hi;
      o.box = spec.box;
    }
    // Regions order a client's operations under sequential consistency only (the other semantics never look).
    if (opt_.semantics == consistency::sequential) open_region_of(o, region_of(seq, o, *at));
    take_entry(o, *at);
    if (opt_.semantics == consistency::sequential) hold_behind_unbounded_reads(seq, o);
    request_type r = request_for(seq, o, *at);
    r.value = spec.value;
    return entering{std::move(r), at->node};
  }

  /// A reply of a node to one of this client's operations. Requests it makes the client enter wait in next_entry().
  void on_reply(reply_type& p) {
    auto it = ops_.find(p.seq);
    if (it == ops_.end()) return;
    const std::uint64_t seq = it->first;
    auto& o = it->second;
    if (o.completed || o.ran) return;  // a late probe of a lower_bound answered by its key's node
    auto& res = o.result;
    if (seeks_neighbour(p.op)) {
      bool again = false;
      if (!neighbour_answered(o, p, again)) {
        if (again) pass_again(seq, o);
        issue_waiting();
        return;
      }
    } else if (p.op == op_kind::range) {
      res.head_stamp = p.head_stamp;
      // Parts join the prefix received so far in key order (`in_order`); the others wait in `parts` by start key.
      // The last one joins them into the result, each key-value copied once (a range of one part, the common case,
      // moves straight in).
      if (!(p.key == o.cursor)) {
        o.parts.emplace(p.key, typename client_op::part{p.hi, p.hi_inclusive, std::move(p.items)});
        return;
      }
      typename client_op::part next{p.hi, p.hi_inclusive, std::move(p.items)};
      while (!next.inclusive) {
        o.in_order.push_back(std::move(next.items));
        o.cursor = next.hi;
        auto part = o.parts.find(o.cursor);
        if (part == o.parts.end()) return;
        next = std::move(part->second);
        o.parts.erase(part);
      }
      join(res.items, o.in_order, std::move(next.items));
    } else {
      res.head_stamp = p.head_stamp;
      res.st = result_status(p.st == status::split_needed ? status::ok : p.st);
      if (p.op == op_kind::find && p.st == status::ok) res.value = std::move(p.value);
    }
    adapt_window();
    ran(seq, o);
    deliver_completed(seq);
    issue_waiting();
  }

  /// One of this client's requests came back (stale shortcut, entry too low): it re-enters at the head (next_entry).
  void on_bounce(request_type& r) {
    auto it = ops_.find(r.seq);
    if (it == ops_.end()) {  // a request of the service itself
      to_enter_.push_back({{std::move(r), head_node}, entry_reason::again});
      return;
    }
    auto& o = it->second;
    if (opt_.semantics == consistency::sequential && plain_run(o)) hold_later_runs_beside(it->first, o);
    if (o.capped) {  // a capped lower_bound / successor: its pass from the head is a second pass
      pass_again(it->first, o);
      issue_waiting();
      return;
    }
    reenter_at_head(it->first);
    if (seeks_neighbour(r.op)) {
      r.attempt = next_pass(o);
      // Now at the head, later operations may follow it there: as a first pass from the head, it probes.
      if (opt_.semantics == consistency::sequential) r.set(flag::with_probes);
    }
    to_enter_.push_back({{std::move(r), head_node}, entry_reason::again});
  }

  /// The next request the client needs entered (nothing when there is none). The service enters them one by one:
  /// entering one may run handlers that reply to this client again.
  std::optional<std::pair<entering, entry_reason>> next_entry() {
    if (to_enter_.empty()) return std::nullopt;
    auto e = std::move(to_enter_.front());
    to_enter_.pop_front();
    return e;
  }

  /// Operations issued and not yet delivered.
  std::size_t outstanding() const { return ops_.size(); }
  std::size_t window() const { return window_; }

 private:
  /// The operation the last try_issue could not issue because it must wait for an earlier one (sequential
  /// consistency). A caller retries it on every poll: until a region closes or changes or the board changes, the
  /// answer stays the same and is given without a board lookup or a conflict scan. (A region opened meanwhile can only
  /// add a conflict.)
  struct waiting_issue {
    op_kind kind = op_kind::find;
    K key{};
    K hi{};
    std::uint64_t regions_closed = 0;
    std::uint64_t board_version = 0;
    bool valid = false;
  };

  bool still_waits(op_kind kind, const K& key, const K& hi) const {
    return wait_.valid && opt_.semantics == consistency::sequential && wait_.regions_closed == regions_closed_ &&
           wait_.board_version == board_.version() && wait_.kind == kind && !(wait_.key < key) &&
           !(key < wait_.key) && !(wait_.hi < hi) && !(hi < wait_.hi);
  }

  /// Why an operation waits to enter again (waiting_).
  enum class waits_for : std::uint8_t { nothing, second_pass, rerun };

  struct client_op {
    // User-provided: the table value-initializes a new operation (ops_[seq]), which for an implicit constructor first
    // zero-fills all of its 300-odd bytes (a `rep stos`, 42% of try_issue's samples); every member has its own
    // initializer.
    client_op() {}  // NOLINT(modernize-use-equals-default)

    op_kind op = op_kind::find;
    K key{};
    bool completed = false;  // its result is final: delivered in issue order
    bool ran = false;        // its current run has its result, held until no earlier second pass may undo it
    completion done;
    result_type result;
    // range reassembly: parts by start key, and the start of the first part not yet received
    struct part {
      K hi;
      bool inclusive = false;
      std::vector<std::pair<K, V>> items;
    };
    std::map<K, part> parts;
    std::vector<std::vector<std::pair<K, V>>> in_order;  // received from the range's start (or a run's) on, in order
    K cursor{};
    K hi{};        // range: its last key; capped lower_bound / successor: its cap
    key_box box;   // range over dimensions (a read run again is requested afresh)
    bool capped = false;
    // lower_bound / successor: the current pass, its probes (expected once the search has answered) and the best
    // probe answer so far
    std::uint8_t attempt = 0;
    int probes_expected = -1;
    int probes_received = 0;
    bool probe_failed = false;
    node_ref next_node;  // a failed pass's key node's next node: the next pass probes it alone (pass_again) ...
    K next_min{};        // ... while its min key is still this one
    // sequential consistency: second passes of earlier operations this read waits for, whether one of them read one
    // of its keys (it runs again), and (a second pass) the later reads it holds back
    std::uint32_t shadows = 0;
    bool stale = false;
    K rerun_from{};  // stale: it runs again from this key up (run_again)
    bool at_shortcut = false;  // its current run entered at a shortcut (min key `entry`)
    K entry{};
    std::uint32_t region_at = no_region;  // its open region's place in its list (free_regions_ or other_regions_)
    bool region_free = false;             // ... which is free_regions_
    waits_for waiting = waits_for::nothing;
    std::vector<std::uint64_t> shadowed;
  };
  /// A flat table: no allocation per operation (moved out before its completion runs, which may issue more).
  using op_table = absl::flat_hash_map<std::uint64_t, client_op>;

  /// The keys an operation still on its way may visit (sequential consistency): from its entry (the head, or a
  /// shortcut's min key) to its largest key (none: unbounded; a capped lower_bound: below its cap for reads). A flat
  /// list, scanned on an issue unless only plain searches entered at shortcuts are open (conflicts).
  struct open_region {
    std::uint64_t seq = 0;
    K entry_min{};
    K lo{};   // its own first key
    K hi{};   // its largest key (a lower_bound / successor: its key)
    K cap{};  // capped: the largest key its pass may read
    bool via_head = true;
    bool unbounded = false;  // lower_bound / successor: the keys above hi too
    bool capped = false;
    bool read = false;
    bool may_rerun = false;  // a read held back by an earlier second pass, a lower_bound / successor from the head
    bool find = false;
    bool probe = false;  // a capped probe of one node being checked (enter_second_pass): below its cap for writes too

    /// Whether every key it visits, as seen by a read (`by_read`) or a write, lies below `k`.
    bool below(const K& k, bool by_read) const {
      // A capped pass reads only keys below its cap (a later write still keeps clear of the keys its second pass may
      // read); a capped probe that fails passes again from the head, checked afresh.
      if (capped && (by_read || probe)) return !(k < cap);
      return !unbounded && hi < k;
    }
  };

  /// Where an operation enters: a shortcut (its node and min key, and for a lower_bound / successor under sequential
  /// consistency the cap) or the head.
  struct entry_point {
    node_ref node = head_node;
    K entry_min{};
    K cap{};
    bool via_head = true;
    bool capped = false;
  };

  static constexpr std::uint64_t no_limit = ~std::uint64_t{0};
  static constexpr std::uint32_t no_region = ~std::uint32_t{0};

  static bool is_read(op_kind k) { return k != op_kind::insert && k != op_kind::erase && k != op_kind::split; }

  /// Appends a range's parts to its result, in key order: those received before the `last` (emptied), then it. The
  /// last one alone moves in when the result is still empty (a range of one part, the common case); otherwise the
  /// result grows once, to its final size, and each key-value is copied once.
  static void join(std::vector<std::pair<K, V>>& items, std::vector<std::vector<std::pair<K, V>>>& earlier,
                   std::vector<std::pair<K, V>>&& last) {
    if (items.empty() && earlier.empty()) {
      items = std::move(last);
      return;
    }
    std::size_t n = items.size() + last.size();
    for (const auto& part : earlier) n += part.size();
    items.reserve(n);
    const auto append = [&](std::vector<std::pair<K, V>>& part) {
      items.insert(items.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    };
    for (auto& part : earlier) append(part);
    append(last);
    earlier.clear();
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
  /// has its answer; a pass that must run again from the head sets `again`.
  bool neighbour_answered(client_op& o, reply_type& p, bool& again) {
    if (p.attempt != o.attempt) return false;
    auto& res = o.result;
    res.head_stamp = std::max(res.head_stamp, p.head_stamp);
    if (p.probes >= 0 && p.st == status::retry) {
      // A pass without probes found no key past `key` (below its cap) in the node of the key: again, at that node's
      // next node when the node named it (nothing there from `key` up), else from the head, probing.
      o.next_node = p.next;
      o.next_min = p.next_min;
      again = true;
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
      again = true;
      return false;
    }
    if (!res.key) res.st = ordered_map_status::absent;
    return true;
  }

  /// A lower_bound / successor passes again: a probe of the next node of its key's node when its failed pass named one
  /// (that node's first key is the answer), else from the head, probing. Under sequential consistency it waits in
  /// waiting_ (issue_waiting): later reads of its client may be on their way beside it — above a capped pass's cap,
  /// or behind a pass from the head, which the new pass would follow; otherwise it enters at once.
  void pass_again(std::uint64_t seq, client_op& o) {
    next_pass(o);
    if (opt_.semantics == consistency::sequential) {
      o.waiting = waits_for::second_pass;
      waiting_.push_back(seq);
      // Until it enters, its region covers every key above its shortcut's min key for every operation.
      reshape_region(seq, [](open_region& r) { r.capped = false; });
      return;
    }
    reenter_at_head(seq);
    to_enter_.push_back(next_pass_entry(seq, o));
  }

  /// The request of a lower_bound / successor's next pass: a probe of the node its failed pass named (once: if that
  /// one fails too, the pass after it is from the head), or a pass from the head that probes the nodes past its key's.
  std::pair<entering, entry_reason> next_pass_entry(std::uint64_t seq, client_op& o) {
    if (!o.next_node.valid()) return {{probing_request(seq, o), head_node}, entry_reason::again};
    const node_ref at = o.next_node;
    o.next_node = {};
    request_type r = request_for(seq, o, entry_point{at, o.key, K{}, false, false});
    r.set(flag::probe);
    r.set(flag::expect_min);
    r.expected_min = o.next_min;
    if (opt_.semantics == consistency::sequential) {
      if (const auto cap = probe_cap(o)) {
        r.set(flag::capped);
        r.hi = *cap;
      }
    }
    o.probes_expected = 1;  // the pass's own answer: nothing in the key's node from the key up
    return {{std::move(r), at}, entry_reason::again};
  }

  /// The keys a probe of the node a failed pass named may read (sequential consistency): from the node's min key up to
  /// the next min key posted on this rank's board above it — a node after it, so the node's keys lie below — which
  /// the probe checks (it answers only below its cap); unbounded when no min key above it is posted.
  std::optional<K> probe_cap(const client_op& o) const { return board_.next_min_above(o.next_min); }

  /// The request of a pass from the head that probes the nodes past its key's node.
  request_type probing_request(std::uint64_t seq, const client_op& o) const {
    request_type r = request_for(seq, o, entry_point{});
    r.set(flag::with_probes);
    return r;
  }

  /// A run of operation `seq` has its result. Final unless an earlier second pass may still read one of its keys
  /// (held), or one did (it runs again).
  void ran(std::uint64_t seq, client_op& o) {
    o.ran = true;
    if (o.shadows > 0) return;
    if (o.stale && reads_from(o, o.rerun_from)) return run_again(seq, o);
    o.stale = false;
    settle(seq, o);
  }

  /// Whether the run of read `o` that has its result read a key from `from` up. A lower_bound / successor marked stale
  /// before it had its answer read only up to its answer.
  static bool reads_from(const client_op& o, const K& from) {
    return !(seeks_neighbour(o.op) && o.result.key && *o.result.key < from);
  }

  /// Operation `seq`'s result is final: its region closes and, a second pass, the reads it held back are released
  /// (those that may have read one of the keys it read run again).
  void settle(std::uint64_t seq, client_op& o) {
    o.ran = false;
    o.completed = true;
    close_region(seq);
    if (o.shadowed.empty()) return;
    const K* top = o.result.key ? &*o.result.key : nullptr;  // it read [key, answer], or every key above key
    auto held = std::move(o.shadowed);
    const K from = o.key;
    for (const std::uint64_t later : held) {
      auto it = ops_.find(later);
      auto& l = it->second;
      --l.shadows;
      const K* ltop = read_top(l);
      if ((top == nullptr || !(*top < l.key)) && (ltop == nullptr || !(*ltop < from))) mark_stale(l, from);
      if (l.shadows == 0 && l.ran) ran(later, l);
    }
  }

  /// The largest key a read may have read on its current run (nullptr: unbounded).
  static const K* read_top(const client_op& o) {
    if (o.op == op_kind::find) return &o.key;
    if (o.op == op_kind::range) return &o.hi;
    if ((o.ran || o.completed) && o.result.key) return &*o.result.key;
    return o.capped ? &o.hi : nullptr;
  }

  /// Read `l` runs again from key `from` up: an earlier second pass read its keys from `from` up, maybe after `l` did.
  static void mark_stale(client_op& l, const K& from) {
    const K& f = from < l.key ? l.key : from;
    if (!l.stale || f < l.rerun_from) l.rerun_from = f;
    l.stale = true;
  }

  /// A read runs again from `rerun_from` up: its result there is dropped (late probes of its old pass are recognised
  /// by the attempt number); it waits in waiting_ for an entry, its region open meanwhile.
  ///
  /// Only from there: its keys below were read in their place in issue order, and a later write of this client may
  /// have changed them since (it did not wait for this read, which was then on its way from the head, or already had
  /// its result, when the earlier second pass that holds it back was yet to start). From `from` up no later write has
  /// run: each earlier second pass's operation, open since before this read was issued, kept every later write off
  /// the keys from its own key up. A range keeps the key-values it read below `from`; a lower_bound / successor that
  /// found nothing below `from` becomes a lower_bound of `from`.
  void run_again(std::uint64_t seq, client_op& o) {
    o.ran = false;
    o.stale = false;
    if (o.key < o.rerun_from) {
      o.key = o.rerun_from;
      if (o.op == op_kind::successor) o.op = op_kind::lower_bound;
    }
    if (o.op == op_kind::range) {
      auto& items = o.result.items;
      items.erase(std::lower_bound(items.begin(), items.end(), o.key,
                                   [](const std::pair<K, V>& kv, const K& k) { return kv.first < k; }),
                  items.end());
    } else {
      o.result = {};
    }
    o.parts.clear();
    o.in_order.clear();
    o.cursor = o.key;
    if (seeks_neighbour(o.op)) next_pass(o);
    o.waiting = waits_for::rerun;
    waiting_.push_back(seq);
    hold_region(seq, o);
  }

  /// Keeps the region of a read that may run again open (reopens it when its result had been final), so that no later
  /// write of its keys is issued before it has run.
  void hold_region(std::uint64_t seq, client_op& o) {
    if (find_region(seq) != nullptr) {
      reshape_region(seq, [](open_region& r) { r.may_rerun = true; });  // no longer passed by a find (conflicts)
      return;
    }
    open_region r = region_of(seq, o, entry_point{});
    r.via_head = false;  // enters nowhere yet: every later operation its keys may concern keeps clear
    r.entry_min = o.key;
    r.may_rerun = true;
    open_region_of(o, r);
  }

  /// Enters the operations waiting in waiting_ where they now may.
  void issue_waiting() {
    for (std::size_t i = 0; i < waiting_.size();) {
      const std::uint64_t seq = waiting_[i];
      auto& o = ops_.find(seq)->second;
      if (!(o.waiting == waits_for::second_pass ? enter_second_pass(seq, o) : enter_rerun(seq, o))) {
        ++i;
        continue;
      }
      o.waiting = waits_for::nothing;
      waiting_[i] = waiting_.back();
      waiting_.pop_back();
    }
  }

  /// The second pass of a lower_bound / successor enters once no earlier operation it could overtake is on its way:
  /// at the head, or as a probe of the node its failed pass named — a node past its key, entered as at a shortcut
  /// (an earlier operation from the head or a shortcut that may reach keys from its key up could be overtaken there;
  /// an earlier lower_bound / successor that is not capped holds it, as it holds a read at a shortcut). The later reads
  /// issued beside its first pass that may read its keys (above its key) are held back until it has its answer; its
  /// region keeps every later write off its keys meanwhile, wherever it enters.
  bool enter_second_pass(std::uint64_t seq, client_op& o) {
    const bool at_next = o.next_node.valid();
    open_region n;
    n.lo = o.key;
    n.hi = o.key;
    n.unbounded = true;
    n.read = true;
    if (at_next) {
      // The probe reads the one node, from its min key below its cap: its keys below that were read in the failed
      // pass's place in issue order, at its key's node (which the earlier operations on them reached first).
      n.via_head = false;
      n.lo = n.hi = n.entry_min = o.next_min;
      if (const auto cap = probe_cap(o)) {
        n.capped = true;
        n.probe = true;
        n.cap = *cap;
      }
    }
    if (conflicts(n, seq)) return false;
    o.capped = false;
    reshape_region(seq, [&](open_region& r) {
      r.via_head = !at_next;
      r.entry_min = o.key;
      r.capped = false;
      r.may_rerun = true;  // it may pass from the head: a later write there must wait for it
    });
    for (auto& [later, l] : ops_) {
      if (later <= seq || !is_read(l.op)) continue;
      const K* top = read_top(l);
      if (top != nullptr && *top < o.key) continue;  // reads only below its key
      hold_back(later, l, o);
    }
    std::sort(o.shadowed.begin(), o.shadowed.end());  // released in issue order, whatever the table's order
    o.at_shortcut = at_next;
    o.entry = o.key;
    if (at_next) hold_behind_unbounded_reads(seq, o);
    to_enter_.push_back(next_pass_entry(seq, o));
    return true;
  }

  /// Later read `l` (sequence number `later`) is held back until `o` has its answer (settle releases it); a final
  /// result not yet delivered is held again, and its region stays open meanwhile.
  void hold_back(std::uint64_t later, client_op& l, client_op& o) {
    if (l.completed) {
      l.completed = false;
      l.ran = true;
    }
    ++l.shadows;
    o.shadowed.push_back(later);
    hold_region(later, l);
  }

  /// Read `seq` entered at a shortcut beside earlier lower_bounds / successors that are not capped, which it did not
  /// wait for (pair_conflicts): it may read a key before one of them does, so it is held until each has its answer,
  /// and runs again if it read one of that one's keys (settle) — as the reads issued beside a capped pass that passes
  /// again are. Their regions keep every later write off their keys meanwhile.
  void hold_behind_unbounded_reads(std::uint64_t seq, client_op& o) {
#if SHOAL_CHECKS >= 2
    if (unbounded_open_ != static_cast<std::size_t>(std::count_if(other_regions_.begin(), other_regions_.end(),
                                                                  holds_later_reads))) {
      throw std::logic_error("shoal ordered_map: the client miscounted its open lower_bounds (a shoal bug)");
    }
#endif
    if (unbounded_open_ == 0 || !o.at_shortcut || !is_read(o.op)) return;  // no scan on the common path
    const K* top = read_top(o);
    // A region that holds later reads is never a free one: the others alone. By index: holding `seq` back reshapes its
    // own region, which may move into this list, at its end (and past the test below: it is not earlier than seq).
    for (std::size_t i = 0; i < other_regions_.size(); ++i) {
      const open_region& r = other_regions_[i];
      if (!(r.seq < seq) || !holds_later_reads(r) || (top != nullptr && *top < r.lo)) continue;
      auto& e = ops_.find(r.seq)->second;
      hold_back(seq, o, e);  // (r may have moved)
      std::inplace_merge(e.shadowed.begin(), e.shadowed.end() - 1, e.shadowed.end());  // kept in issue order
    }
  }

  /// Plain search `seq` (a find or a capped pass) came back from the shortcut it entered at (it went stale). The later
  /// plain searches that entered at the same shortcut beside it did not wait for it and may have been served there
  /// before it will be: each is held until it has its answer, and runs again.
  void hold_later_runs_beside(std::uint64_t seq, client_op& o) {
    for (auto& [later, l] : ops_) {
      if (later <= seq || !plain_run(l) || l.entry < o.entry || o.entry < l.entry) continue;
      mark_stale(l, l.key);
      hold_back(later, l, o);
    }
    std::sort(o.shadowed.begin(), o.shadowed.end());  // released in issue order
  }

  /// A read that runs again enters as a new operation would (only earlier operations count; the window does not).
  bool enter_rerun(std::uint64_t seq, client_op& o) {
    const auto at = entry_for(o.op, o.key, o.op == op_kind::range ? o.hi : o.key, seq);
    if (!at) return false;
    take_entry(o, *at);
    reshape_region(seq, [&](open_region& r) {
      const bool may_rerun = r.may_rerun;
      r = region_of(seq, o, *at);
      r.may_rerun = r.may_rerun || may_rerun;
    });
    hold_behind_unbounded_reads(seq, o);
    to_enter_.push_back({{request_for(seq, o, *at), at->node}, entry_reason::rerun});
    return true;
  }

  /// Where an operation of kind `kind` on `key` whose largest key is `hi` may enter now, counting the operations
  /// issued before `before`; nothing when it must wait (sequential consistency).
  std::optional<entry_point> entry_for(op_kind kind, const K& key, const K& hi, std::uint64_t before) const {
    std::optional<typename bulletin_board<K>::shortcut> sc;
    if (opt_.semantics != consistency::total_order) sc = board_.lookup(key, kind == op_kind::erase);
    if (opt_.semantics != consistency::sequential) {
      if (!sc) return entry_point{};
      return entry_point{sc->node, sc->min, K{}, false, false};
    }
    open_region n;
    n.lo = key;
    n.hi = hi;
    n.unbounded = seeks_neighbour(kind);
    n.read = is_read(kind);
    n.find = kind == op_kind::find;
    if (sc) {
      n.via_head = false;
      n.entry_min = sc->min;
      if (n.unbounded && sc->next_min) {
        n.capped = true;
        n.cap = *sc->next_min;
      }
      if (!conflicts(n, before)) return entry_point{sc->node, sc->min, n.cap, false, n.capped};
    }
    // A lower_bound / successor that has a shortcut waits for the operations it conflicts with instead of entering
    // at the head behind them: from the head it probes at every level where it descends (3-4 times the messages of
    // a shortcut's pass), and while it is on its way every later one would have to follow it there.
    if (sc && n.unbounded) return std::nullopt;
    n.via_head = true;
    n.capped = false;
    if (conflicts(n, before)) return std::nullopt;
    return entry_point{};
  }

  /// The region of operation `seq` entering at `at`.
  open_region region_of(std::uint64_t seq, const client_op& o, const entry_point& at) const {
    open_region r;
    r.seq = seq;
    r.entry_min = at.entry_min;
    r.lo = o.key;
    r.hi = o.op == op_kind::range ? o.hi : o.key;
    r.cap = at.cap;
    r.via_head = at.via_head;
    r.unbounded = seeks_neighbour(o.op);
    r.capped = at.capped;
    r.read = is_read(o.op);
    r.find = o.op == op_kind::find;
    // A lower_bound / successor from the head may pass again from the head, behind what entered there after it: a
    // later write at the head must not touch its keys meanwhile (conflicts).
    r.may_rerun = r.unbounded && at.via_head;
    return r;
  }

  /// Operation `o` enters at `at`: a capped pass keeps its cap in `hi`.
  static void take_entry(client_op& o, const entry_point& at) {
    o.at_shortcut = !at.via_head;
    o.entry = at.entry_min;
    o.capped = at.capped;
    if (at.capped) o.hi = at.cap;
  }

  /// The request of operation `seq` entering at `at` (take_entry first; an insert's value is the caller's to set).
  request_type request_for(std::uint64_t seq, const client_op& o, const entry_point& at) const {
    request_type r;
    r.op = o.op;
    r.client = me_;
    r.seq = seq;
    r.key = o.key;
    r.hi = o.hi;
    r.box = o.box;
    r.attempt = o.attempt;
    if (o.op == op_kind::range) r.set(flag::hi_inclusive);
    if (at.capped) r.set(flag::capped);
    // Sequential consistency probes from the first pass when it enters at the head: a second pass would re-enter there
    // behind this client's later operations (which may enter at the head behind this one) and could see their
    // effects, out of issue order. From a shortcut it does not: while it is on its way, a later write of this client
    // enters at the head only if every key it touches lies below the shortcut's min key (conflicts), so none of them
    // can change the answer (a key >= `key`) of the second pass that the first one may need.
    if (seeks_neighbour(o.op) && opt_.semantics == consistency::sequential && at.via_head) r.set(flag::with_probes);
    return r;
  }

  /// Delivers what completed: operation `seq` (without the hold-back queue: it settled as it ran), or every final
  /// result next in issue order.
  void deliver_completed(std::uint64_t seq) {
    if (opt_.semantics != consistency::sequential) {
      auto it = ops_.find(seq);
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

  /// Sequential consistency: may operation `n` (its region as it would enter) overtake one of this client's operations
  /// issued before `before` and still on its way — or, a write at the head, change a key that a read which may still
  /// run again behind it (one held by a second pass, a lower_bound / successor from the head) may read?
  ///
  /// Without a scan when `n` is a new plain search entering at a shortcut (a find, a capped pass) and every open region
  /// is one too, each entered on the board as it is now: each lies between its shortcut's min key and the next one's
  /// (board lookup; a capped pass's cap is the next one's min key), so it either entered at n's shortcut (no conflict:
  /// passes_freely) or lies wholly below or above n's — or a find from the head whose key lies below n's shortcut
  /// (a find below every shortcut of the board enters at the head; it visits keys up to its own only). Without that
  /// last case one such find kept every issue scanning all open regions until it completed (8% of a rank's samples).
  bool conflicts(const open_region& n, std::uint64_t before) const {
    // A plain search at a shortcut, counting every operation issued before it: the free regions are not in its way
    // while none of them opened under another board or changed (they lie between two shortcuts of the board it
    // looked at, as it does), so only the others are looked at — none, when they are finds from the head below its
    // entry. The others are few (second passes, reads from the head): a client's window of plain searches is not
    // scanned for each of them.
    if (before == no_limit && passes_freely(n) &&
        (free_open_ == 0 || (!free_mixed_ && free_board_version_ == board_.version()))) {
      bool in_way = false;
      if (others_open_ != head_finds_open_ || (head_finds_open_ != 0 && !(head_finds_top_ < n.entry_min))) {
        in_way = std::any_of(other_regions_.begin(), other_regions_.end(),
                             [&](const open_region& o) { return pair_conflicts(n, o); });
      }
#if SHOAL_CHECKS >= 2
      if (conflicts_scan(n, before) != in_way) {
        throw std::logic_error("shoal ordered_map: a read entered beside one it may overtake (a shoal bug)");
      }
#endif
      return in_way;
    }
    return conflicts_scan(n, before);
  }

  bool conflicts_scan(const open_region& n, std::uint64_t before) const {
    for (const auto* list : {&free_regions_, &other_regions_}) {
      for (const auto& o : *list)
        if (o.seq < before && pair_conflicts(n, o)) return true;
    }
    return false;
  }

  /// Whether `n` may overtake `o` (or, a write at the head, change a key `o` may read when it runs again).
  static bool pair_conflicts(const open_region& n, const open_region& o) {
    if (n.via_head && o.via_head) {
      // Both enter at the head: the list keeps their order, unless the earlier one may run again behind this one.
      if (n.read || !o.read || !o.may_rerun) return false;
      return !(n.hi < o.lo || o.below(n.lo, false));  // whether the write touches one of its keys
    }
    // A read at a shortcut does not wait for a lower_bound / successor that is not capped: it enters held behind it
    // (hold_behind_unbounded_reads).
    if (n.read && !n.via_head && holds_later_reads(o)) return false;
    if (passes_freely(n) && passes_freely(o) && !(n.entry_min < o.entry_min) && !(o.entry_min < n.entry_min)) {
      return false;  // two plain searches entered at one shortcut keep their order (a stale shortcut: on_bounce)
    }
    // The nodes an operation visits lie between its entry and its largest key (no largest key: unbounded).
    const bool below = !n.via_head && o.below(n.entry_min, n.read);
    const bool above = !o.via_head && n.below(o.entry_min, o.read);
    return !below && !above;
  }

  /// Whether region `r` is a plain search entered at a shortcut (a find, a capped pass), which a later one entering at
  /// the same shortcut need not wait for (not one that may run again: it would enter elsewhere).
  static bool passes_freely(const open_region& r) { return (r.find || r.capped) && !r.via_head && !r.may_rerun; }

  /// Whether region `r` is a find from the head that does not run again: it visits keys up to its own only, so a plain
  /// search at a shortcut above its key cannot overtake it (conflicts).
  static bool head_find(const open_region& r) { return r.find && r.via_head && !r.may_rerun; }

  /// Whether region `r` is a lower_bound / successor that is not capped (from the head, at the last shortcut, waiting
  /// to pass again or to run again): later reads at shortcuts enter held behind it rather than wait for it. Whatever
  /// its state, it keeps every later write off the keys from its own key up until it has its answer.
  static bool holds_later_reads(const open_region& r) { return r.unbounded && r.read && !r.capped; }

  /// Whether operation `o`'s current run is a plain search from a shortcut: a find, or a capped pass.
  static bool plain_run(const client_op& o) { return o.at_shortcut && (o.op == op_kind::find || o.capped); }

  open_region* find_region(std::uint64_t seq) {
    auto it = ops_.find(seq);
    if (it == ops_.end() || it->second.region_at == no_region) return nullptr;
    return &regions(it->second.region_free)[it->second.region_at];
  }

  /// The open regions that pass freely (free) or the others.
  std::vector<open_region>& regions(bool free) { return free ? free_regions_ : other_regions_; }

  /// Opens region `r` of operation `o`.
  void open_region_of(client_op& o, const open_region& r) {
    place_region(o, r);
    count(r, false);
  }

  /// Puts region `r` of operation `o` in its list (not counted).
  void place_region(client_op& o, const open_region& r) {
    o.region_free = passes_freely(r);
    auto& list = regions(o.region_free);
    o.region_at = static_cast<std::uint32_t>(list.size());
    list.push_back(r);
  }

  /// Takes operation `o`'s region out of its list (not counted) and returns it.
  open_region take_region(client_op& o) {
    auto& list = regions(o.region_free);
    const std::uint32_t at = std::exchange(o.region_at, no_region);
    open_region r = std::move(list[at]);
    if (at + 1 != list.size()) {
      list[at] = std::move(list.back());
      ops_.find(list[at].seq)->second.region_at = at;
    }
    list.pop_back();
    return r;
  }

  /// Counts region `r` in (or, `leaving`, out of) the free plain searches or the others (conflicts) — of these, the
  /// finds from the head, with the largest key counted in since none was open — and the ones that hold later reads
  /// behind them. A free one counted in under a board that changed since the first one still open, or
  /// after a change of its region (it may no longer lie between two shortcuts of the board), makes the free ones
  /// *mixed* until none is left.
  void count(const open_region& r, bool leaving, bool changed = false) {
    const auto tally = [leaving](std::size_t& n) { n = leaving ? n - 1 : n + 1; };
    if (holds_later_reads(r)) tally(unbounded_open_);
    if (head_find(r)) {
      if (!leaving && (head_finds_open_ == 0 || head_finds_top_ < r.hi)) head_finds_top_ = r.hi;
      tally(head_finds_open_);  // leaving, the top stays: an upper bound of the open ones' keys until none is open
    }
    if (!passes_freely(r)) return tally(others_open_);
    if (leaving) {
      if (--free_open_ == 0) free_mixed_ = false;
      return;
    }
    if (free_open_++ == 0) free_board_version_ = board_.version();
    if (changed || free_board_version_ != board_.version()) free_mixed_ = true;
  }

  /// Changes the open region of operation `seq` (if it has one) by `change`.
  template <class Change>
  void reshape_region(std::uint64_t seq, Change&& change) {
    auto it = ops_.find(seq);
    if (it == ops_.end() || it->second.region_at == no_region) return;
    client_op& o = it->second;
    open_region* r = &regions(o.region_free)[o.region_at];
    ++regions_closed_;  // a region that changes may no longer be in the way of a waiting operation
    count(*r, true);
    change(*r);
    count(*r, false, true);
    if (passes_freely(*r) != o.region_free) place_region(o, take_region(o));  // it moves to the other list
  }

  void reenter_at_head(std::uint64_t seq) {
    reshape_region(seq, [](open_region& r) {
      r.via_head = true;
      r.capped = false;
    });
  }

  void close_region(std::uint64_t seq) {
    auto it = ops_.find(seq);
    if (it == ops_.end() || it->second.region_at == no_region) return;
    ++regions_closed_;
    count(take_region(it->second), true);
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
  std::uint64_t next_delivery_;  // sequential consistency: the sequence number delivered next
  // regions of the operations in ops_ whose result is not final: the plain searches entered at shortcuts
  // (passes_freely) and the others, apart (conflicts looks at the others alone when it can)
  std::vector<open_region> free_regions_;
  std::vector<open_region> other_regions_;
  std::uint64_t regions_closed_ = 0;  // regions closed or changed so far (wait_)
  // open regions that are plain searches entered at shortcuts (passes_freely) and the others; the board's version when
  // the first of the free ones opened, and whether one opened since under another or after a change (conflicts)
  std::size_t free_open_ = 0;
  std::size_t others_open_ = 0;
  std::size_t unbounded_open_ = 0;  // open regions that hold later reads behind them (holds_later_reads)
  std::size_t head_finds_open_ = 0;  // of the others, finds from the head (head_find), and a key no lower than theirs
  K head_finds_top_{};
  std::uint64_t free_board_version_ = 0;
  bool free_mixed_ = false;
  waiting_issue wait_;  // the operation try_issue last found it must wait for an earlier one
  std::vector<std::uint64_t> waiting_;  // operations waiting to enter again (second passes, reads run again)
  std::deque<std::pair<entering, entry_reason>> to_enter_;  // requests for the service to enter (next_entry)
  std::uint64_t next_seq_;
  std::size_t window_;
  int sample_count_ = 0;
  double sample_start_ = clock_now();
  double last_rate_ = 0;
  bool growing_ = true;
};

}  // namespace shoal::detail::ordered_map
