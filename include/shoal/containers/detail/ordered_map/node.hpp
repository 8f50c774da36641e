// shoal/containers/detail/ordered_map/node.hpp — one skip-list node: up to G sorted key-values and a tower that
// holds, per level, the next node and that node's minimum key (paper Figure 2). Pure, sequential logic: where a
// request goes next, local insert / erase / lookup, and how a node splits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/core/detail/prefetch.hpp"

namespace shoal::detail::ordered_map {

/// One level of a tower: the next node on that level and its min key (no next node: the end sentinel, +infinity).
template <class K>
struct link {
  node_ref next;
  K next_min{};
  bool has_next() const { return next.valid(); }
};

/// Which way a request goes at one level of a node.
enum class step { hop, descend };

/// The decision of Listing 1/3/4: hop to the next node on this level, or descend. `strict` for operations that must
/// visit the predecessor of their key at every level (erase, split): they hop only past smaller min keys.
template <class K>
step next_step(const link<K>& l, const K& key, bool strict) {
  if (!l.has_next()) return step::descend;
  if (strict) return l.next_min < key ? step::hop : step::descend;
  return key < l.next_min ? step::descend : step::hop;
}

template <class K, class V>
struct node {
  // identity and content
  node_ref self;  // rank, slot and the generation of this use of the slot
  std::uint32_t gen = 0;
  bool in_use = false;
  bool is_head = false;
  K min{};
  std::vector<link<K>> tower;
  std::vector<K> keys;  // sorted, unique
  std::vector<V> values;

  // states that hold incoming requests (paper: a node accepts no request until it may)
  int waiting_levels = 0;   // predecessor levels waiting for a min-key DELETE of the next node
  bool allocating = false;  // a split asked the managers for a free node
  bool initializing = false;  // a node being linked in before a marked node (Figure 6c)
  bool throttled = false;     // a synchronous forward has not arrived yet (k)
  bool data_missing = false;
  int links_missing = 0;
  bool marked = false;  // pending split through the client: inserts only locally
  std::size_t eager_forwards = 0;  // requests forwarded to other ranks since the last synchronous one (k)

  /// Held requests and parked operations: rarely used, so kept out of line (allocated on first use) — a node is
  /// then about 150 bytes instead of 800, and a rank's nodes stay in cache.
  struct parked_state {
    std::optional<split_data<K, V>> data;
    std::deque<request<K, V>> held;
    std::optional<request<K, V>> pending_insert;  // the insert whose split waits for a free node
    std::optional<request<K, V>> parked_delete;   // min-key delete waiting for its predecessors' markers
    std::optional<split_take<K, V>> parked_split;  // split waiting for the markers of the relinked predecessors
  };
  std::unique_ptr<parked_state> parked_storage;

  /// The node's parked state (allocated on first use).
  parked_state& parked() {
    if (!parked_storage) parked_storage = std::make_unique<parked_state>();
    return *parked_storage;
  }
  /// The node's parked state, or nullptr when it never had one.
  parked_state* parked_if_any() const { return parked_storage.get(); }
  /// Requests that arrived while the node was held back and wait for it.
  bool holds_requests() const { return parked_storage && !parked_storage->held.empty(); }

  int height() const { return static_cast<int>(tower.size()); }
  std::size_t size() const { return keys.size(); }
  bool held_back() const { return waiting_levels > 0 || allocating || initializing || throttled; }

  /// The end of the keys from index `from` that are <= hi (< hi unless `inclusive`): galloping, then a binary search.
  /// The places the gallop may look are loaded first, so that their cache misses overlap.
  std::size_t end_of_range(std::size_t from, const K& hi, bool inclusive) const {
    auto past = [&](std::size_t i) { return inclusive ? hi < keys[i] : !(keys[i] < hi); };
    for (std::size_t at = from + 8, step = 16; at < keys.size(); at += step, step *= 2) __builtin_prefetch(&keys[at]);
    std::size_t lo = from, step = 8;
    while (lo + step < keys.size() && !past(lo + step)) lo += step, step *= 2;
    const auto first = keys.begin() + static_cast<std::ptrdiff_t>(lo);
    const auto last = keys.begin() + static_cast<std::ptrdiff_t>(std::min(lo + step, keys.size()));
    const auto it = inclusive ? std::upper_bound(first, last, hi) : std::lower_bound(first, last, hi);
    return static_cast<std::size_t>(it - keys.begin());
  }

