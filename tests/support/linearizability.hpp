// tests/support/linearizability.hpp — decides whether a recorded concurrent history is linearizable (or, per
// client, sequentially consistent) against a sequential model (models.hpp).
//
// The search is Wing & Gong's, with Lowe's / Porcupine's memoization: depth-first, it picks an operation that may
// take effect next (a "minimal" one: no operation still to place must precede it), applies it to the model if its
// recorded result is possible there, and backtracks on a dead end; a pair (set of placed operations, model state)
// that was explored once is never explored again. Each partition of the model (a key, a word, a queue segment) is
// searched alone: linearizability is local, so the history is linearizable iff every partition is.
//
// Which operations must precede which:
//   linearizability          b precedes a iff b returned before a was invoked. Stamps of one client come from one
//                            clock and compare exactly; stamps of two clients compare only up to the clock's error,
//                            so across clients b precedes a iff b.return_ns + cross_client_slack_ns < a.call_ns
//                            (give twice the synchronized clock's error bound: widening never rejects a
//                            linearizable history, it only accepts more).
//   sequential consistency   b precedes a iff both come from one client and b was issued first (seq). Checked per
//                            partition, this is a necessary condition only (sequential consistency is not local):
//                            a rejection is a real violation, an acceptance covers each partition alone.
//   linearizable in issue    both: b precedes a iff b returned before a was invoked (as for linearizability) or both
//   order                    come from one client and b was issued first — for a client whose concurrent operations
//                            (futures) must also take effect in the order it issued them.
// A model may give hints(ops): a number per operation; minimal operations are tried in increasing order of it
// (e.g. a push when its value is needed). Hints only change which order is tried first, never the verdict.
// The search is bounded by max_steps (over the whole history): past it the verdict is `undecided`, never a hang.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "support/models.hpp"
#include "support/operation.hpp"

namespace shoal::testing::history {

enum class verdict { ok, violation, undecided };

inline const char* name(verdict v) {
  switch (v) {
    case verdict::ok: return "ok";
    case verdict::violation: return "violation";
    case verdict::undecided: return "undecided";
  }
  return "?";
}

struct check_options {
  /// How much later than b's return a's call must be stamped, on another client, for b to surely precede a.
  std::uint64_t cross_client_slack_ns = 0;
  /// Search steps (operations tried) over the whole history before giving up with `undecided`.
  std::size_t max_steps = 5'000'000;
};

struct check_result {
  verdict outcome = verdict::ok;
  std::size_t operations = 0;
  std::size_t partitions = 0;
  std::size_t steps = 0;
  std::string explanation;  // for a violation or undecided: the partition and where the search got stuck
};

namespace detail {

enum class order { real_time, program, real_time_and_program };

template <class Model>
class partition_search {
 public:
  using state = typename Model::state;

  partition_search(std::vector<operation> ops, const Model& model, std::int64_t partition, order rule,
                   std::uint64_t slack)
      : ops_(std::move(ops)), model_(model), partition_(partition), rule_(rule), slack_(slack) {
    std::sort(ops_.begin(), ops_.end(), [](const operation& a, const operation& b) {
      return a.call_ns != b.call_ns ? a.call_ns < b.call_ns : a.client != b.client ? a.client < b.client : a.seq < b.seq;
    });
    for (const auto& o : ops_) {
      if (std::find(clients_.begin(), clients_.end(), o.client) == clients_.end()) clients_.push_back(o.client);
    }
    for (const auto& o : ops_) {
      client_index_.push_back(
          static_cast<std::size_t>(std::find(clients_.begin(), clients_.end(), o.client) - clients_.begin()));
    }
    placed_.assign(ops_.size() / 64 + 1, 0);
    if constexpr (requires { model.hints(ops_); }) hints_ = model.hints(ops_);
  }

  /// Runs with at most `budget` steps; `steps` is increased by the steps taken.
  verdict run(std::size_t budget, std::size_t& steps, std::string& explanation) {
    for (const auto& o : ops_) {
      if (o.done == 0 || o.return_ns < o.call_ns) {
        explanation = "partition " + std::to_string(partition_) + ": incomplete or malformed operation " + describe(o);
        return verdict::undecided;
      }
    }
    const std::size_t n = ops_.size();
    state current = model_.initial(partition_);
    std::size_t placed = 0, deepest = 0;
    std::vector<std::size_t> stuck_at;
    std::vector<frame> stack;
    stack.push_back({minimal(), 0, current});
    for (;;) {
      if (placed == n) return verdict::ok;
      frame& f = stack.back();
      if (f.next == f.candidates.size()) {
        if (placed >= deepest) {
          deepest = placed;
          stuck_at = f.candidates;
        }
        stack.pop_back();
        if (stack.empty()) {
          explanation = explain(deepest, stuck_at, "no order of these operations explains their results");
          return verdict::violation;
        }
        frame& parent = stack.back();
        set(parent.candidates[parent.next - 1], false);
        current = parent.before;
        --placed;
        continue;
      }
      if (++steps > budget) {
        explanation = explain(placed, f.candidates, "step limit reached");
        return verdict::undecided;
      }
      const std::size_t a = f.candidates[f.next++];
      state next = current;
      if (!model_.step(next, ops_[a])) continue;
      set(a, true);
      if (!seen_.insert(memo_key{placed_, next}).second) {
        set(a, false);
        continue;
      }
      current = std::move(next);
      ++placed;
      stack.push_back({minimal(), 0, current});
    }
  }

