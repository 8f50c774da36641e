// apps/contig/kmer.hpp — k-mers (strings and 2-bit codes) and the UFX-like input format, shared by the distributed
// assembler (contig.cpp), its generator (generate.cpp) and shoal-bench's contig workload.
//
// Format (docs/apps/contig.md): one k-mer per line, `KMER<TAB>LR[<TAB>anything]`. KMER is k bases of ACGT (k <= 64,
// the same on every line); L and R are its left and right extensions in the canonical orientation, each one of
// A C G T (the one base seen next to it), X (no base: a sequence end) or F (a fork: several bases). KMER is the
// canonical form (the smaller of the k-mer and its reverse complement), as Meraculous' UFX files store it; a
// non-canonical k-mer is canonicalised on reading (its extensions swapped and complemented).
//
// The walk over these k-mers is in walk.hpp.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace contig {

inline constexpr std::size_t max_k = 64;

/// A k-mer packed 2 bits per base (A 0, C 1, G 2, T 3), first base most significant, so that numeric order is
/// lexicographic order and the canonical form (the smaller of a k-mer and its reverse complement, as strings) is one
/// compare. k <= 64; the hash map key (16 bytes, trivially copyable, no padding).
struct kmer_code {
  std::uint64_t hi = 0, lo = 0;
  friend bool operator==(const kmer_code&, const kmer_code&) = default;
  template <class H>
  friend H AbslHashValue(H h, const kmer_code& c) {
    return H::combine(std::move(h), c.hi, c.lo);
  }
  std::string to_string(std::size_t k) const;
};

using u128 = unsigned __int128;
inline u128 value_of(kmer_code c) { return (static_cast<u128>(c.hi) << 64) | c.lo; }
inline kmer_code code_of(u128 v) { return {static_cast<std::uint64_t>(v >> 64), static_cast<std::uint64_t>(v)}; }
/// The low 2k bits.
inline u128 kmer_mask(std::size_t k) { return k >= 64 ? ~u128{0} : (u128{1} << (2 * k)) - 1; }

inline std::string kmer_code::to_string(std::size_t k) const {
  const u128 v = value_of(*this);
  std::string s(k, 'A');
  for (std::size_t i = 0; i < k; ++i) s[i] = "ACGT"[static_cast<unsigned>(v >> (2 * (k - 1 - i))) & 3];
  return s;
}

/// The extensions of a canonical k-mer.
struct extensions {
  char left = 'X';
  char right = 'X';
  friend bool operator==(const extensions&, const extensions&) = default;
};

inline int base_code(char b) {
  switch (b) {
    case 'A': return 0;
    case 'C': return 1;
    case 'G': return 2;
    case 'T': return 3;
    default: return -1;
  }
}
inline bool is_base(char b) { return base_code(b) >= 0; }
inline bool is_extension(char e) { return is_base(e) || e == 'X' || e == 'F'; }

inline char complement(char b) {
  switch (b) {
    case 'A': return 'T';
    case 'C': return 'G';
    case 'G': return 'C';
    case 'T': return 'A';
    default: return b;  // X and F are their own complement
  }
}

inline std::string reverse_complement(std::string_view s) {
  std::string r(s.rbegin(), s.rend());
  for (auto& c : r) c = complement(c);
  return r;
}

inline std::string canonical(std::string_view s) {
  auto rc = reverse_complement(s);
  return rc < s ? rc : std::string(s);
}

/// The code of a k-mer of ACGT bases (k <= 64).
inline kmer_code encode(std::string_view s) {
  u128 v = 0;
  for (char b : s) v = (v << 2) | static_cast<u128>(base_code(b));
  return code_of(v);
}

/// One parsed line: a canonical k-mer and its extensions in that orientation.
struct ufx_record {
  std::string kmer;
  extensions ext;
};

/// Parses `KMER<TAB>LR...`; throws std::runtime_error naming the line on a malformed one.
inline ufx_record parse_ufx_line(std::string_view line, std::size_t line_number) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("line " + std::to_string(line_number) + ": " + why + " (expected KMER<TAB>LR with " +
                             "KMER in ACGT and L, R in A C G T X F): '" + std::string(line.substr(0, 80)) + "'");
  };
  const auto tab = line.find_first_of("\t ");
  if (tab == std::string_view::npos) fail("no extensions");
  const auto kmer = line.substr(0, tab);
  auto rest = line.substr(tab);
  rest.remove_prefix(std::min(rest.find_first_not_of("\t "), rest.size()));
  if (kmer.empty() || kmer.size() > max_k) fail("k-mer length must be 1.." + std::to_string(max_k));
  if (!std::all_of(kmer.begin(), kmer.end(), is_base)) fail("k-mer contains a base other than ACGT");
  if (rest.size() < 2 || !is_extension(rest[0]) || !is_extension(rest[1])) fail("bad extensions");
  if (rest.size() > 2 && rest[2] != '\t' && rest[2] != ' ' && rest[2] != '\r') fail("extensions are two letters");
  ufx_record r{std::string(kmer), extensions{rest[0], rest[1]}};
  auto rc = reverse_complement(r.kmer);
  if (rc < r.kmer) r = ufx_record{std::move(rc), extensions{complement(r.ext.right), complement(r.ext.left)}};
  return r;
}

/// The error-free k-mers of a genome with their extensions (X: no neighbour, F: several), sorted by k-mer.
inline std::vector<ufx_record> genome_kmers(const std::string& genome, std::size_t k) {
  struct seen {
    std::string left, right;  // distinct neighbouring bases, canonical orientation
  };
  std::map<std::string, seen> kmers;
  auto note = [](std::string& set, char b) {
    if (set.find(b) == std::string::npos) set.push_back(b);
  };
  for (std::size_t i = 0; i + k <= genome.size(); ++i) {
    const std::string s = genome.substr(i, k);
    const std::string c = canonical(s);
    auto& n = kmers[c];
    const bool forward = c == s;
    if (i > 0) note(forward ? n.left : n.right, forward ? genome[i - 1] : complement(genome[i - 1]));
    if (i + k < genome.size()) note(forward ? n.right : n.left, forward ? genome[i + k] : complement(genome[i + k]));
  }
  auto summarize = [](const std::string& bases) { return bases.empty() ? 'X' : bases.size() == 1 ? bases[0] : 'F'; };
  std::vector<ufx_record> out;
  out.reserve(kmers.size());
  for (const auto& [c, n] : kmers) out.push_back(ufx_record{c, extensions{summarize(n.left), summarize(n.right)}});
  return out;
}

/// A canonical k-mer and its extensions in that orientation: what the walk's table holds.
struct kmer_entry {
  kmer_code kmer;
  extensions ext;
};
inline kmer_entry entry_of(const ufx_record& r) { return {encode(r.kmer), r.ext}; }

/// The reverse complement of a k-mer's code.
inline u128 reverse_complement_code(u128 v, std::size_t k) {
  u128 r = 0;
  for (std::size_t i = 0; i < k; ++i, v >>= 2) r = (r << 2) | (3 - (v & 3));
  return r;
}

}  // namespace contig
