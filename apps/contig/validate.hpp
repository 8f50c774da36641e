// apps/contig/validate.hpp — checks of assembled contigs against rules and references that do not use the walk:
// the hairpin rule (no canonical k-mer twice in all contigs), a FASTA of expected contigs, a reference genome.
#pragma once

#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kmer.hpp"

namespace contig {

/// The first canonical k-mer found twice in the contigs (within one contig or across two), if any.
inline std::optional<std::string> repeated_kmer(const std::vector<std::string>& contigs, std::size_t k) {
  absl::flat_hash_set<kmer_code> seen;
  for (const auto& c : contigs) {
    for (std::size_t i = 0; i + k <= c.size(); ++i) {
      const auto kmer = canonical(std::string_view(c).substr(i, k));
      if (!seen.insert(encode(kmer)).second) return kmer;
    }
  }
  return std::nullopt;
}

/// How contigs sit on a genome: those that are not substrings of it or its reverse complement, and the fraction of
/// its bases that the others cover.
struct genome_check {
  std::size_t not_found = 0;
  std::string first_not_found;
  double coverage = 0;
};

inline genome_check check_against_genome(const std::vector<std::string>& contigs, const std::string& genome) {
  genome_check out;
  const std::string rc = reverse_complement(genome);
  std::vector<char> covered(genome.size(), 0);
  for (const auto& c : contigs) {
    if (auto at = genome.find(c); at != std::string::npos) {
      std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(at), c.size(), 1);
    } else if (auto at_rc = rc.find(c); at_rc != std::string::npos) {
      const auto at_fwd = genome.size() - at_rc - c.size();
      std::fill_n(covered.begin() + static_cast<std::ptrdiff_t>(at_fwd), c.size(), 1);
    } else if (out.not_found++ == 0) {
      out.first_not_found = c;
    }
  }
  const auto n = static_cast<double>(std::count(covered.begin(), covered.end(), 1));
  out.coverage = genome.empty() ? 0 : n / static_cast<double>(genome.size());
  return out;
}

/// Sequences in their smaller orientation, sorted (to compare contig sets regardless of orientation).
inline std::vector<std::string> orientation_free(std::vector<std::string> seqs) {
  for (auto& s : seqs) s = canonical(s);
  std::sort(seqs.begin(), seqs.end());
  return seqs;
}

}  // namespace contig
