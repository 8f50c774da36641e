// shoal/containers/detail/option_check.hpp — the one way a container validates its options struct.
//
// Every container's options struct (shoal::<container>_options, in the container's public header) is checked field
// by field at construction; a field outside its range is a usage_error that names the field as the user writes it,
// the accepted range and the value given, e.g.
//   shoal::relaxed_queue_options::capacity_per_rank must be in [1, 2^31) (got 0)
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "shoal/core/error.hpp"

namespace shoal::detail {

/// Unless `ok`, throws usage_error("shoal::<field> must be <accepted> (got <got>)"); `field` is
/// "<container>_options::<name>"; `got` is a number, an enum (printed as its number) or text.
template <class V>
void check_option(bool ok, std::string_view field, std::string_view accepted, const V& got) {
  if (ok) [[likely]] return;
  std::string text;
  if constexpr (std::is_enum_v<V>) text = std::to_string(static_cast<std::underlying_type_t<V>>(got));
  else if constexpr (std::is_arithmetic_v<V>) text = std::to_string(got);
  else text = std::string(got);
  throw usage_error("shoal::" + std::string(field) + " must be " + std::string(accepted) + " (got " + text + ")");
}

}  // namespace shoal::detail
