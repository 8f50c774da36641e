// shoal/containers/detail/ordered_map/bulletin_board.hpp — the shortcuts of one rank (paper §2.5).
//
// Every node posts (min key, node, tower height) on the board of the rank that owns it; clients and nodes of that
// rank look up the node with the largest min key below a key to enter the list there instead of at the head. A
// shortcut is only a hint: the node it names checks it still covers the key, and otherwise the request fails over
// to the head.
#pragma once

#include <absl/container/btree_map.h>

#include <cstdint>
#include <optional>

#include "shoal/containers/detail/ordered_map/messages.hpp"

namespace shoal::detail::ordered_map {

template <class K>
class bulletin_board {
 public:
  struct entry {
    node_ref node;
    int height = 0;
  };
  struct shortcut {
    K min;
    node_ref node;
    int height = 0;
    std::optional<K> next_min;  // the smallest posted min key above `key` (or at it, strictly): a node after key's
  };

  void post(const K& min, node_ref node, int height) {
    board_[min] = {node, height};
    ++version_;
  }
  void remove(const K& min, node_ref node) {
    auto it = board_.find(min);
    if (it == board_.end() || !(it->second.node == node)) return;
    board_.erase(it);
    ++version_;
  }

  /// Changes with every post and removal: a lookup with the same key and version returns the same shortcut.
  std::uint64_t version() const { return version_; }

  /// The posted node with the largest min key below `key` (strictly below when `strictly`) whose tower is at least
  /// `min_height` tall.
  std::optional<shortcut> lookup(const K& key, bool strictly, int min_height = 1) const {
    auto it = strictly ? board_.lower_bound(key) : board_.upper_bound(key);
    const std::optional<K> next = it == board_.end() ? std::nullopt : std::optional<K>(it->first);
    for (int looked = 0; it != board_.begin() && looked < max_scan; ++looked) {
      --it;
      if (it->second.height >= min_height) return shortcut{it->first, it->second.node, it->second.height, next};
    }
    return std::nullopt;
  }

  /// The smallest posted min key above `key`, if any.
  std::optional<K> next_min_above(const K& key) const {
    const auto it = board_.upper_bound(key);
    return it == board_.end() ? std::nullopt : std::optional<K>(it->first);
  }

  std::size_t size() const { return board_.size(); }

 private:
  static constexpr int max_scan = 64;  // taller towers are rarer: give up and enter at the head
  absl::btree_map<K, entry> board_;  // a B-tree: a lookup per operation, few cache misses
  std::uint64_t version_ = 0;
};

}  // namespace shoal::detail::ordered_map
