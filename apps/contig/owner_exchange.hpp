// apps/contig/owner_exchange.hpp — items streamed to their owners through one-sided queues (shoal::circular_queue),
// for the k-mer counter (count.hpp).
//
// Every rank hosts one circular_queue (fed by every other rank, drained by its host) and p words of a shoal::darray
// ("announced"). Each rank loops: take a chunk of items from its source (sorted into one batch per owner), apply
// its own batch, push every other owner's batch into that owner's queue (pieces of up to `piece_items`: a claim, a
// put and a publish — on shared memory CPU atomics and a memcpy; no message and no work by the owner's CPU), and
// drain its own queue (pops on its own memory), applying what arrived. A piece that does not fit waits, in order,
// for a later turn. When its source is exhausted and every piece pushed, a rank announces to each owner how many
// items it pushed there (an atomic store into the owner's words), then drains until every rank has announced and
// it has received the sum; a barrier ends the exchange. Collective construction: p queues and one darray; an
// exchange may run any number of times (the counter runs its two passes through one).
//
// Why streamed this way: on a machine with more runnable processes than cores, a rank is often descheduled, and a
// rank that must wait for another loses its share of the CPU. An active-message buffer (MPI two-sided) needs its
// receiver's MPI progress to move, so a sender waited for its receiver to be scheduled, buffer after buffer; rounds
// separated by barriers made every rank wait for the slowest once per round. Here a rank waits only when the queue
// to an owner is full (it drains its own meanwhile) and at the end.
//
// Memory per rank: the batches (about one chunk), the hosted queue (`queue_items` items, symmetric heap) and the
// drained items (at most one queue's worth).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <thread>
#include <vector>

#include "shoal/containers/circular_queue.hpp"
#include "shoal/containers/darray.hpp"
#include "shoal/core.hpp"

namespace contig {

template <class Item>
class owner_exchange {
 public:
  static constexpr std::size_t default_piece_items = std::size_t{1} << 13;

  /// Collective: every rank passes the same chunk_items (items taken from the source per turn), queue_items
  /// (capacity of each rank's queue) and piece_items (items per push); all > 0.
  owner_exchange(std::size_t chunk_items, std::size_t queue_items, std::size_t piece_items = default_piece_items)
      : chunk_items_(chunk_items),
        piece_items_(piece_items),
        me_(static_cast<std::size_t>(shoal::rank())),
        announced_(static_cast<std::size_t>(shoal::size()) * static_cast<std::size_t>(shoal::size())) {
    const auto p = static_cast<std::size_t>(shoal::size());
    batches_.resize(p);
    for (auto& b : batches_) b.reserve(chunk_items / p + chunk_items / (4 * p) + 256);
    sent_.assign(p, 0);
    if (p == 1) return;  // one rank: every item is its own
    capacity_ = std::max(queue_items, piece_items);  // a piece always fits an empty queue
    for (std::size_t host = 0; host < p; ++host) queues_.emplace_back(static_cast<int>(host), capacity_);
  }

  /// Collective. `fill(batches, budget)` appends about `budget` more items (at least one when it returns true),
  /// each to batches[its owner's rank], and returns whether its source has more; `apply(std::span<const Item>)`
  /// applies items on their owner. Returns when every rank's items are applied.
  template <class Fill, class Apply>
  void run(Fill&& fill, Apply&& apply) {
    const std::size_t p = batches_.size();
    std::fill(sent_.begin(), sent_.end(), 0);
    received_ = 0;
    bool source_left = true;
    waiter idle;
    while (source_left || held() > 0) {
      bool moved = false;
      if (source_left && held() < chunk_items_) {
        source_left = fill(batches_, chunk_items_);
        auto& own = batches_[me_];
        apply(std::span<const Item>(own));
        own.clear();
        moved = true;
      }
      for (std::size_t i = 1; i < p; ++i) moved = push_pieces((me_ + i) % p) || moved;  // start past this rank
      moved = drain(apply) || moved;
      idle.after(moved);
    }
    if (p == 1) return;
    for (std::size_t dest = 0; dest < p; ++dest) {  // 0: not yet announced
      if (dest != me_) shoal::atomic_store(announced_.ptr(dest * p + me_), sent_[dest] + 1);
    }
    while (!all_received()) idle.after(drain(apply));
    // Every announcement to this rank is read: clear them for the next run before the barrier, after which another
    // rank may announce again.
    for (std::size_t source = 0; source < p; ++source) {
      if (source != me_) shoal::atomic_store(announced_.ptr(me_ * p + source), std::uint64_t{0});
    }
    shoal::barrier();  // every rank received everything: the queues are empty
  }

