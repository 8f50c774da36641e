// The libFuzzer binary of every target of tests/fuzz/targets.hpp; SHOAL_FUZZ_TARGET names the one to run, e.g.
//   SHOAL_FUZZ_TARGET=reads build/fuzz/tests/shoal-fuzz -max_total_time=600 /tmp/reads-corpus tests/fuzz/corpus/reads
// A finding or an undocumented exception escapes, terminates the process, and libFuzzer saves the input. Built with
// clang by -DSHOAL_BUILD_FUZZERS=ON (tests/fuzz.cmake, docs/testing.md).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/targets.hpp"

namespace {
const shoal::testing::fuzz::target* chosen = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("SHOAL_FUZZ_TARGET");
  chosen = name ? shoal::testing::fuzz::find_target(name) : nullptr;
  if (chosen == nullptr) {
    std::fprintf(stderr, "shoal-fuzz: set SHOAL_FUZZ_TARGET to one of:");
    for (const auto& t : shoal::testing::fuzz::targets()) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  chosen->run(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
