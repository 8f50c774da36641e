// bench/linked_fifo_queue.hpp — the strict FIFO that relaxed_queue is measured against (workload `relaxed_queue`)
// and whose histories the tests check: a distributed linked list in RMA, after MPICH's RMA linked-list examples, run
// as a Michael-Scott queue. Not part of the library: it exists to be the best strict FIFO on the same one-sided
// operations, so that the relaxed queue's ratio means something.
//
// Model: one-sided, hosted head and tail. Each rank owns a pool of list nodes in its segment (nodes are never reused,
// so there is no ABA, and a node read after its publication never changes); the head and tail words live on the host
// rank, each on a cache line of its own, and hold global_ptr::raw() values (8 bytes, swapped by compare_exchange).
// The list starts with a dummy node.
//   try_push: take the next node of the own pool and put (stamp, value) into it; read tail and link the node with
//         compare_exchange(tail.next, null -> node) (a non-null next means the tail lags: help swing it, retry from
//         there); then swing tail to the node.
//   try_pop:  read head and head.next; empty when head.next is null; otherwise read next's item and
//         compare_exchange(head, head -> next).
// Since nodes are never freed, a pop does not wait for a lagging tail (Michael and Scott swing it first only so that
// a dequeued node can be freed): head may pass tail, and pushers walk the tail forward. Linearizable FIFO (checked:
// history_queues.*). Every push and pop goes through the host's two words: the hot spot relaxed_queue removes.
//
// Cost (uncontended): try_push W + 3A; try_pop 3A + R (2A when empty). Failed compare_exchanges retry.
// Collective: construction and destruction. A rank that used up its pool gets false from try_push.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "shoal/containers/relaxed_queue_options.hpp"
#include "shoal/core/clock.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal::bench {

template <remote_storable T>
class linked_fifo_queue {
 public:
  /// What a node carries: the element and its insertion stamp.
  struct item_type {
    std::uint64_t stamp;
    T value;
  };

  /// Collective. `pushes_per_rank` nodes are reserved on each rank; the head and tail live on `host`.
  explicit linked_fifo_queue(std::size_t pushes_per_rank, int host = 0, int clock_sync_rounds = 16)
      : reg_(world(), "shoal::bench::linked_fifo_queue"), me_(shoal::rank()), host_(host),
        pool_size_(pushes_per_rank + 1), clock_(clock_sync_rounds, world()) {
    reg_.check_host(host);
    ends_ = reg_.allocate_collective<std::uint64_t>(2 * line_words);
    pools_ = reg_.allocate_collective<node>(pool_size_);  // on failure reg_ frees ends_
    node* mine = pools_[static_cast<std::size_t>(me_)].local();
    for (std::size_t i = 0; i < pool_size_; ++i) mine[i].next = 0;
    if (me_ == host_) {  // node 0 of the host is the dummy
      const std::uint64_t dummy = pools_[static_cast<std::size_t>(me_)].raw();
      std::uint64_t* ends = ends_[static_cast<std::size_t>(me_)].local();
      for (std::size_t i = 0; i < 2 * line_words; ++i) ends[i] = 0;
      ends[0] = dummy;           // head
      ends[line_words] = dummy;  // tail
    }
    used_ = 1;  // node 0 of every pool stays unused off the host, to keep the pools symmetric
    barrier();
  }

  // Destruction: collective (registration: barrier, then this rank frees its blocks; nothing after finalize).

  linked_fifo_queue(const linked_fifo_queue&) = delete;
  linked_fifo_queue& operator=(const linked_fifo_queue&) = delete;

  /// False when this rank's pool of nodes is used up.
  [[nodiscard]] bool try_push(const T& value) {
    if (used_ == pool_size_) return false;
    const auto fresh = pools_[static_cast<std::size_t>(me_)] + static_cast<std::ptrdiff_t>(used_++);
    put(item_of(fresh.raw()), item_type{clock_.now(), value});
    std::uint64_t last = atomic_load(tail_word());
    for (;;) {
      const std::uint64_t next = compare_exchange(next_of(last), std::uint64_t{0}, fresh.raw());
      if (next == 0) break;                    // linked after `last`
      compare_exchange(tail_word(), last, next);  // the tail lags: help it on, and try after its successor
      last = next;
    }
    compare_exchange(tail_word(), last, fresh.raw());  // fails only when a helper already swung it
    return true;
  }

  std::optional<T> try_pop() {
    auto s = try_pop_stamped();
    if (!s) return std::nullopt;
    return std::move(s->value);
  }

  std::optional<relaxed::stamped<T>> try_pop_stamped() {
    std::uint64_t head = atomic_load(head_word());
    for (;;) {
      const std::uint64_t next = atomic_load(next_of(head));
      if (next == 0) return std::nullopt;
      const item_type item = get(item_of(next));
      const std::uint64_t seen = compare_exchange(head_word(), head, next);
      if (seen == head) {
        return relaxed::stamped<T>{item.value, item.stamp, clock_.now(), global_ptr<node>::from_raw(next).rank()};
      }
      head = seen;  // another pop took it: go on from the head it left
    }
  }

  std::uint64_t now() const { return clock_.now(); }

 private:
  // A list node: `next` holds global_ptr<node>::raw() of the successor (atomics only), then the item (get/put).
  struct node {
    std::uint64_t next;
    item_type item;
  };
  static constexpr std::size_t line_words = 8;  // head and tail on cache lines of their own

  global_ptr<std::uint64_t> head_word() const { return ends_[static_cast<std::size_t>(host_)]; }
  global_ptr<std::uint64_t> tail_word() const {
    return ends_[static_cast<std::size_t>(host_)] + static_cast<std::ptrdiff_t>(line_words);
  }
  static global_ptr<std::uint64_t> next_of(std::uint64_t node_raw) {
    const auto p = global_ptr<node>::from_raw(node_raw);
    return p.template reinterpret<std::uint64_t>();
  }
  static global_ptr<item_type> item_of(std::uint64_t node_raw) {
    const auto p = global_ptr<node>::from_raw(node_raw);
    return global_ptr<item_type>(p.rank(), p.offset() + offsetof(node, item));
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

}  // namespace shoal::bench
