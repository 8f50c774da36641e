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
// out). Every step is one lookup that the next step depends on (a cache miss in a large table, a round trip to
// another rank's memory off shared memory), so the walker keeps `lanes` walks in flight and looks their next k-mers
// up together, `lanes` at a time: the table's `lookup_many` can overlap them (shoal::hash_map::find_many prefetches
// them on shared memory and has their gets in flight at once elsewhere). The left-end checks (one lookup per
// orientation of each k-mer, independent of each other) go the same way. The contigs are the same as with one walk
// at a time; only the order in which they are found differs.
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

/// `lookup_many(std::span<const kmer_code> canonical, std::span<std::optional<extensions>> out)`: the extensions of
/// each k-mer in its canonical orientation, or nullopt.
template <class LookupMany>
class walker {
 public:
  static constexpr std::size_t lanes = 32;

  walker(std::size_t k, LookupMany lookup_many)
      : k_(k), mask_(kmer_mask(k)), top_(static_cast<unsigned>(2 * (k - 1))), lookup_many_(std::move(lookup_many)) {}

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

  /// The extensions of each k-mer in its walked orientation (nullopt: not in the table), looked up together.
  void lookup(const std::vector<strand>& kmers, std::vector<std::optional<extensions>>& out) {
    keys_.clear();
    for (const auto& s : kmers) keys_.push_back(canonical_code(s));
    out.assign(kmers.size(), std::nullopt);
    lookup_many_(std::span<const kmer_code>(keys_), std::span<std::optional<extensions>>(out));
    lookups_ += kmers.size();
    for (std::size_t i = 0; i < kmers.size(); ++i) {
      if (out[i] && kmers[i].fwd > kmers[i].rc) {  // found in the other orientation: swap and complement
        out[i] = extensions{complement(out[i]->right), complement(out[i]->left)};
      }
    }
  }

  /// The orientations of the entries that are left ends (where walks start): no left extension, or a left
  /// neighbour that is missing, does not point back, or is the k-mer itself. The neighbours of `lanes` entries are
  /// looked up together.
  std::vector<oriented_kmer> left_ends(std::span<const kmer_entry> entries) {
    std::vector<oriented_kmer> starts, checked;
    std::vector<strand> prev;
    std::vector<std::optional<extensions>> found;
    for (std::size_t first = 0; first < entries.size(); first += lanes) {
      checked.clear();
      prev.clear();
      for (const auto& e : entries.subspan(first, std::min(lanes, entries.size() - first))) {
        for (const auto& o : orientations(e)) {
          if (!is_base(o.e.left)) {
            starts.push_back(o);
          } else {
            checked.push_back(o);
            prev.push_back(step_left(o.s, o.e.left));
          }
        }
      }
      lookup(prev, found);
      for (std::size_t i = 0; i < checked.size(); ++i) {
        const auto& pe = found[i];
        if (!pe || pe->right != last_base(checked[i].s) || prev[i].fwd == checked[i].s.fwd) starts.push_back(checked[i]);
      }
    }
    return starts;
  }

  /// One walk in flight: at k-mer `at`, whose right neighbour is `next`.
  struct lane {
    oriented_kmer at;
    strand next{};
    std::string seq;
    absl::flat_hash_set<kmer_code> seen;  // canonical k-mers of the contig so far (the hairpin rule)
    bool busy = false;
  };

  /// Starts a walk at o in l (busy unless it ends at once: no right extension).
  void start(lane& l, const oriented_kmer& o, std::vector<std::string>& out) {
    l.at = o;
    l.seq = code_of(o.s.fwd).to_string(k_);
    l.seen.clear();
    l.seen.insert(canonical_code(o.s));
    advance(l, out);
  }

  /// l's next k-mer, or the walk ends (emitted) when there is no right extension.
  void advance(lane& l, std::vector<std::string>& out) {
    if (!is_base(l.at.e.right)) return finish(l, false, out);
    l.next = step_right(l.at.s, l.at.e.right);
    l.busy = true;
  }

  /// One step of l with its next k-mer's extensions `ne`. Walks right while the extensions are unique and agree
  /// both ways. The hairpin rule: a contig never holds the same canonical k-mer twice, so the walk ends at the last
  /// k-mer before one whose canonical form is already in the contig (a path folding back onto its own reverse
  /// complement, or a cycle).
  void step(lane& l, const std::optional<extensions>& ne, std::vector<std::string>& out) {
    if (!ne || ne->left != first_base(l.at.s)) return finish(l, false, out);
    if (!l.seen.insert(canonical_code(l.next)).second) return finish(l, true, out);
    l.seq.push_back(l.at.e.right);
    l.at = oriented_kmer{l.next, *ne};
    advance(l, out);
  }

  /// Emits l's contig if this walk is the one that emits it; the lane is free again.
  static void finish(lane& l, bool folded, std::vector<std::string>& out) {
    auto seq_rc = reverse_complement(l.seq);
    if (folded) out.push_back(std::min(l.seq, seq_rc));
    else if (l.seq <= seq_rc) out.push_back(l.seq);
    l.busy = false;
  }

  /// Runs the walks from `starts`, `lanes` at a time: each turn looks up the next k-mer of every busy lane together
  /// and steps them.
  void walk_all(const std::vector<oriented_kmer>& starts, std::vector<std::string>& out) {
    std::size_t next_start = 0;
    std::vector<lane*> busy;
    std::vector<strand> next;
    std::vector<std::optional<extensions>> found;
    for (;;) {
      for (auto& l : lanes_) {
        while (!l.busy && next_start < starts.size()) start(l, starts[next_start++], out);
      }
      busy.clear();
      next.clear();
      for (auto& l : lanes_) {
        if (!l.busy) continue;
        busy.push_back(&l);
        next.push_back(l.next);
      }
      if (busy.empty()) return;  // every lane idle and no start left
      lookup(next, found);
      for (std::size_t i = 0; i < busy.size(); ++i) step(*busy[i], found[i], out);
    }
  }

  std::size_t k_;
  u128 mask_;
  unsigned top_;
  LookupMany lookup_many_;
  std::array<lane, lanes> lanes_;
  std::vector<kmer_code> keys_;
  std::uint64_t lookups_ = 0;
};

}  // namespace contig
