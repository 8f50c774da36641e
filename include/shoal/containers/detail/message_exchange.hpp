// shoal/containers/detail/message_exchange.hpp — byte messages shipped one-sidedly into hosted mailboxes.
//
// Every rank hosts a mailbox in its own heap: `slots` fixed-size message slots and a 64-bit tail counter. A sender
// appends records to a per-destination outbox; when the outbox reaches `message_bytes` it is shipped: one fetch_add
// on the destination's tail reserves a slot (A), one put writes header and payload (W). A reservation past the last
// slot fails without writing anything, so a mailbox never holds a gap; the message then waits in the sender's
// pending list (order kept; the outbox takes a new buffer) and is shipped in a later round of complete(). Records for
// this rank itself are kept where they were appended.
//
// complete() is collective: rounds of (ship outboxes and pending messages, barrier, copy the own mailbox out and
// reset it, allreduce "anything still pending?") until nothing is pending anywhere; it then returns every message
// received in this exchange sorted by (source rank, the source's issue order). Mailboxes are only read at complete(),
// so between two complete() calls the owners' CPUs are never involved.
//
// Used by hash_map_buffer (buffered inserts, §5.3 of BCL) and by blob_heap (returning retired blobs to their owner).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shoal/core/registration.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/serialize.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

class message_exchange {
 public:
  struct header {
    std::uint64_t bytes;   // payload bytes after the header
    std::uint32_t source;  // sending rank
    std::uint32_t seq;     // the source's issue order towards this destination within one exchange
  };
  static constexpr std::size_t header_bytes = sizeof(header);

  /// A message received: its source, its place in the source's order, its payload (bytes [first, first + size) of
  /// `bytes`: messages this rank kept for itself still hold their header).
  struct message {
    int source;
    std::uint32_t seq;
    std::unique_ptr<std::byte[]> bytes;
    std::size_t first = 0;
    std::size_t size = 0;
    std::span<const std::byte> payload() const { return {bytes.get() + first, size}; }
  };

  /// Collective over `team`: every rank of the team hosts `slots` slots of `message_bytes` payload bytes. Ranks
  /// (append's `dest`, message::source) are team ranks.
  message_exchange(std::size_t message_bytes, std::size_t slots, const char* owner_name,
                   const shoal::team& team = shoal::world())
      : reg_(team, owner_name), message_bytes_(message_bytes), slots_(slots), name_(owner_name) {
    if (message_bytes == 0 || slots == 0) {
      throw usage_error(std::string(name_) + ": message_bytes and mailbox_messages must be positive");
    }
    const int p = team.size();
    me_ = team.rank();
    tails_ = reg_.allocate_collective<std::uint64_t>(1);
    slot_stride_ = (header_bytes + message_bytes + 15) & ~std::size_t{15};
    boxes_ = reg_.allocate_collective<std::byte>(slot_stride_ * slots);  // on failure reg_ frees tails_
    *tails_[static_cast<std::size_t>(me_)].local() = 0;
    outbox_.resize(static_cast<std::size_t>(p));
    pending_.resize(static_cast<std::size_t>(p));
    seq_.assign(static_cast<std::size_t>(p), 0);
    full_.assign(static_cast<std::size_t>(p), false);
    team.barrier();
  }
  message_exchange(const message_exchange&) = delete;
  message_exchange& operator=(const message_exchange&) = delete;

  std::size_t message_bytes() const { return message_bytes_; }
  const shoal::team& team() const noexcept { return reg_.team(); }

  /// Appends one record of n bytes to the outbox for `dest`. Ships the outbox first when the record would overflow
  /// `message_bytes`, and when the record fills it. Local unless a message is shipped (then A + W).
  void append_bytes(int dest, const void* record, std::size_t n) {
    outbox& box = outbox_[static_cast<std::size_t>(dest)];
    if (n > box.room || !box.data) [[unlikely]] make_room(dest, n);
    std::memcpy(box.data.get() + box.used, record, n);
    box.used += n;
    box.room -= n;
    if (box.room == 0) ship(dest);
  }

  /// Appends one record to the outbox for `dest`; `write(byte_writer&)` serializes it (then as append_bytes).
  template <class Write>
  void append(int dest, Write&& write) {
    record_.clear();
    byte_writer w(record_);
    write(w);
    append_bytes(dest, record_.data(), record_.size());
  }

  /// True when this rank holds records or messages not yet delivered.
  bool has_unsent() const {
    for (std::size_t d = 0; d < outbox_.size(); ++d) {
      if (outbox_[d].used > header_bytes || !pending_[d].empty()) return true;
    }
    return false;
  }

  /// Collective: delivers everything and returns the messages this rank received, sorted by (source, seq).
  std::vector<message> complete() {
    const int p = static_cast<int>(outbox_.size());
    for (;;) {
      std::fill(full_.begin(), full_.end(), false);
      for (int d = 0; d < p; ++d) {
        ship_pending(d);
        if (outbox_[static_cast<std::size_t>(d)].used > header_bytes) ship(d);
      }
      reg_.team().barrier();
      drain_own_mailbox();
      bool pending = false;
      for (const auto& q : pending_) pending = pending || !q.empty();
      if (reg_.team().allreduce(pending ? 1 : 0, op::max{}) == 0) break;
    }
    std::sort(received_.begin(), received_.end(), [](const message& a, const message& b) {
      return a.source != b.source ? a.source < b.source : a.seq < b.seq;
    });
    std::fill(seq_.begin(), seq_.end(), 0);
    return std::exchange(received_, {});
  }

