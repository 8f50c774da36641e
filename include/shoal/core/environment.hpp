// shoal/core/environment.hpp — start and stop shoal.
//
//   int main(int argc, char** argv) {
//     shoal::environment env(argc, argv);          // MPI_Init_thread if needed, symmetric heap, RMA epoch
//     ...
//   }                                               // frees what it made; MPI_Finalize only if it called MPI_Init
//
// An MPI program that already called MPI_Init passes its communicator: shoal duplicates it and works only there.
//
// Settings (an option wins over the environment variable):
//   heap_size        SHOAL_HEAP_SIZE   bytes of symmetric heap per rank ("512M"); default 256M
//   force_mpi_path   SHOAL_FORCE_MPI=1 use MPI RMA calls even when every rank is on one node
//   force_messages   SHOAL_FORCE_MESSAGES=1 reach every rank's memory by owner-applied messages
//   progress_thread  SHOAL_PROGRESS_THREAD=auto|on|off  serve other hosts' operations while this rank computes
//   verbose          SHOAL_VERBOSE=1   rank 0 prints the paths chosen (shoal::describe_paths) at start
//
// Paths (docs/core.md): ranks on this host by shared memory; other hosts' data by MPI RMA when MPI can make a window
// across the job (checked at start with errors returned, not fatal), else by messages applied by the owner; other
// hosts' atomics by messages applied by the owner, so that all atomics on a word are CPU atomics.
//
// MPI errors come back as shoal::mpi_error with MPI's error string: every communicator and window shoal makes has
// MPI_ERRORS_RETURN. shoal never changes the process's environment; what it needs from MPI it checks at start and
// reports with what to change (a thread level below MPI_THREAD_MULTIPLE when the progress thread is asked for,
// Open MPI 4.1's vader CMA under SHOAL_FORCE_MPI: docs/core.md, "Known traps").
#pragma once

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/mpi_traps.hpp"
#include "shoal/core/detail/path_setup.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/paths.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

struct options {
  /// Bytes of symmetric heap per rank. Default: SHOAL_HEAP_SIZE, else 256 MiB.
  std::optional<std::size_t> heap_size;
  /// Force the MPI RMA path even on one node. Default: SHOAL_FORCE_MPI.
  std::optional<bool> force_mpi_path;
  /// Reach every rank's memory, this rank's included, by owner-applied messages (the path another host takes when
  /// MPI cannot make a window across the job); for tests and for MPIs whose one-sided support is unusable.
  /// Default: SHOAL_FORCE_MESSAGES.
  std::optional<bool> force_messages;
  /// The communicator shoal works on (duplicated). Default: MPI_COMM_WORLD.
  MPI_Comm comm = MPI_COMM_WORLD;
  /// Thread level requested when shoal calls MPI_Init_thread. MPI_THREAD_MULTIPLE lets the progress thread run.
  int thread_level = MPI_THREAD_MULTIPLE;
  /// Run the progress thread (serves other hosts' remote operations while this rank computes). Default:
  /// SHOAL_PROGRESS_THREAD (auto, on, off); auto = on when some target is on another host and MPI provides
  /// MPI_THREAD_MULTIPLE.
  std::optional<bool> progress_thread;
  /// Print the paths chosen (one line, rank 0). Default: SHOAL_VERBOSE.
  std::optional<bool> verbose;
};

inline constexpr std::size_t default_heap_size = std::size_t{256} << 20;

class environment {
 public:
  environment() : environment(nullptr, nullptr, options{}) {}
  explicit environment(const options& opts) : environment(nullptr, nullptr, opts) {}
  environment(int& argc, char**& argv, const options& opts = {}) : environment(&argc, &argv, opts) {}

  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

  ~environment() { finalize(); }

  /// Ends shoal early (the destructor does it otherwise). Collective.
  void finalize() {
    auto* r = detail::g_runtime;
    if (r == nullptr) return;
    // Hooks may communicate (drain messages); they run while the runtime is still up.
    for (auto it = r->finalize_hooks.rbegin(); it != r->finalize_hooks.rend(); ++it) (*it)();
    if (r->messages) r->messages->complete_puts(-1);
    // Waits with progress: a rank still finishing its last remote operations on this one is served meanwhile.
    MPI_Request req;
    SHOAL_MPI(MPI_Ibarrier(r->comm, &req));
    detail::wait_request(req);
    r->progress_hooks.clear();  // they may refer to what free_paths frees
    detail::free_paths(*r);
    if (r->node_comm != MPI_COMM_NULL) SHOAL_MPI_CLEANUP(MPI_Comm_free(&r->node_comm));
    SHOAL_MPI_CLEANUP(MPI_Comm_free(&r->comm));
    const bool owns = r->owns_mpi;
    delete r;
    detail::g_runtime = nullptr;
    detail::g_live_run = 0;
    detail::g_finalized = true;
    detail::world_team_storage() = team();
    detail::node_team_storage() = team();
    if (owns) SHOAL_MPI_CLEANUP(MPI_Finalize());
  }

