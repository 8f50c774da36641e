// shoal-isx — the ISx bucket sort with shoal's fast_queue, beside the MPI_Alltoallv reference in the same run.
//
//   mpirun -np 2 shoal-isx                               2^22 keys per rank, messages of 1024 keys
//   mpirun -np 4 shoal-isx --keys-per-rank 1M --message-size 4096 --seed 7
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "isx.hpp"
#include "shoal/core/detail/size_parse.hpp"

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"shoal-isx: ISx bucket sort with shoal::fast_queue vs MPI_Alltoallv"};
  isx::parameters p;
  std::string keys_text = "4M";
  app.add_option("-n,--keys-per-rank", keys_text, "keys generated per rank (e.g. 4194304, 4M)");
  app.add_option("-m,--message-size", p.message_size, "keys per asynchronous push")->check(CLI::PositiveNumber);
  app.add_option("--max-key", p.max_key, "keys are uniform in [0, max-key); default keys-per-rank * ranks");
  app.add_option("--seed", p.seed, "random seed");
  app.add_option("--queue-capacity", p.queue_capacity,
                 "slots of each rank's queue; default: expected keys per rank + 8 standard deviations + one message");
  try {
    app.parse(argc, argv);
    p.keys_per_rank = shoal::detail::parse_size(keys_text, "--keys-per-rank");
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  } catch (const shoal::error& e) {
    if (shoal::rank() == 0) fmt::print(stderr, "shoal-isx: {}\n", e.what());
    return 2;
  }
  try {
    const isx::sorter sorter(p);
    const auto r = sorter.run();
    if (!r.problem.empty()) fmt::print(stderr, "shoal-isx: rank {}: verification failed: {}\n", shoal::rank(), r.problem);
    if (shoal::rank() == 0) {
      fmt::print("ISx: {} ranks, {} keys per rank ({} in total), keys in [0, {}), message size {}, seed {}\n",
                 shoal::size(), p.keys_per_rank, r.total_keys, sorter.max_key(), p.message_size, p.seed);
      fmt::print("{:<32} {:>12} {:>12} {:>12}\n", "method", "exchange s", "sort s", "total s");
      fmt::print("{:<32} {:>12.6f} {:>12.6f} {:>12.6f}\n", "shoal fast_queue (async pushes)", r.shoal.exchange,
                 r.shoal.sort, r.shoal.total());
      fmt::print("{:<32} {:>12.6f} {:>12.6f} {:>12.6f}\n", "reference MPI_Alltoallv", r.reference.exchange,
                 r.reference.sort, r.reference.total());
      fmt::print("{:<32} {:>12.3f} {:>12.3f} {:>12.3f}\n", "ratio shoal / reference", r.shoal.exchange / r.reference.exchange,
                 r.shoal.sort / r.reference.sort, r.shoal.total() / r.reference.total());
      fmt::print("verification: {}\n", r.verified ? "passed (sorted, in range, count and sum, equal to reference)"
                                                  : "FAILED");
    }
    return r.verified ? 0 : 1;
  } catch (const shoal::error& e) {
    fmt::print(stderr, "shoal-isx: rank {}: {}\n", shoal::rank(), e.what());
    return 1;
  }
}
