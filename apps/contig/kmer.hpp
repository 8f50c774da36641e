// apps/contig/kmer.hpp — k-mers, the UFX-like input format and the Meraculous walk, shared by the distributed
// assembler (contig.cpp), its generator (generate.cpp) and shoal-bench's contig workload.
//
// Format (docs/apps/contig.md): one k-mer per line, `KMER<TAB>LR[<TAB>anything]`. KMER is k bases of ACGT (k <= 64,
// the same on every line); L and R are its left and right extensions in the canonical orientation, each one of
// A C G T (the one base seen next to it), X (no base: a sequence end) or F (a fork: several bases). KMER is the
// canonical form (the smaller of the k-mer and its reverse complement), as Meraculous' UFX files store it; a
// non-canonical k-mer is canonicalised on reading (its extensions swapped and complemented).
//
// A contig is a maximal path of k-mers whose extensions are unique and agree in both directions (the UU graph of
// Meraculous). Walks start at a k-mer whose left neighbour does not exist or does not point back; each contig is
// found from both of its ends and emitted once, in the orientation that is lexicographically smaller. A contig
// never holds the same canonical k-mer twice: a walk that would fold back onto its own reverse complement (a
// hairpin) ends at the last k-mer before the repeat (walker::walk). Cycles without an end are not emitted.
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace contig {

inline constexpr std::size_t max_k = 64;

/// A k-mer packed 2 bits per base (k <= 64), the hash map key: 16 bytes, trivially copyable.
struct packed_kmer {
  std::array<std::uint64_t, 2> words{};
  friend bool operator==(const packed_kmer&, const packed_kmer&) = default;
};

}  // namespace contig

template <>
struct std::hash<contig::packed_kmer> {
  std::size_t operator()(const contig::packed_kmer& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.words[0] * 0x9e3779b97f4a7c15ull ^ k.words[1]);
  }
};

namespace contig {

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

inline packed_kmer pack(std::string_view s) {
  packed_kmer p;
  for (std::size_t i = 0; i < s.size(); ++i) {
    p.words[i / 32] |= static_cast<std::uint64_t>(base_code(s[i])) << (2 * (i % 32));
  }
  return p;
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

/// The Meraculous walk over any k-mer table: `lookup(packed canonical k-mer) -> std::optional<extensions>`.
template <class Lookup>
class walker {
 public:
  explicit walker(Lookup lookup) : lookup_(std::move(lookup)) {}

  /// The contigs that start at the canonical k-mer `kmer` (0, 1 or 2), each in its smaller orientation.
  ///
  /// A contig found from both of its ends is emitted by the walk that yields its smaller orientation. A walk that
  /// stops at the hairpin rule (see walk) is the only walk of its contig, so it is emitted, in its smaller
  /// orientation: a path that meets its own reverse complement runs s1 .. s(j-1), rc(si), rc(s(i-1)), .. rc(s1) and
  /// ends where it began, reversed, so its one end is s1, and rc(s1) is no left end (rc(s2) points to it).
  std::vector<std::string> contigs_from(const std::string& kmer, extensions ext) {
    std::vector<std::string> out;
    const std::string rc = reverse_complement(kmer);
    const extensions rc_ext{complement(ext.right), complement(ext.left)};
    for (const auto& [s, e] : {std::pair{kmer, ext}, std::pair{rc, rc_ext}}) {
      if (!is_left_end(s, e)) continue;
      auto [seq, folded] = walk(s, e);
      auto seq_rc = reverse_complement(seq);
      if (folded) out.push_back(std::min(seq, seq_rc));
      else if (seq <= seq_rc) out.push_back(std::move(seq));
    }
    return out;
  }

  std::uint64_t lookups() const { return lookups_; }

 private:
  std::optional<extensions> oriented(const std::string& s) {
    ++lookups_;
    const std::string c = canonical(s);
    const auto v = lookup_(pack(c));
    if (!v) return std::nullopt;
    if (c == s) return v;
    return extensions{complement(v->right), complement(v->left)};
  }

  bool is_left_end(const std::string& s, const extensions& e) {
    if (!is_base(e.left)) return true;
    const std::string prev = e.left + s.substr(0, s.size() - 1);
    const auto pe = oriented(prev);
    return !pe || pe->right != s.back() || prev == s;
  }

  struct walked {
    std::string seq;
    bool folded = false;  // stopped by the hairpin rule
  };

  /// Walks right from s while the extensions are unique and agree both ways. The hairpin rule: a contig never holds
  /// the same canonical k-mer twice, so the walk ends at the last k-mer before one whose canonical form is already
  /// in the contig (a path folding back onto its own reverse complement, or a cycle).
  walked walk(std::string s, extensions e) {
    walked out{s, false};
    seen_.clear();
    seen_.insert(pack(canonical(s)));
    while (is_base(e.right)) {
      std::string next = s.substr(1) + e.right;
      const auto ne = oriented(next);
      if (!ne || ne->left != s.front()) break;
      if (!seen_.insert(pack(canonical(next))).second) {
        out.folded = true;
        break;
      }
      out.seq.push_back(e.right);
      s = std::move(next);
      e = *ne;
    }
    return out;
  }

  std::unordered_set<packed_kmer> seen_;
  Lookup lookup_;
  std::uint64_t lookups_ = 0;
};

}  // namespace contig