  /// The path chosen for this run.
  rma_path path() const { return detail::rt().path; }

 private:
  environment(int* argc, char*** argv, const options& opts) {
    if (detail::g_runtime != nullptr) {
      throw usage_error("shoal: a shoal::environment already exists; create exactly one per process");
    }
    int initialized = 0;
    SHOAL_MPI(MPI_Initialized(&initialized));
    auto* r = new detail::runtime;
    bool verbose = false;
    try {
      verbose = opts.verbose ? *opts.verbose : detail::env_flag("SHOAL_VERBOSE");
      if (!initialized) {
        int provided = 0;
        SHOAL_MPI(MPI_Init_thread(argc, argv, opts.thread_level, &provided));
        r->owns_mpi = true;
      }
      SHOAL_MPI(MPI_Comm_dup(opts.comm, &r->comm));
      // A duplicate inherits the user's error handler; shoal's own communicators return errors.
      SHOAL_MPI(MPI_Comm_set_errhandler(r->comm, MPI_ERRORS_RETURN));
      SHOAL_MPI(MPI_Comm_rank(r->comm, &r->rank));
      SHOAL_MPI(MPI_Comm_size(r->comm, &r->size));
      SHOAL_MPI(MPI_Comm_split_type(r->comm, MPI_COMM_TYPE_SHARED, r->rank, MPI_INFO_NULL, &r->node_comm));
      SHOAL_MPI(MPI_Comm_set_errhandler(r->node_comm, MPI_ERRORS_RETURN));
      SHOAL_MPI(MPI_Comm_rank(r->node_comm, &r->node_rank));
      SHOAL_MPI(MPI_Comm_size(r->node_comm, &r->node_size));
      r->waits = detail::decide_wait_sleep(r->comm);

      const std::size_t requested =
          opts.heap_size ? *opts.heap_size : detail::env_size("SHOAL_HEAP_SIZE").value_or(default_heap_size);
      // Every rank uses the largest request so the heap is symmetric.
      std::uint64_t seg = requested;
      SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, &seg, 1, MPI_UINT64_T, MPI_MAX, r->comm));
      // After the reduction, so that every rank stops here (a collective later would hang the ones that went on).
      constexpr std::uint64_t max_segment = std::uint64_t{1} << global_ptr<std::byte>::offset_bits;
      if (seg > max_segment) {
        throw usage_error("shoal: a symmetric heap of " + std::to_string(seg) + " bytes per rank (SHOAL_HEAP_SIZE or "
                          "options::heap_size, the largest of any rank) is more than the " +
                          detail::format_size(max_segment) + " a global pointer can address; ask for less");
      }
      seg = (seg + 4095) & ~std::uint64_t{4095};
      r->segment_size = seg;

      // One decision for the whole job: forced to MPI if any rank asks for it.
      int force_mpi = (opts.force_mpi_path ? *opts.force_mpi_path : detail::env_flag("SHOAL_FORCE_MPI")) ? 1 : 0;
      SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, &force_mpi, 1, MPI_INT, MPI_MAX, r->comm));
      int force_messages =
          (opts.force_messages ? *opts.force_messages : detail::env_flag("SHOAL_FORCE_MESSAGES")) ? 1 : 0;
      SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, &force_messages, 1, MPI_INT, MPI_MAX, r->comm));
      detail::setup_paths(*r, seg, force_mpi != 0, force_messages != 0);
      if (r->mpi_atomics) detail::check_mpi_atomics_usable(r->comm);
      detail::start_messages(*r, opts.progress_thread);
      r->heap.reset(seg);
    } catch (...) {
      detail::free_paths(*r);
      delete r;
      throw;
    }
    r->run = ++detail::g_runs_started;
    detail::g_runtime = r;
    detail::g_live_run = r->run;
    detail::g_finalized = false;
    detail::world_team_storage() = detail::wrap_runtime_team(r->comm, r->run, /*world=*/true);
    detail::node_team_storage() = detail::wrap_runtime_team(r->node_comm, r->run, /*world=*/false);
    for (auto* hook : detail::start_hooks()) hook();
    SHOAL_MPI(MPI_Barrier(r->comm));
    if (r->rank == 0 && verbose) {
      std::fprintf(stderr, "shoal: %s\n", describe_paths().c_str());
    }
  }
};

/// True between the construction and the destruction of the environment.
inline bool is_initialized() { return detail::g_runtime != nullptr; }

/// The path to the farthest target: shared_memory when every rank shares this host's memory, else how data reaches
/// another host (mpi or messages). Fixed at start.
inline rma_path current_rma_path() { return detail::rt().path; }

}  // namespace shoal
