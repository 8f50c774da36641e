// shoal/am/detail/receiving.hpp — receives of active-message buffers, posted ahead.
//
// A ring of receives from any rank, each of up to slot_bytes on one tag, is posted ahead on the engine's
// communicator, so a buffer is matched (and a rendezvous answered) by whatever MPI call this rank makes next, and lands
// in place. The slots complete in the order they were posted, which is the order MPI matched them: per sender, the
// order of sending. A buffer larger than a slot arrives as an announcement (wire.hpp) in its place in the stream, and
// is then received whole from the second tag.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "shoal/am/detail/sending.hpp"
#include "shoal/am/detail/wire.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::am::detail {

/// The tag of the stream of buffers (MPI keeps per-pair order only within a (source, tag, comm)), and the tag of
/// buffers larger than the receive slots, announced in the stream.
inline constexpr int stream_tag = 0x5a4d;
inline constexpr int large_tag = 0x5a4e;

/// The announcement of a large buffer of `bytes` (wire.hpp), as the words that travel in the stream.
using announcement = std::array<std::uint64_t, 2>;
inline announcement announce(std::size_t bytes) { return {0, bytes}; }
static_assert(sizeof(announcement) == announcement_bytes);

/// The size of the large buffer that `bytes` at `p` announce, if they are an announcement (wire.hpp).
inline std::optional<std::size_t> announced_size(const std::byte* p, std::size_t bytes) {
  if (bytes != announcement_bytes) return std::nullopt;
  std::uint64_t note[2];
  std::memcpy(note, p, sizeof note);
  if (note[0] != 0) return std::nullopt;
  return static_cast<std::size_t>(note[1]);
}

/// Receives the large buffer of `bytes` that `source` announced (its send was started before the announcement).
inline block receive_large(MPI_Comm comm, int source, std::size_t bytes) {
  block b = new_block(bytes);
  SHOAL_MPI(MPI_Recv(b.data.get(), static_cast<int>(bytes), MPI_BYTE, source, large_tag, comm, MPI_STATUS_IGNORE));
  return b;
}

class receive_slots {
 public:
  static constexpr std::size_t posted = 8;  // receives posted ahead

  receive_slots(MPI_Comm comm, block_pool& pool) : comm_(comm), pool_(pool) {
    blocks_.resize(posted);
    requests_.assign(posted, MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < posted; ++i) post(i);
  }
  receive_slots(const receive_slots&) = delete;
  receive_slots& operator=(const receive_slots&) = delete;
  /// Nothing is in flight after the engine's drain: the posted receives are unmatched.
  ~receive_slots() {
    for (auto& req : requests_) {
      if (req == MPI_REQUEST_NULL) continue;
      SHOAL_MPI_CLEANUP(MPI_Cancel(&req));
      SHOAL_MPI_CLEANUP(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
  }

  /// The next buffer in the stream, if it has arrived. Its slot is not posted again at once (see repost): the buffer's
  /// handlers run and their replies leave first. At most the slot taken last stays unposted while this tests the next.
  std::optional<rx_buffer> next() {
    if (unposted_ > 1) repost(1);
    int flag = 0;
    MPI_Status status;
    SHOAL_MPI(MPI_Test(&requests_[head_], &flag, &status));
    if (!flag) return std::nullopt;
    int count = 0;
    SHOAL_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
    block b = std::move(blocks_[head_]);
    ++unposted_;
    head_ = head_ + 1 == posted ? 0 : head_ + 1;
    auto bytes = static_cast<std::size_t>(count);
    if (const std::optional<std::size_t> large = announced_size(b.data.get(), bytes)) {
      pool_.recycle(std::move(b));  // the announcement of a large buffer: take it now, in its place in the stream
      b = receive_large(comm_, status.MPI_SOURCE, *large);
      bytes = *large;
    }
    const std::byte* begin = b.data.get();
    return rx_buffer{std::move(b), begin, begin + bytes, status.MPI_SOURCE};
  }

  /// Posts again the slots taken, all but the `keep` newest, oldest first: they go to the end of MPI's posted receives,
  /// behind the slots still posted, so the ring's order stays the order of matching. The engine calls it when a
  /// progress step starts, so a slot taken in one step is posted again before the next step's receives and after the
  /// replies of its buffer left.
  void repost(std::size_t keep = 0) {
    for (; unposted_ > keep; --unposted_) post((head_ + posted - unposted_) % posted);
  }

 private:
  void post(std::size_t i) {
    blocks_[i] = pool_.take(pool_.slot_bytes());
    SHOAL_MPI(MPI_Irecv(blocks_[i].data.get(), static_cast<int>(pool_.slot_bytes()), MPI_BYTE, MPI_ANY_SOURCE,
                        stream_tag, comm_, &requests_[i]));
  }

  MPI_Comm comm_;
  block_pool& pool_;
  std::vector<block> blocks_;  // a ring of `posted` slots
  std::vector<MPI_Request> requests_;
  std::size_t head_ = 0;  // the oldest posted slot
  std::size_t unposted_ = 0;  // the slots just before head_ that next() took and that are not posted again yet
};

/// Sends a buffer larger than the receivers' slots: on large_tag, announced in the stream (wire.hpp).
inline void send_large(send_queue& sends, MPI_Comm comm, int dest, block b, std::size_t bytes) {
  sends.isend(comm, dest, large_tag, std::move(b), bytes);
  block note = new_block(announcement_bytes);
  const announcement words = announce(bytes);
  std::memcpy(note.data.get(), words.data(), sizeof words);
  sends.isend(comm, dest, stream_tag, std::move(note), announcement_bytes);
}

}  // namespace shoal::am::detail
