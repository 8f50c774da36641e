// Must not compile: a span for a handler that takes the span itself — its bytes are an address on the sending rank
// (see tests/am.cmake; a span for a std::vector parameter travels as that vector).
#include <span>

#include "shoal/am.hpp"

void send_view(int peer, std::span<const int> values) {
  shoal::post(peer, [](std::span<const int> s) { (void)s; }, values);
}
