// shoal/containers/detail/ordered_map/service.hpp — one rank's share of the skip-list service: its nodes (active
// objects handling requests one at a time), its node manager, its bulletin board of shortcuts, its channel to the
// other ranks (channel.hpp) and its client (client.hpp, the application side); on the head's rank also the sequencer
// that puts every rank's operations in one order under total order (a second client, below).
//
// Order (paper §2.4): requests only move forward and each node handles one at a time, so requests cannot overtake
// one another on a path — provided the channel into a node stays FIFO when its sender changes. Two mechanisms keep it:
//   fence   when a node takes over the sending to a successor from a node on another rank (link, unlink), the old
//           sender sends a fence behind its last request; the successor's rank acknowledges it to the new sender,
//           which holds its messages to that successor until then (channel.hpp);
//   marker  a predecessor that starts waiting for a min-key DELETE sends a marker to the target; the target finishes
//           the delete only once every waiting predecessor's marker has arrived (their earlier requests came first).
//
// The node side is one state machine over one rank's nodes, so it is one class; this file declares it and holds the
// glue (entry, dispatch, replies, bounces). Its protocol steps are defined by job in the files included at the end:
//   service_requests.hpp  a request at a node: entry checks, hop or descend (Listing 1), holding, k, the bottom step
//   service_reads.hpp     lower_bound / successor probes and range-query parts (Listing 2)
//   service_split.hpp     insert and split (Figures 5, 6), the allocation ring, linking a new node in
//   service_erase.hpp     the delete of a node's min key (Figure 7b), markers, unlinking and freeing a node,
//                         merging an under-full node into its predecessor
#pragma once

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "shoal/containers/detail/ordered_map/bulletin_board.hpp"
#include "shoal/containers/detail/ordered_map/channel.hpp"
#include "shoal/containers/detail/ordered_map/client.hpp"
#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/detail/ordered_map/node.hpp"
#include "shoal/containers/detail/ordered_map/node_manager.hpp"
#include "shoal/containers/ordered_map_operation.hpp"
#include "shoal/containers/ordered_map_options.hpp"

namespace shoal::detail::ordered_map {

template <class K, class V>
class service {
 public:
  using node_type = node<K, V>;
  using request_type = request<K, V>;
  using message_type = message<K, V>;
  using reply_type = reply<K, V>;
  using client_type = client<K, V>;
  using result_type = typename client_type::result_type;
  using completion = typename client_type::completion;

  static constexpr node_ref head_ref = head_node;

  service(const ordered_map_options& opts, transport net)
      : opt_(opts), me_(net.rank), np_(net.ranks),
        chan_(std::move(net), opts.batch, stats_), client_(opt_, me_, board_), manager_(me_, opts.nodes_per_rank),
        heights_(opts.tower_p, opts.max_height, opts.seed + static_cast<std::uint64_t>(me_) * 0x9e3779b97f4a7c15ULL),
        spread_next_(me_) {
    if (me_ == 0) {
      const node_ref h = manager_.acquire();
      auto& head = *manager_.get(h);
      head.is_head = true;
      head.tower.resize(static_cast<std::size_t>(opt_.max_height));
      sequencer_opt_ = sequencer_options(opt_);
      sequencer_.emplace(sequencer_opt_, me_, board_, first_sequenced_seq);
    }
  }

  service(const service&) = delete;
  service& operator=(const service&) = delete;

  // ---- network side ------------------------------------------------------------------------------------------

  /// A message from another rank.
  void deliver(std::span<const std::byte> bytes) { chan_.deliver(bytes, dispatcher()); }

  // ---- client side -------------------------------------------------------------------------------------------

  /// Issues an operation unless the window is full or (sequential consistency) it would have to wait for an earlier
  /// operation of this client; `done` runs once with the result (in issue order under sequential consistency).
  /// `done` is moved from only when the operation is issued.
  bool try_issue(const ordered_map_operation<K, V>& spec, completion&& done) {
    if (sequencer_ && opt_.semantics == consistency::total_order) return try_sequence_own(spec, done);
    auto e = client_.try_issue(spec, std::move(done));
    if (!e) return false;
    enter(std::move(e->req), e->entry);
    return true;
  }

  /// Changes the semantics of this rank's client and nodes (every rank must change it, between quiescent points).
  void set_semantics(consistency c) { opt_.semantics = c; }
  /// Changes k for this rank's nodes (every rank must change it, between quiescent points).
  void set_asynchrony(std::size_t k) { opt_.asynchrony = k; }

