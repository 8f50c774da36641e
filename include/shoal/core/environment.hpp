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
//
// Open MPI 4.1's vader BTL crashes in MPI_Win_flush after 64-bit MPI atomics when its CMA single-copy mechanism is
// on; when shoal initialises MPI itself it sets OMPI_MCA_btl_vader_single_copy_mechanism=none unless the user set it.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

struct options {
  /// Bytes of symmetric heap per rank. Default: SHOAL_HEAP_SIZE, else 256 MiB.
  std::optional<std::size_t> heap_size;
  /// Force the MPI RMA path even on one node. Default: SHOAL_FORCE_MPI.
  std::optional<bool> force_mpi_path;
  /// The communicator shoal works on (duplicated). Default: MPI_COMM_WORLD.
  MPI_Comm comm = MPI_COMM_WORLD;
  /// Thread level requested when shoal calls MPI_Init_thread.
  int thread_level = MPI_THREAD_FUNNELED;
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
    MPI_Barrier(r->comm);
    MPI_Win_unlock_all(r->win);
    MPI_Win_free(&r->win);
    if (r->node_comm != MPI_COMM_NULL) MPI_Comm_free(&r->node_comm);
    MPI_Comm_free(&r->comm);
    const bool owns = r->owns_mpi;
    delete r;
    detail::g_runtime = nullptr;
    detail::g_finalized = true;
    detail::world_team_storage() = team();
    detail::node_team_storage() = team();
    if (owns) MPI_Finalize();
  }

  /// The path chosen for this run.
  rma_path path() const { return detail::rt().path; }

 private:
  environment(int* argc, char*** argv, const options& opts) {
    if (detail::g_runtime != nullptr) {
      throw usage_error("shoal: a shoal::environment already exists; create exactly one per process");
    }
    int initialized = 0;
    MPI_Initialized(&initialized);
    auto* r = new detail::runtime;
    try {
      if (!initialized) {
        setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", /*overwrite=*/0);
        int provided = 0;
        SHOAL_MPI(MPI_Init_thread(argc, argv, opts.thread_level, &provided));
        r->owns_mpi = true;
      }
      SHOAL_MPI(MPI_Comm_dup(opts.comm, &r->comm));
      MPI_Comm_rank(r->comm, &r->rank);
      MPI_Comm_size(r->comm, &r->size);
      SHOAL_MPI(MPI_Comm_split_type(r->comm, MPI_COMM_TYPE_SHARED, r->rank, MPI_INFO_NULL, &r->node_comm));
      MPI_Comm_rank(r->node_comm, &r->node_rank);
      MPI_Comm_size(r->node_comm, &r->node_size);

      const std::size_t requested =
          opts.heap_size ? *opts.heap_size : detail::env_size("SHOAL_HEAP_SIZE").value_or(default_heap_size);
      // Every rank uses the largest request so the heap is symmetric.
      std::uint64_t seg = requested;
      MPI_Allreduce(MPI_IN_PLACE, &seg, 1, MPI_UINT64_T, MPI_MAX, r->comm);
      seg = (seg + 4095) & ~std::uint64_t{4095};
      r->segment_size = seg;

      const bool force_mpi = opts.force_mpi_path ? *opts.force_mpi_path : detail::env_flag("SHOAL_FORCE_MPI");
      // One decision for the whole team: the shared path only if everyone is on one node and nobody forces MPI.
      int want_shared = (!force_mpi && r->node_size == r->size) ? 1 : 0;
      MPI_Allreduce(MPI_IN_PLACE, &want_shared, 1, MPI_INT, MPI_MIN, r->comm);
      r->path = want_shared ? rma_path::shared_memory : rma_path::mpi;

      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "same_size", "true");
      MPI_Info_set(info, "same_disp_unit", "true");
      int rc;
      if (r->path == rma_path::shared_memory) {
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
        rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(seg), 1, info, r->comm, &r->base, &r->win);
      } else {
        rc = MPI_Win_allocate(static_cast<MPI_Aint>(seg), 1, info, r->comm, &r->base, &r->win);
      }
      MPI_Info_free(&info);
      if (rc != MPI_SUCCESS) {
        detail::mpi_check(rc, ("allocating the symmetric heap of " + detail::format_size(seg) +
                               " per rank (lower SHOAL_HEAP_SIZE or options::heap_size)")
                                  .c_str());
      }
      if (r->path == rma_path::shared_memory) {
        r->peer_base.resize(static_cast<std::size_t>(r->size));
        for (int i = 0; i < r->size; ++i) {
          MPI_Aint sz;
          int du;
          void* p = nullptr;
          SHOAL_MPI(MPI_Win_shared_query(r->win, i, &sz, &du, &p));
          r->peer_base[static_cast<std::size_t>(i)] = static_cast<std::byte*>(p);
        }
      }
      SHOAL_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, r->win));
      r->heap.reset(seg);
    } catch (...) {
      delete r;
      throw;
    }
    detail::g_runtime = r;
    detail::g_finalized = false;
    detail::world_team_storage() = team(r->comm);
    detail::node_team_storage() = team(r->node_comm);
    for (auto* hook : detail::start_hooks()) hook();
    MPI_Barrier(r->comm);
  }
};

/// True between the construction and the destruction of the environment.
inline bool is_initialized() { return detail::g_runtime != nullptr; }

/// The RMA path of this run (fixed at start).
inline rma_path current_rma_path() { return detail::rt().path; }

}  // namespace shoal
