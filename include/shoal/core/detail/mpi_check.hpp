// shoal/core/detail/mpi_check.hpp — turn MPI return codes into shoal::mpi_error.
//
// shoal sets MPI_ERRORS_RETURN on every communicator and window it makes, so an MPI failure comes back as a code;
// every call is wrapped: SHOAL_MPI(call) throws mpi_error with the call and MPI's error string, and
// SHOAL_MPI_CLEANUP(call), for destructors and the end of the environment, which must not throw, prints the same text
// to stderr and goes on freeing the rest.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

#include "shoal/core/error.hpp"

namespace shoal::detail {

inline std::string mpi_error_text(int code, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  std::string s = std::string(call) + " failed: ";
  if (len > 0) return s + std::string(text, static_cast<std::size_t>(len));
  return s + "MPI error code " + std::to_string(code);
}

/// The error of a failed MPI call (out of line, so that every check at a call site is one compare).
[[noreturn, gnu::cold, gnu::noinline]] inline void mpi_fail(int code, const char* call) {
  throw mpi_error(mpi_error_text(code, call));
}

[[gnu::always_inline]] inline void mpi_check(int code, const char* call) {
  if (code != MPI_SUCCESS) [[unlikely]] mpi_fail(code, call);
}

inline void mpi_check_cleanup(int code, const char* call) noexcept {
  if (code == MPI_SUCCESS) return;
  try {
    std::fprintf(stderr, "shoal: %s (while freeing; continuing)\n", mpi_error_text(code, call).c_str());
  } catch (...) {
  }
}

}  // namespace shoal::detail

#define SHOAL_MPI(call) ::shoal::detail::mpi_check((call), #call)
#define SHOAL_MPI_CLEANUP(call) ::shoal::detail::mpi_check_cleanup((call), #call)
