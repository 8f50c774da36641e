// shoal/containers/detail/hosted_allocation.hpp — a block of the symmetric heap that lives on one rank (the host)
// and that every rank of the team knows: the storage of every hosted container (array, fast_queue, circular_queue).
//
// Construction is collective: the host allocates, then broadcasts the pointer; if the host cannot allocate, every
// rank throws heap_exhausted (so no rank is left holding a handle to nothing). The object owns the block: it is
// move-only, a moved-from object owns nothing, and only the host's object frees the block (a local call) when it is
// destroyed. Moving a handle therefore never frees storage that another handle still uses — the defect of BCL's
// queues built from a moved temporary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/environment.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/team.hpp"

namespace shoal::detail {

/// Throws usage_error unless `host` is a rank of the world team (same check on every rank, so all throw alike).
inline void check_host_rank(int host, const char* container) {
  if (host < 0 || host >= shoal::size()) {
    throw usage_error(std::string("shoal::") + container + ": host rank " + std::to_string(host) +
                      " is outside the team of " + std::to_string(shoal::size()) + " ranks");
  }
}

template <remote_storable T>
class hosted_allocation {
 public:
  hosted_allocation() = default;

  /// Collective: `host` allocates `count` elements; every rank learns the pointer.
  hosted_allocation(int host, std::size_t count, const char* container) : count_(count), host_(host) {
    check_host_rank(host, container);
    std::string why;
    std::uint64_t raw = 0;
    if (shoal::rank() == host) {
      try {
        raw = allocate<T>(count).raw();
      } catch (const heap_exhausted& e) {
        why = e.what();
      }
    }
    raw = world().broadcast(raw, host);
    if (raw == 0) {
      count_ = 0;
      host_ = -1;
      throw heap_exhausted(!why.empty() ? std::string("shoal::") + container + ": " + why
                                        : std::string("shoal::") + container + ": host rank " + std::to_string(host) +
                                              " cannot allocate " + format_size(count * sizeof(T)) +
                                              "; raise SHOAL_HEAP_SIZE or shoal::options::heap_size");
    }
    ptr_ = global_ptr<T>::from_raw(raw);
  }

  hosted_allocation(const hosted_allocation&) = delete;
  hosted_allocation& operator=(const hosted_allocation&) = delete;
  hosted_allocation(hosted_allocation&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), count_(std::exchange(other.count_, 0)),
        host_(std::exchange(other.host_, -1)) {}
  hosted_allocation& operator=(hosted_allocation&& other) noexcept {
    if (this != &other) {
      release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      count_ = std::exchange(other.count_, 0);
      host_ = std::exchange(other.host_, -1);
    }
    return *this;
  }
  ~hosted_allocation() { release(); }

  global_ptr<T> ptr() const noexcept { return ptr_; }
  std::size_t count() const noexcept { return count_; }
  int host() const noexcept { return host_; }
  bool empty() const noexcept { return ptr_.is_null(); }
  bool on_this_rank() const { return !ptr_.is_null() && host_ == shoal::rank(); }
  /// Plain pointer to the block; host only.
  T* local() const { return ptr_.local(); }

 private:
  // Only the host frees, with a local call; after the environment is gone there is nothing left to free.
  void release() noexcept {
    if (!ptr_.is_null() && is_initialized() && host_ == detail::rt().rank) {
      try {
        deallocate(ptr_);
      } catch (...) {  // a destructor must not throw; a double free was already impossible by ownership
      }
    }
    ptr_ = nullptr;
    count_ = 0;
    host_ = -1;
  }

  global_ptr<T> ptr_;
  std::size_t count_ = 0;
  int host_ = -1;
};

}  // namespace shoal::detail
