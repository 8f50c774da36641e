// shoal/containers/darray.hpp — shoal::darray<T>: BCL's DArray, a 1-D array block-distributed over every rank.
//
// Model: one-sided (RDMA), distributed over a team (default world()). Global index i lives on team rank
// owner(i) = i / block_size(), where block_size() = ceil(size / team ranks); team rank r holds
// owned_range(r) = [r * block_size(), min(size, (r + 1) * block_size())), so the last ranks may hold fewer (or no)
// elements. Elements start value-initialised (T{}).
//
// Operations (k = ranks a range spans; R read, W write, B barrier, l local work). Who: collective = every rank of
// the team, in the same order; any rank = one rank's call, no other rank takes part:
//   darray<T> d(size, team = world())      collective  B + allgather   every rank of the team allocates its block
//   d.get(i) / d.put(i, v)                 any rank    R / W           blocking; put complete at the owner
//   d.get(first, span out)                 any rank    k R             the pieces on all k owners are read at once
//   d.put(first, span in)                  any rank    k W + k flush   complete at every owner on return
//   d.size(), d.block_size()               any rank    -               elements of the whole array / per rank
//   d.owner(i), d.owned_range(r)           any rank    -               arithmetic (r: any team rank)
//   d.local_range(), d.local_size()        any rank    -               this rank's indices / element count
//   d.local_span()                         any rank    l               this rank's elements
//   d.local_for_each(fn(i, T&))            any rank    l               visits this rank's elements with global index
//   d.ptr(i)                               any rank    -               global_ptr<T> for async_get / atomics
//   ~darray                                collective  B               then each rank frees its block (no-op after
//                                                                      finalize)
// Concurrency: plain reads and writes; concurrent writes to one element race. Separate phases by a barrier.
// Errors: usage_error (index out of range, a moved-from handle), heap_exhausted (raise SHOAL_HEAP_SIZE; on
// every rank). Handles are move-only. T is trivially copyable (shoal::remote_storable).
//
// Example:
//   shoal::darray<std::int64_t> d(1'000'000);
//   d.local_for_each([](std::size_t i, std::int64_t& x) { x = static_cast<std::int64_t>(i); });
//   shoal::barrier();
//   std::vector<std::int64_t> window(100);
//   d.get(499'950, window);              // may span two ranks
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/array.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

template <remote_storable T>
class darray {
 public:
  using value_type = T;

  struct index_range {
    std::size_t first = 0;
    std::size_t last = 0;  // one past
    std::size_t size() const noexcept { return last - first; }
  };

  /// Collective over `team`: every rank of the team passes the same size.
  explicit darray(std::size_t size, const shoal::team& team = shoal::world())
      : reg_(team, "shoal::darray"), size_(size),
        block_(std::max<std::size_t>(1, (size + static_cast<std::size_t>(team.size()) - 1) /
                                            static_cast<std::size_t>(team.size()))),
        blocks_(reg_.allocate_collective<T>(block_)) {
    std::fill_n(blocks_[static_cast<std::size_t>(team.rank())].local(), block_, T{});
    team.barrier();
  }

  darray(darray&& other) noexcept
      : reg_(std::move(other.reg_)), size_(std::exchange(other.size_, 0)), block_(std::exchange(other.block_, 0)),
        blocks_(std::exchange(other.blocks_, {})) {}
  /// Collective (the old contents are destroyed, see ~darray).
  darray& operator=(darray&& other) noexcept {
    if (this != &other) {
      reg_ = std::move(other.reg_);
      size_ = std::exchange(other.size_, 0);
      block_ = std::exchange(other.block_, 0);
      blocks_ = std::exchange(other.blocks_, {});
    }
    return *this;
  }
  darray(const darray&) = delete;
  darray& operator=(const darray&) = delete;

  const shoal::team& team() const noexcept { return reg_.team(); }

  std::size_t size() const noexcept { return size_; }
  std::size_t block_size() const noexcept { return block_; }
  int owner(std::size_t i) const {
    check(i, 1);
    return static_cast<int>(i / block_);
  }
  /// The global indices held by team rank `rank` (arithmetic; any rank may ask about any rank).
  index_range owned_range(int rank) const {
    const std::size_t first = std::min(size_, static_cast<std::size_t>(rank) * block_);
    return {first, std::min(size_, first + block_)};
  }
  /// The global indices held by this rank.
  index_range local_range() const { return owned_range(reg_.rank()); }
  /// The number of elements held by this rank (size() is the whole array's).
  std::size_t local_size() const { return local_range().size(); }
  std::span<T> local_span() const {
    if (blocks_.empty()) return {};
    return {blocks_[static_cast<std::size_t>(reg_.rank())].local(), local_range().size()};
  }
  /// Calls fn(global_index, element&) for every element of this rank.
  template <class Fn>
  void local_for_each(Fn&& fn) const {
    const auto range = local_range();
    auto span = local_span();
    for (std::size_t k = 0; k < span.size(); ++k) fn(range.first + k, span[k]);
  }

  global_ptr<T> ptr(std::size_t i) const {
    check(i, 1);
    return blocks_[i / block_] + static_cast<std::ptrdiff_t>(i % block_);
  }

  T get(std::size_t i) const { return shoal::get(ptr(i)); }
  void put(std::size_t i, const T& value) { shoal::put(ptr(i), value); }

  /// Reads out.size() elements from global index `first`; the pieces on different owners are read concurrently.
  void get(std::size_t first, std::span<T> out) const {
    check(first, out.size());
    std::vector<future<void>> pieces;
    for_each_piece(first, out.size(), [&](global_ptr<T> at, std::size_t done, std::size_t count) {
      pieces.push_back(async_get(at, out.data() + done, count));
    });
    wait_all(pieces);
  }

  /// Writes values from global index `first`; complete at every owner on return.
  void put(std::size_t first, std::span<const T> values) {
    check(first, values.size());
    std::vector<future<void>> pieces;
    std::vector<int> owners;
    for_each_piece(first, values.size(), [&](global_ptr<T> at, std::size_t done, std::size_t count) {
      pieces.push_back(async_put(at, values.data() + done, count));
      owners.push_back(at.rank());
    });
    wait_all(pieces);
    for (int r : owners) flush(r);
  }

 private:
  void check(std::size_t first, std::size_t count) const {
    reg_.check();
    detail::check_index_range(first, count, size_, "darray");
  }

  /// Calls fn(pointer, offset in the range, count) for each owner's piece of [first, first + n).
  template <class Fn>
  void for_each_piece(std::size_t first, std::size_t n, Fn&& fn) const {
    for (std::size_t done = 0; done < n;) {
      const std::size_t i = first + done;
      const std::size_t count = std::min(n - done, block_ - i % block_);
      fn(blocks_[i / block_] + static_cast<std::ptrdiff_t>(i % block_), done, count);
      done += count;
    }
  }

  registration reg_;
  std::size_t size_ = 0;
  std::size_t block_ = 0;
  std::vector<global_ptr<T>> blocks_;
};

}  // namespace shoal