 private:
  struct frame {
    std::vector<std::size_t> candidates;
    std::size_t next;
    state before;
  };
  struct memo_key {
    std::vector<std::uint64_t> placed;
    state s;
    friend bool operator==(const memo_key&, const memo_key&) = default;
  };
  struct memo_hash {
    std::size_t operator()(const memo_key& k) const {
      std::size_t h = Model::hash(k.s);
      for (auto w : k.placed) h = mix_hash(h, w);
      return h;
    }
  };

  bool is_placed(std::size_t i) const { return (placed_[i / 64] >> (i % 64)) & 1u; }
  void set(std::size_t i, bool on) {
    if (on) placed_[i / 64] |= std::uint64_t{1} << (i % 64);
    else placed_[i / 64] &= ~(std::uint64_t{1} << (i % 64));
  }

  // The operations that may take effect next.
  std::vector<std::size_t> minimal() const {
    std::vector<std::size_t> out;
    const std::size_t nc = clients_.size();
    // Program order: per client, the unplaced operations with the smallest sequence number (several operations may
    // share one: the parts of one call).
    constexpr auto never = std::numeric_limits<std::uint64_t>::max();
    std::vector<std::uint64_t> first_seq(nc, never);
    if (rule_ != order::real_time) {
      for (std::size_t i = 0; i < ops_.size(); ++i) {
        auto& first = first_seq[client_index_[i]];
        if (!is_placed(i)) first = std::min<std::uint64_t>(first, ops_[i].seq);
      }
    }
    const auto first_of_its_client = [&](std::size_t i) { return ops_[i].seq == first_seq[client_index_[i]]; };
    if (rule_ == order::program) {
      for (std::size_t i = 0; i < ops_.size(); ++i) {
        if (!is_placed(i) && first_of_its_client(i)) out.push_back(i);
      }
      return out;
    }
    std::vector<std::uint64_t> earliest_return(nc, never);
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (!is_placed(i)) earliest_return[client_index_[i]] = std::min(earliest_return[client_index_[i]], ops_[i].return_ns);
    }
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      if (is_placed(i) || (rule_ == order::real_time_and_program && !first_of_its_client(i))) continue;
      bool minimal_op = true;
      for (std::size_t c = 0; c < nc && minimal_op; ++c) {
        if (earliest_return[c] == never) continue;
        const std::uint64_t slack = c == client_index_[i] ? 0 : slack_;
        minimal_op = !(earliest_return[c] + slack < ops_[i].call_ns);
      }
      if (minimal_op) out.push_back(i);
    }
    if (!hints_.empty()) {
      std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) { return hints_[a] < hints_[b]; });
    }
    return out;
  }

  std::string explain(std::size_t placed, const std::vector<std::size_t>& next, const char* what) const {
    std::string s = "partition " + std::to_string(partition_) + " (" + std::to_string(ops_.size()) +
                    " operations): " + what + "; at most " + std::to_string(placed) +
                    " operations could be placed, then none of these fits:";
    std::size_t shown = 0;
    for (auto i : next) {
      if (shown++ == 6) {
        s += "\n  ...";
        break;
      }
      s += "\n  " + describe(ops_[i]);
    }
    return s;
  }

  std::vector<operation> ops_;
  const Model& model_;
  std::int64_t partition_;
  order rule_;
  std::uint64_t slack_;
  std::vector<std::int32_t> clients_;
  std::vector<std::size_t> client_index_;
  std::vector<std::uint64_t> placed_;
  std::vector<std::uint64_t> hints_;  // the order in which to try minimal operations (a model's hint), if any
  std::unordered_set<memo_key, memo_hash> seen_;
};

template <class Model>
check_result check(const std::vector<operation>& history, const Model& model, order rule, const check_options& opts) {
  std::map<std::int64_t, std::vector<operation>> parts;
  for (const auto& o : history) parts[model.partition(o)].push_back(o);
  check_result r;
  r.operations = history.size();
  r.partitions = parts.size();
  for (auto& [key, ops] : parts) {
    std::string why;
    partition_search<Model> search(std::move(ops), model, key, rule, opts.cross_client_slack_ns);
    const verdict v = search.run(opts.max_steps, r.steps, why);
    if (v == verdict::violation) {
      r.outcome = v;
      r.explanation = why;
      return r;
    }
    if (v == verdict::undecided && r.outcome == verdict::ok) {
      r.outcome = v;
      r.explanation = why;
    }
  }
  return r;
}

}  // namespace detail

/// Is there one order of the operations, consistent with real time (up to opts.cross_client_slack_ns across
/// clients), in which the model gives every recorded result?
template <class Model>
check_result check_linearizable(const std::vector<operation>& history, const Model& model, check_options opts = {}) {
  return detail::check(history, model, detail::order::real_time, opts);
}

/// Is there one order of the operations, consistent with real time (as check_linearizable) and with every client's
/// issue order, in which the model gives every recorded result?
template <class Model>
check_result check_linearizable_in_issue_order(const std::vector<operation>& history, const Model& model,
                                               check_options opts = {}) {
  return detail::check(history, model, detail::order::real_time_and_program, opts);
}

/// Is there, in each partition, one order consistent with every client's issue order in which the model gives every
/// recorded result? (Per partition: a necessary condition for sequential consistency, see above.)
template <class Model>
check_result check_sequentially_consistent(const std::vector<operation>& history, const Model& model,
                                           check_options opts = {}) {
  return detail::check(history, model, detail::order::program, opts);
}

}  // namespace shoal::testing::history
