// shoal-contig — Meraculous contig generation on shoal (BCL §8.2).
//
//   mpirun -np 4 shoal-contig data/contig_small.ufx --out contigs.fa --expected data/contig_small.expected.fa
//
// Every rank reads its byte range of the UFX-like input (format in kmer.hpp and docs/apps/contig.md), the k-mer
// table is built through hash_map_buffer and walked with the find-only promise; rank 0 writes the contigs as FASTA
// (sorted, each in its lexicographically smaller orientation) and, with --expected, compares them with a FASTA of
// expected contigs (orientation-free) and exits non-zero when they differ.
#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "assemble.hpp"
#include "fasta.hpp"
#include "shoal/core.hpp"

namespace {

// The lines whose first byte lies in this rank's share [size*r/p, size*(r+1)/p) of the file.
std::vector<contig::ufx_record> read_share(const std::string& path, int rank, int ranks) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t begin = size * static_cast<std::uint64_t>(rank) / static_cast<std::uint64_t>(ranks);
  const std::uint64_t end = size * static_cast<std::uint64_t>(rank + 1) / static_cast<std::uint64_t>(ranks);
  std::uint64_t pos = begin;
  std::string line;
  if (begin > 0) {  // a line that started before our share belongs to the previous rank
    in.seekg(static_cast<std::streamoff>(begin - 1));
    std::getline(in, line);
    pos = begin - 1 + line.size() + 1;
  } else {
    in.seekg(0);
  }
  std::vector<contig::ufx_record> out;
  std::size_t k = 0;
  while (pos < end && std::getline(in, line)) {
    pos += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto r = contig::parse_ufx_line(line, 0);
    if (k == 0) k = r.kmer.size();
    if (r.kmer.size() != k) throw std::runtime_error(path + ": k-mers of different lengths (" + std::to_string(k) +
                                                     " and " + std::to_string(r.kmer.size()) + ")");
    out.push_back(std::move(r));
  }
  return out;
}

// Gathers every rank's strings on rank 0.
std::vector<std::string> gather_strings(const std::vector<std::string>& mine) {
  std::string packed;
  for (const auto& s : mine) packed += s + '\n';
  const int bytes = static_cast<int>(packed.size());
  const MPI_Comm comm = shoal::world().comm();
  std::vector<int> counts(static_cast<std::size_t>(shoal::size())), displs(counts.size());
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (shoal::rank() == 0) {
    int total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      displs[i] = total;
      total += counts[i];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(packed.data(), bytes, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\n') {
      out.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::vector<std::string> orientation_free(std::vector<std::string> seqs) {
  for (auto& s : seqs) s = contig::canonical(s);
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

}  // namespace

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"shoal-contig: Meraculous contig generation with shoal::hash_map_buffer and hash_map"};
  std::string input = "data/contig_small.ufx";
  std::string output;
  std::string expected;
  std::size_t message_bytes = std::size_t{64} << 10;
  app.add_option("input", input, "k-mers in the UFX-like format (KMER<TAB>LR)");
  app.add_option("-o,--out", output, "write the contigs here (FASTA)");
  app.add_option("--expected", expected, "FASTA of the expected contigs: verify and exit 1 on a difference");
  app.add_option("--message-bytes", message_bytes, "hash_map_buffer message size");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }

  int rc = 0;
  try {
    const auto mine = read_share(input, shoal::rank(), shoal::size());
    shoal::hash_map_buffer_options opts;
    opts.message_bytes = message_bytes;
    const auto result = contig::assemble(mine, opts);
    auto contigs = gather_strings(result.contigs);
    const auto lookups = shoal::allreduce(result.lookups, shoal::op::sum{});
    if (shoal::rank() == 0) {
      std::sort(contigs.begin(), contigs.end());
      const auto found = contigs.size();
      contigs.erase(std::unique(contigs.begin(), contigs.end()), contigs.end());
      std::size_t bases = 0, longest = 0;
      for (const auto& c : contigs) {
        bases += c.size();
        longest = std::max(longest, c.size());
      }
      std::printf("shoal-contig: %zu ranks, %zu distinct k-mers, %zu contigs (%zu bases, longest %zu)%s\n",
                  static_cast<std::size_t>(shoal::size()), result.total_kmers, contigs.size(), bases, longest,
                  found != contigs.size() ? " (duplicate input lines: contigs found twice were merged)" : "");
      std::printf("shoal-contig: insert phase %.4f s (hash_map_buffer), traversal %.4f s (%llu finds, promise::find)\n",
                  result.insert_seconds, result.traverse_seconds, static_cast<unsigned long long>(lookups));
      if (!output.empty()) contig::write_fasta(output, contigs, "contig");
      if (!expected.empty()) {
        const auto want = orientation_free(contig::read_fasta(expected));
        const auto got = orientation_free(contigs);
        if (want == got) {
          std::printf("shoal-contig: verified: the %zu contigs equal %s\n", got.size(), expected.c_str());
        } else {
          std::vector<std::string> missing, extra;
          std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
          std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(extra));
          std::printf("shoal-contig: MISMATCH with %s: %zu expected contigs missing, %zu unexpected\n",
                      expected.c_str(), missing.size(), extra.size());
          rc = 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shoal-contig: rank %d: %s\n", shoal::rank(), e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return shoal::allreduce(rc, shoal::op::max{});
}
