// shoal/containers/detail/owner_table/replies.hpp — how the replies of owners complete an origin's futures.
//
// An operation sent to an owner leaves a receiver behind at its origin (in the engine's pending table, named by a
// slot the reply carries). A single operation's receiver completes one future; a batch's receiver waits for one
// reply per owner it addressed and merges them. Either converts the wire result (what the owner sent) into the
// future's value, or turns an owner's failure into the future's error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "shoal/containers/dist_map_results.hpp"
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

/// Something waiting for replies.
struct receiver_base {
  virtual ~receiver_base() = default;
  virtual void fail(std::exception_ptr e) = 0;
};
template <class Wire>
struct receiver : receiver_base {
  virtual void arrive(Wire&& w, std::uint32_t part) = 0;
};

/// One reply completes one future; Convert turns the wire result into the future's value (or throws).
template <class Wire, class R, class Convert>
struct single_receiver final : receiver<Wire>, layer::future_state<R> {
  void arrive(Wire&& w, std::uint32_t) override {
    try {
      this->set_value(Convert{}(std::move(w)));
    } catch (...) {
      this->set_error(std::current_exception());
    }
  }
  void fail(std::exception_ptr e) override { this->set_error(std::move(e)); }
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
  void fail(std::exception_ptr e) override {
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
