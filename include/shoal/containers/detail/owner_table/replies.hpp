// shoal/containers/detail/owner_table/replies.hpp — how the replies of owners complete an origin's futures.
//
// An operation sent to an owner leaves a receiver behind at its origin (in the engine's pending table, named by a
// slot the reply carries, with the part of the receiver it completes). Single operations' futures live in chunks of
// future_chunk_size (one allocation per chunk, not per future; a chunk is freed when its last future is); a batch's
// receiver waits for one reply per owner it addressed and merges them. Either converts the wire result (what the
// owner sent) into the future's value, or turns an owner's failure into the future's error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

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
  virtual void arrive(Wire&& w, std::uint32_t part) = 0;

 protected:
  ~receiver() = default;
};

/// Completes `state` with Convert(w), or with the error Convert throws (an insert the owner had no room for, ...).
template <class Convert, class State, class Wire>
void complete(State& state, Wire&& w) {
  try {
    state.set_value(Convert{}(std::forward<Wire>(w)));
  } catch (...) {
    state.set_error(std::current_exception());
  }
}

/// Futures of single operations issued together.
inline constexpr std::uint32_t future_chunk_size = 64;

/// The states of up to future_chunk_size futures of one operation type (Wire: what the owner sends back; Convert
/// turns it into the future's value R, or throws), allocated together; each reply completes its own future.
template <class Wire, class R, class Convert>
class future_chunk final : public layer::counted, public receiver<Wire> {
  struct element final : layer::future_state<R> {};

 public:
  static inline const char tag = 0;  // its address names the chunk type (owner_table keeps one open chunk per type)

  bool full() const { return used_ == future_chunk_size; }
  /// Takes the next state; its index is the `part` of the request's reply.
  std::uint32_t next() { return used_++; }
  /// The future of state `index`, sharing ownership of the chunk.
  future<R> future_of(std::uint32_t index) {
    return future<R>(&elements_[index], layer::state_ptr<layer::counted>(this));
  }

  void arrive(Wire&& w, std::uint32_t index) override { complete<Convert>(elements_[index], std::move(w)); }
  void fail(std::exception_ptr e, std::uint32_t index) override { elements_[index].set_error(std::move(e)); }

 private:
  std::array<element, future_chunk_size> elements_;
  std::uint32_t used_ = 0;
};

/// One reply per owner of a batch; Merge(result, wire, positions of that owner's part) combines them.
template <class Wire, class R, class Merge>
struct batch_receiver final : receiver<Wire>, layer::future_state<R> {
  R result;
  std::vector<std::vector<std::size_t>> positions;  // per part
  std::size_t remaining = 0;
  void arrive(Wire&& w, std::uint32_t part) override {
    Merge{}(result, std::move(w), positions[part]);
    if (--remaining == 0) finish();
  }
  void fail(std::exception_ptr e, std::uint32_t) override {
    if (!this->error) this->error = std::move(e);
    if (--remaining == 0) finish();
  }
  void finish() {
    if (this->error) this->set_error(this->error);
    else this->set_value(std::move(result));
  }
};

/// Convert for wire results that are already the future's value.
struct identity {
  template <class T>
  T operator()(T&& v) const {
    return std::forward<T>(v);
  }
};

}  // namespace shoal::detail
