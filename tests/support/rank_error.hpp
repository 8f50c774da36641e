// tests/support/rank_error.hpp — the rank error of each pop of a relaxed queue, computed from a recorded history of
// pushes and pops (operation.hpp; values unique), never from the queue's own stamps (no MPI).
//
// The rank error of a pop that returned e is the number of elements older than e that were in the queue when the
// pop took effect. A history gives only intervals, so each pop gets two numbers; with s = the clocks' slack (two
// stamps of different clients order only when they differ by more than s):
//   surely   x surely older than e      x's push returned before e's push was called  (x.ret + s < e.call)
//            x surely queued during P   x's push returned before P was called        (x.ret + s < P.call)
//                                       and x was not popped, or its pop was called after P returned (P.ret + s <
//                                       x.pop.call)
//            -> a lower bound: in any order consistent with the history, at least this many older elements were
//               present. An exact FIFO has 0 for every pop.
//   possibly x possibly older than e    x's push was called before e's push returned  (x.call < e.ret + s)
//            x possibly queued during P x's push was called before P returned         (x.call < P.ret + s)
//                                       and x was not popped, or its pop returned after P was called (P.call <
//                                       x.pop.ret + s)
//            -> an upper bound: no order consistent with the history gives more.
// A bound on the rank error surely holds when the upper bounds satisfy it; lower bounds above it are a certain
// violation. Under oversubscription the intervals overlap widely and the upper bounds say little (a pop that lasts a
// descheduled time slice "possibly" passes everything queued meanwhile), so tests check the lower bounds: they catch
// every violation the history proves. The check also finds values popped twice or never pushed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "support/operation.hpp"

namespace shoal::testing::history {

struct rank_errors {
  std::vector<std::size_t> surely;    // per successful pop: the lower bound
  std::vector<std::size_t> possibly;  // per successful pop: the upper bound
  std::string malformed;              // non-empty: a value popped twice or popped but never pushed
  std::size_t max_surely() const { return surely.empty() ? 0 : *std::max_element(surely.begin(), surely.end()); }
  double mean_surely() const { return mean(surely); }
  double mean_possibly() const { return mean(possibly); }

 private:
  static double mean(const std::vector<std::size_t>& v) {
    double sum = 0;
    for (auto e : v) sum += static_cast<double>(e);
    return v.empty() ? 0 : sum / static_cast<double>(v.size());
  }
};

/// `history`: pushes (arg = value, ok = pushed) and pops (ok, out = value) of one queue, every client's.
inline rank_errors measure_rank_errors(const std::vector<operation>& history, std::uint64_t slack_ns) {
  struct element {
    const operation* push = nullptr;
    const operation* pop = nullptr;
  };
  std::unordered_map<std::int64_t, element> elements;
  rank_errors r;
  for (const auto& o : history) {
    if (o.kind == op_kind::push && o.ok != 0) elements[o.arg].push = &o;
  }
  std::vector<const operation*> pops;
  for (const auto& o : history) {
    if (o.kind != op_kind::pop || o.ok == 0) continue;
    auto it = elements.find(o.out);
    if (it == elements.end()) {
      r.malformed = "popped but never pushed: " + describe(o);
      return r;
    }
    if (it->second.pop != nullptr) {
      r.malformed = "popped twice: " + describe(*it->second.pop) + " and " + describe(o);
      return r;
    }
    it->second.pop = &o;
    pops.push_back(&o);
  }
  const std::uint64_t s = slack_ns;
  for (const operation* p : pops) {
    const operation& e = *elements.at(p->out).push;
    std::size_t surely = 0, possibly = 0;
    for (const auto& [value, x] : elements) {
      if (value == p->out) continue;
      const operation& xp = *x.push;
      const operation* xq = x.pop;
      if (xp.return_ns + s < e.call_ns && xp.return_ns + s < p->call_ns && (xq == nullptr || p->return_ns + s < xq->call_ns)) {
        ++surely;
      }
      if (xp.call_ns < e.return_ns + s && xp.call_ns < p->return_ns + s && (xq == nullptr || p->call_ns < xq->return_ns + s)) {
        ++possibly;
      }
    }
    r.surely.push_back(surely);
    r.possibly.push_back(possibly);
  }
  return r;
}

}  // namespace shoal::testing::history
