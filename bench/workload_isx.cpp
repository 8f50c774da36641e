// Workload `isx`: the ISx bucket sort (apps/isx) — exchange, sort and total time of shoal's fast_queue version
// beside the MPI_Alltoallv reference, both in the same run on the same keys. --size sets the keys per rank
// (default 2^22, as in BCL's figure on this machine). Run once per RMA path.
#include <algorithm>
#include <vector>

#include "bench.hpp"
#include "isx.hpp"

namespace {

using shoal::bench::better;

void run_isx(shoal::bench::context& ctx) {
  isx::parameters p;
  p.keys_per_rank = ctx.size_or(std::size_t{1} << 22);
  const isx::sorter sorter(p);
  std::vector<isx::outcome> runs;
  for (int rep = 0; rep < 3; ++rep) {
    ctx.progress("run " + std::to_string(rep + 1) + " of 3");
    runs.push_back(sorter.run());
    if (!runs.back().verified) throw shoal::error("isx: verification failed: " + runs.back().problem);
  }
  auto median = [&](auto field) {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(field(r));
    return shoal::bench::median(std::move(v));
  };
  const std::string variant = std::to_string(p.keys_per_rank) + " keys/rank, msg " + std::to_string(p.message_size);
  ctx.report({.operation = "ISx exchange", .variant = variant,
              .value = median([](const auto& r) { return r.shoal.exchange; }), .unit = "s", .baseline = "MPI_Alltoallv",
              .baseline_value = median([](const auto& r) { return r.reference.exchange; }),
              .direction = better::lower});
  ctx.report({.operation = "ISx local sort", .variant = variant,
              .value = median([](const auto& r) { return r.shoal.sort; }), .unit = "s", .baseline = "MPI_Alltoallv",
              .baseline_value = median([](const auto& r) { return r.reference.sort; }), .direction = better::lower});
  ctx.report({.operation = "ISx total", .variant = variant,
              .value = median([](const auto& r) { return r.shoal.total(); }), .unit = "s", .baseline = "MPI_Alltoallv",
              .baseline_value = median([](const auto& r) { return r.reference.total(); }), .direction = better::lower});
}

const shoal::bench::registrar reg("isx", "ISx bucket sort: fast_queue async pushes vs MPI_Alltoallv", run_isx,
                                  /*on_both_paths=*/true);

}  // namespace
