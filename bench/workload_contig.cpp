// Workload `contig` (BCL §8.2): Meraculous contig generation on a generated genome (error-free k-mers with repeats)
// — build through hash_map_buffer, traverse with promise::find — beside the per-core limit: one process doing the
// same build and walk with an absl::flat_hash_map. Reports seconds (lower is better). --size = genome bases.
//
// Reads to contigs: reads of the same genome (30x, 100 bases, 0.5% substitutions, both strands) in a FASTQ file,
// each rank reading its byte range (reads.hpp), the k-mers counted with the Bloom filter on their owners
// (count.hpp), extended and assembled; against one core reading the whole file, counting every k-mer occurrence into
// an absl::flat_hash_map (no Bloom filter, one pass, slots prefetched), extending and walking it (walk.hpp, the same
// walker). Shoal and the one core alternate 3 times; the rows are medians: the k-mer counting rate (occurrences per
// second, both passes), the end-to-end time (file to contigs), the same less reading the file, and the CPU seconds
// of the busiest rank against the one core's.
#include <absl/container/flat_hash_map.h>

#include <time.h>

#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "../apps/contig/assemble.hpp"
#include "../apps/contig/count.hpp"
#include "../apps/contig/reads.hpp"
#include "../apps/contig/report.hpp"
#include "bench.hpp"
#include "stats.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

void run_contig_reads(context& ctx, const std::string& genome);

// One core: the k-mers into an absl::flat_hash_map, walked by the same walker (many walks in flight, their next
// k-mers' slots prefetched together with absl's prefetch, then read).
std::vector<std::string> serial_contigs_of(std::size_t k, const std::vector<contig::kmer_entry>& entries) {
  absl::flat_hash_map<contig::kmer_code, contig::extensions> table;
  table.reserve(entries.size());
  for (const auto& e : entries) table.emplace(e.kmer, e.ext);
  contig::walker walk(k, [&](std::span<const contig::kmer_code> keys,
                             std::span<std::optional<contig::extensions>> out) {
    for (const auto& key : keys) table.prefetch(key);  // all slots on their way before the first is read
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto it = table.find(keys[i]);
      if (it != table.end()) out[i] = it->second;
    }
  });
  return walk.contigs_from(entries);
}

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
  std::vector<contig::kmer_entry> entries;
  entries.reserve(records.size());
  for (const auto& r : records) entries.push_back(contig::entry_of(r));
  std::vector<contig::kmer_entry> mine;
  for (std::size_t i = static_cast<std::size_t>(shoal::rank()); i < entries.size();
       i += static_cast<std::size_t>(shoal::size())) {
    mine.push_back(entries[i]);
  }
  ctx.progress("distributed assembly");
  const auto result = contig::assemble(k, mine);
  const auto contigs = shoal::allreduce(result.contigs.size(), shoal::op::sum{});

  double serial = 0;
  std::size_t serial_contigs = 0;
  if (shoal::rank() == 0) {
    const double t0 = shoal::bench::now();
    const auto walked = serial_contigs_of(k, entries);
    serial_contigs = walked.size();
    serial = shoal::bench::now() - t0;
  }
  serial = shoal::broadcast(serial);
  serial_contigs = shoal::broadcast(serial_contigs);
  if (serial_contigs != contigs) throw shoal::error("contig workload: distributed and serial contig counts differ");
  const std::string variant = std::to_string(records.size()) + " 31-mers, " + std::to_string(contigs) + " contigs";
  ctx.report({.operation = "contig total", .variant = variant, .value = result.insert_seconds + result.traverse_seconds,
              .unit = "s", .baseline = "per-core absl map", .baseline_value = serial,
              .direction = better::lower});
  ctx.report({.operation = "contig insert phase", .variant = "hash_map_buffer", .value = result.insert_seconds,
              .unit = "s", .baseline = "per-core absl map (all)", .baseline_value = serial,
              .direction = better::lower});
  ctx.report({.operation = "contig traversal", .variant = "promise::find", .value = result.traverse_seconds,
              .unit = "s", .baseline = "per-core absl map (all)", .baseline_value = serial,
              .direction = better::lower});
  run_contig_reads(ctx, genome);
}

