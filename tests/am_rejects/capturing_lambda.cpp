// Must not compile: a handler that captures state (see tests/am.cmake).
#include "shoal/am.hpp"

void send_with_capture(int peer) {
  int captured = 42;
  shoal::post(peer, [captured](int x) { (void)(x + captured); }, 1);
}