  /// Lower-bound position of `key` among the local keys. A node's keys are usually not in cache when a request
  /// arrives: for plain keys the search has no branches to mispredict and loads, two steps ahead, the six places the
  /// next two steps may look (the cache misses of three steps overlap). With `then_value` (the node's values, for a
  /// find) it also loads the values of the last 16 candidates, so the value's miss overlaps the last key misses.
  std::size_t position(const K& key, const V* then_value = nullptr) const {
    if constexpr (std::is_arithmetic_v<K>) {
      const K* base = keys.data();
      std::size_t n = keys.size();
      if (n == 0) return 0;
      while (n > 1) {
        if (then_value != nullptr && n <= 16) {
          const std::size_t at = static_cast<std::size_t>(base - keys.data());
          __builtin_prefetch(then_value + at);
          __builtin_prefetch(then_value + at + n / 2);
          __builtin_prefetch(then_value + at + n - 1);
          then_value = nullptr;
        }
        const std::size_t half = n / 2, next = (n - half) / 2, after = (n - half - next) / 2;
        __builtin_prefetch(base + next);
        __builtin_prefetch(base + half + next);
        __builtin_prefetch(base + after);
        __builtin_prefetch(base + next + after);
        __builtin_prefetch(base + half + after);
        __builtin_prefetch(base + half + next + after);
        base = base[half] < key ? base + half : base;
        n -= half;
      }
      return static_cast<std::size_t>(base - keys.data()) + (*base < key ? 1 : 0);
    } else {
      return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), key) - keys.begin());
    }
  }

  const V* find(const K& key) const {
    const auto i = position(key, values.data());
    return (i < keys.size() && keys[i] == key) ? &values[i] : nullptr;
  }

  /// Inserts unless present; false for a duplicate.
  bool insert(const K& key, const V& value) {
    const auto i = position(key);
    if (i < keys.size() && keys[i] == key) return false;
    keys.insert(keys.begin() + static_cast<std::ptrdiff_t>(i), key);
    values.insert(values.begin() + static_cast<std::ptrdiff_t>(i), value);
    return true;
  }

  bool erase(const K& key) {
    const auto i = position(key);
    if (i >= keys.size() || !(keys[i] == key)) return false;
    keys.erase(keys.begin() + static_cast<std::ptrdiff_t>(i));
    values.erase(values.begin() + static_cast<std::ptrdiff_t>(i));
    return true;
  }

  /// First local key >= key (or > key when `strictly`), as an index. The search of a find (position), whose value
  /// it also loads: the answer returns it.
  std::optional<std::size_t> first_from(const K& key, bool strictly) const {
    std::size_t i = position(key, values.data());
    if (strictly && i < keys.size() && !(key < keys[i])) ++i;  // keys[i] is key itself (keys are distinct)
    if (i == keys.size()) return std::nullopt;
    return i;
  }

  /// The indices [first, last) of the local keys in [lo, hi] (or [lo, hi) ). The end is found by galloping from the
  /// start (a range part is usually a small share of the node: the probes stay on the cache lines read next).
  /// Both arrays' cache lines of the span are loaded before it is returned: its copy then waits for one miss, not for
  /// each line in turn.
  std::pair<std::size_t, std::size_t> span_of(const K& lo, const K& hi, bool hi_inclusive) const {
    const std::size_t from = position(lo);
    const std::size_t to = end_of_range(from, hi, hi_inclusive);
    prefetch_bytes(keys.data() + from, (to - from) * sizeof(K));
    prefetch_bytes(values.data() + from, (to - from) * sizeof(V));
    return {from, to};
  }

  /// Local key-values in [lo, hi] (or [lo, hi) ) that `keep` keeps, appended to `out` as pairs.
  template <class Keep>
  void collect(const K& lo, const K& hi, bool hi_inclusive, Keep&& keep, std::vector<std::pair<K, V>>& out) const {
    const auto [from, to] = span_of(lo, hi, hi_inclusive);
    for (std::size_t i = from; i < to; ++i) {
      if (keep(keys[i])) out.emplace_back(keys[i], values[i]);
    }
  }

  /// Moves the keys from index `from` to the end out of this node.
  void take_tail(std::size_t from, std::vector<K>& out_keys, std::vector<V>& out_values) {
    out_keys.assign(std::make_move_iterator(keys.begin() + static_cast<std::ptrdiff_t>(from)),
                    std::make_move_iterator(keys.end()));
    out_values.assign(std::make_move_iterator(values.begin() + static_cast<std::ptrdiff_t>(from)),
                      std::make_move_iterator(values.end()));
    keys.resize(from);
    values.resize(from);
  }

  /// Moves the first `count` keys out of this node.
  void take_head(std::size_t count, std::vector<K>& out_keys, std::vector<V>& out_values) {
    const auto n = static_cast<std::ptrdiff_t>(count);
    out_keys.insert(out_keys.end(), std::make_move_iterator(keys.begin()), std::make_move_iterator(keys.begin() + n));
    out_values.insert(out_values.end(), std::make_move_iterator(values.begin()),
                      std::make_move_iterator(values.begin() + n));
    keys.erase(keys.begin(), keys.begin() + n);
    values.erase(values.begin(), values.begin() + n);
  }

  /// Clears the node for reuse; the generation changes so that stale references are detected.
  void release() {
    const node_ref slot_ref{self.rank, self.slot, gen + 1};
    *this = node{};
    gen = slot_ref.gen;
    self = slot_ref;
  }
};

/// Tower heights: level i+1 with probability p given level i, capped at max_height (a Bernoulli process, Pugh).
class tower_heights {
 public:
  tower_heights(double p, int max_height, std::uint64_t seed) : p_(p), max_(max_height), rng_(seed) {}
  int draw() {
    int h = 1;
    std::bernoulli_distribution up(p_);
    while (h < max_ && up(rng_)) ++h;
    return h;
  }

 private:
  double p_;
  int max_;
  std::mt19937_64 rng_;
};

}  // namespace shoal::detail::ordered_map
