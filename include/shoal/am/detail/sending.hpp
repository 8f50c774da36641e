// shoal/am/detail/sending.hpp — the memory and the MPI sends of active-message buffers: a pool of blocks reused by
// send buffers and receive slots, and the queue of outstanding MPI_Isend requests whose blocks return to the pool
// when they complete. The engine (engine.hpp) decides what to send and when; this file only moves blocks.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "shoal/am/detail/wire.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::am::detail {

/// Blocks of the two sizes the engine uses over and over: send buffers (buffer_size) and receive slots (slot_bytes,
/// the largest buffer_size of any rank at the start; often the same size, then one pool serves both).
class block_pool {
 public:
  block_pool(std::size_t buffer_size, std::size_t slot_bytes, std::size_t keep_buffers, std::size_t keep_slots)
      : buffer_size_(buffer_size), slot_bytes_(slot_bytes), keep_buffers_(keep_buffers), keep_slots_(keep_slots) {}

  std::size_t buffer_size() const { return buffer_size_; }
  std::size_t slot_bytes() const { return slot_bytes_; }

  /// A block of `capacity` bytes: recycled when one of that size is pooled.
  block take(std::size_t capacity) {
    auto& pool = capacity == buffer_size_ ? buffers_ : slots_;
    if (!pool.empty() && pool.back().capacity == capacity) {
      block b = std::move(pool.back());
      pool.pop_back();
      return b;
    }
    return new_block(capacity);
  }

  /// Keeps `b` for reuse if it has one of the two sizes and its pool is not full; frees it otherwise.
  void recycle(block b) {
    if (b.capacity == buffer_size_) {
      if (buffers_.size() < keep_buffers_) buffers_.push_back(std::move(b));
    } else if (b.capacity == slot_bytes_ && slots_.size() < keep_slots_) {
      slots_.push_back(std::move(b));
    }
  }

  /// New send buffers have `bytes` (the pooled ones of the old size are freed).
  void set_buffer_size(std::size_t bytes) {
    buffer_size_ = bytes;
    buffers_.clear();
  }
  void set_keep_buffers(std::size_t n) { keep_buffers_ = n; }

 private:
  std::size_t buffer_size_;
  std::size_t slot_bytes_;
  std::size_t keep_buffers_;
  std::size_t keep_slots_;
  std::vector<block> buffers_;  // of buffer_size_ bytes
  std::vector<block> slots_;    // of slot_bytes_, when it differs from buffer_size_
};

/// Outstanding MPI_Isend requests and the blocks they send (returned to the pool as they complete).
class send_queue {
 public:
  explicit send_queue(block_pool& pool) : pool_(pool) {}
  send_queue(const send_queue&) = delete;
  send_queue& operator=(const send_queue&) = delete;
  /// Only reached with requests left after a failed drain.
  ~send_queue() {
    for (auto& req : requests_) SHOAL_MPI_CLEANUP(MPI_Request_free(&req));
  }

  std::size_t size() const { return requests_.size(); }

  void isend(MPI_Comm comm, int dest, int tag, block b, std::size_t bytes) {
    MPI_Request req;
    SHOAL_MPI(MPI_Isend(b.data.get(), static_cast<int>(bytes), MPI_BYTE, dest, tag, comm, &req));
    requests_.push_back(req);
    in_flight_.push_back(std::move(b));
  }

  /// Completes the sends that have finished (their blocks go back to the pool).
  void test() {
    if (requests_.empty()) return;
    int count = 0;
    completed_.resize(requests_.size());
    SHOAL_MPI(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, completed_.data(),
                           MPI_STATUSES_IGNORE));
    if (count <= 0) return;  // MPI_UNDEFINED when none is active
    // Compact: keep the requests that are still active, recycle the blocks of finished ones.
    std::size_t w = 0;
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) {
        pool_.recycle(std::move(in_flight_[i]));
      } else {
        requests_[w] = requests_[i];
        in_flight_[w] = std::move(in_flight_[i]);
        ++w;
      }
    }
    requests_.resize(w);
    in_flight_.resize(w);
  }

  /// At finalize, after the drain: waits for every send (cleanup: errors are reported, not thrown).
  void wait_all() {
    if (requests_.empty()) return;
    SHOAL_MPI_CLEANUP(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
    requests_.clear();
    in_flight_.clear();
  }

 private:
  block_pool& pool_;
  std::vector<MPI_Request> requests_;
  std::vector<block> in_flight_;  // parallel to requests_
  std::vector<int> completed_;
};

}  // namespace shoal::am::detail
