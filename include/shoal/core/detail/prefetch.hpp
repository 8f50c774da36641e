// shoal/core/detail/prefetch.hpp — cache hints for memory this process can read (its own, or a peer's mapped one).
#pragma once

#include <cstddef>

namespace shoal::detail {

/// Starts loading every cache line of the `bytes` bytes at `at` (the last one too: `at` need not be line-aligned), so
/// that a copy or scan that follows waits for about one miss rather than one per line.
inline void prefetch_bytes(const void* at, std::size_t bytes) {
  if (bytes == 0) return;
  const auto* p = static_cast<const char*>(at);
  for (std::size_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
  __builtin_prefetch(p + bytes - 1);
}

}  // namespace shoal::detail
