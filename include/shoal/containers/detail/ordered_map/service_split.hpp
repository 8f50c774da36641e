// shoal/containers/detail/ordered_map/service_split.hpp — insert and split (paper Figures 5 and 6), the allocation
// ring of free nodes (§2.2), and linking a new node in (part of service.hpp's class).
//
// A node above G key-values splits: a new tower no taller than its own goes right after it with the upper half (6b);
// a taller one must go before it, which only a traversal from the head can link (6c): the node is marked, and its
// client sends a SPLIT from the head that links the new node on every level and has the level-0 predecessor and the
// marked node hand their keys over (split_take, split_data). The new node holds requests until it is complete.
#pragma once

#include "shoal/containers/detail/ordered_map/service.hpp"

namespace shoal::detail::ordered_map {

template <class K, class V>
void service<K, V>::local_insert(node_type& x, request_type&& r) {
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
  x.parked().pending_insert = std::move(r);
  if (first < 0) return on_alloc(x, node_ref{});
  post(first, alloc_request<K>{x.self, start, hops, h, before, x.min});
}

template <class K, class V>
void service<K, V>::prepare_new(node_type& n, int height, bool before, const K& min) {
  n.tower.assign(static_cast<std::size_t>(height), link<K>{});
  n.min = min;
  if (before) {
    n.initializing = true;
    n.links_missing = height;
    n.data_missing = true;
  }
}

template <class K, class V>
void service<K, V>::on_alloc(node_type& x, const node_ref& granted) {
  x.allocating = false;
  auto& pending = x.parked().pending_insert;
  auto r = std::move(*pending);
  pending.reset();
  const auto ps = split_heights_[x.self];
  split_heights_.erase(x.self);
  complete_split(x, std::move(r), granted, ps);
  drain(x.self);
}

template <class K, class V>
void service<K, V>::complete_split(node_type& x, request_type&& r, const node_ref& got, pending_split ps) {
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
template <class K, class V>
void service<K, V>::split_after(node_type& x, const node_ref& b, int height) {
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

template <class K, class V>
void service<K, V>::handle(node_init<K, V>& m) {
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
template <class K, class V>
link<K> service<K, V>::link_new_node(node_type& x, int lvl, const request_type& r) {
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
template <class K, class V>
void service<K, V>::finish_split_link(node_type& x, const link<K>& old, const request_type& r) {
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
template <class K, class V>
void service<K, V>::split_check(const node_ref& x, bool unmark) {
  request_type r = internal_request(op_kind::insert);
  r.set(flag::split_check);
  r.set(flag::unmark, unmark);
  r.target = x;
  r.level = -1;  // straight to the local insert step, no level to walk
  ++stats_.split_checks;
  post(x.rank, std::move(r));
}

template <class K, class V>
void service<K, V>::split_check_if_above_g(const node_type& x) {
  if (x.size() > opt_.granularity && !x.marked) split_check(x.self);
}

template <class K, class V>
void service<K, V>::handle(split_take<K, V>& m) {
  node_type* mk = manager_.get(m.target);
  if (mk == nullptr) return give_lower_half(nullptr, m);
  // The hand-off waits for the relinked predecessors' markers and for every request this node already holds:
  // all of them were sent before the split passed, so they must find the keys where they were.
  mk->parked().parked_split = std::move(m);
  settle(*mk);
}

template <class K, class V>
void service<K, V>::give_lower_half(node_type* mk, split_take<K, V>& m) {
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

template <class K, class V>
void service<K, V>::handle(split_data<K, V>& m) {
  node_type* n = manager_.get(m.target);
  if (n == nullptr) return;
  n->parked().data = std::move(m);
  n->data_missing = false;
  maybe_activate(*n);
}

template <class K, class V>
void service<K, V>::handle(set_link<K>& m) {
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

template <class K, class V>
void service<K, V>::maybe_activate(node_type& n) {
  if (!n.initializing || n.links_missing > 0 || n.data_missing) return;
  auto& data = n.parked().data;
  auto& d = *data;
  n.keys = std::move(d.keys);
  n.values = std::move(d.values);
  if (d.giver.valid()) {
    for (auto& l : n.tower)
      if (l.next == d.giver) l.next_min = d.giver_min;
  }
  data.reset();
  n.initializing = false;
  board_.post(n.min, n.self, n.height());
  split_check_if_above_g(n);
  remove_if_empty(n);  // the marked node was deleted before the split reached it: nothing to hold
  drain(n.self);
}

template <class K, class V>
void service<K, V>::handle(alloc_request<K>& a) {
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

template <class K, class V>
void service<K, V>::handle(alloc_reply& a) {
  node_type* x = manager_.get(a.requester);
  if (x != nullptr) on_alloc(*x, a.granted);
}

template <class K, class V>
void service<K, V>::issue_split(const reply_type& p) {
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

}  // namespace shoal::detail::ordered_map
