// shoal/containers/detail/option_check.hpp — the one way a container validates its options struct.
//
// Every container's options struct (shoal::<container>_options, in the container's public header) is checked field
// by field at construction; a field outside its range is a usage_error that names the field as the user writes it,
// the accepted range and the value given, e.g.
//   shoal::relaxed_queue_options::capacity_per_rank must be in [1, 2^31) (got 0)
#pragma once

#include <string>
#include <type_traits>

#include "shoal/core/error.hpp"

namespace shoal::detail {

/// Unless `ok`, throws usage_error("shoal::<field> must be <accepted> (got <got>)"); `field` is
/// "<container>_options::<name>".
template <class V>
  requires std::is_arithmetic_v<V>
void check_option(bool ok, const char* field, const char* accepted, V got) {
  if (ok) [[likely]] return;
  throw usage_error(std::string("shoal::") + field + " must be " + accepted + " (got " + std::to_string(got) + ")");
}

}  // namespace shoal::detail