 private:
  /// A message being written or waiting to ship: header + records in `data` (header_bytes + message_bytes_ bytes,
  /// made at the first record), `used` bytes of them written, `room` payload bytes left (0 without a buffer).
  struct outbox {
    std::unique_ptr<std::byte[]> data;
    std::size_t used = header_bytes;
    std::size_t room = 0;
  };

  // append_bytes' slow path: a record larger than a message, the outbox's first record, or a full outbox.
  void make_room(int dest, std::size_t n) {
    if (n > message_bytes_) {
      throw usage_error(std::string(name_) + ": one record needs " + std::to_string(n) +
                        " bytes, more than message_bytes = " + std::to_string(message_bytes_) +
                        "; raise the message_bytes option");
    }
    if (outbox_[static_cast<std::size_t>(dest)].used > header_bytes) ship(dest);
    outbox& box = outbox_[static_cast<std::size_t>(dest)];
    if (!box.data) {
      box.data = std::make_unique_for_overwrite<std::byte[]>(header_bytes + message_bytes_);
      box.used = header_bytes;
      box.room = message_bytes_;
    }
  }

  // Closes the outbox for `dest` into a message: kept (this rank), put into the mailbox (the outbox is reused), or
  // queued behind earlier ones (the outbox takes a new buffer at its next record).
  void ship(int dest) {
    outbox& box = outbox_[static_cast<std::size_t>(dest)];
    const header h{box.used - header_bytes, static_cast<std::uint32_t>(me_), seq_[static_cast<std::size_t>(dest)]++};
    std::memcpy(box.data.get(), &h, header_bytes);
    auto& queue = pending_[static_cast<std::size_t>(dest)];
    if (dest == me_) {
      received_.push_back(message{me_, h.seq, std::move(box.data), header_bytes, h.bytes});
    } else if (queue.empty() && try_put(dest, box)) {
      box.used = header_bytes;
      box.room = message_bytes_;
      return;
    } else {
      queue.push_back(std::move(box));
    }
    box = outbox{};
  }

  // Ships this rank's pending messages to `dest` in order until the mailbox is full.
  void ship_pending(int dest) {
    auto& queue = pending_[static_cast<std::size_t>(dest)];
    while (!queue.empty() && try_put(dest, queue.front())) queue.pop_front();
  }

  // Reserves a slot in dest's mailbox and writes the message there; false (nothing written) when the mailbox is full
  // until its owner drains it at complete().
  bool try_put(int dest, const outbox& msg) {
    if (full_[static_cast<std::size_t>(dest)]) return false;
    const auto slot = fetch_add(tails_[static_cast<std::size_t>(dest)], std::uint64_t{1});
    if (slot >= slots_) {
      full_[static_cast<std::size_t>(dest)] = true;
      return false;
    }
    auto target = boxes_[static_cast<std::size_t>(dest)] + static_cast<std::ptrdiff_t>(slot * slot_stride_);
    put(target, msg.data.get(), msg.used);
    return true;
  }

  void drain_own_mailbox() {
    const auto tail = tails_[static_cast<std::size_t>(me_)];
    const std::uint64_t n = std::min<std::uint64_t>(atomic_load(tail), slots_);
    auto box = boxes_[static_cast<std::size_t>(me_)];
    for (std::uint64_t s = 0; s < n; ++s) {
      auto slot = box + static_cast<std::ptrdiff_t>(s * slot_stride_);
      header h;
      get(slot.reinterpret<header>(), &h, 1);
      if (h.bytes > message_bytes_) throw error(std::string(name_) + ": malformed mailbox message (corrupt stream)");
      message m{static_cast<int>(h.source), h.seq, std::make_unique_for_overwrite<std::byte[]>(h.bytes), 0, h.bytes};
      get(slot + static_cast<std::ptrdiff_t>(header_bytes), m.bytes.get(), h.bytes);
      received_.push_back(std::move(m));
    }
    atomic_store(tail, std::uint64_t{0});
  }

  registration reg_;  // the team, and the mailboxes (freed collectively)
  std::size_t message_bytes_;
  std::size_t slots_;
  const char* name_;
  int me_ = 0;
  std::size_t slot_stride_ = 0;
  std::vector<global_ptr<std::uint64_t>> tails_;
  std::vector<global_ptr<std::byte>> boxes_;
  std::vector<outbox> outbox_;  // per destination
  std::vector<std::deque<outbox>> pending_;
  std::vector<std::uint32_t> seq_;
  std::vector<bool> full_;  // a reservation failed this round: do not try again before the owner drains
  std::vector<message> received_;
  std::vector<std::byte> record_;  // append's serialized record
};

}  // namespace shoal::detail
