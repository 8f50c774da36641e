// bench/mpi_window.hpp — the plain-MPI reference: an MPI_Win_allocate window under one lock_all epoch, used the
// obvious way by the baselines of shoal-bench.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <stdexcept>

namespace shoal::bench {

class mpi_window {
 public:
  /// Collective. Where MPI cannot make a window across the job (Open MPI 4.1's default one-sided component between
  /// hosts over TCP), throws, naming what works: a baseline that cannot exist is left out, never faked.
  explicit mpi_window(std::size_t bytes, MPI_Comm comm = MPI_COMM_WORLD) {
    if (!try_create(bytes, comm)) {
      throw std::runtime_error(
          "the plain MPI-3 RMA baseline needs an MPI window across the job, which this MPI cannot make here "
          "(e.g. Open MPI's default one-sided component between hosts over TCP); run with MPICH or --mca osc ucx");
    }
  }
  struct no_throw {};
  /// Collective. As above, but ok() says whether the window exists.
  mpi_window(std::size_t bytes, no_throw, MPI_Comm comm = MPI_COMM_WORLD) { try_create(bytes, comm); }
  ~mpi_window() {
    if (win_ == MPI_WIN_NULL) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  bool ok() const { return win_ != MPI_WIN_NULL; }
  mpi_window(const mpi_window&) = delete;
  mpi_window& operator=(const mpi_window&) = delete;

  MPI_Win win() const { return win_; }

 private:
  bool try_create(std::size_t bytes, MPI_Comm comm) {
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    int ok = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &base_, &win_) == MPI_SUCCESS;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_ARE_FATAL);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (!ok) {
      win_ = MPI_WIN_NULL;
      return false;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
    return true;
  }

 public:
  template <class T>
  T* local() const {
    return reinterpret_cast<T*>(base_);
  }

 private:
  char* base_ = nullptr;
  MPI_Win win_ = MPI_WIN_NULL;
};

}  // namespace shoal::bench
