// shoal/core/detail/mpi_type.hpp — the MPI datatype of an integer type used in atomics and reductions.
#pragma once

#include <mpi.h>

#include <concepts>
#include <cstdint>
#include <type_traits>

namespace shoal {

/// Integer types that remote atomics accept: 32- and 64-bit, signed or unsigned.
template <class T>
concept atomic_integer = std::integral<T> && (sizeof(T) == 4 || sizeof(T) == 8) && !std::same_as<T, bool>;

}  // namespace shoal

namespace shoal::detail {

template <class T>
MPI_Datatype mpi_type() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, long double>) return MPI_LONG_DOUBLE;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 1) return MPI_INT8_T;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 1) return MPI_UINT8_T;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 2) return MPI_INT16_T;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 2) return MPI_UINT16_T;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 4) return MPI_INT32_T;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 4) return MPI_UINT32_T;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U> && sizeof(U) == 8) return MPI_INT64_T;
  else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U> && sizeof(U) == 8) return MPI_UINT64_T;
  else static_assert(sizeof(U) == 0, "shoal: no built-in MPI datatype for this type");
}

/// True when T has a built-in MPI datatype (arithmetic types).
template <class T>
inline constexpr bool has_mpi_type = std::is_arithmetic_v<std::remove_cv_t<T>> && !std::is_same_v<std::remove_cv_t<T>, bool>;

}  // namespace shoal::detail
