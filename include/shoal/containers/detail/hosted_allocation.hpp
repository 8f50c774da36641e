// shoal/containers/detail/hosted_allocation.hpp — a block of the symmetric heap that lives on one rank of a team
// (the host) and that every rank of the team knows: the storage of every hosted container (array, fast_queue,
// circular_queue).
//
// Construction is collective over the container's team and goes through its registration (core/registration.hpp):
// the host allocates, then broadcasts the pointer; if the host cannot allocate, every rank of the team throws
// heap_exhausted (so no rank is left holding a handle to nothing). The registration owns the block: only the host's
// registration frees it, when the container is destroyed (collectively) or when the container replaces the block
// (registration::deallocate). Moving a handle therefore never frees storage that another handle still uses — the
// defect of BCL's queues built from a moved temporary.
#pragma once

#include <cstddef>
#include <utility>

#include "shoal/core/registration.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"

namespace shoal::detail {

template <remote_storable T>
class hosted_allocation {
 public:
  hosted_allocation() = default;

  /// Collective over reg's team: team rank `host` allocates `count` elements; every rank learns the pointer.
  hosted_allocation(registration& reg, int host, std::size_t count)
      : ptr_(reg.allocate_hosted<T>(host, count)), count_(count), host_(host), mine_(reg.rank() == host) {}

  hosted_allocation(const hosted_allocation&) = delete;
  hosted_allocation& operator=(const hosted_allocation&) = delete;
  hosted_allocation(hosted_allocation&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(std::exchange(other.count_, 0)),
        host_(std::exchange(other.host_, -1)), mine_(std::exchange(other.mine_, false)) {}
  hosted_allocation& operator=(hosted_allocation&& other) noexcept {
    ptr_ = std::exchange(other.ptr_, nullptr);
    count_ = std::exchange(other.count_, 0);
    host_ = std::exchange(other.host_, -1);
    mine_ = std::exchange(other.mine_, false);
    return *this;
  }

  global_ptr<T> ptr() const noexcept { return ptr_; }
  std::size_t count() const noexcept { return count_; }
  /// The host's rank in the container's team.
  int host() const noexcept { return host_; }
  bool empty() const noexcept { return ptr_.is_null(); }
  bool on_this_rank() const noexcept { return mine_; }
  /// Plain pointer to the block; host only.
  T* local() const { return ptr_.local(); }

 private:
  global_ptr<T> ptr_;
  std::size_t count_ = 0;
  int host_ = -1;
  bool mine_ = false;
};

}  // namespace shoal::detail
