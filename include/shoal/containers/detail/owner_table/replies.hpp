// shoal/containers/detail/owner_table/replies.hpp — how the replies of owners complete an origin's futures.
//
// An operation sent to an owner leaves a receiver behind at its origin (in the engine's pending table, named by a
// slot the reply carries, with the part of the receiver it completes). Single operations' futures live in chunks of
// future_chunk_size (one allocation per chunk, not per future; a chunk is freed when its last future is); a batch's
// receiver waits for one reply per owner it addressed and merges them. Either converts the wire result (what the
// owner sent) into the future's value, or turns an owner's failure into the future's error.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "shoal/containers/detail/owner_table/byte_batches.hpp"
#include "shoal/containers/dist_map_results.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::detail {

/// Result of one insert at its owner.
enum class insert_status : std::uint8_t { existing, inserted, rejected };

/// Inserts a result reports as rejected (counted for fire-and-forget operations).
inline std::uint64_t rejected_in(insert_status s) { return s == insert_status::rejected ? 1 : 0; }
inline std::uint64_t rejected_in(const batch_insert_result& r) { return r.rejected; }
template <class W>
std::uint64_t rejected_in(const W&) {
  return 0;
}

/// Something waiting for replies; `part` says which of its futures (chunk) or owners (batch) a reply is for. Who
/// owns it is said apart (the engine's pending table keeps a layer::state_ptr<layer::counted> beside it).
struct receiver_base {
  virtual void fail(std::exception_ptr e, std::uint32_t part) = 0;

 protected:
  ~receiver_base() = default;
};
template <class Wire>
struct receiver : receiver_base {
  using interface = receiver;  // what its replies are delivered through (receiver_kind)
  virtual void arrive(Wire&& w, std::uint32_t part) = 0;

 protected:
  ~receiver() = default;
};

/// The kind of a request waiting for replies: the address of receiver_kind<T::interface>, kept beside it in the
/// pending table, so that a reply's handler casts only a receiver of the interface it delivers through (a corrupt
/// reply naming a live slot of another kind is refused, not cast to the wrong type).
template <class Interface>
inline constexpr char receiver_kind = 0;
template <class T>
inline constexpr const void* kind_of = &receiver_kind<typename T::interface>;

/// The most futures of single operations allocated together (a chunk), and so the largest group (groups.hpp).
inline constexpr std::uint32_t future_chunk_size = 256;

/// Futures in a chunk whose futures take `bytes` each (a cell, and in a group the operation's arguments):
/// future_chunk_size, fewer for large values, so that a chunk stays near 16 KiB. Groups of 256 rather than 64 pay a
/// group's message, dispatch and reply a quarter as often in a stream of futures (docs/containers/dist_map.md, session
/// 35); 512 measured within the noise of 256, and a chunk stays allocated while any of its futures is held.
inline constexpr std::uint32_t future_chunk_cells(std::size_t bytes) {
  return static_cast<std::uint32_t>(std::clamp<std::size_t>(16384 / bytes, 1, future_chunk_size));
}
/// The bytes of one future's cell of type R.
template <class R>
inline constexpr std::size_t future_cell_bytes = sizeof(typename layer::future_cells<R, 1>::cell_type);

/// The cells of up to N futures of type R (one allocation), completed from what owners send back (Wire, turned into
/// R by Convert, which may throw: an insert the owner had no room for, ...). Shared by the chunks of operations that
/// go alone (future_chunk) and of groups (groups.hpp, whose Receiver also takes a group's reply).
template <class Wire, class R, class Convert, std::uint32_t N, class Receiver = receiver<Wire>>
class reply_cells : public layer::future_cells<R, N>, public Receiver {
 public:
  static constexpr std::uint32_t capacity = N;
  using cells = layer::future_cells<R, N>;

  void arrive(Wire&& w, std::uint32_t index) override {
    try {
      this->set_value(index, Convert{}(std::move(w)));
    } catch (...) {
      this->set_error(index, std::current_exception());
    }
  }
  void fail(std::exception_ptr e, std::uint32_t index) override { this->set_error(index, std::move(e)); }
};

/// The futures of single operations of one type that go alone; each reply completes its own.
template <class Wire, class R, class Convert>
class future_chunk final : public reply_cells<Wire, R, Convert, future_chunk_cells(future_cell_bytes<R>)> {
  using base = reply_cells<Wire, R, Convert, future_chunk_cells(future_cell_bytes<R>)>;
  using typename base::cells;
  using base::capacity;

 public:
  static inline const char tag = 0;  // its address names the chunk type (owner_table keeps one open chunk per type)

  bool full() const { return used_ == capacity; }
  /// Takes the next cell; its index is the `part` of the request's reply.
  std::uint32_t next() { return used_++; }
  /// The future of cell `index`, sharing ownership of the chunk.
  future<R> future_of(std::uint32_t index) { return cells::template future_of<R>(index); }

 private:
  std::uint32_t used_ = 0;
};

/// The result of a batch that waits for one reply per part (owner): the first failure wins, the future completes
/// when the last part arrived or failed.
template <class R>
struct batch_state : layer::future_state<R> {
  R result;
  std::size_t remaining = 0;
  void part_done() {
    if (--remaining == 0) finish();
  }
  void part_failed(std::exception_ptr e) {
    if (!this->error) this->error = std::move(e);
    part_done();
  }
  void finish() {
    if (this->error) this->set_error(this->error);
    else this->set_value(std::move(result));
  }
};

/// One reply per owner of a batch; Merge(result, wire, positions of that owner's part) combines them.
template <class Wire, class R, class Merge>
struct batch_receiver final : receiver<Wire>, batch_state<R> {
  std::vector<std::vector<std::size_t>> positions;  // per part
  void arrive(Wire&& w, std::uint32_t part) override {
    Merge{}(this->result, std::move(w), positions[part]);
    this->part_done();
  }
  void fail(std::exception_ptr e, std::uint32_t) override { this->part_failed(std::move(e)); }
};

/// A keyed batch whose results travel as raw bytes (byte_batches.hpp): each owner's reply holds the results of its
/// part in the cut's order, written straight back to their input positions.
template <class W>
struct keyed_bytes_receiver final : receiver_base, batch_state<std::vector<W>> {
  using interface = keyed_bytes_receiver;
  std::vector<std::uint32_t> order;  // the cut's input positions, grouped by part
  std::vector<std::uint32_t> start;  // per part, its first index in order (and one past the last part)
  std::size_t size(std::uint32_t part) const { return start[part + 1] - start[part]; }
  /// Part `part`'s results, encoded by result_codec<W> from `bytes` on (any alignment).
  void arrive_bytes(const std::byte* bytes, std::uint32_t part) {
    const std::uint32_t* at = order.data() + start[part];
    const std::size_t n = size(part);
    W* out = this->result.data();
    for (std::size_t i = 0; i < n; ++i) out[at[i]] = result_codec<W>::read(bytes, n, i);
    this->part_done();
  }
  void fail(std::exception_ptr e, std::uint32_t) override { this->part_failed(std::move(e)); }
};

/// Convert for wire results that are already the future's value.
struct identity {
  template <class T>
  T operator()(T&& v) const {
    return std::forward<T>(v);
  }
};

}  // namespace shoal::detail
