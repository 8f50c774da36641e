// shoal-contig-gen — a random genome with a seed, its error-free k-mers in the UFX-like format, and the expected
// contigs (the genome's unitigs in the UU graph), computed serially with a std::unordered_map.
//
//   shoal-contig-gen --length 3000 --k 31 --repeats 6 --repeat-length 80 --seed 7 --out data/contig_small
//   -> data/contig_small.ufx, data/contig_small.expected.fa, data/contig_small.genome.fa
//
// Repeats copy random stretches of the genome to other places, so some k-mers have two different neighbours (an F
// extension) and the genome splits into several unitigs; with --repeats 0 the genome is one contig.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <unordered_map>

#include "fasta.hpp"
#include "kmer.hpp"

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

  const auto records = contig::genome_kmers(genome, k);
  std::ofstream ufx(out + ".ufx");
  std::unordered_map<contig::packed_kmer, contig::extensions> table;
  for (const auto& r : records) {
    ufx << r.kmer << '\t' << r.ext.left << r.ext.right << '\n';
    table.emplace(contig::pack(r.kmer), r.ext);
  }
  if (!ufx) {
    std::cerr << "shoal-contig-gen: cannot write " << out << ".ufx\n";
    return 1;
  }

  contig::walker walk([&](const contig::packed_kmer& p) -> std::optional<contig::extensions> {
    auto it = table.find(p);
    if (it == table.end()) return std::nullopt;
    return it->second;
  });
  std::vector<std::string> unitigs;
  for (const auto& r : records) {
    for (auto& u : walk.contigs_from(r.kmer, r.ext)) unitigs.push_back(std::move(u));
  }
  std::sort(unitigs.begin(), unitigs.end());
  contig::write_fasta(out + ".expected.fa", unitigs, "unitig");
  contig::write_fasta(out + ".genome.fa", {genome}, "genome");
  std::cout << "shoal-contig-gen: genome " << length << " bases, " << records.size() << " distinct " << k << "-mers, "
            << unitigs.size() << " unitigs -> " << out << ".{ufx,expected.fa,genome.fa}\n";
  return 0;
}
