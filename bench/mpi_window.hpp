// bench/mpi_window.hpp — the plain-MPI reference: an MPI_Win_allocate window under one lock_all epoch, used the
// obvious way by the baselines of shoal-bench.
#pragma once

#include <mpi.h>

#include <cstddef>

namespace shoal::bench {

class mpi_window {
 public:
  explicit mpi_window(std::size_t bytes, MPI_Comm comm = MPI_COMM_WORLD) {
    MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &base_, &win_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  }
  ~mpi_window() {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  mpi_window(const mpi_window&) = delete;
  mpi_window& operator=(const mpi_window&) = delete;

  MPI_Win win() const { return win_; }
  template <class T>
  T* local() const {
    return reinterpret_cast<T*>(base_);
  }

 private:
  char* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace shoal::bench
