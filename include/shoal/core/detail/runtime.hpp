// shoal/core/detail/runtime.hpp — the process-wide state behind shoal::environment.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shoal/core/detail/segment_allocator.hpp"
#include "shoal/core/error.hpp"

namespace shoal {

/// How remote memory is reached; chosen once when the environment starts and fixed for the whole run.
enum class rma_path {
  shared_memory,  ///< the whole team is on one node: loads, stores and CPU atomics on MPI_Win_allocate_shared memory
  mpi,            ///< MPI-3 RMA calls (MPI_Get, MPI_Put, MPI_Fetch_and_op, ...) on an MPI_Win_allocate window
};

}  // namespace shoal

namespace shoal::detail {

struct runtime {
  bool owns_mpi = false;

  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of the user's communicator: shoal's traffic never meets theirs
  int rank = 0;
  int size = 1;
  MPI_Comm node_comm = MPI_COMM_NULL;
  int node_rank = 0;
  int node_size = 1;

  rma_path path = rma_path::mpi;
  MPI_Win win = MPI_WIN_NULL;
  std::byte* base = nullptr;         // this rank's segment
  std::size_t segment_size = 0;      // bytes per rank, the same on every rank
  std::vector<std::byte*> peer_base;  // shared_memory path: every rank's segment mapped here
  segment_allocator heap;

  std::vector<std::function<void()>> progress_hooks;  // run by shoal::progress()
  std::uint64_t progress_arrivals = 0;  // bumped by progress hooks when something arrived from another rank
  std::vector<std::function<void()>> finalize_hooks;  // run in reverse order before the window is freed
};

/// Functions every environment runs (collectively, in registration order) once the runtime is up, before its
/// constructor returns. Layers above the core register here during static initialisation to set up their per-run
/// state (the active-message layer duplicates its communicator and installs its progress and finalize hooks).
inline std::vector<void (*)()>& start_hooks() {
  static std::vector<void (*)()> hooks;
  return hooks;
}

inline runtime* g_runtime = nullptr;
inline bool g_finalized = false;

[[noreturn]] inline void throw_not_running() {
  if (g_finalized) {
    throw usage_error("shoal: called after shoal::environment was destroyed (shoal is finalized)");
  }
  throw usage_error("shoal: not initialized; construct a shoal::environment first (see docs/core.md)");
}

inline runtime& rt() {
  if (g_runtime == nullptr) throw_not_running();
  return *g_runtime;
}

}  // namespace shoal::detail