  /// Operations issued by this rank and not yet delivered.
  std::size_t outstanding() const { return client_.outstanding() + own_sequenced_; }
  /// The window this rank's operations are issued under: the sequencer's on the head's rank under total order (its
  /// operations go there, beside every other rank's), else its client's.
  std::size_t window() const {
    if (sequencer_ && opt_.semantics == consistency::total_order) return sequencer_->window();
    return client_.window();
  }

  /// Pushes buffered messages out.
  void flush() { chan_.flush(); }

  // ---- inspection (local) ----------------------------------------------------------------------------------------

  std::size_t local_keys() const {
    std::size_t n = 0;
    for (auto& s : manager_.slots())
      if (s.in_use) n += s.keys.size();
    return n;
  }
  std::size_t local_nodes() const { return manager_.in_use(); }
  const ordered_map_stats& stats() const { return stats_; }

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
  struct pending_split {
    int height = 1;
    bool before = false;
  };

  // ---- glue: sending through the channel, dispatch, entry -------------------------------------------------------

  void post(int rank, message_type&& m) { chan_.post(rank, std::move(m)); }
  void send_from(const node_ref& from, const node_ref& dest, message_type&& m) {
    chan_.send_from(from, dest, std::move(m));
  }
  void expect_fence(const node_ref& from, const node_ref& dest) { chan_.expect_fence(from, dest); }
  bool needs_fence(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) const {
    return chan_.needs_fence(old_sender, new_sender, dest);
  }
  void hand_over(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) {
    chan_.hand_over(old_sender, new_sender, dest);
  }
  void handle(fence& f) { chan_.fence_arrived(f); }
  void handle(fence_ack& f) { chan_.fence_acknowledged(f); }

  auto dispatcher() {
    return [this](message_type& m) { std::visit([this](auto& x) { this->handle(x); }, m); };
  }
  void pump() { chan_.pump(dispatcher()); }

  void enter(request_type&& r, const node_ref& entry) {
    r.target = entry;
    r.set(flag::entry);
    r.set(flag::via_shortcut, !(entry == head_ref));
    if (!(entry == head_ref)) ++stats_.shortcuts_taken;
    r.waiters.clear();
    post(entry.rank, std::move(r));
    pump();
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

  void set_min(node_type& x, const K& m) {
    board_.remove(x.min, x.self);
    x.min = m;
    board_.post(m, x.self, x.height());
  }

  // ---- replies and bounces ---------------------------------------------------------------------------------------

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
    if (b.req.has(flag::probe)) {  // the probed node is gone: like an empty one
      reply_type p = reply_for(b.req, status::retry);
      return handle(p);
    }
    auto& c = client_of(b.req.seq);
    c.on_bounce(b.req);
    enter_for_client(c, false);  // the bounce was counted where it left
  }

  void handle(reply_type& p) {
    if (p.st == status::split_needed) issue_split(p);
    auto& c = client_of(p.seq);
    c.on_reply(p);
    enter_for_client(c, true);
  }

  /// Enters what client `c` asks for: a pass that goes again from the head (a lower_bound / successor pass that met an
  /// empty node or its cap: counted as bounces with `count_again`), a read that runs again (client.hpp). One at a
  /// time: entering one may run handlers that reply to the client again. The sequencer then takes what waits for it.
  void enter_for_client(client_type& c, bool count_again) {
    while (auto e = c.next_entry()) {
      if (e->second == client_type::entry_reason::rerun) ++stats_.reads_run_again;
      if (e->second == client_type::entry_reason::again && count_again) ++stats_.bounces;
      enter(std::move(e->first.req), e->first.entry);
    }
    if (&c != &client_) sequence_waiting();
  }

  // ---- total order: the sequencer on the head's rank -------------------------------------------------------------
  //
  // Under total order every operation is sent to the head's rank, which takes them in the order they arrive and
  // issues them as the one client of a second client object, the sequencer, under sequential consistency: its
  // operations take effect in its issue order, which is therefore the total order (the head stamp). As the only
  // client it enters at the shortcuts of the head's rank wherever that keeps its order (client.hpp), instead of walking
  // every operation down from the head. Its replies come back here; each one completes the operation of the rank that
  // sent it with one reply message.