  /// Pushes that found an owner's queue full (the piece waited for a later turn), on this rank.
  std::uint64_t full_pushes() const { return full_pushes_; }

  /// Bytes this rank holds for the exchange: batches, its hosted queue, the drained items.
  std::size_t bytes() const {
    std::size_t n = capacity_ + incoming_.capacity();
    for (const auto& b : batches_) n += b.capacity();
    return n * sizeof(Item);
  }

 private:
  /// Backs off while a rank has nothing to do (its queues to the owners full, nothing arrived): yields, then
  /// sleeps, so that it does not hold a core the ranks it waits for need.
  class waiter {
   public:
    void after(bool moved) {
      if (moved) {
        idle_ = 0;
        return;
      }
      shoal::progress();
      if (++idle_ > 1024) std::this_thread::sleep_for(std::chrono::microseconds(20));
      else if (idle_ > 16) std::this_thread::yield();
    }

   private:
    int idle_ = 0;
  };

  std::size_t held() const {
    std::size_t n = 0;
    for (const auto& b : batches_) n += b.size();
    return n;
  }

  // Pushes dest's batch into the queue dest hosts for this rank, piece by piece, while they fit; the rest stays (in
  // order) for a later turn. True when something was pushed.
  bool push_pieces(std::size_t dest) {
    auto& batch = batches_[dest];
    std::size_t done = 0;
    while (done < batch.size()) {
      const std::size_t n = std::min(piece_items_, batch.size() - done);
      if (!queues_[dest].try_push(std::span<const Item>(batch.data() + done, n))) {
        ++full_pushes_;
        break;
      }
      done += n;
    }
    sent_[dest] += done;
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(done));
    return done > 0;
  }

  // Takes what arrived in this rank's queue and applies it. True when something arrived.
  template <class Apply>
  bool drain(Apply& apply) {
    if (queues_.empty()) return false;  // one rank
    incoming_.clear();
    const std::size_t n = queues_[me_].try_pop(incoming_, capacity_);
    if (n == 0) return false;
    received_ += n;
    apply(std::span<const Item>(incoming_));
    return true;
  }

  // True when every other rank announced its total for this rank and all of it was received.
  bool all_received() {
    const std::size_t p = batches_.size();
    std::uint64_t expected = 0;
    for (std::size_t source = 0; source < p; ++source) {
      if (source == me_) continue;
      const std::uint64_t a = shoal::atomic_load(announced_.ptr(me_ * p + source));
      if (a == 0) return false;
      expected += a - 1;
    }
    return received_ == expected;
  }

  std::size_t chunk_items_;
  std::size_t piece_items_;
  std::size_t me_;
  std::size_t capacity_ = 0;
  std::vector<shoal::circular_queue<Item>> queues_;  // queues_[r] is hosted by rank r
  shoal::darray<std::uint64_t> announced_;           // [host * p + source]: items source pushed to host, + 1
  std::vector<std::vector<Item>> batches_;           // per owner
  std::vector<Item> incoming_;
  std::vector<std::uint64_t> sent_;                  // items pushed to each rank
  std::uint64_t received_ = 0;                       // items drained from this rank's queue
  std::uint64_t full_pushes_ = 0;
};

}  // namespace contig
