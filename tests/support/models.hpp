// tests/support/models.hpp — sequential specifications for the history checker (linearizability.hpp).
//
// A model says which part of a history an operation belongs to (partition: operations of different partitions
// never affect each other, so each partition is checked alone — linearizability is local, Herlihy & Wing 1990),
// the state a partition starts in, and whether an operation with its recorded result can happen in a state
// (step: false when the result is impossible there; otherwise the state becomes the one after the operation).
//   register_model     one 64-bit word per key: load, store, fetch_add, fetch_xor, exchange, compare_exchange
//   map_model          one key per partition: insert, insert_or_assign, find, erase, erase_value
//   fifo_model         one queue per key (a test uses the key to name segments that start and end empty): push, pop
//   ordered_map_model  keys in groups of `group_width` (key / group_width), each group its own std::map, starting
//                      with a sentinel key at the group's last key so lower_bound never leaves the group: insert,
//                      find, erase, lower_bound, range (inside one group; the result as a count and a digest)
//   ordered_map_key_model  the same keys one at a time (map_model, each group's sentinel present from the start),
//                      for promises that hold key by key: single-key operations, and what a read of several keys
//                      saw of each of them (key_observations)
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/operation.hpp"

namespace shoal::testing::history {

inline std::size_t mix_hash(std::size_t seed, std::uint64_t v) {
  v ^= v >> 33;
  v *= 0xff51afd7ed558ccdull;
  v ^= v >> 33;
  return seed ^ (static_cast<std::size_t>(v) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

/// A range query's result in one number (a range's key-values, in key order): what op_kind::range records in out2.
template <class Pairs>
std::int64_t range_digest(const Pairs& key_values) {
  std::size_t h = 0x7a9e;
  for (const auto& [k, v] : key_values) h = mix_hash(mix_hash(h, static_cast<std::uint64_t>(k)), static_cast<std::uint64_t>(v));
  return static_cast<std::int64_t>(h);
}

struct register_model {
  using state = std::int64_t;
  std::int64_t initial_value = 0;

  std::int64_t partition(const operation& o) const { return o.key; }
  state initial(std::int64_t) const { return initial_value; }
  static std::size_t hash(const state& s) { return mix_hash(0, static_cast<std::uint64_t>(s)); }

  bool step(state& s, const operation& o) const {
    const auto u = static_cast<std::uint64_t>(s);
    switch (o.kind) {
      case op_kind::load: return o.out == s;
      case op_kind::store: s = o.arg; return true;
      case op_kind::fetch_add:
        if (o.out != s) return false;
        s = static_cast<std::int64_t>(u + static_cast<std::uint64_t>(o.arg));  // wraps like the hardware
        return true;
      case op_kind::fetch_xor:
        if (o.out != s) return false;
        s = static_cast<std::int64_t>(u ^ static_cast<std::uint64_t>(o.arg));
        return true;
      case op_kind::exchange:
        if (o.out != s) return false;
        s = o.arg;
        return true;
      case op_kind::compare_exchange:
        if (o.out != s) return false;
        if (s == o.arg) s = o.arg2;
        return true;
      default: return false;
    }
  }
};

struct map_model {
  struct state {
    bool present = false;
    std::int64_t value = 0;
    friend bool operator==(const state&, const state&) = default;
  };

  std::int64_t partition(const operation& o) const { return o.key; }
  state initial(std::int64_t) const { return {}; }
  static std::size_t hash(const state& s) {
    return mix_hash(s.present ? 1 : 2, static_cast<std::uint64_t>(s.present ? s.value : 0));
  }

  bool step(state& s, const operation& o) const {
    switch (o.kind) {
      case op_kind::insert:
        if ((o.ok != 0) == s.present) return false;
        if (!s.present) s = {true, o.arg};
        return true;
      case op_kind::insert_or_assign:
        if ((o.ok != 0) == s.present) return false;
        s = {true, o.arg};
        return true;
      case op_kind::find: return (o.ok != 0) == s.present && (!s.present || o.out == s.value);
      case op_kind::erase:
        if ((o.ok != 0) != s.present) return false;
        s = {};
        return true;
      case op_kind::erase_value:
        if ((o.ok != 0) != s.present || (s.present && o.out != s.value)) return false;
        s = {};
        return true;
      default: return false;
    }
  }
};

struct fifo_model {
  using state = std::deque<std::int64_t>;

  std::int64_t partition(const operation& o) const { return o.key; }
  state initial(std::int64_t) const { return {}; }
  static std::size_t hash(const state& s) {
    std::size_t h = s.size();
    for (auto v : s) h = mix_hash(h, static_cast<std::uint64_t>(v));
    return h;
  }

  // Try a push when its value is needed: at the call of the pop that returned it (values are unique). Without
  // this, the search tries every order of concurrent pushes and learns which one was right only at their pops.
  std::vector<std::uint64_t> hints(const std::vector<operation>& ops) const {
    std::unordered_map<std::int64_t, std::uint64_t> popped_at;
    for (const auto& o : ops) {
      if (o.kind == op_kind::pop && o.ok != 0) popped_at.emplace(o.out, o.call_ns);
    }
    std::vector<std::uint64_t> h;
    for (const auto& o : ops) {
      const auto it = o.kind == op_kind::push ? popped_at.find(o.arg) : popped_at.end();
      h.push_back(o.kind != op_kind::push ? o.call_ns
                  : it != popped_at.end() ? it->second
                                          : std::numeric_limits<std::uint64_t>::max());
    }
    return h;
  }

  bool step(state& s, const operation& o) const {
    switch (o.kind) {
      case op_kind::push:
        if (o.ok != 0) s.push_back(o.arg);
        return true;
      case op_kind::pop:
        if (o.ok == 0) return s.empty();
        if (s.empty() || s.front() != o.out) return false;
        s.pop_front();
        return true;
      default: return false;
    }
  }
};

struct ordered_map_model {
  using state = std::map<std::int64_t, std::int64_t>;
  std::int64_t group_width = 1;
  std::int64_t sentinel_value = 0;

  std::int64_t partition(const operation& o) const { return o.key / group_width; }
  state initial(std::int64_t group) const { return {{(group + 1) * group_width - 1, sentinel_value}}; }
  static std::size_t hash(const state& s) {
    std::size_t h = s.size();
    for (const auto& [k, v] : s) h = mix_hash(mix_hash(h, static_cast<std::uint64_t>(k)), static_cast<std::uint64_t>(v));
    return h;
  }

  bool step(state& s, const operation& o) const {
    const auto it = s.find(o.key);
    const bool present = it != s.end();
    switch (o.kind) {
      case op_kind::insert:
        if ((o.ok != 0) == present) return false;
        if (!present) s.emplace(o.key, o.arg);
        return true;
      case op_kind::find: return (o.ok != 0) == present && (!present || o.out == it->second);
      case op_kind::erase:
        if ((o.ok != 0) != present) return false;
        if (present) s.erase(it);
        return true;
      case op_kind::lower_bound: {
        const auto lb = s.lower_bound(o.key);
        if (lb == s.end()) return o.ok == 0;
        return o.ok != 0 && o.out == lb->first && o.out2 == lb->second;
      }
      case op_kind::range: {
        if (o.arg < o.key) return o.out == 0;
        std::vector<std::pair<std::int64_t, std::int64_t>> in;
        for (auto r = s.lower_bound(o.key); r != s.end() && r->first <= o.arg; ++r) in.emplace_back(r->first, r->second);
        return o.out == static_cast<std::int64_t>(in.size()) && o.out2 == range_digest(in);
      }
      default: return false;
    }
  }
};

struct ordered_map_key_model : map_model {
  std::int64_t group_width = 1;
  std::int64_t sentinel_value = 0;

  state initial(std::int64_t key) const {
    return key % group_width == group_width - 1 ? state{true, sentinel_value} : state{};
  }
};

/// What a read of several keys (a range [lo, hi], a lower_bound answered by hi) saw of each key of [lo, hi]: one
/// find per key, present with its value or absent, stamped like the read and with its sequence number (the parts
/// of one call). `key_values`: what the read returned, in key order. A returned key outside [lo, hi], repeated or out
/// of order comes out as one more find marked not done, which the checker reports as a malformed operation.
template <class Pairs>
std::vector<operation> key_observations(const operation& read, std::int64_t lo, std::int64_t hi,
                                        const Pairs& key_values) {
  std::vector<operation> out;
  auto it = std::begin(key_values);
  for (std::int64_t k = lo; k <= hi; ++k) {
    operation o = read;
    o.kind = op_kind::find;
    o.key = k;
    o.arg = o.arg2 = o.out2 = 0;
    const bool present = it != std::end(key_values) && it->first == k;
    o.ok = present ? 1 : 0;
    o.out = present ? it->second : 0;
    if (present) ++it;
    out.push_back(o);
  }
  for (; it != std::end(key_values); ++it) {
    operation o = read;
    o.kind = op_kind::find;
    o.key = it->first;
    o.ok = 1;
    o.out = it->second;
    o.done = 0;
    out.push_back(o);
  }
  return out;
}

}  // namespace shoal::testing::history