  /// Sequence numbers of the sequencer's operations: above those of any rank's client, below internal requests'.
  static constexpr std::uint64_t first_sequenced_seq = std::uint64_t{1} << 61;

  /// Who waits for a sequenced operation: a client of another rank (its sequence number and what its reply needs), or
  /// this rank's caller (`done`).
  struct sender {
    std::int32_t client = 0;
    std::uint64_t seq = 0;
    op_kind op = op_kind::find;
    std::uint8_t attempt = 0;
    K key{};
    K hi{};
    std::uint64_t stamp = 0;
    completion done;
  };

  static ordered_map_options sequencer_options(ordered_map_options o) {
    o.semantics = consistency::sequential;
    return o;
  }

  /// The client a reply or bounce with sequence number `seq` belongs to (internal requests: the rank's own client,
  /// which ignores them).
  client_type& client_of(std::uint64_t seq) {
    if (sequencer_ && seq >= first_sequenced_seq && seq < first_internal_seq) return *sequencer_;
    return client_;
  }

  /// An operation of some rank's client under total order, arrived at the head's rank: sequenced in arrival order.
  void sequence(request_type&& r) {
    if (unsequenced_.empty() && try_sequence(r)) return;
    ++stats_.sequencer_waits;
    unsequenced_.push_back(std::move(r));
  }

  /// Sequences what waits, in arrival order, until the sequencer's window is full or it must wait (not re-entrant:
  /// what arrives meanwhile queues behind).
  void sequence_waiting() {
    if (sequencing_) return;
    sequencing_ = true;
    while (!unsequenced_.empty() && try_sequence(unsequenced_.front())) unsequenced_.pop_front();
    sequencing_ = false;
  }

  bool try_sequence(const request_type& r) {
    const ordered_map_operation<K, V> spec{static_cast<ordered_map_op>(r.op), r.key, r.hi, r.value, r.box};
    auto e = sequencer_issue(spec);
    if (!e) return false;
    enter_sequenced(std::move(*e), {r.client, r.seq, r.op, r.attempt, r.key, r.hi, 0, {}});
    return true;
  }

  /// An operation of this rank (the head's) under total order goes to the sequencer directly, behind the ones that
  /// wait for it; `done` is moved from only when it is issued.
  bool try_sequence_own(const ordered_map_operation<K, V>& spec, completion& done) {
    sequence_waiting();
    if (!unsequenced_.empty()) return false;
    auto e = sequencer_issue(spec);
    if (!e) return false;
    ++own_sequenced_;
    enter_sequenced(std::move(*e), {me_, 0, kind_of(spec.op), 0, spec.key, spec.hi, 0, std::move(done)});
    return true;
  }

  std::optional<typename client_type::entering> sequencer_issue(const ordered_map_operation<K, V>& spec) {
    return sequencer_->try_issue(spec, [this](result_type&& res) { answer_sequenced(std::move(res)); });
  }

  /// Stamps an operation the sequencer issued and enters it. The sequencer delivers in its issue order, so the
  /// senders wait in a FIFO (filled before entering: entering may already deliver).
  void enter_sequenced(typename client_type::entering&& e, sender&& s) {
    s.stamp = ++head_stamp_;
    sequenced_.push_back(std::move(s));
    ++stats_.sequenced;
    enter(std::move(e.req), e.entry);
  }

  /// The result of the oldest sequenced operation: to this rank's caller, or as the final reply to the client that
  /// sent it.
  void answer_sequenced(result_type&& res) {
    sender s = std::move(sequenced_.front());
    sequenced_.pop_front();
    if (s.done) {
      --own_sequenced_;
      res.head_stamp = s.stamp;
      return s.done(std::move(res));
    }
    reply_type p;
    p.client = s.client;
    p.seq = s.seq;
    p.op = s.op;
    p.attempt = s.attempt;
    p.head_stamp = s.stamp;
    p.st = static_cast<status>(res.st);
    if (s.op == op_kind::range) {
      p.key = s.key;  // one part: the whole range
      p.hi = s.hi;
      p.hi_inclusive = true;
      p.items = std::move(res.items);
    } else if (seeks_neighbour(s.op)) {
      p.probes = 0;  // the answer itself, no probe to wait for
      if (res.key) {
        p.key = std::move(*res.key);
        p.value = std::move(*res.value);
      }
    } else if (res.value) {
      p.value = std::move(*res.value);
    }
    post_reply(std::move(p));
  }

