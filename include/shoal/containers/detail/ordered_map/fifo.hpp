// shoal/containers/detail/ordered_map/fifo.hpp — the queue of messages between nodes of one rank: a ring of slots
// that doubles when full and is reused afterwards, so a hop between two nodes of a rank allocates nothing (a
// std::deque of these ~200-byte messages allocated and freed a 512-byte block every two messages).
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace shoal::detail::ordered_map {

template <class T>
class fifo {
 public:
  bool empty() const { return size_ == 0; }

  void push_back(T&& v) {
    if (size_ == slots_.size()) grow();
    slots_[wrap(head_ + size_)].emplace(std::move(v));
    ++size_;
  }

  /// Removes the oldest element and returns it.
  T pop_front() {
    std::optional<T>& s = slots_[head_];
    T v = std::move(*s);
    s.reset();
    head_ = wrap(head_ + 1);
    --size_;
    return v;
  }

 private:
  /// Position i of the ring (slots_.size() is a power of two).
  std::size_t wrap(std::size_t i) const { return i & (slots_.size() - 1); }

  void grow() {
    std::vector<std::optional<T>> bigger(slots_.empty() ? 16 : 2 * slots_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move(slots_[wrap(head_ + i)]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<std::optional<T>> slots_;  // a power of two of them
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace shoal::detail::ordered_map
