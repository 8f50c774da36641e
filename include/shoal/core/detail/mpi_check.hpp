// shoal/core/detail/mpi_check.hpp — turn MPI return codes into shoal::mpi_error.
#pragma once

#include <mpi.h>

#include <string>

#include "shoal/core/error.hpp"

namespace shoal::detail {

inline void mpi_check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  throw mpi_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace shoal::detail

#define SHOAL_MPI(call) ::shoal::detail::mpi_check((call), #call)
