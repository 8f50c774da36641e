// shoal/core/detail/runtime.hpp — the process-wide state behind shoal::environment.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shoal/core/detail/segment_allocator.hpp"
#include "shoal/core/detail/wait_sleep.hpp"
#include "shoal/core/error.hpp"

namespace shoal {

/// How one rank reaches another rank's memory; chosen per target when the environment starts, fixed for the run
/// (docs/core.md, "Paths").
enum class rma_path {
  shared_memory,  ///< same host: loads, stores and CPU atomics on MPI_Win_allocate_shared memory
  mpi,            ///< MPI-3 RMA calls (MPI_Get, MPI_Put, MPI_Fetch_and_op, ...) on an MPI window
  messages,       ///< a request message applied by the owner's CPU (detail/remote_ops.hpp), answered by message
};

/// Name of a path ("shared memory", "MPI RMA", "messages").
inline const char* to_string(rma_path p) {
  switch (p) {
    case rma_path::shared_memory: return "shared memory";
    case rma_path::mpi: return "MPI RMA";
    case rma_path::messages: return "messages";
  }
  return "?";
}

}  // namespace shoal

namespace shoal::detail {

class remote_ops;
class progress_thread;

struct runtime {
  bool owns_mpi = false;
  std::uint64_t run = 0;  // which environment of this process this is (1, 2, ...): see run_is_live

  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of the user's communicator: shoal's traffic never meets theirs
  int rank = 0;
  int size = 1;
  MPI_Comm node_comm = MPI_COMM_NULL;
  int node_rank = 0;
  int node_size = 1;

  int hosts = 1;  // number of distinct nodes (MPI_COMM_TYPE_SHARED groups) in comm
  wait_sleep_decision waits;  // whether waits may sleep (more ranks on this machine than CPUs), fixed at start

  // Paths (chosen at start, fixed): a target whose segment is mapped here (peer_base non-null) is reached by loads,
  // stores and CPU atomics; any other target's data by MPI RMA on `win` when it is not MPI_WIN_NULL, else by
  // messages; its atomics by MPI atomics only when no rank uses shared memory (mpi_atomics), else by messages, so
  // that every atomic on a word is a CPU atomic at its owner.
  rma_path path = rma_path::mpi;   // the path to the farthest target (shoal::current_rma_path)
  MPI_Win win = MPI_WIN_NULL;       // a window of every rank's segment, when MPI can make one across the job
  MPI_Win node_win = MPI_WIN_NULL;  // the shared-memory window of this node, when it is not `win` itself
  bool mpi_atomics = false;
  std::byte* base = nullptr;         // this rank's segment
  std::size_t segment_size = 0;      // bytes per rank, the same on every rank
  std::vector<std::byte*> peer_base;  // per rank: its segment mapped here (same host), or null
  segment_allocator heap;
  remote_ops* messages = nullptr;     // owner-applied operations, when any target needs them
  progress_thread* helper = nullptr;  // the progress thread, when it runs
  int thread_level = MPI_THREAD_SINGLE;  // what MPI provided

  std::vector<std::function<void()>> progress_hooks;  // run by shoal::progress()
  std::uint64_t progress_arrivals = 0;  // bumped by progress hooks when something arrived from another rank
  std::uint64_t wait_backoffs = 0;  // polls after which a wait yielded or slept (tests: a long wait gives the CPU away)
  int one_sided_waits = 0;  // one-sided waits running on the calling thread (see detail::one_sided_wait)
  std::vector<std::function<void()>> finalize_hooks;  // run in reverse order before the window is freed
  std::vector<void*> handler_targets;  // containers that receive messages, by slot (registration)
  std::uint32_t next_team_id = 1;  // team ids this rank has not used yet (0 is world()); see team::id
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
inline std::uint64_t g_runs_started = 0;  // environments started by this process so far
inline std::uint64_t g_live_run = 0;      // g_runtime->run while an environment is up, else 0

/// True while the environment of run `run` is up. Memory, communicators and handler slots of a run belong to it:
/// after its finalize they are gone, and a later environment (another run) must never receive frees of them. One
/// compare (every container operation asks): runs count from 1, so run 0 (a moved-from container) is never live.
inline bool run_is_live(std::uint64_t run) noexcept { return run == g_live_run && run != 0; }

/// The run of the environment that is up, 0 when none is.
inline std::uint64_t current_run() noexcept { return g_live_run; }

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