// Writes the reads of the genome as FASTQ to `path` (30x, `length` bases, substitutions at `errors` per base, both
// strands; every rank draws the same reads) and returns how many.
std::size_t write_reads(const std::string& path, const std::string& genome, double coverage, std::size_t length,
                        double errors) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<double> unit(0, 1);
  const auto n = static_cast<std::size_t>(coverage * static_cast<double>(genome.size()) / static_cast<double>(length));
  std::ofstream out(path, std::ios::binary);
  const std::string quality(length, 'I');
  for (std::size_t i = 0; i < n; ++i) {
    std::string read = genome.substr(rng() % (genome.size() - length + 1), length);
    if (rng() % 2) read = contig::reverse_complement(read);
    for (auto& b : read) {
      if (unit(rng) < errors) b = "ACGT"[(contig::base_code(b) + 1 + rng() % 3) % 4];
    }
    out << '@' << i << '\n' << read << "\n+\n" << quality << '\n';
  }
  if (!out) throw shoal::error("contig workload: cannot write " + path);
  return n;
}

// One core: read the FASTQ file, count every occurrence into an absl::flat_hash_map (slots prefetched), extend,
// walk. Returns the number of contigs; sets the seconds of reading, of counting and of the whole.
std::size_t serial_reads_to_contigs(const std::string& path, std::size_t k, std::uint32_t min_count,
                                    double& read_seconds, double& count_seconds, double& total_seconds) {
  const double t_read = shoal::bench::now();
  const contig::read_fragments reads = contig::read_share({path}, k, 0, 1);
  const double t0 = shoal::bench::now();
  read_seconds = t0 - t_read;
  absl::flat_hash_map<contig::kmer_code, contig::kmer_tally> counts;
  // Each occurrence is counted `ahead` occurrences after its slot was prefetched (absl's prefetch): the count is a
  // cache miss per occurrence, and this overlaps them (CPU 0.29 -> 0.18 s on the bench's 4.2M occurrences).
  constexpr std::size_t ahead = 8;
  std::array<contig::kmer_sighting, ahead> ring;
  std::size_t seen = 0;
  for (std::size_t f = 0; f < reads.size(); ++f) {
    contig::for_each_kmer(reads[f], k, [&](const contig::kmer_sighting& s) {
      counts.prefetch(s.kmer);
      auto& slot = ring[seen++ % ahead];
      if (seen > ahead) counts[slot.kmer].add(slot);
      slot = s;
    });
  }
  for (std::size_t i = seen > ahead ? seen - ahead : 0; i < seen; ++i) counts[ring[i % ahead].kmer].add(ring[i % ahead]);
  count_seconds = shoal::bench::now() - t0;
  std::vector<contig::kmer_entry> solid;
  for (const auto& [code, tally] : counts) {
    if (tally.count < min_count) continue;
    solid.push_back({code, {contig::extension_of(tally.left, min_count), contig::extension_of(tally.right, min_count)}});
  }
  const auto contigs = serial_contigs_of(k, solid).size();
  total_seconds = shoal::bench::now() - t_read;
  return contigs;
}

// CPU seconds of this process (all threads).
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// Reads to contigs on every rank: its share of the FASTQ file read, the k-mers counted, extended and assembled.
// Returns the number of contigs; sets the seconds (slowest rank) of reading, of counting and of the whole, and the
// CPU seconds of the busiest rank.
std::size_t distributed_reads_to_contigs(const std::string& path, std::size_t k, std::uint32_t min_count,
                                         double& read_seconds, double& count_seconds, double& total_seconds,
                                         double& cpu_seconds) {
  shoal::barrier();
  const double t_read = shoal::bench::now();
  const double c0 = cpu_now();
  const auto mine = contig::read_share({path}, k, shoal::rank(), shoal::size());
  const auto occurrences = shoal::allreduce(contig::kmer_occurrences(mine, k), shoal::op::sum{});
  const double t0 = shoal::bench::now();
  read_seconds = shoal::allreduce(t0 - t_read, shoal::op::max{});
  std::vector<contig::kmer_entry> solid;
  {
    contig::kmer_counter counter(k, occurrences);
    counter.sight(mine);
    counter.tally(mine);
    count_seconds = shoal::allreduce(shoal::bench::now() - t0, shoal::op::max{});
    for (const auto& c : counter.solid(min_count)) solid.push_back(c.entry);
  }
  const auto result = contig::assemble(k, solid);
  cpu_seconds = shoal::allreduce(cpu_now() - c0, shoal::op::max{});
  total_seconds = shoal::allreduce(shoal::bench::now() - t_read, shoal::op::max{});
  return shoal::allreduce(result.contigs.size(), shoal::op::sum{});
}

