// shoal-contig — Meraculous contig generation on shoal (BCL §8.2), from reads or from a UFX k-mer file.
//
//   mpirun -np 4 shoal-contig --reads reads_1.fq.gz reads_2.fq.gz --k 31 --min-count 2 --out contigs.fa
//   mpirun -np 4 shoal-contig data/contig_small.ufx --out contigs.fa --expected data/contig_small.expected.fa
//
// Reads mode: every rank reads its share of the reads (reads.hpp), the canonical k-mers are counted on their owners
// with a Bloom filter keeping once-seen k-mers out (count.hpp), the solid k-mers get their extensions, and the
// contigs are assembled from them as in UFX mode (assemble.hpp). UFX mode: every rank reads its byte range of the
// k-mer file. Either way rank 0 writes the contigs as FASTA (sorted, each in its lexicographically smaller
// orientation) and prints a summary; --expected, --genome and --check verify them (exit 1 on a failure).
#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "assemble.hpp"
#include "count.hpp"
#include "fasta.hpp"
#include "reads.hpp"
#include "report.hpp"
#include "shoal/core.hpp"
#include "ufx.hpp"
#include "validate.hpp"

namespace {

constexpr const char* program = "shoal-contig";

struct options {
  std::string ufx_input;
  std::vector<std::string> reads;
  std::size_t k = 31;
  std::uint32_t min_count = 2;
  std::string output, ufx_output, expected, genome;
  double min_genome_coverage = 0;
  bool check = false;
  std::size_t message_bytes = std::size_t{64} << 10;
  contig::kmer_counter_options counter;
};

/// What the run produced, on rank 0.
struct result {
  std::vector<std::string> contigs;  // sorted, distinct
  std::size_t k = 0;
};

std::vector<std::string> sorted_distinct(std::vector<std::string> contigs, std::size_t& duplicates) {
  std::sort(contigs.begin(), contigs.end());
  const auto found = contigs.size();
  contigs.erase(std::unique(contigs.begin(), contigs.end()), contigs.end());
  duplicates = found - contigs.size();
  return contigs;
}

// Reads mode: reads -> counted k-mers -> extensions -> contigs, with the summary.
result run_reads(const options& opt) {
  contig::phase_clock clock(program);
  contig::read_fragments fragments;
  std::string read_error;
  clock.run("read", [&] {
    try {
      fragments = contig::read_share(opt.reads, opt.k, shoal::rank(), shoal::size());
    } catch (const contig::reads_error& e) {
      read_error = e.what();
    }
  });
  if (shoal::allreduce(read_error.empty() ? 0 : 1, shoal::op::max{}) != 0) {
    if (!read_error.empty()) std::fprintf(stderr, "%s: %s\n", program, read_error.c_str());
    throw contig::reads_error("");  // every rank stops; the failing ones said why
  }
  const auto occurrences = shoal::allreduce(contig::kmer_occurrences(fragments, opt.k), shoal::op::sum{});

  std::vector<contig::kmer_entry> solid;
  std::vector<std::string> ufx_lines;
  std::uint64_t first_sightings = 0, table_entries = 0, bloom_bytes = 0, table_bytes = 0, exchange_bytes = 0;
  {
    contig::kmer_counter counter(opt.k, occurrences, opt.counter);
    clock.run("count pass 1 (Bloom filter)", [&] { counter.sight(fragments); });
    clock.run("count pass 2 (tallies)", [&] { counter.tally(fragments); });
    clock.run("extensions", [&] {
      for (const auto& c : counter.solid(opt.min_count)) {
        if (!opt.ufx_output.empty()) ufx_lines.push_back(c.ufx_line(opt.k));
        solid.push_back(c.entry);
      }
    });
    first_sightings = counter.first_sightings();
    table_entries = counter.table_size();
    bloom_bytes = counter.bloom_bytes();
    table_bytes = counter.table_bytes();
    exchange_bytes = counter.exchange_bytes();
  }
  if (!opt.ufx_output.empty()) {
    auto lines = contig::gather_strings(ufx_lines);
    if (shoal::rank() == 0) {
      std::sort(lines.begin(), lines.end());
      std::ofstream out(opt.ufx_output);
      for (const auto& l : lines) out << l << '\n';
      if (!out) throw std::runtime_error("cannot write " + opt.ufx_output);
    }
  }

  shoal::hash_map_buffer_options buffer_opts;
  buffer_opts.message_bytes = opt.message_bytes;
  const auto assembled =
      contig::assemble(opt.k, solid, buffer_opts, [&](const char* phase) { clock.announce(phase); });
  clock.add("k-mer table", assembled.insert_seconds);
  clock.add("walk", assembled.traverse_seconds);
  std::size_t duplicates = 0;
  result out{sorted_distinct(contig::gather_strings(assembled.contigs), duplicates), opt.k};

  using shoal::op::sum;
  const auto reads = shoal::allreduce(fragments.reads, sum{});
  const auto bases = shoal::allreduce(fragments.read_bases, sum{});
  const auto distinct = shoal::allreduce(first_sightings, sum{});
  const auto solid_count = shoal::allreduce(static_cast<std::uint64_t>(solid.size()), sum{});
  const auto table_total = shoal::allreduce(table_entries, sum{});
  const auto rss_max = shoal::allreduce(contig::peak_rss_bytes(), shoal::op::max{});
  const auto reads_max = shoal::allreduce(static_cast<std::uint64_t>(fragments.bytes()), shoal::op::max{});
  const auto table_max = shoal::allreduce(table_bytes, shoal::op::max{});
  const auto exchange_max = shoal::allreduce(exchange_bytes, shoal::op::max{});
  const auto cpu_max = shoal::allreduce(clock.cpu_seconds(), shoal::op::max{});
  if (shoal::rank() == 0) {
    const auto s = contig::stats_of(out.contigs);
    std::printf("%s: %s, k = %zu, min count %u, %s\n", program, contig::count_of(shoal::size(), "rank").c_str(),
                opt.k, opt.min_count, contig::count_of(opt.reads.size(), "file").c_str());
    std::printf("%s: reads: %llu reads, %llu bases, %llu k-mer occurrences\n", program,
                static_cast<unsigned long long>(reads), static_cast<unsigned long long>(bases),
                static_cast<unsigned long long>(occurrences));
    std::printf("%s: k-mers: %llu distinct (Bloom first sightings), %llu counted (seen twice or more, or a Bloom "
                "false positive), %llu solid (count >= %u)\n",
                program, static_cast<unsigned long long>(distinct), static_cast<unsigned long long>(table_total),
                static_cast<unsigned long long>(solid_count), opt.min_count);
    std::printf("%s: contigs: %s, total length %zu, N50 %zu, longest %zu\n", program,
                contig::count_of(s.contigs, "contig").c_str(), s.bases,
                s.n50, s.longest);
    std::printf("%s: time: %s; CPU %.3f s (busiest rank)\n", program, clock.line().c_str(), cpu_max);
    std::printf("%s: memory per rank (largest): peak RSS %.1f MiB; reads %.1f MiB, Bloom filter %.1f MiB, count "
                "table %.1f MiB, k-mer exchange %.1f MiB\n",
                program, contig::mib(rss_max), contig::mib(reads_max), contig::mib(bloom_bytes),
                contig::mib(table_max), contig::mib(exchange_max));
  }
  return out;
}

// UFX mode: a k-mer file with extensions -> contigs.
result run_ufx(const options& opt) {
  const auto records = contig::read_ufx_share(opt.ufx_input, shoal::rank(), shoal::size());
  const std::size_t k_mine = records.empty() ? 0 : records.front().kmer.size();
  const std::size_t k = shoal::allreduce(k_mine, shoal::op::max{});
  if (shoal::allreduce(k_mine != 0 && k_mine != k ? 1 : 0, shoal::op::max{}) != 0) {
    if (k_mine != 0 && k_mine != k) {
      std::fprintf(stderr, "%s: %s: k-mers of different lengths (%zu and %zu)\n", program, opt.ufx_input.c_str(),
                   k_mine, k);
    }
    throw contig::reads_error("");  // every rank stops; the ranks with the shorter k-mers said why
  }
  std::vector<contig::kmer_entry> mine;
  mine.reserve(records.size());
  for (const auto& r : records) mine.push_back(contig::entry_of(r));
  shoal::hash_map_buffer_options buffer_opts;
  buffer_opts.message_bytes = opt.message_bytes;
  const auto assembled = contig::assemble(k, mine, buffer_opts);
  std::size_t duplicates = 0;
  result out{sorted_distinct(contig::gather_strings(assembled.contigs), duplicates), k};
  const auto lookups = shoal::allreduce(assembled.lookups, shoal::op::sum{});
  if (shoal::rank() == 0) {
    const auto s = contig::stats_of(out.contigs);
    std::printf("%s: %s, %zu distinct k-mers, %s (%zu bases, N50 %zu, longest %zu)%s\n", program,
                contig::count_of(shoal::size(), "rank").c_str(), assembled.total_kmers,
                contig::count_of(s.contigs, "contig").c_str(), s.bases, s.n50,
                s.longest, duplicates ? " (duplicate input lines: contigs found twice were merged)" : "");
    std::printf("%s: insert phase %.4f s (hash_map_buffer), traversal %.4f s (%llu finds, promise::find)\n", program,
                assembled.insert_seconds, assembled.traverse_seconds, static_cast<unsigned long long>(lookups));
  }
  return out;
}

// Rank 0: writes and verifies the contigs; returns the exit code.
int finish(const options& opt, const result& r) {
  int rc = 0;
  if (!opt.output.empty()) contig::write_fasta(opt.output, r.contigs, "contig");
  if (opt.check || !opt.genome.empty()) {
    if (const auto twice = contig::repeated_kmer(r.contigs, r.k)) {
      std::printf("%s: FAILED check: the canonical k-mer %s occurs twice in the contigs\n", program, twice->c_str());
      rc = 1;
    } else {
      std::printf("%s: checked: no canonical k-mer occurs twice in the contigs\n", program);
    }
  }
  if (!opt.expected.empty()) {
    const auto want = contig::orientation_free(contig::read_fasta(opt.expected));
    const auto got = contig::orientation_free(r.contigs);
    if (want == got) {
      std::printf("%s: verified: the %s equal %s\n", program, contig::count_of(got.size(), "contig").c_str(),
                  opt.expected.c_str());
    } else {
      std::vector<std::string> missing, extra;
      std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
      std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
      std::printf("%s: MISMATCH with %s: %zu expected contigs missing, %zu unexpected\n", program,
                  opt.expected.c_str(), missing.size(), extra.size());
      rc = 1;
    }
  }
  if (!opt.genome.empty()) {
    const auto genomes = contig::read_fasta(opt.genome);
    if (genomes.size() != 1) throw std::runtime_error(opt.genome + ": expected one sequence (the genome)");
    const auto g = contig::check_against_genome(r.contigs, genomes.front());
    std::printf("%s: genome %s: %zu of %zu contigs are substrings of it or its reverse complement; they cover "
                "%.2f%% of its %zu bases\n",
                program, opt.genome.c_str(), r.contigs.size() - g.not_found, r.contigs.size(), 100 * g.coverage,
                genomes.front().size());
    if (g.not_found > 0) {
      std::printf("%s: FAILED: contig not in the genome: %.80s%s\n", program, g.first_not_found.c_str(),
                  g.first_not_found.size() > 80 ? "..." : "");
      rc = 1;
    }
    if (g.coverage < opt.min_genome_coverage) {
      std::printf("%s: FAILED: coverage %.2f%% is below --min-genome-coverage %.2f%%\n", program, 100 * g.coverage,
                  100 * opt.min_genome_coverage);
      rc = 1;
    }
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"shoal-contig: Meraculous contig generation on shoal, from reads (FASTA/FASTQ, plain or gzip) or "
               "from a UFX k-mer file"};
  options opt;
  app.add_option("input", opt.ufx_input, "k-mers with extensions in the UFX-like format (KMER<TAB>LR...)");
  app.add_option("--reads", opt.reads, "reads: FASTA or FASTQ files, plain or gzip")->check(CLI::ExistingFile);
  app.add_option("--k", opt.k, "reads mode: k-mer length (odd, 3..63)")->check(CLI::Range(3, 63));
  app.add_option("--min-count", opt.min_count,
                 "reads mode: a k-mer is solid, and a base an extension, when seen at least this often (>= 2)")
      ->check(CLI::Range(2u, 65535u));
  app.add_option("-o,--out", opt.output, "write the contigs here (FASTA)");
  app.add_option("--ufx", opt.ufx_output, "reads mode: also write the solid k-mers, extensions and counts (UFX)");
  app.add_option("--expected", opt.expected, "FASTA of the expected contigs: verify and exit 1 on a difference");
  app.add_option("--genome", opt.genome,
                 "FASTA of the genome: every contig must be a substring of it or its reverse complement");
  app.add_option("--min-genome-coverage", opt.min_genome_coverage,
                 "with --genome: exit 1 if the contigs cover less than this fraction of it")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--check", opt.check, "verify that no canonical k-mer occurs twice in the contigs");
  app.add_option("--message-bytes", opt.message_bytes, "hash_map_buffer message size");
  app.add_option("--bloom-bits", opt.counter.bloom_bits_per_kmer,
                 "reads mode: Bloom filter bits per k-mer occurrence of the input")
      ->check(CLI::PositiveNumber);
  app.add_option("--bloom-hashes", opt.counter.bloom_hashes, "reads mode: Bloom filter bits set per k-mer")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--queue-kmers", opt.counter.queue_kmers,
                 "reads mode: k-mer occurrences each rank's exchange queue holds (24 bytes each, in the symmetric heap; "
                 "a sender waits when its owner's queue is full)")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
    if (opt.reads.empty() == opt.ufx_input.empty()) {
      throw CLI::ValidationError("input", "give either a UFX file or --reads FILE..., not both or neither");
    }
    if (opt.k % 2 == 0) throw CLI::ValidationError("--k", "k must be odd (an even k-mer can be its own reverse "
                                                           "complement); try " + std::to_string(opt.k + 1));
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }

  int rc = 0;
  try {
    const result r = opt.reads.empty() ? run_ufx(opt) : run_reads(opt);
    if (shoal::rank() == 0) rc = finish(opt, r);
  } catch (const contig::reads_error&) {
    rc = 2;  // collective: every rank got here, the failing ranks printed the file, line and what was expected
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: rank %d: %s\n", program, shoal::rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return shoal::allreduce(rc, shoal::op::max{});
}
