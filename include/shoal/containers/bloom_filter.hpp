// shoal/containers/bloom_filter.hpp — a distributed blocked Bloom filter (BCL §5.4, Putze et al. 2009).
//
// Model: one-sided, distributed. The filter is an array of 64-bit blocks, block-distributed over the ranks. One
// hash of a value picks its block, a second hash picks k bit positions inside it (0..63, drawn independently, so two
// may coincide); the k bits form a 64-bit mask built with 64-bit shifts (BCL shifts a 32-bit int, so bits 32-63 of
// its blocks are never used). Insert sets the mask with one remote fetch_or, whose old value says whether every bit
// was set already; find reads the block with one get.
//
// Operations and costs (A remote atomic, R remote read, B barrier). Who: collective = every rank of the filter's
// team, in the same order; any rank = one rank's call, no other rank takes part; owner only = only the rank that
// holds v's block may call it:
//   bloom_filter(bits, k, opts = {}, team = world())
//                           collective  allocate and clear (bits rounded up to whole 64-bit blocks)   B
//   ~bloom_filter           collective  then each rank frees its blocks (no-op after finalize)         B
//   insert(v)               any rank    fetch_or of the mask; true when v was (probably) present        A
//   find(v)                 any rank    get of the block; true when v is probably present              R
//   local_insert(v)         owner only  a load and a store of its own block (usage_error elsewhere)    local
//   local_prefetch(v)       any rank    a hint before local_insert: starts loading v's block; nothing
//                                       off the owner                                                  local
//   local_blocks()          any rank    a copy of this rank's blocks                                   local
//   owner(v)                any rank    the team rank holding v's block (one hash)                     local
//   bits(), blocks(), k()   any rank    the filter's shape                                             -
//   clear()                 collective  zero every block                                           2B + local
//   expected_false_positive_rate(n)
//                           any rank    the theory of this blocked filter after n distinct inserts    local
//
// False positives: a query is a false positive when its k bits are set in its block. With n values spread over
// b blocks, a block holds i values with probability Poisson(i; n/b); given i, the chance that the query's k
// positions (j distinct ones, P(j) = C(64,j) S(k,j) j! / 64^k) are all among the i*k random set bits is
// sum_l (-1)^l C(j,l) (1 - l/64)^(i k). expected_false_positive_rate() sums this exactly; it is higher than the
// classic (1 - e^(-kn/m))^k of an unblocked filter, most of all for large k and fill.
//
// Concurrency promises: insert and find are fully atomic with respect to each other (a fetch_or is atomic; a get of
// one aligned 64-bit word sees the block before or after each fetch_or). local_insert is the owner-computes form
// (send v to owner(v), e.g. with shoal::post, and insert it there): no remote atomic and no MPI call, on either
// path, but it is not atomic with respect to insert() from other ranks, so a filter takes all its inserts one way
// or the other; find() stays exact once the inserts are complete (after a barrier).
//
// Errors: shoal::usage_error for zero bits or k outside [1, 64], and for local_insert of a value another rank
// owns; shoal::heap_exhausted when the blocks do not fit (raise SHOAL_HEAP_SIZE).
//
// Example:
//   shoal::bloom_filter<std::string> seen(1 << 24, 6);   // collective: 16 Mbit, 6 bits per value
//   bool was_there = seen.insert("ACGT");                 // one fetch_or
//   shoal::barrier();
//   if (seen.find("ACGT")) { ... }                        // one get
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/containers/detail/fixed_divisor.hpp"
#include "shoal/core/registration.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/hash.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/rma.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// Options of a bloom_filter (every field defaulted).
struct bloom_filter_options {
  /// Seed of the block and bit hashes; any value, the same on every rank.
  std::uint64_t seed = 0x6a09e667f3bcc909ull;
};

template <hashable T>
class bloom_filter {
 public:
  static constexpr unsigned block_bits = 64;

  /// Collective over `team`: a filter of at least `bits` bits; each value sets `k` bits of its block.
  bloom_filter(std::size_t bits, unsigned k, bloom_filter_options opts = {},
               const shoal::team& team = shoal::world())
      : reg_(team, "shoal::bloom_filter"), k_(k), seed_(opts.seed) {
    if (bits == 0) throw usage_error("shoal::bloom_filter: bits must be positive");
    if (k == 0 || k > block_bits) throw usage_error("shoal::bloom_filter: k must be in [1, 64]");
    const auto p = static_cast<std::size_t>(team.size());
    blocks_ = (bits + block_bits - 1) / block_bits;
    per_rank_ = (blocks_ + p - 1) / p;
    by_rank_ = detail::fixed_divisor(per_rank_);
    parts_ = reg_.allocate_collective<std::uint64_t>(per_rank_);
    own_ = parts_[static_cast<std::size_t>(reg_.rank())].local();
    local_clear();
    team.barrier();
  }
  bloom_filter(bloom_filter&& o) noexcept
      : reg_(std::move(o.reg_)), k_(o.k_), seed_(o.seed_), blocks_(o.blocks_), per_rank_(o.per_rank_),
        by_rank_(o.by_rank_), parts_(std::exchange(o.parts_, {})), own_(std::exchange(o.own_, nullptr)) {}
  bloom_filter(const bloom_filter&) = delete;
  bloom_filter& operator=(const bloom_filter&) = delete;
  bloom_filter& operator=(bloom_filter&&) = delete;

  std::size_t bits() const { return blocks_ * block_bits; }
  const shoal::team& team() const noexcept { return reg_.team(); }
  /// The team rank that holds v's block.
  int owner(const T& v) const { return static_cast<int>(by_rank_.quotient(block_of(hash_value(v, seed_)))); }
  std::size_t blocks() const { return blocks_; }
  unsigned k() const { return k_; }

