// shoal-contig-gen — a random genome with a seed, its error-free k-mers in the UFX-like format, and the expected
// contigs (the genome's unitigs in the UU graph), computed serially with a std::unordered_map.
//
//   shoal-contig-gen --length 3000 --k 31 --repeats 6 --repeat-length 80 --seed 7 --out data/contig_small
//   -> data/contig_small.ufx, data/contig_small.expected.fa, data/contig_small.genome.fa
//
// Repeats copy random stretches of the genome to other places, so some k-mers have two different neighbours (an F
// extension) and the genome splits into several unitigs; with --repeats 0 the genome is one contig.
//
// Shapes: --shape random (above); --shape hairpin: the genome is A + reverse_complement(A), a path that folds onto
// its own reverse complement: its one contig is its first |A| + (k-1)/2 bases (every canonical k-mer once), which
// <out>.expected.fa then holds, computed from that formula, not by the walk; --shape hairpin-inside: B + A + rc(A) + C.
//
// Reads (--coverage C > 0): reads of --read-length bases at uniform positions, from either strand with probability
// 1/2, with substitution errors at --error-rate per base, C x length / read-length of them, written as FASTQ or FASTA
// (--format), optionally gzip (--gzip), split over --read-files files: <out>.reads[.i].{fq,fa}[.gz].
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <fstream>
#include <iostream>
#include <random>
#include <span>
#include <string>
#include <unordered_map>

#include <zlib.h>

#include "fasta.hpp"
#include "kmer.hpp"
#include "walk.hpp"

namespace {

struct reads_spec {
  double coverage = 0;
  std::size_t length = 100;
  double error_rate = 0.005;
  std::string format = "fastq";
  bool gzip = false;
  std::size_t files = 1;
};

/// A file written plainly or through zlib.
class text_sink {
 public:
  text_sink(const std::string& path, bool gzip) : path_(path) {
    if (gzip) gz_ = gzopen(path.c_str(), "wb6");
    else plain_ = std::fopen(path.c_str(), "wb");
    if (!gz_ && !plain_) throw std::runtime_error("cannot write " + path);
  }
  ~text_sink() {
    if (gz_) gzclose(gz_);
    if (plain_) std::fclose(plain_);
  }
  void write(const std::string& s) {
    const bool ok = gz_ ? gzwrite(gz_, s.data(), static_cast<unsigned>(s.size())) == static_cast<int>(s.size())
                        : std::fwrite(s.data(), 1, s.size(), plain_) == s.size();
    if (!ok) throw std::runtime_error("error writing " + path_);
  }

