// A rank that dies mid-run must stop the job, not hang it (issue 20, "Faults"). The last rank dies — by std::abort or
// by _exit(3), as named by argv[1] — in the middle of a collective phase: every rank has sent half of its dist_map
// inserts to every other rank, and the others go on to wait for rpc replies from the dead rank and then for
// am::barrier, which can never complete. The test (tests/faults.cmake, through tests/expect_failure.sh) passes when
// the job ends with a non-zero status within its time limit: MPI's launcher noticing the death and ending the others
// is the accepted outcome; a hang is the failure.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shoal/am.hpp"
#include "shoal/containers/dist_map.hpp"
#include "shoal/core.hpp"

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  const bool by_abort = argc > 1 && std::strcmp(argv[1], "abort") == 0;
  const int victim = shoal::size() - 1;
  shoal::dist_map<long, long> m;
  shoal::barrier();
  for (long i = 0; i < 2000; ++i) {
    if (i == 1000 && shoal::rank() == victim) {
      std::fprintf(stderr, "rank %d: dying on purpose (%s) in the middle of the insert phase\n", victim,
                   by_abort ? "std::abort" : "_exit(3)");
      if (by_abort) std::abort();
      _exit(3);
    }
    m.async_insert(i * shoal::size() + shoal::rank(), i);
  }
  // Waits that need the dead rank: an rpc answered by it, then quiescence of every rank.
  for (int i = 0; i < 100; ++i) (void)shoal::rpc(victim, [](int x) { return x; }, i).get();
  m.flush();
  shoal::am::barrier();
  std::fprintf(stderr, "rank %d: the job went on without the dead rank\n", shoal::rank());
  env.finalize();
  return 0;
}
