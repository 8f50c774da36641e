// shoal/core/detail/mpi_traps.hpp — known MPI defects that shoal cannot work around, found at start and reported
// with what to change (docs/core.md, "Known traps"). shoal never changes the process's environment to avoid them.
#pragma once

#include <mpi.h>

#include <string>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/error.hpp"

namespace shoal::detail {

/// The name of the current value of an enumerated MPI_T control variable (an Open MPI MCA parameter), or "" when MPI
/// does not have it (e.g. its component is not loaded in this run).
inline std::string mpi_t_enum_setting(const char* variable) {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return "";
  std::string result;
  int index = 0;
  if (MPI_T_cvar_get_index(variable, &index) == MPI_SUCCESS) {
    char name[256], desc[1024];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    MPI_T_cvar_handle handle;
    int count = 0;
    if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind, &scope) ==
            MPI_SUCCESS &&
        type == MPI_INT && enumtype != MPI_T_ENUM_NULL &&
        MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) == MPI_SUCCESS) {
      int value = 0;
      if (count == 1 && MPI_T_cvar_read(handle, &value) == MPI_SUCCESS) {
        int items = 0;
        char enum_name[256];
        int enum_len = sizeof enum_name;
        if (MPI_T_enum_get_info(enumtype, &items, enum_name, &enum_len) == MPI_SUCCESS) {
          for (int i = 0; i < items; ++i) {
            int item_value = 0;
            char item[256];
            int item_len = sizeof item;
            if (MPI_T_enum_get_item(enumtype, i, &item_value, item, &item_len) == MPI_SUCCESS && item_value == value) {
              result = item;
            }
          }
        }
      }
      SHOAL_MPI_CLEANUP(MPI_T_cvar_handle_free(&handle));
    }
  }
  SHOAL_MPI_CLEANUP(MPI_T_finalize());
  return result;
}

/// Collective over `comm`. Throws usage_error, on every rank, when this run would issue MPI atomics under a known MPI
/// defect: Open MPI 4.1's vader transport crashes (SIGSEGV in MPI_Win_flush) after 64-bit MPI_Fetch_and_op /
/// MPI_Compare_and_swap while its CMA single-copy mechanism is on.
inline void check_mpi_atomics_usable([[maybe_unused]] MPI_Comm comm) {
#if defined(OPEN_MPI) && defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION == 4
  int cma = mpi_t_enum_setting("btl_vader_single_copy_mechanism") == "cma" ? 1 : 0;
  SHOAL_MPI(MPI_Allreduce(MPI_IN_PLACE, &cma, 1, MPI_INT, MPI_MAX, comm));
  if (cma != 0) {
    throw usage_error(
        "shoal: this run uses MPI atomics (SHOAL_FORCE_MPI / options::force_mpi_path), and Open MPI 4.1 crashes in "
        "MPI_Win_flush after 64-bit MPI atomics while its vader transport's CMA single-copy mechanism is on; set "
        "OMPI_MCA_btl_vader_single_copy_mechanism=none in the job's environment (or mpirun --mca "
        "btl_vader_single_copy_mechanism none), or leave SHOAL_FORCE_MPI unset");
  }
#endif
}

}  // namespace shoal::detail