  // ---- a request at a node (service_requests.hpp) ----------------------------------------------------------------
  void handle(request_type& r);
  void drain(const node_ref& ref);
  bool valid_entry(const node_type& x, const request_type& r) const;
  void run(node_type& x, request_type& r);
  bool jump(node_type& x, const link<K>& l, request_type& r);
  void forward(node_type& x, const node_ref& next, int lvl, request_type&& r);
  void throttle(node_type& x, request_type& r);
  void handle(arrived& a);
  void at_bottom(node_type& x, request_type&& r);

  // ---- lower_bound / successor probes, range parts (service_reads.hpp) ------------------------------------------
  void send_probe(node_type& x, int lvl, request_type& r);
  reply_type first_key_from(const node_type& x, const request_type& r);
  void answer_probe(const node_type& x, const request_type& r);
  void run_range(node_type& x, request_type& r);
  static bool keep_in_box(const key_box& box, const K& k);

  // ---- insert and split, the allocation ring (service_split.hpp) --------------------------------------------------
  void local_insert(node_type& x, request_type&& r);
  void prepare_new(node_type& n, int height, bool before, const K& min);
  void on_alloc(node_type& x, const node_ref& granted);
  void complete_split(node_type& x, request_type&& r, const node_ref& got, pending_split ps);
  void split_after(node_type& x, const node_ref& b, int height);
  void handle(node_init<K, V>& m);
  link<K> link_new_node(node_type& x, int lvl, const request_type& r);
  void finish_split_link(node_type& x, const link<K>& old, const request_type& r);
  void split_check(const node_ref& x, bool unmark = false);
  void split_check_if_above_g(const node_type& x);
  void handle(split_take<K, V>& m);
  void give_lower_half(node_type* mk, split_take<K, V>& m);
  void handle(split_data<K, V>& m);
  void handle(set_link<K>& m);
  void maybe_activate(node_type& n);
  void handle(alloc_request<K>& a);
  void handle(alloc_reply& a);
  void issue_split(const reply_type& p);

  // ---- delete of a min key, markers, freeing nodes (service_erase.hpp) -------------------------------------------
  void settle(node_type& x);
  bool markers_arrived(std::int32_t client, std::uint64_t seq, const node_ref& target, int expected);
  void remove_if_empty(const node_type& n);
  std::size_t merge_below() const;
  void merge_if_under_full(const node_type& n);
  bool merge_into_predecessor(node_type& t, const request_type& r);
  void handle(merge_data<K, V>& m);
  void handle(marker& m);
  void min_target_arrived(node_type& t, request_type&& r);
  static int waiting_for(const request_type& r, const node_ref& target);
  void finish_min_delete(node_type& t, request_type&& r);
  void pass_on(node_type& t, request_type&& r, std::vector<waiter>&& beyond);
  void unlink_and_free(node_type& t, const request_type& r);

  ordered_map_options opt_;
  int me_;
  int np_;
  ordered_map_stats stats_;
  channel<K, V> chan_;
  bulletin_board<K> board_;
  client_type client_;
  node_manager<K, V> manager_;
  tower_heights heights_;
  int spread_next_;
  std::uint64_t head_stamp_ = 0;
  // total order, the head's rank only: the sequencer, the operations waiting for it, the senders of those it issued
  ordered_map_options sequencer_opt_;
  std::optional<client_type> sequencer_;
  std::deque<request_type> unsequenced_;
  std::deque<sender> sequenced_;
  bool sequencing_ = false;
  std::size_t own_sequenced_ = 0;  // operations of this rank's caller with the sequencer
  absl::flat_hash_map<std::tuple<std::int32_t, std::uint64_t, node_ref>, int> markers_;  // (client, seq, target)
  absl::flat_hash_map<node_ref, pending_split> split_heights_;
  static constexpr std::uint64_t first_internal_seq = std::uint64_t{1} << 62;
  std::uint64_t next_internal_seq_ = first_internal_seq;  // splits and zombie removals: no client op waits
};

}  // namespace shoal::detail::ordered_map

#include "shoal/containers/detail/ordered_map/service_requests.hpp"
#include "shoal/containers/detail/ordered_map/service_reads.hpp"
#include "shoal/containers/detail/ordered_map/service_split.hpp"
#include "shoal/containers/detail/ordered_map/service_erase.hpp"