  /// Adds v. Returns true when all of v's bits were set before (v was probably present).
  bool insert(const T& v) {
    const location l = locate(v);
    return (fetch_or(at(l), l.mask) & l.mask) == l.mask;
  }

  /// Owner-side insert (see the header comment): v's block must be on the calling rank. Returns true when all of
  /// v's bits were set before.
  bool local_insert(const T& v) {
    const location l = locate(v);
    if (l.rank != static_cast<std::size_t>(reg_.rank())) {
      throw usage_error("shoal::bloom_filter::local_insert on rank " + std::to_string(reg_.rank()) +
                        " of a value owned by rank " + std::to_string(l.rank) +
                        "; send it to owner(v) and insert it there, or use insert(v)");
    }
    std::atomic_ref<std::uint64_t> block(own_[l.index]);
    const std::uint64_t old = block.load(std::memory_order_relaxed);
    if ((old & l.mask) == l.mask) return true;
    block.store(old | l.mask, std::memory_order_relaxed);
    return false;
  }

  /// A hint before local_insert(v) on v's owner: starts loading v's block into the cache (does nothing elsewhere).
  void local_prefetch(const T& v) const {
    const std::size_t block = block_of(hash_value(v, seed_));
    const std::size_t r = by_rank_.quotient(block);
    if (r == static_cast<std::size_t>(reg_.rank())) __builtin_prefetch(own_ + (block - r * per_rank_), 1);
  }

  /// True when v is probably present; false means certainly absent.
  bool find(const T& v) const {
    const location l = locate(v);
    return (get(at(l)) & l.mask) == l.mask;
  }

  /// Collective: empties the filter.
  void clear() {
    reg_.check();
    team().barrier();
    local_clear();
    team().barrier();
  }

  /// This rank's blocks (read locally; exact when no insert is in flight).
  std::vector<std::uint64_t> local_blocks() const {
    reg_.check();
    const auto me = static_cast<std::size_t>(reg_.rank());
    const auto first = me * per_rank_;
    const auto n = first >= blocks_ ? 0 : std::min(per_rank_, blocks_ - first);
    return std::vector<std::uint64_t>(own_, own_ + n);
  }

  /// The false-positive rate theory predicts for this filter after n distinct inserts (see the header comment).
  double expected_false_positive_rate(std::size_t n) const { return blocked_false_positive_rate(n, blocks_, k_); }

  /// The false-positive rate of a blocked filter of `blocks` 64-bit blocks and k bits per value after n inserts.
  static double blocked_false_positive_rate(std::size_t n, std::size_t blocks, unsigned k) {
    const double B = block_bits;
    // P(j distinct positions among k draws) = C(B, j) S(k, j) j! / B^k, by the recurrence on draws.
    std::vector<double> distinct(k + 1, 0.0);
    distinct[0] = 1.0;
    for (unsigned draw = 0; draw < k; ++draw) {
      std::vector<double> next(k + 1, 0.0);
      for (unsigned j = 0; j <= draw; ++j) {
        next[j] += distinct[j] * (j / B);
        next[j + 1] += distinct[j] * ((B - j) / B);
      }
      distinct = std::move(next);
    }
    // P(query bits all set | i values in the block), inclusion-exclusion over the j distinct query positions.
    auto inner = [&](double set_draws) {
      double total = 0;
      for (unsigned j = 1; j <= k; ++j) {
        double all_set = 0, binom = 1;
        for (unsigned l = 0; l <= j; ++l) {
          all_set += ((l % 2) ? -binom : binom) * std::pow(1.0 - l / B, set_draws);
          binom = binom * (j - l) / (l + 1);
        }
        total += distinct[j] * all_set;
      }
      return total;
    };
    const double lambda = static_cast<double>(n) / static_cast<double>(blocks);
    const auto last = static_cast<std::size_t>(lambda + 12 * std::sqrt(lambda) + 30);
    double fpr = 0, poisson = std::exp(-lambda);
    for (std::size_t i = 0; i <= last; ++i) {
      fpr += poisson * inner(static_cast<double>(i * k));
      poisson *= lambda / static_cast<double>(i + 1);
    }
    return fpr;
  }

 private:
  /// A value's block (team rank, index in that rank's part) and its bits in the block.
  struct location {
    std::size_t rank;
    std::size_t index;
    std::uint64_t mask;
  };

  std::size_t block_of(std::uint64_t h) const {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(h) * blocks_) >> 64);
  }

  location locate(const T& v) const {
    reg_.check();
    const std::size_t block = block_of(hash_value(v, seed_));
    const std::size_t r = by_rank_.quotient(block);
    std::uint64_t mask = 0;
    std::uint64_t bits = 0;
    for (unsigned i = 0; i < k_; ++i) {
      if (i % 10 == 0) bits = hash_value(v, seed_ + 1 + i / 10);  // ten 6-bit positions per hash
      mask |= std::uint64_t{1} << (bits & 63);
      bits >>= 6;
    }
    return {r, block - r * per_rank_, mask};
  }
  global_ptr<std::uint64_t> at(const location& l) const {
    return parts_[l.rank] + static_cast<std::ptrdiff_t>(l.index);
  }

  void local_clear() {
    std::memset(own_, 0, per_rank_ * sizeof(std::uint64_t));
  }

  registration reg_;
  unsigned k_;
  std::uint64_t seed_;
  std::size_t blocks_ = 0;
  std::size_t per_rank_ = 0;
  detail::fixed_divisor by_rank_;  // block -> owner without a division instruction
  std::vector<global_ptr<std::uint64_t>> parts_;
  std::uint64_t* own_ = nullptr;  // this rank's part, parts_[rank].local()
};

}  // namespace shoal
