// shoal/am/detail/node_rings.hpp — the stream of active-message buffers between ranks of one host, through shared
// memory instead of MPI.
//
// Every rank holds, in its segment of an MPI shared window over its host's ranks, one ring per other rank of the host:
// a single-producer single-consumer queue of records [uint64 bytes][the buffer, padded to 8 bytes]. The sender copies
// a buffer into the receiver's ring and publishes it with one release store of the ring's tail; the receiver copies
// it out into a receive block and publishes the space with one release store of the ring's head. Neither side makes
// an MPI call, takes a lock or matches a request — the costs that bound an rpc round trip over MPI (docs/am.md,
// "Buffers within a host"). A record that does not fit before the ring's end is preceded by a wrap word and starts
// at the ring's beginning. A buffer larger than half a ring (or than the receive slots) travels by MPI on large_tag,
// announced in the ring in its place (as in the MPI stream: receiving.hpp), so each sender's buffers still arrive in
// the order they were sent. Ranks on other hosts are reached by the MPI stream.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shoal/am/detail/receiving.hpp"
#include "shoal/am/detail/sending.hpp"
#include "shoal/am/detail/wire.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::am::detail {

/// The bytes a buffer of `bytes` takes in a ring: a length word, then the buffer padded to 8 bytes.
constexpr std::size_t ring_record_bytes(std::size_t bytes) { return sizeof(std::uint64_t) + (bytes + 7) / 8 * 8; }

/// The bytes of every shared-memory ring (collective over `comm`, the same on every rank): SHOAL_AM_SHM_RING rounded
/// up to 64, else four records of `slot_bytes` (the receive slots), so a stream of full buffers flows while its
/// receiver works; 0 when any rank set 0 (buffers within a host then travel by MPI). A value below the smallest ring
/// is a usage_error on every rank (the ranks agree first, so none waits in a collective the others left).
inline std::size_t agreed_ring_bytes(MPI_Comm comm, std::size_t slot_bytes) {
  constexpr std::size_t min_ring_bytes = 256;
  const std::size_t asked = shoal::layer::size_setting("SHOAL_AM_SHM_RING").value_or(4 * ring_record_bytes(slot_bytes));
  const bool too_small = asked != 0 && asked < min_ring_bytes;
  const std::uint64_t mine[3] = {asked == 0 ? 1u : 0u, (asked + 63) / 64 * 64, too_small ? 1u : 0u};
  std::uint64_t all[3] = {0, 0, 0};
  SHOAL_MPI(MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_MAX, comm));
  if (all[2] != 0) {
    throw usage_error("SHOAL_AM_SHM_RING: " + (too_small ? std::to_string(asked) + " bytes is" : "a rank's value is") +
                      " below the smallest shared-memory ring of " + std::to_string(min_ring_bytes) +
                      " bytes; set at least that, or 0 to send within a host by MPI");
  }
  return all[0] != 0 ? 0 : static_cast<std::size_t>(all[1]);
}

