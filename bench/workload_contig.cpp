// Workload `contig` (BCL §8.2): Meraculous contig generation on a generated genome (error-free k-mers with repeats)
// — build through hash_map_buffer, traverse with promise::find — beside the per-core limit: one process doing the
// same build and walk with an absl::flat_hash_map. Reports seconds (lower is better). --size = genome bases.
#include <absl/container/flat_hash_map.h>

#include <random>
#include <string>
#include <vector>

#include "../apps/contig/assemble.hpp"
#include "bench.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

void run_contig(context& ctx) {
  const auto length = ctx.size_or(200000);
  const std::size_t k = 31;
  std::mt19937_64 rng(2024);
  std::string genome(length, 'A');
  for (auto& b : genome) b = "ACGT"[rng() % 4];
  for (std::size_t r = 0; r < length / 2000; ++r) {  // repeats split the genome into unitigs
    const auto from = rng() % (length - 200), to = rng() % (length - 200);
    genome.replace(to, 200, genome.substr(from, 200));
  }
  ctx.progress("generating k-mers");
  const auto records = contig::genome_kmers(genome, k);
  std::vector<contig::ufx_record> mine;
  for (std::size_t i = static_cast<std::size_t>(shoal::rank()); i < records.size();
       i += static_cast<std::size_t>(shoal::size())) {
    mine.push_back(records[i]);
  }
  ctx.progress("distributed assembly");
  const auto result = contig::assemble(mine);
  const auto contigs = shoal::allreduce(result.contigs.size(), shoal::op::sum{});

  double serial = 0;
  std::size_t serial_contigs = 0;
  if (shoal::rank() == 0) {
    const double t0 = shoal::bench::now();
    absl::flat_hash_map<contig::packed_kmer, contig::extensions> table;
    for (const auto& r : records) table.emplace(contig::pack(r.kmer), r.ext);
    contig::walker walk([&](const contig::packed_kmer& p) -> std::optional<contig::extensions> {
      auto it = table.find(p);
      if (it == table.end()) return std::nullopt;
      return it->second;
    });
    for (const auto& r : records) serial_contigs += walk.contigs_from(r.kmer, r.ext).size();
    serial = shoal::bench::now() - t0;
  }
  serial = shoal::broadcast(serial);
  serial_contigs = shoal::broadcast(serial_contigs);
  if (serial_contigs != contigs) throw shoal::error("contig workload: distributed and serial contig counts differ");
  const std::string variant = std::to_string(records.size()) + " 31-mers, " + std::to_string(contigs) + " contigs";
  ctx.report("contig total", variant, result.insert_seconds + result.traverse_seconds, "s", "per-core absl map",
             serial, better::lower);
  ctx.report("contig insert phase", "hash_map_buffer", result.insert_seconds, "s", "per-core absl map (all)", serial,
             better::lower);
  ctx.report("contig traversal", "promise::find", result.traverse_seconds, "s", "per-core absl map (all)", serial,
             better::lower);
}

const shoal::bench::registrar reg("contig", "BCL §8.2: Meraculous contig generation vs the per-core limit",
                                  run_contig, /*on_both_paths=*/true);

}  // namespace
