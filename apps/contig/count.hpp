// apps/contig/count.hpp — distributed k-mer counting with a Bloom filter (HipMer's scheme) on shoal's active
// messages, and the extensions of the solid k-mers.
//
// Every canonical k-mer has one owner: the rank that holds its block of the shoal::bloom_filter
// (bloom_filter::owner). Ranks send the k-mer occurrences of their reads to their owners with shoal::post, in
// batches of up to `batch_size` per owner (one message each; the AM layer packs the messages to one destination
// into one MPI send); the owner applies a batch to its own Bloom blocks (bloom_filter::local_insert: a load and a
// store, no remote atomic and no MPI call on either RMA path) and its local count table (shoal::local::flat_table),
// one k-mer at a time in arrival order, prefetching the Bloom block and table slot of the k-mer `prefetch_ahead`
// places further on (the work is cache misses, and one message per k-mer could not look ahead). Two passes over the reads (held in memory):
//   1. sighting:  the owner inserts the k-mer into the Bloom filter; if it was (probably) there already, the k-mer
//                 enters the count table (count 0). Singletons, most of them sequencing errors, stay out.
//   2. tallying:  the owner counts every occurrence of a k-mer that is in the table, with the base on each side in
//                 the canonical orientation (left and right tallies of A, C, G, T).
// Exactness: every k-mer occurring at least twice is in the table (its second sighting finds its bits set, whatever
// the order of arrival), and pass 2 counts all its occurrences, so its count and tallies are exact and independent
// of the number of ranks. A Bloom false positive lets a once-seen k-mer into the table with its exact count of 1,
// which min-count >= 2 drops; it costs memory only. The number of first sightings (k-mers whose bits were not all
// set) is the distinct k-mer count less the false positives — reported as an estimate.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "kmer.hpp"
#include "fragments.hpp"
#include "shoal/am.hpp"
#include "shoal/containers/bloom_filter.hpp"
#include "shoal/local/flat_table.hpp"

namespace contig {

/// A k-mer packed 2 bits per base, first base most significant, so that numeric order is lexicographic order
/// (the canonical form is the smaller of a k-mer and its reverse complement, as strings). k <= 64.
struct kmer_code {
  std::uint64_t hi = 0, lo = 0;
  friend bool operator==(const kmer_code&, const kmer_code&) = default;
  template <class H>
  friend H AbslHashValue(H h, const kmer_code& c) {
    return H::combine(std::move(h), c.hi, c.lo);
  }
  std::string to_string(std::size_t k) const {
    const unsigned __int128 v = (static_cast<unsigned __int128>(hi) << 64) | lo;
    std::string s(k, 'A');
    for (std::size_t i = 0; i < k; ++i) s[i] = "ACGT"[static_cast<unsigned>(v >> (2 * (k - 1 - i))) & 3];
    return s;
  }
};

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
  using u128 = unsigned __int128;
  const u128 mask = k == 64 ? ~u128{0} : (u128{1} << (2 * k)) - 1;
  const unsigned top = static_cast<unsigned>(2 * (k - 1));
  u128 fwd = 0, rev = 0;
  auto code = [](char b) -> std::uint8_t { return b == 'A' ? 0 : b == 'C' ? 1 : b == 'G' ? 2 : 3; };
  for (std::size_t i = 0; i < fragment.size(); ++i) {
    const std::uint8_t c = code(fragment[i]);
    fwd = ((fwd << 2) | c) & mask;
    rev = (rev >> 2) | (static_cast<u128>(3 - c) << top);
    if (i + 1 < k) continue;
    const std::size_t start = i + 1 - k;
    const std::uint8_t before = start > 0 ? code(fragment[start - 1]) : 4;
    const std::uint8_t after = i + 1 < fragment.size() ? code(fragment[i + 1]) : 4;
    kmer_sighting s;
    if (fwd < rev) {
      s = {{static_cast<std::uint64_t>(fwd >> 64), static_cast<std::uint64_t>(fwd)}, before, after};
    } else {  // reverse complement: sides swap, bases complement (3 - c)
      s = {{static_cast<std::uint64_t>(rev >> 64), static_cast<std::uint64_t>(rev)},
           static_cast<std::uint8_t>(after == 4 ? 4 : 3 - after), static_cast<std::uint8_t>(before == 4 ? 4 : 3 - before)};
    }
    visit(s);
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
  ufx_record record;
  std::uint32_t count = 0;
};

struct kmer_counter_options {
  double bloom_bits_per_kmer = 4;  // Bloom filter bits per k-mer occurrence in the input (all ranks)
  unsigned bloom_hashes = 5;       // bits each k-mer sets in its 64-bit block
};

/// Collective construction and passes; one counter may exist at a time (its handlers find it through `active_`).
class kmer_counter {
 public:
  /// Collective. `occurrences` is the number of k-mer occurrences of all ranks' reads (sizes the Bloom filter).
  kmer_counter(std::size_t k, std::uint64_t occurrences, kmer_counter_options opts = {})
      : k_(k), bloom_(bloom_bits(occurrences, opts), opts.bloom_hashes) {
    if (active_) throw std::logic_error("contig::kmer_counter: only one counter may exist at a time");
    active_ = this;
    shoal::barrier();  // every rank has its counter before anyone sends to it
  }
  ~kmer_counter() { active_ = nullptr; }
  kmer_counter(const kmer_counter&) = delete;
  kmer_counter& operator=(const kmer_counter&) = delete;

