// shoal/core/detail/path_setup.hpp — how the environment chooses, at start, the path to every target, and frees
// what it made at the end (docs/core.md, "Paths").
#pragma once

#include <mpi.h>

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/progress_thread.hpp"
#include "shoal/core/detail/remote_ops.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"

namespace shoal::detail {

/// Collective. Creates a window over `comm` (whose errors are returned, as on every communicator shoal makes); true
/// on every rank iff it worked on every rank. A window that worked on some ranks only cannot be freed (MPI_Win_free
/// is collective), so that case is reported as an error.
template <class Make>
bool try_window(MPI_Comm comm, const char* what, Make&& make) {
  const int rc = make();
  int ok = rc == MPI_SUCCESS ? 1 : 0, all = 0, any = 0;
  SHOAL_MPI(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm));
  SHOAL_MPI(MPI_Allreduce(&ok, &any, 1, MPI_INT, MPI_MAX, comm));
  if (all != any) {
    mpi_check(rc == MPI_SUCCESS ? MPI_ERR_WIN : rc,
              (std::string(what) + " worked on some ranks but not on others; shoal cannot continue").c_str());
  }
  return all == 1;
}

/// Maps the segments of the ranks of `node_win` (a shared window on node_comm) into r.peer_base.
inline void map_node_peers(runtime& r, MPI_Win node_win) {
  MPI_Group world_group, node_group;
  SHOAL_MPI(MPI_Comm_group(r.comm, &world_group));
  SHOAL_MPI(MPI_Comm_group(r.node_comm, &node_group));
  std::vector<int> node_ranks(static_cast<std::size_t>(r.node_size)), world_ranks(node_ranks.size());
  std::iota(node_ranks.begin(), node_ranks.end(), 0);
  SHOAL_MPI(MPI_Group_translate_ranks(node_group, r.node_size, node_ranks.data(), world_group, world_ranks.data()));
  SHOAL_MPI(MPI_Group_free(&world_group));
  SHOAL_MPI(MPI_Group_free(&node_group));
  for (int i = 0; i < r.node_size; ++i) {
    MPI_Aint bytes;
    int disp;
    void* p = nullptr;
    SHOAL_MPI(MPI_Win_shared_query(node_win, i, &bytes, &disp, &p));
    r.peer_base[static_cast<std::size_t>(world_ranks[static_cast<std::size_t>(i)])] = static_cast<std::byte*>(p);
  }
}

/// Collective. Allocates this rank's segment of `seg` bytes and chooses the path to every target:
///  * one host, not forced to MPI: one shared window over comm; every target by loads, stores and CPU atomics;
///  * several hosts: a shared window per host (same host as above), plus a window of every segment over comm when
///    MPI can make one (data to other hosts by MPI RMA, else by messages); atomics to other hosts by messages, so
///    all atomics on a word are CPU atomics at its owner;
///  * forced to MPI (SHOAL_FORCE_MPI): one MPI_Win_allocate window over comm, everything by MPI RMA including
///    atomics; where MPI cannot make that window, everything by messages;
///  * forced to messages (SHOAL_FORCE_MESSAGES): every target, this rank included, by owner-applied messages.
inline void setup_paths(runtime& r, std::size_t seg, bool force_mpi, bool force_messages = false) {
  int leader = r.node_rank == 0 ? 1 : 0;
  SHOAL_MPI(MPI_Allreduce(&leader, &r.hosts, 1, MPI_INT, MPI_SUM, r.comm));
  r.peer_base.assign(static_cast<std::size_t>(r.size), nullptr);
  const auto bytes = static_cast<MPI_Aint>(seg);
  const std::string heap_hint = "allocating the symmetric heap of " + format_size(seg) +
                                " per rank (lower SHOAL_HEAP_SIZE or options::heap_size)";

  MPI_Info info;
  SHOAL_MPI(MPI_Info_create(&info));
  SHOAL_MPI(MPI_Info_set(info, "same_size", "true"));
  SHOAL_MPI(MPI_Info_set(info, "same_disp_unit", "true"));
  if (force_messages) {
    force_mpi = true;  // the branch below, with the window's creation skipped
  }
  if (!force_mpi) {
    SHOAL_MPI(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    const MPI_Comm shared_comm = r.hosts == 1 ? r.comm : r.node_comm;
    MPI_Win shared_win = MPI_WIN_NULL;
    const int rc = MPI_Win_allocate_shared(bytes, 1, info, shared_comm, &r.base, &shared_win);
    if (rc != MPI_SUCCESS) {
      SHOAL_MPI_CLEANUP(MPI_Info_free(&info));
      mpi_check(rc, heap_hint.c_str());
    }
    SHOAL_MPI(MPI_Win_set_errhandler(shared_win, MPI_ERRORS_RETURN));
    SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, shared_win));  // every window is locked as soon as it exists
    map_node_peers(r, shared_win);
    if (r.hosts == 1) {
      r.win = shared_win;
      r.path = rma_path::shared_memory;
    } else {
      r.node_win = shared_win;
      if (try_window(r.comm, "MPI_Win_create across hosts",
                     [&] { return MPI_Win_create(r.base, bytes, 1, info, r.comm, &r.win); })) {
        SHOAL_MPI(MPI_Win_set_errhandler(r.win, MPI_ERRORS_RETURN));
        SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, r.win));
      } else {
        r.win = MPI_WIN_NULL;
      }
      r.path = r.win != MPI_WIN_NULL ? rma_path::mpi : rma_path::messages;
    }
    r.mpi_atomics = false;
  } else {
    // shoal's containers mix different atomic operations on one word (fetch_add, fetch_xor, compare_exchange).
    // MPI's default hint (accumulate_ops = same_op_no_op) lets an implementation assume they never mix, e.g. by
    // serving some in hardware and others in software. MPICH's which_accumulate_ops names every operation shoal
    // issues, so it must choose one mechanism that keeps them atomic with each other (other MPIs ignore it).
    // tests/core_test.cpp (MixedOperationsOnOneWord*) checks the property on both MPIs.
    SHOAL_MPI(MPI_Info_set(info, "which_accumulate_ops", "sum,band,bor,bxor,replace,no_op,cswap"));
    const bool ok = !force_messages && try_window(r.comm, "MPI_Win_allocate", [&] {
      return MPI_Win_allocate(bytes, 1, info, r.comm, &r.base, &r.win);
    });
    if (ok) {
      SHOAL_MPI(MPI_Win_set_errhandler(r.win, MPI_ERRORS_RETURN));
      SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, r.win));
      r.path = rma_path::mpi;
      r.mpi_atomics = true;
    } else {
      // No window across the job (or messages forced): this rank's segment alone, everything by messages.
      r.win = MPI_WIN_NULL;
      // On a duplicate of MPI_COMM_SELF (the user's), so that a failure returns instead of aborting.
      MPI_Comm self = MPI_COMM_NULL;
      SHOAL_MPI(MPI_Comm_dup(MPI_COMM_SELF, &self));
      SHOAL_MPI(MPI_Comm_set_errhandler(self, MPI_ERRORS_RETURN));
      const int rc = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, self, &r.base, &r.node_win);
      SHOAL_MPI_CLEANUP(MPI_Comm_free(&self));
      if (rc != MPI_SUCCESS) {
        SHOAL_MPI_CLEANUP(MPI_Info_free(&info));
        mpi_check(rc, heap_hint.c_str());
      }
      SHOAL_MPI(MPI_Win_set_errhandler(r.node_win, MPI_ERRORS_RETURN));
      SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, r.node_win));
      r.path = rma_path::messages;
      r.mpi_atomics = false;
    }
  }
  SHOAL_MPI(MPI_Info_free(&info));
}

