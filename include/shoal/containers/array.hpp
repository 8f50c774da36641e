// shoal/containers/array.hpp — shoal::array<T>: BCL's Array, a fixed-size 1-D array hosted on one rank.
//
// Model: one-sided (RDMA), hosted: the n elements live in one rank's symmetric heap; every rank reads and writes
// them with remote get / put, without the host's CPU. Elements start value-initialised (T{}).
//
// Operations (R read, W write, B barrier, l local work). Who: collective = every rank of the array's team, in the
// same order; any rank = one rank's call, no other rank takes part:
//   array<T> a(host, n, team = world())  collective  B + broadcast   allocates and zeroes on the host (a team rank)
//   a.get(i) / a.get(first, span out)    any rank    R               blocking
//   a.put(i, v) / a.put(first, span in)  any rank    W               blocking: complete at the host on return
//   a.ptr(i)                             any rank    -               global_ptr<T> for async_get / async_put
//   a.size()                             any rank    -               the number of elements (the whole array)
//   a.local_span()                       any rank    l               the elements as a std::span on the host; empty
//                                                                    on every other rank
//   ~array                               collective  B               the team's ranks wait, then the host frees
// Concurrency: get/put are plain reads and writes; concurrent writes to one element race (use a barrier between
// phases, or shoal atomics on an array of integers through ptr(i)).
// Errors: usage_error (host outside the team, an index out of range, a moved-from handle, a handle of an ended
// environment), heap_exhausted. Lifetime: docs/design.md ("Lifetime"); a destructor after finalize does nothing.
// Handles are move-only; only the host's object frees the storage. T is trivially copyable (shoal::remote_storable).
//
// Example:
//   shoal::array<double> table(0, 1000);          // on rank 0
//   table.put(shoal::rank(), 1.5 * shoal::rank());
//   shoal::barrier();
//   double x = table.get(0);
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>

#include "shoal/containers/detail/hosted_allocation.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

namespace detail {
/// Throws usage_error unless [first, first + count) lies inside [0, size).
inline void check_index_range(std::size_t first, std::size_t count, std::size_t size, const char* where) {
  if (first > size || count > size - first) {
    throw usage_error(std::string("shoal::") + where + ": elements [" + std::to_string(first) + ", " +
                      std::to_string(first + count) + ") outside the " + std::to_string(size) + " elements");
  }
}
}  // namespace detail

template <remote_storable T>
class array {
 public:
  using value_type = T;

  /// Collective over `team`: every rank of the team passes the same host (a team rank) and size.
  array(int host, std::size_t size, const shoal::team& team = shoal::world())
      : reg_(team, "shoal::array"), block_(reg_, host, std::max<std::size_t>(size, 1)), size_(size) {
    if (block_.on_this_rank()) std::fill_n(block_.local(), size_, T{});
    team.barrier();
  }

  array(array&& other) noexcept = default;
  array& operator=(array&& other) noexcept = default;
  array(const array&) = delete;
  array& operator=(const array&) = delete;

  /// The host's rank in the array's team.
  int host() const noexcept { return block_.host(); }
  const shoal::team& team() const noexcept { return reg_.team(); }
  std::size_t size() const noexcept { return size_; }

  global_ptr<T> ptr(std::size_t i) const {
    check(i, 1);
    return block_.ptr() + static_cast<std::ptrdiff_t>(i);
  }

  T get(std::size_t i) const { return shoal::get(ptr(i)); }
  void get(std::size_t first, std::span<T> out) const {
    check(first, out.size());
    if (!out.empty()) shoal::get(block_.ptr() + static_cast<std::ptrdiff_t>(first), out.data(), out.size());
  }
  void put(std::size_t i, const T& value) { shoal::put(ptr(i), value); }
  void put(std::size_t first, std::span<const T> values) {
    check(first, values.size());
    if (!values.empty()) shoal::put(block_.ptr() + static_cast<std::ptrdiff_t>(first), values.data(), values.size());
  }

  /// The elements, on the host; an empty span on every other rank.
  std::span<T> local_span() const {
    if (!block_.on_this_rank()) return {};
    return {block_.local(), size_};
  }

 private:
  void check(std::size_t first, std::size_t count) const {
    reg_.check();
    detail::check_index_range(first, count, size_, "array");
  }

  registration reg_;
  detail::hosted_allocation<T> block_;
  std::size_t size_ = 0;
};

}  // namespace shoal
