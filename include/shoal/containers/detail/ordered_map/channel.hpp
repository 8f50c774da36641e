// shoal/containers/detail/ordered_map/channel.hpp — how one rank's skip-list service sends and receives messages.
//
// The service only sees bytes: `deliver` takes a message from the network, and the transport sends messages to other
// ranks. A message to a node of this rank is handled right away, after the handler that sent it, through a local FIFO
// (so one incoming message and everything it causes on this rank run as one atomic step: `pump`). Messages from one
// rank to another must be handled in send order; the service needs nothing else from the network.
//
// Fences (paper §2.4 needs every channel into a node to stay FIFO when its sender changes): when a node takes over
// the sending to a successor from a node on another rank (link, unlink), the old sender sends a fence behind its last
// request; the successor's rank acknowledges it to the new sender, which holds its messages to that successor (and,
// behind them, to every other node) until then.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstring>
#include <deque>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "shoal/containers/detail/ordered_map/fifo.hpp"
#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/detail/ordered_map/wire.hpp"
#include "shoal/containers/ordered_map_operation.hpp"

namespace shoal::detail::ordered_map {

/// How the service reaches other ranks.
struct transport {
  int rank = 0;
  int ranks = 1;
  std::function<void(int, std::span<const std::byte>)> send;  // the bytes are only valid during the call
  std::function<void()> flush;  // push buffered messages out (may be empty)
  // Room for a message of n bytes to a rank, written there before any other shoal call (may be empty: messages are
  // then sent from the channel's own buffer). Handlers may run inside it, before the room is returned.
  std::function<std::byte*(int, std::size_t)> reserve;
};

template <class K, class V>
class channel {
 public:
  using message_type = message<K, V>;
  using codec_type = codec<K, V>;

  /// `batch`: messages written before the transport is flushed; `stats` counts remote messages and fences.
  channel(transport net, std::size_t batch, ordered_map_stats& stats)
      : net_(std::move(net)), batch_(batch), stats_(stats) {}

  int rank() const { return net_.rank; }
  int ranks() const { return net_.ranks; }

  /// A message from another rank: handled at once (decoded straight from `bytes`) unless messages are queued or a
  /// pump runs, then queued behind them; then runs `pump(handle)`.
  template <class Handle>
  void deliver(std::span<const std::byte> bytes, Handle&& handle) {
    if (pumping_ || !local_.empty()) {
      local_.push_back(codec_type::decode(bytes));
    } else {
      pumping_ = true;
      auto m = codec_type::decode(bytes);
      handle(m);
      pumping_ = false;
    }
    pump(handle);
  }

  /// Runs handle(message&) on every queued message, including those it queues meanwhile (not re-entrant: a nested
  /// call returns at once and the outer loop handles what it queued).
  template <class Handle>
  void pump(Handle&& handle) {
    if (pumping_) return;
    pumping_ = true;
    while (!local_.empty()) {
      auto m = local_.pop_front();
      handle(m);
    }
    pumping_ = false;
  }

  /// A message to `rank`: this rank's queue, or the transport.
  void post(int rank, message_type&& m) {
    if (rank == net_.rank) {
      local_.push_back(std::move(m));
      return;
    }
    send_encoded(rank, m);
  }

  /// A range reply whose key-values are still in a node's arrays: encoded straight from them for another rank,
  /// copied into the reply's vector for this one (the node may change before the local FIFO reaches the reply).
  /// Key-values of plain bytes are written where the message travels from (the transport's room) while a pump runs:
  /// handlers the reservation runs then only queue what they deliver, so the node is read unchanged after it.
  void post_part(int rank, reply<K, V>&& p, const pairs_source<K, V>& items) {
    if (rank == net_.rank) {
      assign_pairs(p.items, items, items.keys.size());
      local_.push_back(std::move(p));
      return;
    }
    if constexpr (plain_pair<K, V>) {
      if (net_.reserve && pumping_ && !sending_) return send_part_in_place(rank, message_type(std::move(p)), items);
    }
    send_encoded(rank, message_type(std::move(p)), &items);
  }

  /// Pushes buffered messages out.
  void flush() {
    if (net_.flush) net_.flush();
    unflushed_ = 0;
  }

  /// A message from node `from` to node `dest`: held while `from` waits for a fence on that channel, or while it
  /// holds earlier messages to any node.
  void send_from(const node_ref& from, const node_ref& dest, message_type&& m) {
    auto it = outbox_.find(from);
    if (it != outbox_.end() && (!it->second.queue.empty() || it->second.holds(dest))) {
      it->second.queue.emplace_back(dest, std::move(m));
      return;
    }
    post(dest.rank, std::move(m));
  }

  /// `from` took over the sending to `dest` behind a fence: it holds its messages to `dest` until the fence's ack.
  void expect_fence(const node_ref& from, const node_ref& dest) { adjust_fence(from, dest, +1); }