/// Reads SHOAL_PROGRESS_THREAD: auto (unset, "" or "auto"), else a boolean setting (env_flag's spellings).
inline std::optional<bool> env_progress_thread() {
  const char* v = std::getenv("SHOAL_PROGRESS_THREAD");
  if (v == nullptr || *v == '\0' || std::string(v) == "auto") return std::nullopt;
  return env_flag("SHOAL_PROGRESS_THREAD");
}

/// Collective. Starts owner-applied operations where some target is not on this host, and the progress thread
/// (`want`: on / off / auto = when some rank is on another host and MPI provides MPI_THREAD_MULTIPLE).
inline void start_messages(runtime& r, std::optional<bool> want) {
  SHOAL_MPI(MPI_Query_thread(&r.thread_level));
  if (!want) want = env_progress_thread();
  const bool multiple = r.thread_level >= MPI_THREAD_MULTIPLE;
  // Asked for explicitly, a thread MPI cannot support is an error even where none would start (one host): the same
  // program would fail later across hosts.
  if (want.value_or(false) && !multiple) {
    throw usage_error(
        "shoal: the progress thread (SHOAL_PROGRESS_THREAD=on / options::progress_thread) needs MPI_THREAD_MULTIPLE, "
        "but MPI provides less; initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or turn the "
        "progress thread off");
  }
  int remote_targets = (r.hosts > 1 || r.path != rma_path::shared_memory) ? 1 : 0;
  SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, &remote_targets, 1, MPI_INT, MPI_MAX, r.comm));
  if (!remote_targets) return;
  // Requests travel when some target's atomics or data are not MPI RMA (not under SHOAL_FORCE_MPI with a window).
  const bool requests = !r.mpi_atomics || r.win == MPI_WIN_NULL;
  const bool thread = want.value_or(r.hosts > 1 && multiple);
  if (!requests) {
    // Everything by MPI RMA (SHOAL_FORCE_MPI): an MPI whose RMA needs the target's library to act (MPICH's software
    // atomics over TCP or UCX) gets it whenever this rank waits in shoal.
    const MPI_Comm comm = r.comm;
    r.progress_hooks.push_back([comm] {
      int flag = 0;
      SHOAL_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE));
    });
  }
  if (!requests && !thread) return;
  r.messages = new remote_ops(r.comm, r.base, r.segment_size);
  auto* ops = r.messages;
  if (requests) {
    r.progress_hooks.push_back([ops] {
      if (ops->serve() > 0) ++rt().progress_arrivals;
    });
  }
  // The thread serves requests and, by calling MPI, drives MPI's progress for the RMA path as well.
  if (thread) r.helper = new progress_thread(*ops);
}

/// Stops the progress thread and frees the windows, each locked since it was made (collective: the end of the
/// environment).
inline void free_paths(runtime& r) {
  delete r.helper;
  r.helper = nullptr;
  delete r.messages;
  r.messages = nullptr;
  for (MPI_Win* w : {&r.win, &r.node_win}) {
    if (*w == MPI_WIN_NULL) continue;
    SHOAL_MPI_CLEANUP(MPI_Win_unlock_all(*w));
    SHOAL_MPI_CLEANUP(MPI_Win_free(w));
  }
}

}  // namespace shoal::detail
