// shoal/core/error.hpp — the exceptions shoal raises.
//
// Every error shoal throws derives from shoal::error. Messages name the setting that changes the outcome
// (an environment variable, a constructor argument), so a user can act on them without reading shoal's code.
// Expected outcomes (a key that is absent, an empty queue) are not errors: they come back as std::optional or a
// result type.
#pragma once

#include <stdexcept>
#include <string>

namespace shoal {

/// Base of every exception shoal throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The API was used in a way it does not allow (no environment, a bad argument, a collective mismatch).
class usage_error : public error {
 public:
  using error::error;
};

/// The symmetric heap of a rank has no block large enough for an allocation.
class heap_exhausted : public error {
 public:
  using error::error;
};

/// A container has no room left for an element (a full hash table, a full queue).
class container_full : public error {
 public:
  using error::error;
};

/// An MPI call returned an error code.
class mpi_error : public error {
 public:
  using error::error;
};

/// A handler run on another rank threw; the message names the handler and both ranks.
class remote_error : public error {
 public:
  using error::error;
};

}  // namespace shoal
