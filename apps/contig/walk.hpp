// apps/contig/walk.hpp — the Meraculous walk over any k-mer table, shared by the distributed assembler
// (assemble.hpp), the generator's expected contigs (generate.cpp) and shoal-bench's one-core baseline.
//
// A contig is a maximal path of k-mers whose extensions are unique and agree in both directions (the UU graph of
// Meraculous). Walks start at a k-mer whose left neighbour does not exist or does not point back; each contig is
// found from both of its ends and emitted once, in the orientation that is lexicographically smaller. A contig
// never holds the same canonical k-mer twice: a walk that would fold back onto its own reverse complement (a
// hairpin) ends at the last k-mer before the repeat. Cycles without an end are not emitted.
//
// The k-mers are 2-bit codes stepped with shifts in both orientations at once (no strings until a contig is written
// out). Every step is one lookup, and in a large table each is a cache miss that the next step depends on; so the
// walker keeps `lanes` walks in flight: it prefetches a walk's next k-mer (`prefetch`, a hint the table may ignore),
// then advances the other walks, and looks the k-mer up when it comes back to that walk. Left-end checks (one lookup
// per orientation of each k-mer, independent of each other) are prefetched `lanes` k-mers ahead. The contigs are the
// same as with one walk at a time; only their order in the output differs.
#pragma once

#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kmer.hpp"

namespace contig {

/// `lookup(canonical kmer_code) -> std::optional<extensions>` (the extensions in the canonical orientation);
/// `prefetch(canonical kmer_code)`: a hint before a lookup (may do nothing).
template <class Lookup, class Prefetch>
class walker {
 public:
  static constexpr std::size_t lanes = 32;

  walker(std::size_t k, Lookup lookup, Prefetch prefetch)
      : k_(k),
        mask_(kmer_mask(k)),
        top_(static_cast<unsigned>(2 * (k - 1))),
        lookup_(std::move(lookup)),
        prefetch_(std::move(prefetch)) {}

  /// The contigs that start at the given canonical k-mers (0, 1 or 2 each), each in its smaller orientation.
  ///
  /// A contig found from both of its ends is emitted by the walk that yields its smaller orientation. A walk that
  /// stops at the hairpin rule is the only walk of its contig, so it is emitted, in its smaller orientation: a path
  /// that meets its own reverse complement runs s1 .. s(j-1), rc(si), rc(s(i-1)), .. rc(s1) and ends where it
  /// began, reversed, so its one end is s1, and rc(s1) is no left end (rc(s2) points to it).
  std::vector<std::string> contigs_from(std::span<const kmer_entry> entries) {
    std::vector<std::string> out;
    walk_all(left_ends(entries), out);
    return out;
  }

  std::uint64_t lookups() const { return lookups_; }

 private:
  /// A k-mer as walked (fwd) and its reverse complement (rc).
  struct strand {
    u128 fwd, rc;
  };
  /// A k-mer in one orientation with its extensions in that orientation.
  struct oriented_kmer {
    strand s;
    extensions e;
  };

  strand step_right(const strand& s, char base) const {
    const auto b = static_cast<u128>(base_code(base));
    return {((s.fwd << 2) | b) & mask_, (s.rc >> 2) | ((3 - b) << top_)};
  }
  strand step_left(const strand& s, char base) const {
    const auto b = static_cast<u128>(base_code(base));
    return {(s.fwd >> 2) | (b << top_), ((s.rc << 2) | (3 - b)) & mask_};
  }
  char first_base(const strand& s) const { return "ACGT"[static_cast<unsigned>(s.fwd >> top_) & 3]; }
  static char last_base(const strand& s) { return "ACGT"[static_cast<unsigned>(s.fwd) & 3]; }
  static kmer_code canonical_code(const strand& s) { return code_of(s.fwd <= s.rc ? s.fwd : s.rc); }

  /// Both orientations of a canonical entry.
  std::array<oriented_kmer, 2> orientations(const kmer_entry& e) const {
    const strand fwd{value_of(e.kmer), reverse_complement_code(value_of(e.kmer), k_)};
    return {oriented_kmer{fwd, e.ext},
            oriented_kmer{strand{fwd.rc, fwd.fwd}, extensions{complement(e.ext.right), complement(e.ext.left)}}};
  }

