// shoal/core/paths.hpp — which path each remote access takes (chosen when the environment starts).
//
//   shoal::path_to(r)          how get/put reach rank r: shared_memory (same host), mpi (MPI RMA) or messages
//   shoal::atomic_path_to(r)   how atomics reach rank r: shared_memory (CPU atomics), mpi (only when no rank
//                              shares memory: SHOAL_FORCE_MPI) or messages (applied by r's CPU)
//   shoal::host_count()        hosts (MPI_COMM_TYPE_SHARED groups) in the job
//   shoal::progress_thread_running()
//   shoal::describe_paths()    one line, also printed by rank 0 at start with SHOAL_VERBOSE=1
//
// Cost: each is a local lookup. docs/core.md ("Paths") gives the rules and the reasons.
#pragma once

#include <string>

#include "shoal/core/detail/runtime.hpp"

namespace shoal {

/// How get and put reach `target`'s memory.
inline rma_path path_to(int target) {
  auto& r = detail::rt();
  if (r.peer_base[static_cast<std::size_t>(target)] != nullptr) return rma_path::shared_memory;
  return r.win != MPI_WIN_NULL ? rma_path::mpi : rma_path::messages;
}

/// How atomics reach `target`'s memory.
inline rma_path atomic_path_to(int target) {
  auto& r = detail::rt();
  if (r.peer_base[static_cast<std::size_t>(target)] != nullptr) return rma_path::shared_memory;
  return r.mpi_atomics ? rma_path::mpi : rma_path::messages;
}

/// True when `target` is on this rank's host (its memory is mapped here).
inline bool same_host(int target) { return path_to(target) == rma_path::shared_memory; }

/// Number of hosts the job spans.
inline int host_count() { return detail::rt().hosts; }

/// True while the progress thread runs (docs/core.md, "Progress").
inline bool progress_thread_running() { return detail::rt().helper != nullptr; }

/// One line: ranks, hosts, and the path for each kind of target.
inline std::string describe_paths() {
  auto& r = detail::rt();
  std::string s = std::to_string(r.size) + (r.size == 1 ? " rank on " : " ranks on ") + std::to_string(r.hosts) +
                  (r.hosts == 1 ? " host" : " hosts");
  if (r.hosts > 1) s += " (" + std::to_string(r.node_size) + " on this one)";
  const bool any_shared = r.peer_base[static_cast<std::size_t>(r.rank)] != nullptr;
  if (any_shared) s += "; same host: shared memory";
  if (r.path != rma_path::shared_memory) {
    s += any_shared ? "; other hosts: data by " : "; every target: data by ";
    s += to_string(r.win != MPI_WIN_NULL ? rma_path::mpi : rma_path::messages);
    s += ", atomics by ";
    s += r.mpi_atomics ? "MPI RMA" : "messages applied by the owner";
    s += "; progress thread: ";
    s += r.helper ? "on" : (r.thread_level >= MPI_THREAD_MULTIPLE ? "off" : "off (MPI_THREAD_MULTIPLE not provided)");
  }
  // How waits back off (detail/wait_sleep.hpp): they sleep only with more ranks on this machine than CPUs for them.
  s += r.waits.sleep ? "; long waits sleep (" : "; long waits yield, never sleep (";
  s += r.waits.forced ? "SHOAL_WAIT_SLEEP" : std::to_string(r.waits.ranks) + (r.waits.ranks == 1 ? " rank on " : " ranks on ") +
                                                  std::to_string(r.waits.cpus) + (r.waits.cpus == 1 ? " CPU)" : " CPUs)");
  if (r.waits.forced) s += ")";
  return s;
}

}  // namespace shoal
