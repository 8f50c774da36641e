// Counts the ranks with one remote fetch_add each, and checks the total.
#include <cstdio>
#include <shoal/shoal.hpp>

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  auto counters = shoal::allocate_collective<long>(1);
  if (shoal::rank() == 0) *counters[0].local() = 0;
  shoal::barrier();
  shoal::fetch_add(counters[0], 1L);
  shoal::barrier();
  const long total = shoal::atomic_load(counters[0]);
  if (shoal::rank() == 0) std::printf("shoal consumer: %ld of %d ranks counted\n", total, shoal::size());
  return total == shoal::size() ? 0 : 1;
}
