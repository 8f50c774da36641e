// shoal/containers/detail/ordered_map/node_manager.hpp — the free-node service of one rank (paper §2.2).
//
// A rank's manager owns a table of node slots, at most `capacity` of them in use. A node that needs a free node asks
// a manager; a manager with none forwards the request to the next manager in the ring (rank + 1 mod p); a request
// that has visited every manager without finding one is answered `list full`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "shoal/containers/detail/ordered_map/node.hpp"

namespace shoal::detail::ordered_map {

template <class K, class V>
class node_manager {
 public:
  node_manager(int rank, std::size_t capacity) : rank_(rank), capacity_(capacity) {}

  /// A free slot, now in use, or an invalid reference when this rank has none.
  node_ref acquire() {
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else if (slots_.size() < capacity_) {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
      slots_.back().self = {rank_, slot, 0};
    } else {
      return {};
    }
    auto& n = slots_[slot];
    n.in_use = true;
    n.self = {rank_, slot, n.gen};
    ++in_use_;
    return n.self;
  }

  /// Returns a node to the free pool (its generation changes).
  void release(std::uint32_t slot) {
    slots_[slot].release();
    free_.push_back(slot);
    --in_use_;
  }

  /// The live node `ref` names, or nullptr when the reference is stale (freed, or freed and reused).
  node<K, V>* get(const node_ref& ref) {
    if (ref.rank != rank_ || ref.slot >= slots_.size()) return nullptr;
    auto& n = slots_[ref.slot];
    return (n.in_use && n.gen == ref.gen) ? &n : nullptr;
  }

  /// Where an unsatisfied request goes next, or -1 when it has been around the whole ring.
  static int next_in_ring(int rank, int hops, int ranks) { return hops + 1 >= ranks ? -1 : (rank + 1) % ranks; }

  std::size_t in_use() const { return in_use_; }
  std::size_t capacity() const { return capacity_; }
  const std::deque<node<K, V>>& slots() const { return slots_; }

 private:
  int rank_;
  std::size_t capacity_;
  std::size_t in_use_ = 0;
  std::deque<node<K, V>> slots_;  // a deque: nodes never move while a handler holds one
  std::vector<std::uint32_t> free_;
};

}  // namespace shoal::detail::ordered_map