  /// Collective, pass 1: every k-mer occurrence to its owner's Bloom filter; seen twice -> into the table.
  void sight(const read_fragments& reads) {
    send_all<kmer_code>(
        reads, [](const kmer_sighting& s) { return s.kmer; },
        [](int owner, const std::vector<kmer_code>& batch) {
          shoal::post(owner, [](std::vector<kmer_code> b) { active_->apply(b, &kmer_counter::on_sighting); }, batch);
        });
  }

  /// Collective, pass 2: every occurrence of a k-mer in the table counted with its neighbouring bases.
  void tally(const read_fragments& reads) {
    send_all<kmer_sighting>(
        reads, [](const kmer_sighting& s) { return s; },
        [](int owner, const std::vector<kmer_sighting>& batch) {
          shoal::post(owner, [](std::vector<kmer_sighting> b) { active_->apply(b, &kmer_counter::on_tally); }, batch);
        });
  }

  /// This rank's k-mers counted at least min_count times, with their extensions.
  std::vector<counted_kmer> solid(std::uint32_t min_count) const {
    std::vector<counted_kmer> out;
    table_.for_each([&](const kmer_code& c, const kmer_tally& t) {
      if (t.count < min_count) return;
      out.push_back({ufx_record{c.to_string(k_), extensions{extension_of(t.left, min_count),
                                                            extension_of(t.right, min_count)}},
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

 private:
  static constexpr std::size_t batch_size = 256;
  static constexpr std::size_t prefetch_ahead = 8;

  // Sends every k-mer occurrence of the reads (as `pick` makes it) to its owner in batches (`ship(owner, batch)`),
  // serving arrived messages every `progress_every` occurrences (so that queues, messages to this rank included,
  // stay small and warm in cache), then waits for quiescence.
  template <class Item, class Pick, class Ship>
  void send_all(const read_fragments& reads, Pick pick, Ship ship) {
    constexpr std::size_t progress_every = 1 << 12;
    std::vector<std::vector<Item>> batches(static_cast<std::size_t>(shoal::size()));
    for (auto& b : batches) b.reserve(batch_size);
    std::size_t sent = 0;
    for (std::size_t f = 0; f < reads.size(); ++f) {
      for_each_kmer(reads[f], k_, [&](const kmer_sighting& s) {
        const int owner = bloom_.owner(s.kmer);
        auto& batch = batches[static_cast<std::size_t>(owner)];
        batch.push_back(pick(s));
        if (batch.size() == batch_size) {
          ship(owner, batch);
          batch.clear();
        }
        if (++sent % progress_every == 0) shoal::progress();
      });
    }
    for (std::size_t r = 0; r < batches.size(); ++r) {
      if (!batches[r].empty()) ship(static_cast<int>(r), batches[r]);
    }
    shoal::am::barrier();
  }

  // The owner's side of a batch: `on` for each item, the Bloom block and table slot of a later one prefetched.
  template <class Item>
  void apply(const std::vector<Item>& batch, void (kmer_counter::*on)(const Item&)) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (i + prefetch_ahead < batch.size()) {
        const kmer_code& later = code_of(batch[i + prefetch_ahead]);
        if constexpr (std::is_same_v<Item, kmer_code>) bloom_.local_prefetch(later);  // pass 1 only
        table_.prefetch(later);
      }
      (this->*on)(batch[i]);
    }
  }
  static const kmer_code& code_of(const kmer_code& c) { return c; }
  static const kmer_code& code_of(const kmer_sighting& s) { return s.kmer; }

  static std::size_t bloom_bits(std::uint64_t occurrences, const kmer_counter_options& opts) {
    return std::max<std::size_t>(1024, static_cast<std::size_t>(static_cast<double>(occurrences) *
                                                                  opts.bloom_bits_per_kmer));
  }

  void on_sighting(const kmer_code& c) {
    if (bloom_.local_insert(c)) table_.try_emplace(c);
    else ++first_sightings_;
  }
  void on_tally(const kmer_sighting& s) {
    if (kmer_tally* t = table_.find(s.kmer)) t->add(s);
  }

  static inline kmer_counter* active_ = nullptr;
  std::size_t k_;
  shoal::bloom_filter<kmer_code> bloom_;
  shoal::local::flat_table<kmer_code, kmer_tally> table_;
  std::uint64_t first_sightings_ = 0;
};

/// k-mer occurrences in a rank's fragments.
inline std::uint64_t kmer_occurrences(const read_fragments& reads, std::size_t k) {
  std::uint64_t n = 0;
  for (std::size_t f = 0; f < reads.size(); ++f) n += reads[f].size() - k + 1;
  return n;
}

}  // namespace contig