 private:
  std::string path_;
  gzFile gz_ = nullptr;
  std::FILE* plain_ = nullptr;
};

void write_reads(const std::string& genome, const reads_spec& spec, const std::string& out, std::mt19937_64& rng) {
  if (spec.length > genome.size()) throw std::runtime_error("--read-length exceeds the genome");
  const auto n = static_cast<std::size_t>(spec.coverage * static_cast<double>(genome.size()) /
                                          static_cast<double>(spec.length));
  const std::string ext = std::string(spec.format == "fastq" ? ".fq" : ".fa") + (spec.gzip ? ".gz" : "");
  std::vector<std::unique_ptr<text_sink>> sinks;
  for (std::size_t f = 0; f < spec.files; ++f) {
    const std::string name = out + ".reads" + (spec.files > 1 ? "." + std::to_string(f + 1) : "") + ext;
    sinks.push_back(std::make_unique<text_sink>(name, spec.gzip));
  }
  std::uniform_real_distribution<double> unit(0, 1);
  std::string record;
  for (std::size_t i = 0; i < n; ++i) {
    const auto at = rng() % (genome.size() - spec.length + 1);
    std::string read = genome.substr(at, spec.length);
    const bool reverse = rng() % 2 == 1;
    if (reverse) read = contig::reverse_complement(read);
    std::string quality(read.size(), 'I');
    for (std::size_t j = 0; j < read.size(); ++j) {
      if (unit(rng) >= spec.error_rate) continue;
      const char old = read[j];
      do read[j] = "ACGT"[rng() % 4]; while (read[j] == old);
      quality[j] = '#';
    }
    const std::string name = "read" + std::to_string(i) + " pos=" + std::to_string(at) + (reverse ? " strand=-" : " strand=+");
    record = spec.format == "fastq" ? "@" + name + "\n" + read + "\n+\n" + quality + "\n" : ">" + name + "\n" + read + "\n";
    sinks[i % sinks.size()]->write(record);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shoal-contig-gen: a random genome, its k-mers (UFX-like) and its expected contigs"};
  std::size_t length = 3000, k = 31, repeats = 6, repeat_length = 80;
  std::uint64_t seed = 7;
  std::string out = "contig";
  app.add_option("--length", length, "genome length in bases");
  app.add_option("--k", k, "k-mer length (odd, <= 64)")->check(CLI::Range(3, 63));
  app.add_option("--repeats", repeats, "number of repeated stretches copied into the genome");
  app.add_option("--repeat-length", repeat_length, "length of each repeated stretch (> k to make forks)");
  app.add_option("--seed", seed, "random seed");
  app.add_option("--out", out, "output prefix: <out>.ufx, <out>.expected.fa, <out>.genome.fa");
  std::string shape = "random";
  app.add_option("--shape", shape, "random, hairpin (A + rc(A)) or hairpin-inside (B + A + rc(A) + C)")
      ->check(CLI::IsMember({"random", "hairpin", "hairpin-inside"}));
  reads_spec reads;
  app.add_option("--coverage", reads.coverage, "write reads at this coverage (0: no reads)");
  app.add_option("--read-length", reads.length, "bases per read");
  app.add_option("--error-rate", reads.error_rate, "substitution errors per base")->check(CLI::Range(0.0, 0.75));
  app.add_option("--format", reads.format, "fastq or fasta")->check(CLI::IsMember({"fastq", "fasta"}));
  app.add_flag("--gzip", reads.gzip, "gzip the reads");
  app.add_option("--read-files", reads.files, "spread the reads over this many files")->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  if (k % 2 == 0) {
    std::cerr << "shoal-contig-gen: k must be odd (an even k-mer can be its own reverse complement)\n";
    return 2;
  }
  if (length < k || (repeats > 0 && repeat_length >= length)) {
    std::cerr << "shoal-contig-gen: --length must exceed k and --repeat-length\n";
    return 2;
  }

  std::mt19937_64 rng(seed);
  std::string genome(length, 'A');
  for (auto& b : genome) b = "ACGT"[rng() % 4];
  for (std::size_t r = 0; r < repeats; ++r) {
    const auto from = rng() % (length - repeat_length);
    const auto to = rng() % (length - repeat_length);
    const std::string stretch = genome.substr(from, repeat_length);
    genome.replace(to, repeat_length, stretch);
  }
  if (shape == "hairpin") {
    genome += contig::reverse_complement(genome);
  } else if (shape == "hairpin-inside") {  // B + A + rc(A) + C, B and C a quarter of the length each
    const std::string b = genome.substr(0, length / 4), a = genome.substr(length / 4, length / 2),
                      c = genome.substr(length / 4 + length / 2);
    genome = b + a + contig::reverse_complement(a) + c;
  }

  const auto records = contig::genome_kmers(genome, k);
  std::ofstream ufx(out + ".ufx");
  std::unordered_map<std::string, contig::extensions> table;
  for (const auto& r : records) {
    ufx << r.kmer << '\t' << r.ext.left << r.ext.right << '\n';
    table.emplace(r.kmer, r.ext);
  }
  if (!ufx) {
    std::cerr << "shoal-contig-gen: cannot write " << out << ".ufx\n";
    return 1;
  }

  contig::walker walk(k, [&](std::span<const contig::kmer_code> keys,
                             std::span<std::optional<contig::extensions>> out) {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      auto it = table.find(keys[i].to_string(k));
      if (it != table.end()) out[i] = it->second;
    }
  });
  std::vector<contig::kmer_entry> entries;
  for (const auto& r : records) entries.push_back(contig::entry_of(r));
  std::vector<std::string> unitigs = walk.contigs_from(entries);
  std::sort(unitigs.begin(), unitigs.end());
  if (shape == "hairpin") unitigs = {contig::canonical(genome.substr(0, length + (k - 1) / 2))};
  contig::write_fasta(out + ".expected.fa", unitigs, "unitig");
  if (reads.coverage > 0) write_reads(genome, reads, out, rng);
  contig::write_fasta(out + ".genome.fa", {genome}, "genome");
  std::cout << "shoal-contig-gen: genome " << genome.size() << " bases, " << records.size() << " distinct " << k << "-mers, "
            << unitigs.size() << " unitigs -> " << out << ".{ufx,expected.fa,genome.fa}"
            << (reads.coverage > 0 ? " and reads" : "") << "\n";
  return 0;
}
