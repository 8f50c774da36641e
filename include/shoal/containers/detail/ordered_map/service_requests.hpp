// shoal/containers/detail/ordered_map/service_requests.hpp — a request at a node (part of service.hpp's class).
//
// A request enters at the head or at a shortcut (valid_entry checks a shortcut still covers its key; otherwise it
// goes back to its client), waits in the node's held queue while the node is held back, then walks the tower: at each
// level it hops to the next node when its key is at or past that node's min key and descends otherwise (Listing 1;
// erase and split compare strictly, to visit the predecessor of their key on every level). At level 0 the node
// answers (at_bottom). k (paper §3): after k eager forwards to other ranks a node's next one is synchronous.
#pragma once

#include "shoal/containers/detail/ordered_map/service.hpp"

namespace shoal::detail::ordered_map {

template <class K, class V>
void service<K, V>::handle(request_type& r) {
  if (r.has(flag::synchronous)) {
    r.set(flag::synchronous, false);
    post(r.sender.rank, arrived{r.sender});
  }
  // Total order: an operation of a client enters at the sequencer (service.hpp), not at the head node itself.
  if (sequencer_ && r.has(flag::entry) && r.target == head_ref && r.seq < first_sequenced_seq &&
      opt_.semantics == consistency::total_order) {
    return sequence(std::move(r));
  }
  node_type* x = manager_.get(r.target);
  if (x == nullptr) return send_back(std::move(r));
  if (x->held_back()) {
    x->parked().held.push_back(std::move(r));
    return;
  }
  run(*x, r);
}

template <class K, class V>
void service<K, V>::drain(const node_ref& ref) {
  for (;;) {
    node_type* x = manager_.get(ref);
    if (x == nullptr || x->held_back()) return;
    if (!x->holds_requests()) return settle(*x);
    auto& held = x->parked().held;
    auto r = std::move(held.front());
    held.pop_front();
    run(*x, r);
  }
}

/// True when `x` may serve as the first node of `r` (a shortcut names a node that may have changed since).
template <class K, class V>
bool service<K, V>::valid_entry(const node_type& x, const request_type& r) const {
  if (x.is_head) return true;
  if (r.op == op_kind::erase || r.op == op_kind::split) {
    if (!(x.min < r.key)) return false;
    return r.op != op_kind::split || x.height() >= r.new_height;
  }
  return !(r.key < x.min);
}

template <class K, class V>
void service<K, V>::run(node_type& x, request_type& r) {
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
  // Probing (service_reads.hpp): of the next nodes this node descends in front of, only the closest can answer (the
  // others lie beyond it; an empty one makes the whole operation run again), so it alone is probed, on leaving.
  int probe_level = -1;
  const auto send_closest_probe = [&] {
    if (probe_level >= 0) send_probe(x, probe_level, r);
  };
  for (int lvl = std::min(r.level, x.height() - 1); lvl >= 0; --lvl) {
    auto& l = x.tower[static_cast<std::size_t>(lvl)];
    if (next_step(l, r.key, strict) == step::hop) {
      send_closest_probe();
      if (reads_only(r.op) && opt_.semantics == consistency::none && jump(x, l, r)) return;
      return forward(x, l.next, lvl, std::move(r));
    }
    if (r.has(flag::with_probes) && l.has_next()) {
      if (l.next == r.probed) probe_level = -1;  // probed already, from an earlier node: closer than any pending one
      else if (probe_level < 0 || !(x.tower[static_cast<std::size_t>(probe_level)].next == l.next)) probe_level = lvl;
    }
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
  send_closest_probe();
  at_bottom(x, std::move(r));
}

/// No consistency: a node may jump ahead to a shortcut of its rank that is past its next node.
template <class K, class V>
bool service<K, V>::jump(node_type& x, const link<K>& l, request_type& r) {
  auto sc = board_.lookup(r.key, false);
  if (!sc || !(l.next_min < sc->min) || sc->node == x.self) return false;
  ++stats_.shortcuts_taken;
  r.target = sc->node;
  r.set(flag::entry);
  r.set(flag::via_shortcut);
  post(me_, std::move(r));
  return true;
}

template <class K, class V>
void service<K, V>::forward(node_type& x, const node_ref& next, int lvl, request_type&& r) {
  r.target = next;
  r.level = lvl;
  if (next.rank != me_) throttle(x, r);
  send_from(x.self, next, std::move(r));
}

/// k (paper §3): after k eager forwards to other ranks a node's next one is synchronous, and the node holds new
/// requests until that one has arrived. Arrival is acknowledged unconditionally, so a wait never depends on
/// another node's state (no cycle of waits).
template <class K, class V>
void service<K, V>::throttle(node_type& x, request_type& r) {
  if (x.eager_forwards++ < opt_.asynchrony) return;
  x.eager_forwards = 0;
  x.throttled = true;
  r.set(flag::synchronous);
  r.sender = x.self;
  ++stats_.synchronous_forwards;
}

template <class K, class V>
void service<K, V>::handle(arrived& a) {
  node_type* x = manager_.get(a.sender);
  if (x == nullptr) return;
  x->throttled = false;
  drain(x->self);
}

template <class K, class V>
void service<K, V>::at_bottom(node_type& x, request_type&& r) {
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
      if (found) merge_if_under_full(x);
      return post_reply(reply_for(r, found ? status::ok : status::absent));
    }
    case op_kind::lower_bound:
    case op_kind::successor: {
      reply_type p = first_key_from(x, r);
      p.probes = r.probes;
      // A pass without probes answers only from the node of its key; past its last key it runs again. A capped pass
      // answers only below its cap (client.hpp), else it runs again too. When this node holds nothing from the key up,
      // the answer is the first key of its next node: the reply names that node, which the next pass probes alone
      // when the client may send it there (client.hpp; else it passes from the head, probing).
      const bool past_last = p.st == status::absent;
      if (r.has(flag::capped)) {
        if (p.st != status::ok || !(p.key < r.hi)) p.st = status::retry;
      } else if (past_last && !r.has(flag::with_probes) && x.tower[0].has_next()) {
        p.st = status::retry;
      }
      if (p.st == status::retry && past_last) {
        p.next = x.tower[0].next;
        p.next_min = x.tower[0].next_min;
      }
      return post_reply(std::move(p));
    }
    default: return;
  }
}

}  // namespace shoal::detail::ordered_map
