// apps/contig/count.hpp — distributed k-mer counting with a Bloom filter (HipMer's scheme) on shoal, and the
// extensions of the solid k-mers.
//
// Every canonical k-mer has one owner: the rank that holds its block of the shoal::bloom_filter
// (bloom_filter::owner). Ranks stream the k-mer occurrences of their reads to their owners through one-sided queues
// (owner_exchange.hpp: a shoal::circular_queue hosted by every rank); the owner applies them to its own Bloom blocks
// (bloom_filter::local_insert: a load and a store, no remote atomic and no MPI call on either RMA path) and its local
// count table (shoal::local::flat_table), one k-mer at a time, prefetching the table slot of the k-mer
// `prefetch_ahead` places further on (the work is cache misses). Two passes over the reads (held in memory):
//   1. sighting:  a k-mer not yet in the count table goes into the Bloom filter; if it was (probably) there already,
//                 it enters the count table (count 0). Singletons, most of them sequencing errors, stay out.
//   2. tallying:  the owner counts every occurrence of a k-mer that is in the table, with the base on each side in
//                 the canonical orientation (left and right tallies of A, C, G, T).
// Exactness: every k-mer occurring at least twice is in the table (its second sighting finds its bits set, whatever
// the order of arrival), and pass 2 counts all its occurrences, so its count and tallies are exact and independent
// of the number of ranks. A Bloom false positive lets a once-seen k-mer into the table with its exact count of 1,
// which min-count >= 2 drops; it costs memory only. The number of first sightings (k-mers whose bits were not all
// set) is the distinct k-mer count less the false positives — reported as an estimate.
#pragma once

#include <algorithm>
#include <array>
#include <span>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "fragments.hpp"
#include "kmer.hpp"
#include "owner_exchange.hpp"
#include "shoal/containers/bloom_filter.hpp"
#include "shoal/local/flat_table.hpp"