class node_rings {
 public:
  /// Collective over `comm` (the engine's communicator; `me` and `size` are this rank's place in it), whose receive
  /// slots hold `slot_bytes`.
  node_rings(MPI_Comm comm, int me, int size, std::size_t slot_bytes) : slot_bytes_(slot_bytes) {
    const std::size_t ring = agreed_ring_bytes(comm, slot_bytes);
    index_.assign(static_cast<std::size_t>(size), -1);
    if (ring == 0) return;
    SHOAL_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node_));
    int node_size = 1;
    SHOAL_MPI(MPI_Comm_size(node_, &node_size));
    int node_rank = 0;
    SHOAL_MPI(MPI_Comm_rank(node_, &node_rank));
    if (node_size == 1) return;  // alone on this host: every buffer travels by MPI
    capacity_ = ring;
    const std::size_t stride = sizeof(ring_header) + capacity_;
    const auto peers = static_cast<std::size_t>(node_size - 1);
    MPI_Info info;
    SHOAL_MPI(MPI_Info_create(&info));
    SHOAL_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    std::byte* base = nullptr;
    // One cache line more than the rings: MPI need not align a segment to one (a page's offset is the same in every
    // process that maps it, so each aligns its view of a segment the same way).
    const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(peers * stride + line), 1, info, node_, &base, &win_);
    SHOAL_MPI_CLEANUP(MPI_Info_free(&info));
    if (rc != MPI_SUCCESS) {
      shoal::detail::mpi_check(rc, ("shoal::am: allocating " + std::to_string(peers) + " shared-memory rings of " +
                                    std::to_string(capacity_) +
                                    " bytes for the ranks of this host (lower SHOAL_AM_SHM_RING, or set it to 0 to "
                                    "send within the host by MPI)")
                                       .c_str());
    }
    SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
    base = line_aligned(base);
    for (std::size_t k = 0; k < peers; ++k) {  // this rank's inbound rings start empty
      auto* h = reinterpret_cast<ring_header*>(base + k * stride);
      std::atomic_ref<std::uint64_t>(h->tail).store(0, std::memory_order_relaxed);
      std::atomic_ref<std::uint64_t>(h->head).store(0, std::memory_order_relaxed);
    }
    SHOAL_MPI(MPI_Win_sync(win_));
    SHOAL_MPI(MPI_Barrier(node_));

    // The host's ranks in the engine's communicator.
    std::vector<int> ranks(static_cast<std::size_t>(node_size));
    SHOAL_MPI(MPI_Allgather(&me, 1, MPI_INT, ranks.data(), 1, MPI_INT, node_));
    for (int k = 0; k < node_size; ++k) {
      if (k == node_rank) continue;
      MPI_Aint bytes = 0;
      int unit = 0;
      void* seg = nullptr;
      SHOAL_MPI(MPI_Win_shared_query(win_, k, &bytes, &unit, &seg));
      const int peer = ranks[static_cast<std::size_t>(k)];
      index_[static_cast<std::size_t>(peer)] = static_cast<int>(out_.size());
      // My ring in peer k's segment (its rings are ordered by the senders' host ranks, its own left out), and its ring
      // in mine.
      const std::size_t mine_there = static_cast<std::size_t>(node_rank < k ? node_rank : node_rank - 1);
      const std::size_t its_here = static_cast<std::size_t>(k < node_rank ? k : k - 1);
      out_.push_back(writer{ring_at(line_aligned(static_cast<std::byte*>(seg)) + mine_there * stride), 0, 0});
      in_.push_back(reader{ring_at(base + its_here * stride), 0, 0, peer});
    }
    remote_ = std::count(index_.begin(), index_.end(), -1) > 1;  // someone besides this rank is on another host
  }
  node_rings(const node_rings&) = delete;
  node_rings& operator=(const node_rings&) = delete;
  /// Collective (the engine's destruction at finalize, after its drain: every ring is empty).
  ~node_rings() {
    if (win_ != MPI_WIN_NULL) {
      SHOAL_MPI_CLEANUP(MPI_Win_unlock_all(win_));
      SHOAL_MPI_CLEANUP(MPI_Win_free(&win_));
    }
    if (node_ != MPI_COMM_NULL) SHOAL_MPI_CLEANUP(MPI_Comm_free(&node_));
  }

  /// True when buffers for `dest` travel through a ring (another rank of this host).
  bool reaches(int dest) const { return index_[static_cast<std::size_t>(dest)] >= 0; }
  /// True when some rank is reached by the MPI stream (another host, or rings off).
  bool has_remote() const { return remote_ || out_.empty(); }
  /// Bytes per ring (0: none).
  std::size_t ring_bytes() const { return capacity_; }
  /// True when a buffer of `bytes` travels inside the ring; a larger one goes by MPI, announced in the ring.
  bool carries(std::size_t bytes) const { return bytes <= slot_bytes_ && ring_record_bytes(bytes) <= capacity_ / 2; }

  /// True when `dest`'s ring has room for a buffer of `bytes` now (it may have more later, never less).
  bool has_room(int dest, std::size_t bytes) {
    writer& w = writer_of(dest);
    return is_free(w, footprint(w, ring_record_bytes(bytes)));
  }

  /// Copies `bytes` at `data` into `dest`'s ring as one record; false (nothing written) when the ring lacks the room.
  bool try_write(int dest, const std::byte* data, std::size_t bytes) {
    writer& w = writer_of(dest);
    const std::size_t record = ring_record_bytes(bytes);
    const std::size_t span = footprint(w, record);
    if (!is_free(w, span)) return false;
    std::size_t at = static_cast<std::size_t>(w.tail % capacity_);
    if (span != record) {  // the record starts at the ring's beginning; the wrap word says so
      std::memcpy(w.ring.data + at, &wrap_word, sizeof wrap_word);
      at = 0;
    }
    const std::uint64_t length = bytes;
    std::memcpy(w.ring.data + at, &length, sizeof length);
    std::memcpy(w.ring.data + at + sizeof length, data, bytes);
    w.tail += span;
    std::atomic_ref<std::uint64_t>(w.ring.header->tail).store(w.tail, std::memory_order_release);
    return true;
  }

  /// The next buffer from some ring, copied out into a block of `pool` (the rings are visited in turn, so no sender
  /// waits behind another's stream). An announcement is answered by receiving the large buffer from MPI at once.
  std::optional<rx_buffer> next(block_pool& pool, MPI_Comm comm) {
    const std::size_t n = in_.size();
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t k = turn_ + i;
      if (k >= n) k -= n;
      reader& r = in_[k];
      if (r.head == r.tail) {
        r.tail = std::atomic_ref<std::uint64_t>(r.ring.header->tail).load(std::memory_order_acquire);
        if (r.head == r.tail) continue;
      }
      turn_ = k + 1 == n ? 0 : k + 1;
      std::size_t at = static_cast<std::size_t>(r.head % capacity_);
      std::uint64_t length;
      std::memcpy(&length, r.ring.data + at, sizeof length);
      if (length == wrap_word) {  // the record was written at the ring's beginning
        r.head += capacity_ - at;
        at = 0;
        std::memcpy(&length, r.ring.data, sizeof length);
      }
      const auto bytes = static_cast<std::size_t>(length);
      if (bytes > slot_bytes_) [[unlikely]] {
        throw error("shoal::am: a shared-memory ring from rank " + std::to_string(r.source) + " holds a record of " +
                    std::to_string(bytes) + " bytes, more than the " + std::to_string(slot_bytes_) +
                    " bytes it may carry (corrupt stream)");
      }
      block b = pool.take(pool.slot_bytes());
      std::memcpy(b.data.get(), r.ring.data + at + sizeof length, bytes);
      r.head += ring_record_bytes(bytes);
      std::atomic_ref<std::uint64_t>(r.ring.header->head).store(r.head, std::memory_order_release);
      return delivered(std::move(b), bytes, r.source, pool, comm);
    }
    return std::nullopt;
  }

 private:
  static constexpr std::size_t line = 64;  // bytes of a cache line

  /// Written by the sender (tail: bytes ever written, wrap words included) and by the receiver (head: bytes ever
  /// consumed), each on a cache line of its own.
  struct ring_header {
    alignas(line) std::uint64_t tail;
    alignas(line) std::uint64_t head;
  };
  struct ring_view {
    ring_header* header;
    std::byte* data;  // capacity_ bytes after the header
  };
  struct writer {
    ring_view ring;
    std::uint64_t tail;  // this sender's own count (the header's copy is for the receiver)
    std::uint64_t head;  // the receiver's head as last read: the room known without reading its cache line
  };
  struct reader {
    ring_view ring;
    std::uint64_t head;  // this receiver's own count
    std::uint64_t tail;  // the sender's tail as last read
    int source;          // the sender's rank in the engine's communicator
  };

  static constexpr std::uint64_t wrap_word = ~std::uint64_t{0};

  static std::byte* line_aligned(std::byte* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return p + ((line - a % line) % line);
  }

  writer& writer_of(int dest) { return out_[static_cast<std::size_t>(index_[static_cast<std::size_t>(dest)])]; }

  /// The bytes a record of `record` bytes takes at w's tail: itself, and the ring's rest before it when it does not
  /// fit before the end.
  std::size_t footprint(const writer& w, std::size_t record) const {
    const auto at = static_cast<std::size_t>(w.tail % capacity_);
    return capacity_ - at < record ? capacity_ - at + record : record;
  }
  /// True when `bytes` are free at w's tail (the receiver's head is read only when the one known is not enough).
  bool is_free(writer& w, std::size_t bytes) const {
    if (w.tail + bytes - w.head <= capacity_) return true;
    w.head = std::atomic_ref<std::uint64_t>(w.ring.header->head).load(std::memory_order_acquire);
    return w.tail + bytes - w.head <= capacity_;
  }

  static ring_view ring_at(std::byte* p) {
    return ring_view{reinterpret_cast<ring_header*>(p), p + sizeof(ring_header)};
  }

  /// The received record as the stream's next buffer: a large buffer's announcement is answered with its MPI receive.
  static rx_buffer delivered(block b, std::size_t bytes, int source, block_pool& pool, MPI_Comm comm) {
    if (const std::optional<std::size_t> large = announced_size(b.data.get(), bytes)) {
      pool.recycle(std::move(b));
      b = receive_large(comm, source, *large);
      bytes = *large;
    }
    const std::byte* begin = b.data.get();
    return rx_buffer{std::move(b), begin, begin + bytes, source};
  }

  std::size_t slot_bytes_;
  std::size_t capacity_ = 0;
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<int> index_;  // per rank of the communicator: its place in out_ (-1: another host, or this rank)
  std::vector<writer> out_;
  std::vector<reader> in_;
  std::size_t turn_ = 0;  // the ring next() looks at first
  bool remote_ = false;
};

}  // namespace shoal::am::detail
