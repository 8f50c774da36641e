// Must not compile: an argument type that cannot travel (see tests/am.cmake).
#include <memory>

#include "shoal/am.hpp"

void send_pointer_owner(int peer) {
  shoal::post(peer, [](std::unique_ptr<int> p) { (void)p; }, std::make_unique<int>(1));
}
