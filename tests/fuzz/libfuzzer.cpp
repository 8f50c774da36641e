// One libFuzzer binary per target of tests/fuzz/targets.hpp (SHOAL_FUZZ_TARGET names it): a finding or an
// undocumented exception escapes, terminates the process, and libFuzzer saves the input. Built with clang by
// -DSHOAL_BUILD_FUZZERS=ON (tests/fuzz.cmake, docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto* t = shoal::testing::fuzz::find_target(SHOAL_FUZZ_TARGET);
  t->run(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
