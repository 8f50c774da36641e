// shoal/core/heap.hpp — allocation in the symmetric heap.
//
// Each rank owns one segment of the symmetric heap (SHOAL_HEAP_SIZE bytes). allocate<T>(n) takes memory from the
// calling rank's own segment (a local call, no communication); any rank may then read and write it through the
// global_ptr. allocate_collective<T>(n, team) is collective over the team (default world()): every rank of the team
// allocates n elements and learns every team rank's pointer. Every rank's segment serves all the teams the rank
// belongs to; a failed team-collective allocation is agreed over that team only. Memory is uninitialised, as from malloc. A request that does not fit raises shoal::heap_exhausted,
// naming the sizes and the setting that raises the limit.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// Types that may live in the symmetric heap and move by remote get/put: copied as bytes.
template <class T>
concept remote_storable = std::is_trivially_copyable_v<T>;

/// Allocates n elements of T in this rank's segment. Local call.
template <remote_storable T>
global_ptr<T> allocate(std::size_t n = 1) {
  auto& r = detail::rt();
  const std::size_t bytes = n * sizeof(T);
  const std::size_t align = alignof(T) > 64 ? alignof(T) : 64;
  auto off = r.heap.allocate(bytes, align);
  if (!off) {
    throw heap_exhausted("shoal: heap exhausted on rank " + std::to_string(r.rank) + ": asked for " +
                         detail::format_size(bytes) + " while " + detail::format_size(r.heap.in_use()) + " of " +
                         detail::format_size(r.heap.capacity()) + " are in use (largest free block " +
                         detail::format_size(r.heap.largest_free_block()) +
                         "); raise SHOAL_HEAP_SIZE (e.g. SHOAL_HEAP_SIZE=1G) or shoal::options::heap_size");
  }
  return global_ptr<T>(r.rank, *off);
}

/// Returns memory from allocate() to this rank's segment. Local call; ptr must be this rank's.
template <class T>
void deallocate(global_ptr<T> ptr) {
  if (ptr.is_null()) return;
  auto& r = detail::rt();
  if (ptr.rank() != r.rank) {
    throw usage_error("shoal::deallocate: rank " + std::to_string(r.rank) + " cannot free memory of rank " +
                      std::to_string(ptr.rank()) + "; the owner frees its own segment");
  }
  if (!r.heap.deallocate(ptr.offset())) {
    throw usage_error("shoal::deallocate: offset " + std::to_string(ptr.offset()) +
                      " is not an allocated block (double free?)");
  }
}

/// Collective over `t`: every rank of the team allocates n elements in its own segment; element i of the result is
/// team rank i's block (its global_ptr names the environment rank). If any rank of the team cannot allocate, every
/// rank of the team frees what it took and throws heap_exhausted; ranks outside the team take no part.
template <remote_storable T>
std::vector<global_ptr<T>> allocate_collective(std::size_t n, const team& t = world()) {
  global_ptr<T> mine;
  std::string why;
  try {
    mine = allocate<T>(n);
  } catch (const heap_exhausted& e) {
    why = e.what();
  }
  const int failed = t.allreduce(why.empty() ? 0 : 1, op::max{});
  if (failed) {
    deallocate(mine);
    throw heap_exhausted(why.empty() ? "shoal: collective allocation of " + detail::format_size(n * sizeof(T)) +
                                           " per rank failed on another rank; raise SHOAL_HEAP_SIZE"
                                     : why);
  }
  return t.allgather(mine);
}

/// Bytes of this rank's segment in use, and its capacity.
inline std::size_t heap_in_use() { return detail::rt().heap.in_use(); }
inline std::size_t heap_capacity() { return detail::rt().heap.capacity(); }

}  // namespace shoal