namespace contig {

/// One occurrence of a canonical k-mer with its neighbouring bases in the canonical orientation (0-3 = ACGT,
/// 4 = none: the fragment ends there).
struct kmer_sighting {
  kmer_code kmer;
  std::uint8_t left = 4, right = 4;
};

/// Walks the k-mers of a fragment: canonical code, neighbouring bases in that orientation.
template <class Visit>
void for_each_kmer(std::string_view fragment, std::size_t k, Visit&& visit) {
  if (fragment.size() < k) return;
  const u128 mask = kmer_mask(k);
  const unsigned top = static_cast<unsigned>(2 * (k - 1));
  u128 fwd = 0, rev = 0;
  // A C G T -> 0 1 2 3 without branches (bits 1-2 of the letter are 0 1 3 2; x ^ (x >> 1) swaps the last two):
  // the bases are random, so a compare chain would mispredict on most of them.
  auto code = [](char b) -> std::uint8_t {
    const unsigned x = (static_cast<unsigned char>(b) >> 1) & 3;
    return static_cast<std::uint8_t>(x ^ (x >> 1));
  };
  for (std::size_t i = 0; i < fragment.size(); ++i) {
    const std::uint8_t c = code(fragment[i]);
    fwd = ((fwd << 2) | c) & mask;
    rev = (rev >> 2) | (static_cast<u128>(3 - c) << top);
    if (i + 1 < k) continue;
    const std::size_t start = i + 1 - k;
    const std::uint8_t before = start > 0 ? code(fragment[start - 1]) : 4;
    const std::uint8_t after = i + 1 < fragment.size() ? code(fragment[i + 1]) : 4;
    // The canonical orientation, chosen with masks (which strand is smaller is a coin toss per k-mer); on the
    // reverse strand the sides swap and the bases complement (3 - c; 4, no base, stays 4).
    const bool forward = fwd < rev;
    const u128 pick = -static_cast<u128>(forward);
    const auto complement_side = [](std::uint8_t b) { return static_cast<std::uint8_t>(b == 4 ? 4 : 3 - b); };
    visit(kmer_sighting{code_of((fwd & pick) | (rev & ~pick)), forward ? before : complement_side(after),
                        forward ? after : complement_side(before)});
  }
}

/// Occurrences of a k-mer and the bases seen on each side (canonical orientation), saturating at 65535.
struct kmer_tally {
  std::uint32_t count = 0;
  std::array<std::uint16_t, 4> left{}, right{};
  void add(const kmer_sighting& s) {
    ++count;
    if (s.left < 4 && left[s.left] != UINT16_MAX) ++left[s.left];
    if (s.right < 4 && right[s.right] != UINT16_MAX) ++right[s.right];
  }
};

/// A side's extension: the one base seen at least min_count times, X if none is, F if two or more are.
inline char extension_of(const std::array<std::uint16_t, 4>& seen, std::uint32_t min_count) {
  char ext = 'X';
  for (int b = 0; b < 4; ++b) {
    if (seen[static_cast<std::size_t>(b)] < min_count) continue;
    ext = ext == 'X' ? "ACGT"[b] : 'F';
  }
  return ext;
}

/// A solid k-mer: canonical, its extensions and its count.
struct counted_kmer {
  kmer_entry entry;
  std::uint32_t count = 0;
  /// `KMER<TAB>LR<TAB>count`, the UFX line.
  std::string ufx_line(std::size_t k) const {
    return entry.kmer.to_string(k) + '\t' + entry.ext.left + entry.ext.right + '\t' + std::to_string(count);
  }
};

struct kmer_counter_options {
  double bloom_bits_per_kmer = 4;          // Bloom filter bits per k-mer occurrence in the input (all ranks)
  unsigned bloom_hashes = 5;               // bits each k-mer sets in its 64-bit block
  std::size_t queue_kmers = std::size_t{1} << 17;  // capacity of each rank's exchange queue (k-mer occurrences)
};

/// k-mer occurrences in a rank's fragments.
inline std::uint64_t kmer_occurrences(const read_fragments& reads, std::size_t k) {
  std::uint64_t n = 0;
  for (std::size_t f = 0; f < reads.size(); ++f) n += reads[f].size() - k + 1;
  return n;
}

/// Collective construction and passes.
class kmer_counter {
 public:
  /// Collective. `occurrences` is the number of k-mer occurrences of all ranks' reads (sizes the Bloom filter and,
  /// for small inputs, the exchange queues).
  kmer_counter(std::size_t k, std::uint64_t occurrences, kmer_counter_options opts = {})
      : k_(k),
        bloom_(bloom_bits(occurrences, opts), opts.bloom_hashes),
        exchange_(chunk_kmers,
                  static_cast<std::size_t>(std::clamp<std::uint64_t>(occurrences, 1, opts.queue_kmers))) {}

  /// Collective, pass 1: every k-mer occurrence to its owner's Bloom filter; seen twice -> into the table. (The
  /// occurrences travel with their sides, unused here: both passes share one exchange, whose construction and
  /// destruction are collective.)
  void sight(const read_fragments& reads) { pass(reads, &kmer_counter::on_sighting, owners::record); }

  /// Collective, pass 2: every occurrence of a k-mer in the table counted with its neighbouring bases.
  void tally(const read_fragments& reads) {
    pass(reads, &kmer_counter::on_tally, owners::replay);
    owners_ = {};
  }

  /// This rank's k-mers counted at least min_count times, with their extensions.
  std::vector<counted_kmer> solid(std::uint32_t min_count) const {
    std::vector<counted_kmer> out;
    table_.for_each([&](const kmer_code& c, const kmer_tally& t) {
      if (t.count < min_count) return;
      out.push_back({kmer_entry{c, extensions{extension_of(t.left, min_count), extension_of(t.right, min_count)}},
                     t.count});
    });
    return out;
  }

