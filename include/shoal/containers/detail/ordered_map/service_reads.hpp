// shoal/containers/detail/ordered_map/service_reads.hpp — lower_bound / successor probes and range-query parts
// (part of service.hpp's class).
//
// lower_bound / successor: the answer is the first key >= k (> k) of the node X that covers k, or else the first key
// of a node after X. A request that went on from X to its next node B along level 0 could be overtaken there by a
// later operation that reached B over a higher level (an insert into B), so instead every node where the search
// descends sends a probe to its next node on that level — once per node, from the highest level that links to it:
// over the link every later operation for that node takes, like a range part. The client takes X's answer, else the
// smallest probe answer. An empty probed node (a stale SPLIT's node waiting for removal) cannot say what lies behind
// it: the operation runs again from the head. So of the next nodes one node descends in front of, only the closest
// (its lowest such level) is probed: a farther one could only answer with larger keys, and would matter only if the
// closest were empty, when the operation runs again anyway.
// Probes cost 2 messages per level, and are needed only when X holds no key >= k (> k), which is rare (about one key
// in G'): so the first pass sends none and X answers from its own keys; when X has none past k and is not the last
// node, X names its next node B and B's min key as X knows it, and the client's next pass is a probe of B alone
// (flag::expect_min): B's first key is the answer unless a key of B moved to a node before B meanwhile — a split
// before B takes B's lower half, a min-key delete removes its min key: either raises B's min key, so B answers only
// while its min key is the one X named. Otherwise (B empty, gone or changed; or no B named) the client runs the
// operation again from the head with flag::with_probes (the probing pass above). X's own answer is atomic at X, and
// any key between k and it would be in X, so it is right in head order too. The client decides when the probe of B
// may go (client.hpp): like an operation entering at a shortcut, it must not overtake an earlier one of its client.
//
// Range queries (Listing 2): a range splits at every tower level whose next node starts inside it; each node replies
// with its part (written to the wire straight from the node's arrays when the client is on another rank), and the
// client reassembles the parts in key order.
#pragma once

#include "shoal/containers/detail/ordered_map/service.hpp"

namespace shoal::detail::ordered_map {

template <class K, class V>
void service<K, V>::send_probe(node_type& x, int lvl, request_type& r) {
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

template <class K, class V>
auto service<K, V>::first_key_from(const node_type& x, const request_type& r) -> reply_type {
  const auto i = x.first_from(r.key, r.op == op_kind::successor);
  if (!i) return reply_for(r, status::absent);
  reply_type p = reply_for(r, status::ok);
  p.key = x.keys[*i];
  p.value = x.values[*i];
  return p;
}

template <class K, class V>
void service<K, V>::answer_probe(const node_type& x, const request_type& r) {
  // A node's min key only rises (a min-key delete, a split before it that takes its lower half): while it is the one
  // the prober expects, no key of this node went to a node before it. A capped probe answers only below its cap.
  const bool moved = r.has(flag::expect_min) && !(x.min == r.expected_min);
  reply_type p = x.keys.empty() || moved ? reply_for(r, status::retry) : first_key_from(x, r);
  if (r.has(flag::capped) && p.st == status::ok && !(p.key < r.hi)) p.st = status::retry;
  p.probes = -1;
  post_reply(std::move(p));
}

template <class K, class V>
void service<K, V>::run_range(node_type& x, request_type& r) {
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
  if (multi_dimensional_key<K> && !r.box.empty_box()) {
    x.collect(r.key, r.hi, p.hi_inclusive, [&](const K& k) { return keep_in_box(r.box, k); }, p.items);
    return post_reply(std::move(p));
  }
  const auto [from, to] = x.span_of(r.key, r.hi, p.hi_inclusive);
  const int client = p.client;
  chan_.post_part(client, std::move(p),
                  pairs_source<K, V>{std::span<const K>(x.keys).subspan(from, to - from),
                                     std::span<const V>(x.values).subspan(from, to - from)});
}

template <class K, class V>
bool service<K, V>::keep_in_box(const key_box& box, const K& k) {
  if constexpr (multi_dimensional_key<K>) {
    return box.empty_box() || box.contains(k);
  } else {
    return true;
  }
}

}  // namespace shoal::detail::ordered_map
