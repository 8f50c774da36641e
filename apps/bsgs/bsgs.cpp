// bsgs — parallel baby-step giant-step for A^x ≡ B (mod C), C prime below 2^44, on a shoal::dist_map.
//
//   mpirun -np 4 bsgs                          C = largest prime below 2^36, random A and secret x, B = A^x
//   mpirun -np 4 bsgs --bits 44                the paper's scale: 2^22 baby steps
//   mpirun -np 2 bsgs --prime 1000003 --base 5 --target 123456 --table linear
// Prints the solution, its verification by modular exponentiation, the time of each phase and table operations per
// second. Exit status 1 if the answer does not verify (or no x exists), 2 for bad arguments.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <random>

#include "bsgs/parallel_bsgs.hpp"
#include "shoal/core.hpp"

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"bsgs: parallel baby-step giant-step on a shoal::dist_map"};
  int bits = 36;
  bsgs::u64 prime = 0, base = 0, target = 0, seed = 1;
  std::string table = "flat";
  app.add_option("--bits", bits, "C = the largest prime below 2^bits (ignored with --prime)")->check(CLI::Range(3, 44));
  app.add_option("--prime", prime, "the prime modulus C (< 2^44)");
  app.add_option("--base", base, "A (default: random)");
  app.add_option("--target", target, "B (default: A^x for a random secret x)");
  app.add_option("--seed", seed, "random seed for A and x");
  app.add_option("--table", table, "local table: flat or linear")->check(CLI::IsMember({"flat", "linear"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }
  const bsgs::u64 c = prime ? prime : bsgs::largest_prime_below_power_of_two(bits);
  if (!bsgs::is_prime(c) || c >= (bsgs::u64{1} << 44)) {
    if (shoal::rank() == 0) fmt::print(stderr, "bsgs: C = {} must be a prime below 2^44\n", c);
    return 2;
  }
  std::mt19937_64 rng(seed);
  const bsgs::u64 a = base ? base % c : 2 + rng() % (c - 3);
  const bsgs::u64 secret = rng() % (c - 1);
  const bsgs::u64 b = target ? target % c : bsgs::pow_mod(a, secret, c);
  if (shoal::rank() == 0) {
    fmt::print("bsgs: solving {}^x = {} (mod {}) on {} ranks, m = {} baby steps, {} table\n", a, b, c, shoal::size(),
               bsgs::step_count(c), table);
  }
  const auto r = table == "linear" ? bsgs::solve_parallel<shoal::local::linear>(a, b, c)
                                   : bsgs::solve_parallel<shoal::local::flat>(a, b, c);
  const double seconds = r.baby_seconds + r.giant_seconds;
  bool ok = r.x.has_value() && bsgs::verify(a, b, c, *r.x);
  if (shoal::rank() == 0) {
    if (r.x) fmt::print("x = {}  verified: {}\n", *r.x, ok ? "yes (A^x mod C == B)" : "NO");
    else fmt::print("no x with {}^x = {} (mod {})\n", a, b, c);
    fmt::print("time {:.3f} s (baby steps {:.3f} s, giant steps {:.3f} s), {} table operations, {:.2f} M ops/s\n",
               seconds, r.baby_seconds, r.giant_seconds, r.operations,
               static_cast<double>(r.operations) / seconds / 1e6);
  }
  return ok ? 0 : 1;
}