  /// k-mers whose Bloom bits were not all set when first sighted here (distinct k-mers less false positives).
  std::uint64_t first_sightings() const { return first_sightings_; }
  /// k-mers in this rank's count table (seen twice or more, and Bloom false positives).
  std::size_t table_size() const { return table_.size(); }
  /// Bytes of this rank's Bloom filter blocks.
  std::size_t bloom_bytes() const {
    const auto p = static_cast<std::size_t>(shoal::size());
    return (bloom_.blocks() + p - 1) / p * sizeof(std::uint64_t);
  }
  /// Bytes of this rank's count table (absl's layout: a power-of-two slot array at <= 7/8 load, one control byte
  /// per slot).
  std::size_t table_bytes() const {
    std::size_t slots = 16;
    while (slots * 7 / 8 < table_.size()) slots *= 2;
    return slots * (sizeof(std::pair<kmer_code, kmer_tally>) + 1);
  }
  /// The most bytes the exchange held at once on this rank (batches, hosted queue, received items, the owner of
  /// every occurrence between the passes).
  std::size_t exchange_bytes() const { return exchange_bytes_; }

 private:
  static constexpr std::size_t prefetch_ahead = 8;

  static constexpr std::size_t chunk_kmers = std::size_t{1} << 15;  // occurrences taken from the reads per turn

  // Owners of the occurrences: pass 1 computes them (a hash each) and, with at most 256 ranks, records them in
  // order (a byte each); pass 2 replays the record instead of hashing again.
  enum class owners { record, replay };

  // Collective: one pass. The k-mer occurrences of the reads, fragment by fragment, stream to their owners
  // (owner_exchange), where `on` applies them.
  void pass(const read_fragments& reads, void (kmer_counter::*on)(const kmer_sighting&), owners mode) {
    const auto mine = kmer_occurrences(reads, k_);
    const bool recording = mode == owners::record && shoal::size() <= 256;
    const bool replaying = mode == owners::replay && owners_.size() == mine;
    if (recording) owners_.reserve(mine);
    std::size_t next = 0;      // the first fragment not yet sent
    std::size_t sighting = 0;  // occurrences sent so far
    exchange_.run(
        [&](std::vector<std::vector<kmer_sighting>>& batches, std::size_t budget) {
          std::size_t added = 0;
          for (; next < reads.size() && added < budget; ++next) {
            for_each_kmer(reads[next], k_, [&](const kmer_sighting& s) {
              const auto owner = replaying ? owners_[sighting] : static_cast<std::size_t>(bloom_.owner(s.kmer));
              if (recording) owners_.push_back(static_cast<std::uint8_t>(owner));
              batches[owner].push_back(s);
              ++sighting;
              ++added;
            });
          }
          return next < reads.size();
        },
        [&](std::span<const kmer_sighting> items) { apply(items, on); });
    exchange_bytes_ = std::max(exchange_bytes_, exchange_.bytes() + owners_.capacity());
  }

  // The owner's side: `on` for each item, with the table slot of the item `prefetch_ahead` places on prefetched.
  void apply(std::span<const kmer_sighting> items, void (kmer_counter::*on)(const kmer_sighting&)) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i + prefetch_ahead < items.size()) table_.prefetch(items[i + prefetch_ahead].kmer);
      (this->*on)(items[i]);
    }
  }

  static std::size_t bloom_bits(std::uint64_t occurrences, const kmer_counter_options& opts) {
    return std::max<std::size_t>(1024, static_cast<std::size_t>(static_cast<double>(occurrences) *
                                                                  opts.bloom_bits_per_kmer));
  }

  // A k-mer already in the table has all its Bloom bits set (it entered the table because they were), so the
  // filter is consulted only for k-mers not in the table: the same outcome, and most occurrences (a k-mer's third
  // and later) cost one table lookup instead of the filter's hashes and block as well.
  void on_sighting(const kmer_sighting& s) {
    if (table_.find(s.kmer)) return;
    if (bloom_.local_insert(s.kmer)) table_.try_emplace(s.kmer);
    else ++first_sightings_;
  }
  void on_tally(const kmer_sighting& s) {
    if (kmer_tally* t = table_.find(s.kmer)) t->add(s);
  }

  std::size_t k_;
  shoal::bloom_filter<kmer_code> bloom_;
  owner_exchange<kmer_sighting> exchange_;
  shoal::local::flat_table<kmer_code, kmer_tally> table_;
  std::uint64_t first_sightings_ = 0;
  std::size_t exchange_bytes_ = 0;
  std::vector<std::uint8_t> owners_;  // the owner of every occurrence, in order (pass 1 to pass 2)
};

}  // namespace contig
