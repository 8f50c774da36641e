// apps/contig/owner_rounds.hpp — items sent to their owners in rounds through one-sided queues (shoal::fast_queue),
// for the k-mer counter (count.hpp).
//
// Every rank hosts one fast_queue. A round: each rank takes items from its source until it holds about
// `round_items` (sorted into one batch per owner), pushes every other owner's batch into that owner's queue (pieces
// of up to `piece_items`: one remote fetch_add and one put each; on shared memory a CPU atomic and a memcpy, no
// message, and no work by the owner's CPU), applies its own batch, and after a barrier (the push phase ends) takes
// everything from its own queue with local pops and applies it. An allreduce then says whether any rank has items
// left; it also separates this round's pops from the next round's pushes. A piece that does not fit its owner's
// queue (items crowding on one owner) waits, in order, for the next round.
//
// Why rounds and not streamed active messages: on a machine with more runnable processes than cores, a rank is
// often descheduled. An active-message buffer (MPI two-sided) needs its receiver's MPI progress to move, so a
// sender waited for its receiver to be scheduled, buffer after buffer. Here the ranks meet twice per round; in
// between, each works on its own items only.
//
// Memory per rank: the batches (about round_items items), the hosted queue (round_items (p-1)/p plus a quarter, in
// the symmetric heap) and the received items (as many).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "shoal/containers/fast_queue.hpp"
#include "shoal/core.hpp"

namespace contig {

template <class Item>
class owner_rounds {
 public:
  static constexpr std::size_t piece_items = std::size_t{1} << 13;

  /// Collective: every rank passes the same round_items (> 0).
  explicit owner_rounds(std::size_t round_items) : round_items_(round_items) {
    const auto p = static_cast<std::size_t>(shoal::size());
    batches_.resize(p);
    for (auto& b : batches_) b.reserve(round_items / p + round_items / (4 * p) + 256);
    if (p == 1) return;  // one rank: every item is its own
    const std::size_t expected = round_items * (p - 1) / p;
    capacity_ = std::max(piece_items, expected + expected / 4);
    for (std::size_t r = 0; r < p; ++r) queues_.emplace_back(static_cast<int>(r), capacity_);
  }

  /// Collective. `fill(batches, budget)` appends about `budget` more items (at least one when it returns true),
  /// each to batches[its owner's rank], and returns whether its source has more; `apply(std::span<const Item>)`
  /// applies items on their owner. Returns when every rank's source is exhausted and every item applied.
  template <class Fill, class Apply>
  void run(Fill&& fill, Apply&& apply) {
    const int me = shoal::rank();
    const int p = shoal::size();
    bool source_left = true;
    for (;; ++rounds_) {
      std::size_t held = 0;
      for (const auto& b : batches_) held += b.size();
      if (source_left && held < round_items_) source_left = fill(batches_, round_items_ - held);
      for (int i = 1; i < p; ++i) push_pieces((me + i) % p);  // start past this rank: spreads the pushes
      auto& own = batches_[static_cast<std::size_t>(me)];
      apply(std::span<const Item>(own));
      own.clear();
      if (p == 1) {
        if (!source_left) break;
        continue;
      }
      shoal::barrier();  // every push of the round is in its queue
      incoming_.clear();
      queues_[static_cast<std::size_t>(me)].pop(incoming_, capacity_, shoal::promise::local);
      apply(std::span<const Item>(incoming_));
      bool left = source_left;
      for (const auto& b : batches_) left = left || !b.empty();
      if (shoal::allreduce(left ? 1 : 0, shoal::op::max{}) == 0) break;
    }
    ++rounds_;
  }

  /// Rounds run so far (the same on every rank).
  std::size_t rounds() const { return rounds_; }

  /// Bytes this rank holds for the exchange: batches, its hosted queue, the received items.
  std::size_t bytes() const {
    std::size_t n = capacity_ + incoming_.capacity();
    for (const auto& b : batches_) n += b.capacity();
    return n * sizeof(Item);
  }

 private:
  // Pushes dest's batch into its queue piece by piece; what does not fit stays (in order) for the next round.
  void push_pieces(int dest) {
    auto& batch = batches_[static_cast<std::size_t>(dest)];
    std::size_t done = 0;
    while (done < batch.size()) {
      const std::size_t n = std::min(piece_items, batch.size() - done);
      if (!queues_[static_cast<std::size_t>(dest)].push(std::span<const Item>(batch.data() + done, n))) break;
      done += n;
    }
    batch.erase(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(done));
  }

  std::size_t round_items_;
  std::size_t capacity_ = 0;
  std::size_t rounds_ = 0;
  std::vector<shoal::fast_queue<Item>> queues_;  // queues_[r] is hosted by rank r
  std::vector<std::vector<Item>> batches_;       // per owner
  std::vector<Item> incoming_;
};

}  // namespace contig