  /// A fence is needed when the new sender is on another rank than the old one and the old one's requests to `dest`
  /// may still be on the way (it is not on dest's rank, where they were handled at once) — or when the old sender
  /// still holds messages or waits for a fence to `dest` itself (what it waits for — requests of the sender before
  /// it, or the node_init that creates `dest` — must not be overtaken either: the new sender inherits the wait).
  bool needs_fence(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) const {
    if (!dest.valid()) return false;
    if (old_sender.rank != new_sender.rank && old_sender.rank != dest.rank) return true;
    auto it = outbox_.find(old_sender);
    return it != outbox_.end() && (!it->second.queue.empty() || it->second.holds(dest));
  }

  /// The old sender's fence, behind everything it sent to `dest`.
  void hand_over(const node_ref& old_sender, const node_ref& new_sender, const node_ref& dest) {
    ++stats_.fences;
    send_from(old_sender, dest, fence{new_sender, dest});
  }

  /// At dest's rank: the fence came after the old sender's requests; the new sender may go on.
  void fence_arrived(const fence& f) { post(f.from.rank, fence_ack{f.from, f.dest}); }
  /// At the new sender's rank: releases what it held for the fence's channel.
  void fence_acknowledged(const fence_ack& f) { adjust_fence(f.from, f.dest, -1); }

 private:
  /// While it lives, out_ holds a message being sent (sending_): a send from a handler run meanwhile encodes into a
  /// buffer of its own.
  class sending_scope {
   public:
    explicit sending_scope(bool& flag) : flag_(flag) { flag_ = true; }
    sending_scope(const sending_scope&) = delete;
    sending_scope& operator=(const sending_scope&) = delete;
    ~sending_scope() { flag_ = false; }

   private:
    bool& flag_;
  };

  /// Encodes a message for another rank and sends it. The transport may run handlers while it waits for room to
  /// write the message, and they may send too: such a nested send encodes into a buffer of its own (rare), so the
  /// bytes being sent stay intact.
  void send_encoded(int rank, const message_type& m, const pairs_source<K, V>* items = nullptr) {
    ++stats_.remote_messages;
    if (sending_) [[unlikely]] {
      std::vector<std::byte> bytes;
      net_.send(rank, codec_type::encode(m, bytes, items));
    } else {
      const auto bytes = codec_type::encode(m, out_, items);
      const sending_scope sending(sending_);
      net_.send(rank, bytes);
    }
    if (++unflushed_ > batch_) flush();
  }

  /// A range part (post_part) written into the transport's room: its fields up to the pairs' count from the encode
  /// buffer, then the pairs from the node's arrays — one copy of each key-value, none through the encode buffer.
  void send_part_in_place(int rank, const message_type& m, const pairs_source<K, V>& items)
    requires plain_pair<K, V>
  {
    ++stats_.remote_messages;
    const auto head = codec_type::encode_head(m, out_, items);
    {
      const sending_scope sending(sending_);  // a send from a handler the reservation runs has its own buffer
      std::byte* at = net_.reserve(rank, head.size() + items.keys.size() * (sizeof(K) + sizeof(V)));
      std::memcpy(at, head.data(), head.size());
      put_packed_pairs(at + head.size(), items);
    }
    if (++unflushed_ > batch_) flush();
  }

  /// The outgoing messages of one node while it waits for fences. One FIFO for all its successors: a message held
  /// for one successor must also hold back the node's later messages to other successors, since a later request
  /// can reach the first successor through another (a lower_bound / successor continuing on level 0).
  struct sender_outbox {
    absl::flat_hash_map<node_ref, int> pending;  // per successor: fence acks still expected (negative: acks that
                                                 // came before the hand-over was known)
    std::deque<std::pair<node_ref, message_type>> queue;
    bool holds(const node_ref& dest) const {
      auto it = pending.find(dest);
      return it != pending.end() && it->second > 0;
    }
  };

  void adjust_fence(const node_ref& from, const node_ref& dest, int delta) {
    auto& box = outbox_[from];
    if ((box.pending[dest] += delta) == 0) box.pending.erase(dest);
    // Release in send order, up to the first message whose successor still waits for a fence.
    while (!box.queue.empty() && !box.holds(box.queue.front().first)) {
      auto [to, m] = std::move(box.queue.front());
      box.queue.pop_front();
      post(to.rank, std::move(m));
    }
    if (box.queue.empty() && box.pending.empty()) outbox_.erase(from);
  }

  transport net_;
  std::size_t batch_;
  ordered_map_stats& stats_;
  fifo<message_type> local_;
  std::vector<std::byte> out_;  // holds the message being sent from its start (reused, never shrunk)
  bool sending_ = false;         // out_ is being sent (a send from a handler run meanwhile needs its own bytes)
  bool pumping_ = false;
  std::size_t unflushed_ = 0;
  absl::flat_hash_map<node_ref, sender_outbox> outbox_;
};

}  // namespace shoal::detail::ordered_map