  /// The extensions of s in its walked orientation.
  std::optional<extensions> oriented(const strand& s) {
    ++lookups_;
    const bool forward = s.fwd <= s.rc;
    const auto v = lookup_(code_of(forward ? s.fwd : s.rc));
    if (!v || forward) return v;
    return extensions{complement(v->right), complement(v->left)};
  }

  bool is_left_end(const oriented_kmer& o) {
    if (!is_base(o.e.left)) return true;
    const strand prev = step_left(o.s, o.e.left);
    const auto pe = oriented(prev);
    return !pe || pe->right != last_base(o.s) || prev.fwd == o.s.fwd;
  }

  /// The orientations of the entries that are left ends (where walks start), their left neighbours prefetched
  /// `lanes` entries ahead.
  std::vector<oriented_kmer> left_ends(std::span<const kmer_entry> entries) {
    std::vector<oriented_kmer> starts;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i + lanes < entries.size()) {
        for (const auto& o : orientations(entries[i + lanes])) {
          if (is_base(o.e.left)) prefetch_(canonical_code(step_left(o.s, o.e.left)));
        }
      }
      for (const auto& o : orientations(entries[i])) {
        if (is_left_end(o)) starts.push_back(o);
      }
    }
    return starts;
  }

  /// One walk in flight: at k-mer `at`, whose right neighbour `next` was prefetched.
  struct lane {
    oriented_kmer at;
    strand next{};
    std::string seq;
    absl::flat_hash_set<kmer_code> seen;  // canonical k-mers of the contig so far (the hairpin rule)
    bool busy = false;
  };

  /// Starts a walk at o in l; false when it ends at once (no right extension).
  bool start(lane& l, const oriented_kmer& o, std::vector<std::string>& out) {
    l.at = o;
    l.seq = code_of(o.s.fwd).to_string(k_);
    l.seen.clear();
    l.seen.insert(canonical_code(o.s));
    return advance(l, out);
  }

  /// Prefetches the right neighbour of l's k-mer; when there is none the walk ends (emitted): false.
  bool advance(lane& l, std::vector<std::string>& out) {
    if (!is_base(l.at.e.right)) return finish(l, false, out);
    l.next = step_right(l.at.s, l.at.e.right);
    prefetch_(canonical_code(l.next));
    return true;
  }

  /// One step of l: the prefetched neighbour is looked up. Walks right while the extensions are unique and agree
  /// both ways. The hairpin rule: a contig never holds the same canonical k-mer twice, so the walk ends at the last
  /// k-mer before one whose canonical form is already in the contig (a path folding back onto its own reverse
  /// complement, or a cycle). False when the walk ended.
  bool step(lane& l, std::vector<std::string>& out) {
    const auto ne = oriented(l.next);
    if (!ne || ne->left != first_base(l.at.s)) return finish(l, false, out);
    if (!l.seen.insert(canonical_code(l.next)).second) return finish(l, true, out);
    l.seq.push_back(l.at.e.right);
    l.at = oriented_kmer{l.next, *ne};
    return advance(l, out);
  }

  /// Emits l's contig if this walk is the one that emits it; the lane is free again.
  bool finish(lane& l, bool folded, std::vector<std::string>& out) {
    auto seq_rc = reverse_complement(l.seq);
    if (folded) out.push_back(std::min(l.seq, seq_rc));
    else if (l.seq <= seq_rc) out.push_back(l.seq);
    l.busy = false;
    return false;
  }

  /// Runs the walks from `starts`, `lanes` at a time, round robin: one step of each busy lane per turn.
  void walk_all(const std::vector<oriented_kmer>& starts, std::vector<std::string>& out) {
    std::size_t next_start = 0, busy = 0;
    for (;;) {
      for (auto& l : lanes_) {
        if (l.busy && !step(l, out)) --busy;
        while (!l.busy && next_start < starts.size()) {
          l.busy = start(l, starts[next_start++], out);
          if (l.busy) ++busy;
        }
      }
      if (busy == 0 && next_start == starts.size()) return;
    }
  }

  std::size_t k_;
  u128 mask_;
  unsigned top_;
  Lookup lookup_;
  Prefetch prefetch_;
  std::array<lane, lanes> lanes_;
  std::uint64_t lookups_ = 0;
};

}  // namespace contig
