// shoal/containers/detail/ring_queue.hpp — the face circular_queue and fast_queue share over their hosted ring
// (hosted_ring.hpp): construction, the accessors, the push overloads (one value, a vector, a span: all or nothing;
// try_push answers false, push throws container_full), size, resize and migrate. Each queue brings what differs:
// push_values (how a push claims and publishes slots) and default_push (the promise a push assumes when none is
// given). The costs are in each queue's header.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "shoal/containers/detail/hosted_ring.hpp"
#include "shoal/containers/promise.hpp"

namespace shoal::detail {

template <class Queue, remote_storable T>
class ring_queue {
 public:
  using value_type = T;

  /// The host's rank in the queue's team.
  int host() const noexcept { return ring_.host(); }
  const shoal::team& team() const noexcept { return ring_.team(); }
  std::size_t capacity() const noexcept { return ring_.capacity(); }

  /// Pushes one value; false (nothing written) when the queue is full.
  [[nodiscard]] bool try_push(const T& value, concurrency promised = Queue::default_push) {
    return try_push(std::span<const T>(&value, 1), promised);
  }
  [[nodiscard]] bool try_push(const std::vector<T>& values, concurrency promised = Queue::default_push) {
    return try_push(std::span<const T>(values), promised);
  }
  /// Pushes all values or none; false when they do not all fit.
  [[nodiscard]] bool try_push(std::span<const T> values, concurrency promised = Queue::default_push) {
    return queue().push_values(values, promised, "try_push");
  }

  /// As try_push, but a queue without room for the values throws container_full (nothing written).
  void push(const T& value, concurrency promised = Queue::default_push) {
    push(std::span<const T>(&value, 1), promised);
  }
  void push(const std::vector<T>& values, concurrency promised = Queue::default_push) {
    push(std::span<const T>(values), promised);
  }
  void push(std::span<const T> values, concurrency promised = Queue::default_push) {
    if (!queue().push_values(values, promised, "push")) ring_.throw_full(values.size());
  }

  /// Values in the queue (2 A); exact between phases.
  std::size_t size() { return ring_.size(); }
  bool empty() { return size() == 0; }

  /// Collective: a new capacity (at least size()); the values are kept.
  void resize(std::size_t new_capacity) { ring_.resize(new_capacity); }
  /// Collective: moves the queue and its values to `new_host`.
  void migrate(int new_host) { ring_.migrate(new_host); }

 protected:
  /// Collective: every rank constructs the queue with the same host and capacity.
  ring_queue(int host, std::size_t capacity, const char* name, const shoal::team& team)
      : ring_(host, capacity, name, team) {}
  ring_queue(ring_queue&&) noexcept = default;
  ring_queue& operator=(ring_queue&&) noexcept = default;
  ring_queue(const ring_queue&) = delete;
  ring_queue& operator=(const ring_queue&) = delete;
  ~ring_queue() = default;

  hosted_ring<T> ring_;

 private:
  Queue& queue() { return static_cast<Queue&>(*this); }
};

}  // namespace shoal::detail
