// A whole skip-list service in one process: one service per simulated rank, per-pair FIFO channels, and a random
// choice of which channel delivers next — so one test explores many interleavings of the distributed protocol.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "shoal/containers/detail/ordered_map/service.hpp"

namespace shoal::testing {

template <class K, class V>
class simulated_service {
 public:
  using service_type = shoal::detail::ordered_map::service<K, V>;

  simulated_service(int ranks, const shoal::ordered_map_options& opts, std::uint64_t seed)
      : np_(ranks), granularity_(opts.granularity), channels_(static_cast<std::size_t>(ranks * ranks)), rng_(seed) {
    for (int r = 0; r < ranks; ++r) {
      shoal::detail::ordered_map::transport t;
      t.rank = r;
      t.ranks = ranks;
      t.send = [this, r](int dst, std::span<const std::byte> bytes) {
        channels_[static_cast<std::size_t>(r * np_ + dst)].emplace_back(bytes.begin(), bytes.end());
        ++in_flight_;
      };
      services_.push_back(std::make_unique<service_type>(opts, t));
    }
  }

  service_type& at(int rank) { return *services_[static_cast<std::size_t>(rank)]; }
  int ranks() const { return np_; }

  /// Delivers one message from a random non-empty channel; false when nothing is in flight.
  bool step() {
    if (in_flight_ == 0) return false;
    std::uniform_int_distribution<std::size_t> pick(0, channels_.size() - 1);
    for (;;) {
      auto& ch = channels_[pick(rng_)];
      if (ch.empty()) continue;
      auto bytes = std::move(ch.front());
      ch.pop_front();
      --in_flight_;
      const std::size_t idx = static_cast<std::size_t>(&ch - channels_.data());
      services_[idx % static_cast<std::size_t>(np_)]->deliver(bytes);
      return true;
    }
  }

  void run_until_quiet() {
    while (step()) {
    }
  }

  /// Walks level 0 from the head and checks the skip-list invariants; returns every key-value in order.
  std::vector<std::pair<K, V>> check_structure(std::vector<std::string>& problems) {
    using node_t = typename service_type::node_type;
    std::map<std::tuple<int, std::uint32_t, std::uint32_t>, const node_t*> nodes;
    for (auto& s : services_)
      s->for_each_local_node([&](const node_t& n) { nodes[{n.self.rank, n.self.slot, n.self.gen}] = &n; });
    auto get = [&](const shoal::detail::ordered_map::node_ref& r) -> const node_t* {
      auto it = nodes.find({r.rank, r.slot, r.gen});
      return it == nodes.end() ? nullptr : it->second;
    };
    std::vector<std::pair<K, V>> out;
    const node_t* n = get(service_type::head_ref);
    std::size_t visited = 0;
    while (n != nullptr) {
      ++visited;
      if (n->held_back() || n->holds_requests()) problems.push_back("a node still holds requests");
      if (n->marked) problems.push_back("a node still marked for a split");
      if (n->keys.size() > granularity_) problems.push_back("a node above G key-values");
      if (n->keys.empty() && !n->is_head) problems.push_back("an empty node still linked");
      for (std::size_t i = 0; i < n->keys.size(); ++i) {
        if (!n->is_head && n->keys[i] < n->min) problems.push_back("a key below its node's min");
        if (!out.empty() && !(out.back().first < n->keys[i])) problems.push_back("keys out of order");
        out.emplace_back(n->keys[i], n->values[i]);
      }
      for (std::size_t lvl = 0; lvl < n->tower.size(); ++lvl) {
        const auto& l = n->tower[lvl];
        if (!l.has_next()) continue;
        const node_t* next = get(l.next);
        if (next == nullptr) {
          problems.push_back("a link to a freed node");
          continue;
        }
        if (!(l.next_min == next->min)) problems.push_back("a stale min key in a tower");
        if (next->tower.size() <= lvl) problems.push_back("a link to a node too short for its level");
      }
      n = n->tower[0].has_next() ? get(n->tower[0].next) : nullptr;
    }
    if (visited != nodes.size()) problems.push_back("nodes in use that are not in the list");
    // Every level is a sub-list of the level below: walk each level and check it is ordered by min key.
    return out;
  }

 private:
  int np_;
  std::size_t granularity_;
  std::vector<std::deque<std::vector<std::byte>>> channels_;
  std::vector<std::unique_ptr<service_type>> services_;
  std::mt19937_64 rng_;
  std::size_t in_flight_ = 0;
};

}  // namespace shoal::testing
