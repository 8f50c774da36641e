// shoal/containers/detail/linked_fifo_queue.hpp — the strict FIFO baseline of relaxed_queue: a distributed linked
// list in RMA, after MPICH's RMA linked-list examples, run as a Michael-Scott queue.
//
// Model: one-sided, hosted head and tail. Each rank owns a pool of list nodes in its segment (nodes are never reused,
// so there is no ABA and a node read after its publication never changes); the head and tail words live on the host
// rank and hold global_ptr::raw() values (8 bytes, swapped by compare_exchange). The list starts with a dummy node.
//   push: take the next node of the own pool, put (stamp, value) into it, then link it: read tail, read tail.next;
//         if null, compare_exchange tail.next null -> node and swing tail; otherwise help swing tail and retry.
//   pop:  read head, tail and head.next; empty when head.next is null; if head == tail, help swing tail; otherwise
//         read next's item and compare_exchange head -> next.
// Linearizable FIFO. Every push and pop goes through the host's two words: the hot spot relaxed_queue removes.
//
// Cost (uncontended): push W + 4A; try_pop 4A + R (3A when empty). Failed compare_exchanges retry.
// Collective: construction and destruction. A rank that used up its pool gets push_result::full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "shoal/containers/relaxed_queue.hpp"
#include "shoal/core/clock.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

template <remote_storable T>
class linked_fifo_queue {
 public:
  using item_type = relaxed_item<T>;

  /// Collective. `pushes_per_rank` nodes are reserved on each rank; the head and tail live on `host`.
  explicit linked_fifo_queue(std::size_t pushes_per_rank, int host = 0, int clock_sync_rounds = 16)
      : reg_(world(), "shoal::detail::linked_fifo_queue"), me_(shoal::rank()), host_(host), pool_size_(pushes_per_rank + 1),
        clock_(clock_sync_rounds, world()) {
    reg_.check_host(host);
    ends_ = reg_.allocate_collective<std::uint64_t>(2);
    pools_ = reg_.allocate_collective<node>(pool_size_);  // on failure reg_ frees ends_
    node* mine = pools_[static_cast<std::size_t>(me_)].local();
    for (std::size_t i = 0; i < pool_size_; ++i) mine[i].sequence = 0;
    if (me_ == host_) {  // node 0 of the host is the dummy
      const std::uint64_t dummy = pools_[static_cast<std::size_t>(me_)].raw();
      ends_[static_cast<std::size_t>(me_)].local()[0] = dummy;
      ends_[static_cast<std::size_t>(me_)].local()[1] = dummy;
    }
    used_ = 1;  // node 0 of every pool stays unused off the host, to keep the pools symmetric
    barrier();
  }

  // Destruction: collective (registration: barrier, then this rank frees its blocks; nothing after finalize).

  linked_fifo_queue(const linked_fifo_queue&) = delete;
  linked_fifo_queue& operator=(const linked_fifo_queue&) = delete;

  [[nodiscard]] relaxed::push_result push(const T& value) {
    if (used_ == pool_size_) return relaxed::push_result::full;
    const auto fresh = pools_[static_cast<std::size_t>(me_)] + static_cast<std::ptrdiff_t>(used_++);
    put(item_of(fresh.raw()), item_type{clock_.now(), value});
    for (;;) {
      const std::uint64_t tail = atomic_load(tail_word());
      const std::uint64_t next = atomic_load(next_of(tail));
      if (next == 0) {
        if (compare_exchange(next_of(tail), std::uint64_t{0}, fresh.raw()) == 0) {
          compare_exchange(tail_word(), tail, fresh.raw());
          return relaxed::push_result::pushed;
        }
      } else {
        compare_exchange(tail_word(), tail, next);  // the tail lags: help it on
      }
    }
  }

  std::optional<T> try_pop() {
    auto s = try_pop_stamped();
    if (!s) return std::nullopt;
    return std::move(s->value);
  }

  std::optional<relaxed::stamped<T>> try_pop_stamped() {
    for (;;) {
      const std::uint64_t head = atomic_load(head_word());
      const std::uint64_t tail = atomic_load(tail_word());
      const std::uint64_t next = atomic_load(next_of(head));
      if (next == 0) return std::nullopt;
      if (head == tail) {
        compare_exchange(tail_word(), tail, next);
        continue;
      }
      const item_type item = get(item_of(next));
      if (compare_exchange(head_word(), head, next) == head) {
        return relaxed::stamped<T>{item.value, item.stamp, clock_.now(), global_ptr<node>::from_raw(next).rank()};
      }
    }
  }

  std::uint64_t now() const { return clock_.now(); }

 private:
  // A list node: the slot's word holds global_ptr<node>::raw() of the successor (atomics only).
  using node = relaxed_slot<T>;

  global_ptr<std::uint64_t> head_word() const { return ends_[static_cast<std::size_t>(host_)]; }
  global_ptr<std::uint64_t> tail_word() const { return ends_[static_cast<std::size_t>(host_)] + 1; }
  static global_ptr<std::uint64_t> next_of(std::uint64_t node_raw) {
    const auto p = global_ptr<node>::from_raw(node_raw);
    return p.template reinterpret<std::uint64_t>();
  }
  static global_ptr<item_type> item_of(std::uint64_t node_raw) {
    const auto p = global_ptr<node>::from_raw(node_raw);
    return global_ptr<item_type>(p.rank(), p.offset() + relaxed_item_offset<T>);
  }

  registration reg_;
  int me_;
  int host_;
  std::size_t pool_size_;
  std::size_t used_ = 0;
  synchronized_clock clock_;
  std::vector<global_ptr<std::uint64_t>> ends_;
  std::vector<global_ptr<node>> pools_;
};

}  // namespace shoal::detail