void run_contig_reads(context& ctx, const std::string& genome) {
  const std::size_t k = 31;
  const std::uint32_t min_count = 4;
  constexpr int reps = 3;
  ctx.progress("writing reads");
  // Every rank writes the same file to a path of its own (no shared file system needed) and reads its byte range.
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shoal-bench-contig-" + std::to_string(getpid()) + ".fq")).string();
  const auto reads = write_reads(path, genome, 30, 100, 0.005);
  const std::uint64_t occurrences = reads * (100 - k + 1);

  // Alternated: shoal, then one core, `reps` times; the rows give the medians (the machine may be shared).
  std::vector<double> read, count, total, cpu, serial_read, serial_count, serial_total, serial_cpu;
  std::size_t contigs = 0;
  for (int rep = 0; rep < reps; ++rep) {
    ctx.progress("reads to contigs, run " + std::to_string(rep + 1) + " of " + std::to_string(reps));
    double r = 0, c = 0, t = 0, u = 0, sr = 0, sc = 0, st = 0, su = 0;
    contigs = distributed_reads_to_contigs(path, k, min_count, r, c, t, u);
    std::size_t serial_contigs = 0;
    if (shoal::rank() == 0) {
      const double c0 = cpu_now();
      serial_contigs = serial_reads_to_contigs(path, k, min_count, sr, sc, st);
      su = cpu_now() - c0;
    }
    serial_contigs = shoal::broadcast(serial_contigs);
    if (serial_contigs != contigs) throw shoal::error("contig workload: reads: distributed and serial contigs differ");
    read.push_back(r);
    count.push_back(c);
    total.push_back(t);
    cpu.push_back(u);
    serial_read.push_back(shoal::broadcast(sr));
    serial_count.push_back(shoal::broadcast(sc));
    serial_total.push_back(shoal::broadcast(st));
    serial_cpu.push_back(shoal::broadcast(su));
  }
  std::filesystem::remove(path);
  using shoal::bench::median;
  std::vector<double> in_memory, serial_in_memory;
  for (int rep = 0; rep < reps; ++rep) {
    in_memory.push_back(total[static_cast<std::size_t>(rep)] - read[static_cast<std::size_t>(rep)]);
    serial_in_memory.push_back(serial_total[static_cast<std::size_t>(rep)] - serial_read[static_cast<std::size_t>(rep)]);
  }
  const auto rate = [&](double s) { return static_cast<double>(occurrences) / s / 1e6; };
  const std::string runs = "median of " + std::to_string(reps);
  ctx.report({.operation = "contig reads: k-mer counting", .variant = "Bloom + owner queues, 2 passes",
              .value = rate(median(count)), .unit = "M k-mers/s", .baseline = "one core, absl map",
              .baseline_value = rate(median(serial_count)), .direction = better::higher});
  ctx.report({.operation = "contig reads: end to end",
              .variant = "FASTQ file to contigs, " + std::to_string(occurrences) + " 31-mer occurrences (30x), " +
                         std::to_string(contigs) + " contigs, " + runs,
              .value = median(total), .unit = "s", .baseline = "one core, absl map",
              .baseline_value = median(serial_total), .direction = better::lower});
  ctx.report({.operation = "contig reads: from reads in memory", .variant = "end to end less reading the file, " + runs,
              .value = median(in_memory), .unit = "s", .baseline = "one core, absl map",
              .baseline_value = median(serial_in_memory), .direction = better::lower});
  // CPU seconds (busiest rank vs the one core, end to end): what the wall ratio approaches when every rank has a
  // core of its own; on a shared machine the wall times depend on each process's share of the CPU, this does not.
  ctx.report({.operation = "contig reads: CPU, busiest rank", .variant = "process CPU seconds, end to end, " + runs,
              .value = median(cpu), .unit = "s", .baseline = "one core, absl map",
              .baseline_value = median(serial_cpu), .direction = better::lower});
}

const shoal::bench::registrar reg("contig", "BCL §8.2: Meraculous contig generation vs the per-core limit",
                                  run_contig, /*on_both_paths=*/true);

}  // namespace
