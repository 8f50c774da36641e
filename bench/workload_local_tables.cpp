// Workload `local_tables`: the local tables of dist_map while one table grows to --size keys —
// the largest single-insert latency and the insert rate of Litwin linear hashing beside the doubling tables
// (abseil's flat_hash_map behind shoal::local::flat_table, and std::unordered_map). Rank 0 measures; the other ranks
// wait, so the numbers are those of one core. The default, 10^6 keys, keeps the default bench run short (2 s);
// the 10^7 keys take about 18 s:  mpirun -np 1 shoal-bench --workload local_tables --size 10000000
#include <chrono>
#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "bench.hpp"
#include "shoal/local/flat_table.hpp"
#include "shoal/local/linear_hash_table.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

struct growth {
  double max_latency_us = 0;
  double inserts_per_second = 0;
};

// Inserts every key, timing each insert alone; returns the slowest and the overall rate.
template <class Table>
growth grow(const std::vector<std::uint64_t>& keys) {
  using clock = std::chrono::steady_clock;
  Table table;
  clock::duration worst{0};
  const auto start = clock::now();
  auto before = start;
  for (std::uint64_t k : keys) {
    table.try_emplace(k, k);
    const auto after = clock::now();
    if (after - before > worst) worst = after - before;
    before = after;
  }
  const double total = std::chrono::duration<double>(before - start).count();
  return {std::chrono::duration<double, std::micro>(worst).count(), static_cast<double>(keys.size()) / total};
}

void run_local_tables(context& ctx) {
  const std::size_t n = ctx.size_or(1'000'000);
  growth linear, flat, node;
  if (shoal::rank() == 0) {
    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = rng();
    ctx.progress("linear hashing");
    linear = grow<shoal::local::linear_hash_table<std::uint64_t, std::uint64_t>>(keys);
    ctx.progress("abseil flat_hash_map");
    flat = grow<shoal::local::flat_table<std::uint64_t, std::uint64_t>>(keys);
    ctx.progress("std::unordered_map");
    node = grow<std::unordered_map<std::uint64_t, std::uint64_t>>(keys);
  }
  shoal::barrier();
  const std::string variant = std::to_string(n) + " keys";
  ctx.report({.operation = "max insert latency linear", .variant = variant, .value = linear.max_latency_us,
              .unit = "us", .baseline = "absl flat (doubling)", .baseline_value = flat.max_latency_us,
              .direction = better::lower});
  ctx.report({.operation = "max insert latency linear", .variant = variant, .value = linear.max_latency_us,
              .unit = "us", .baseline = "std::unordered_map", .baseline_value = node.max_latency_us,
              .direction = better::lower});
  ctx.report({.operation = "insert rate linear", .variant = variant, .value = linear.inserts_per_second / 1e6,
              .unit = "Mops/s", .baseline = "absl flat (doubling)", .baseline_value = flat.inserts_per_second / 1e6});
  ctx.report({.operation = "insert rate linear", .variant = variant, .value = linear.inserts_per_second / 1e6,
              .unit = "Mops/s", .baseline = "std::unordered_map", .baseline_value = node.inserts_per_second / 1e6});
}

const shoal::bench::registrar reg("local_tables",
                                  "max single-insert latency and rate: linear hashing vs doubling tables (one core)",
                                  run_local_tables);

}  // namespace
