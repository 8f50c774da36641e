// shoal/containers/detail/ordered_map/service_erase.hpp — the delete of a node's min key (paper Figure 7b), the
// markers that order it, and unlinking and freeing an emptied node (part of service.hpp's class).
//
// Each predecessor whose next node's min key is deleted waits (holds every request) and sends a marker behind its
// earlier requests; the node finishes the delete once every marker has arrived and its held queue is empty (settle),
// then sends each waiting level its new min key — or, emptied, its own successor (unlink) — and is freed.
#pragma once

#include "shoal/containers/detail/ordered_map/service.hpp"

namespace shoal::detail::ordered_map {

/// Finishes what waits for markers: a split's key hand-off and a min-key delete. A marker only says its sender's
/// earlier requests have *arrived*; they may still sit in this node's held queue (it was held back when they came),
/// behind the parked operation. So both wait until the node is free and its held queue is empty: in total order
/// nothing reaches the node from a waiting predecessor after its marker, so every held request came first.
template <class K, class V>
void service<K, V>::settle(node_type& x) {
  auto* ps = x.parked_if_any();
  if (ps == nullptr || x.held_back() || !ps->held.empty()) return;
  if (ps->parked_split &&
      markers_arrived(ps->parked_split->client, ps->parked_split->seq, x.self, ps->parked_split->markers)) {
    auto take = std::move(*ps->parked_split);
    ps->parked_split.reset();
    give_lower_half(&x, take);
  }
  if (ps->parked_delete && markers_arrived(ps->parked_delete->client, ps->parked_delete->seq, x.self,
                                           waiting_for(*ps->parked_delete, x.self))) {
    auto r = std::move(*ps->parked_delete);
    ps->parked_delete.reset();
    finish_min_delete(x, std::move(r));  // may free x: last
  }
}

/// True (and forgets the count) once `expected` markers of operation (client, seq) have arrived at `target`.
template <class K, class V>
bool service<K, V>::markers_arrived(std::int32_t client, std::uint64_t seq, const node_ref& target, int expected) {
  auto it = markers_.find(std::tuple{client, seq, target});
  if ((it == markers_.end() ? 0 : it->second) < expected) return false;
  if (it != markers_.end()) markers_.erase(it);
  return true;
}

/// A node left empty other than by a delete of its min key (a stale SPLIT's new node; a split's level-0 predecessor
/// that gave all its keys away; a node whose min key is not one of its keys losing its last key) removes itself
/// with a delete of its own min key, unlinked level by level like any emptied node. It is a node removal, not an
/// erase: by the time it passes, a client may have inserted that key again (into this node or, if its min moved
/// up, into its predecessor), and that key must stay. If the node is no longer empty when the removal reaches it,
/// it only refreshes its min key.
template <class K, class V>
void service<K, V>::remove_if_empty(const node_type& n) {
  if (!n.keys.empty() || n.is_head) return;
  request_type r = internal_request(op_kind::erase);
  r.set(flag::node_removal);
  r.key = n.min;
  enter(std::move(r), head_ref);
}

/// Merging (deletes leave nodes under-full; without it a list that shrinks keeps its node count): a node whose erase
/// takes it below merge_below() keys removes itself like an emptied node (node removal, flag::merge), and when the
/// removal finishes — every predecessor waiting and holding its requests, this node's held queue empty — it sends
/// its keys to its level-0 predecessor ahead of that predecessor's release. The predecessor covered the keys below
/// them and, relinked past this node, covers them now; it held every request meanwhile, so none saw the keys gone.
/// A predecessor that ends above G splits as usual (a merge makes at most G + merge_below() keys: no ping-pong).
template <class K, class V>
std::size_t service<K, V>::merge_below() const {
  return std::max<std::size_t>(2, opt_.granularity / 4);
}

template <class K, class V>
void service<K, V>::merge_if_under_full(const node_type& n) {
  if (n.is_head || n.keys.empty() || n.size() + 1 != merge_below()) return;  // only when it crosses the threshold
  request_type r = internal_request(op_kind::erase);
  r.set(flag::node_removal);
  r.set(flag::merge);
  r.key = n.min;
  enter(std::move(r), head_ref);
}

/// At the end of a merge's node removal: true when `t` gave its keys to its level-0 predecessor and was freed.
template <class K, class V>
bool service<K, V>::merge_into_predecessor(node_type& t, const request_type& r) {
  if (!r.has(flag::merge) || t.is_head || t.keys.empty() || t.size() >= merge_below() || t.marked) return false;
  auto pred = std::find_if(r.waiters.begin(), r.waiters.end(), [&](const waiter& w) { return w.level == 0; });
  if (pred == r.waiters.end() || !(pred->target == t.self)) return false;
  ++stats_.nodes_merged;
  post(pred->node.rank, merge_data<K, V>{pred->node, std::move(t.keys), std::move(t.values)});
  t.keys.clear();
  t.values.clear();
  unlink_and_free(t, r);
  return true;
}

template <class K, class V>
void service<K, V>::handle(merge_data<K, V>& m) {
  node_type* a = manager_.get(m.target);
  if (a == nullptr) throw error("shoal::ordered_map: internal error: a merge's predecessor is gone");
  a->keys.insert(a->keys.end(), std::make_move_iterator(m.keys.begin()), std::make_move_iterator(m.keys.end()));
  a->values.insert(a->values.end(), std::make_move_iterator(m.values.begin()),
                   std::make_move_iterator(m.values.end()));
  split_check_if_above_g(*a);
}

template <class K, class V>
void service<K, V>::handle(marker& m) {
  node_type* t = manager_.get(m.target);
  if (t == nullptr) return;
  ++markers_[std::tuple{m.client, m.seq, m.target}];
  settle(*t);
}

template <class K, class V>
void service<K, V>::min_target_arrived(node_type& t, request_type&& r) {
  // Earlier requests of the waiting predecessors may still be on their way here, or held here behind this delete:
  // they go first (settle).
  t.parked().parked_delete = std::move(r);
  settle(t);
}

template <class K, class V>
int service<K, V>::waiting_for(const request_type& r, const node_ref& target) {
  return static_cast<int>(std::count_if(r.waiters.begin(), r.waiters.end(), [&](const waiter& w) { return w.target == target; }));
}

template <class K, class V>
void service<K, V>::finish_min_delete(node_type& t, request_type&& r) {
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
  if (beyond.empty() && merge_into_predecessor(t, r)) return post_reply(reply_for(r, status::ok));
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
    if (found) merge_if_under_full(t);  // an erase of its min key may be the one that makes it under-full
  }
  post_reply(reply_for(r, found ? status::ok : status::absent));
}

/// The min-key delete of k reached an empty node N whose level-0 successor M has the same min key k (a stale SPLIT
/// linked N there). k is M's: N keeps its min and releases its own waiting predecessors unchanged, then becomes a
/// waiting predecessor of M itself on every level where its next node has min k (marker, hold) and sends the delete
/// on to M. Order is kept: N already handled every earlier request of its predecessors (markers, empty held queue)
/// and sent them to M ahead of the delete; later ones wait at N until M's delete has finished.
template <class K, class V>
void service<K, V>::pass_on(node_type& t, request_type&& r, std::vector<waiter>&& beyond) {
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

template <class K, class V>
void service<K, V>::unlink_and_free(node_type& t, const request_type& r) {
  for (const auto& w : r.waiters) {
    const auto& l = t.tower[static_cast<std::size_t>(w.level)];
    const bool fenced = needs_fence(t.self, w.node, l.next);
    if (fenced) hand_over(t.self, w.node, l.next);
    post(w.node.rank, set_link<K>{w.node, w.level, l.next, l.next_min, false, true, fenced});
  }
  board_.remove(t.min, t.self);
  std::deque<request_type> held;
  if (auto* ps = t.parked_if_any()) held = std::move(ps->held);
  ++stats_.nodes_freed;
  manager_.release(t.self.slot);
  for (auto& q : held) send_back(std::move(q));
}

}  // namespace shoal::detail::ordered_map
