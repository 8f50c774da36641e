// Tests of shoal-contig's reads path below the command line (apps/contig): non-ACGT bases split a read, and no
// k-mer spans them, from reading (reads.hpp) through the distributed count (count.hpp), at every rank count.
//
// tests/data/contig_nonacgt.{fq,fa} hold six reads of two 30-base fragments L and R joined by non-ACGT bases: N,
// the reverse strand, lower case n with an 8-base fragment (shorter than k) between Ns, IUPAC codes, an N at the
// start of a FASTA line, gap characters. contig_nonacgt.expected.ufx is what a count at k = 11, min count 2 must
// give: the k-mers of L and R only, each seen 6 times, X on the sides where a non-ACGT base cut the read (written
// by a separate script, not by this code).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "count.hpp"
#include "owner_exchange.hpp"
#include "reads.hpp"
#include "report.hpp"
#include "shoal/shoal.hpp"
#include "shoal_test.hpp"

namespace {

const std::string data_dir = CONTIG_TEST_DATA;
const std::vector<std::string> files = {data_dir + "/contig_nonacgt.fq", data_dir + "/contig_nonacgt.fa"};
const std::string L = "TGGGCGAACTTGGTCACCCCGAAGTATCTG";
const std::string R = "ATGAGATGATCACCGAGAGCCGGGGCGAGG";
constexpr std::size_t k = 11;

std::vector<std::string> fragments_of(const contig::read_fragments& reads) {
  std::vector<std::string> out;
  for (std::size_t f = 0; f < reads.size(); ++f) out.emplace_back(reads[f]);
  return out;
}

TEST(ContigReads, NonAcgtBasesSplitReads) {
  const auto mine = contig::read_share(files, k, shoal::rank(), shoal::size());
  auto all = contig::gather_strings(fragments_of(mine));
  const auto reads = shoal::allreduce(mine.reads, shoal::op::sum{});
  const auto bases = shoal::allreduce(mine.read_bases, shoal::op::sum{});
  EXPECT_EQ(reads, 6u);
  EXPECT_EQ(bases, 61u + 61u + 71u + 63u + 61u + 62u);  // every character of every read, the non-ACGT ones too
  if (shoal::rank() == 0) {
    std::sort(all.begin(), all.end());
    std::vector<std::string> want = {L, L, L, L, L, R, R, R, R, R, contig::reverse_complement(L),
                                     contig::reverse_complement(R)};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(all, want);  // the 8-base fragment between Ns (shorter than k) is dropped
  }
}

TEST(ContigReads, NoKmerSpansANonAcgtBase) {
  const auto mine = contig::read_share(files, k, shoal::rank(), shoal::size());
  const auto occurrences = shoal::allreduce(contig::kmer_occurrences(mine, k), shoal::op::sum{});
  EXPECT_EQ(occurrences, 12u * (30 - k + 1));
  std::vector<std::string> lines;
  std::uint64_t counted = 0;
  {
    contig::kmer_counter counter(k, occurrences);
    counter.sight(mine);
    counter.tally(mine);
    for (const auto& c : counter.solid(2)) lines.push_back(c.ufx_line(k));
    counted = shoal::allreduce(static_cast<std::uint64_t>(counter.table_size()), shoal::op::sum{});
  }
  EXPECT_EQ(counted, 40u);  // every k-mer is seen 6 times: none is a once-seen Bloom false positive
  auto all = contig::gather_strings(lines);
  if (shoal::rank() != 0) return;
  std::sort(all.begin(), all.end());
  std::vector<std::string> want;
  std::ifstream in(data_dir + "/contig_nonacgt.expected.ufx");
  for (std::string line; std::getline(in, line);) want.push_back(line);
  ASSERT_EQ(want.size(), 40u);
  EXPECT_EQ(all, want);

  // The same, stated directly: the k-mers on both sides are counted, and none of a read joined through the cut.
  std::set<std::string> kmers;
  for (const auto& l : all) kmers.insert(l.substr(0, k));
  for (const auto& side : {L, R}) {
    for (std::size_t i = 0; i + k <= side.size(); ++i) EXPECT_EQ(kmers.count(contig::canonical(side.substr(i, k))), 1u);
  }
  for (char joint : std::string("ACGT")) {
    const std::string joined = L + joint + R;
    for (std::size_t i = L.size() + 1 - k; i <= L.size(); ++i) {
      EXPECT_EQ(kmers.count(contig::canonical(joined.substr(i, k))), 0u) << joined.substr(i, k);
    }
  }
}

// The exchange of the counter (owner_exchange.hpp) below the counter: every item reaches its owner exactly once
// when most items crowd onto one owner (the last rank gets 3 in 4 of every other rank's items) whose queue holds one
// piece and who applies slowly, so that pushes find its queue full and pieces wait for later turns; and the last
// rank, with nothing to send, still takes part.
TEST(ContigExchange, EveryItemReachesItsOwnerOnceWhenOneOwnerIsCrowded) {
  const auto me = static_cast<std::uint64_t>(shoal::rank());
  const auto p = static_cast<std::uint64_t>(shoal::size());
  constexpr std::uint64_t items = 60000;
  auto sent_by = [p](std::uint64_t r) { return r == p - 1 && p > 1 ? std::uint64_t{0} : items; };
  auto owner_of = [p](std::uint64_t v) { return v % 4 != 3 ? p - 1 : (v / 4) % p; };
  std::vector<std::uint64_t> got;
  std::uint64_t full = 0;
  {
    contig::owner_exchange<std::uint64_t> exchange(/*chunk_items=*/20000, /*queue_items=*/1000, /*piece_items=*/1000);
    std::uint64_t next = 0;
    exchange.run(
        [&](std::vector<std::vector<std::uint64_t>>& batches, std::size_t budget) {
          for (std::size_t added = 0; next < sent_by(me) && added < budget; ++next, ++added) {
            const std::uint64_t v = me * 1000000 + next;
            batches[owner_of(v)].push_back(v);
          }
          return next < sent_by(me);
        },
        [&](std::span<const std::uint64_t> batch) {
          if (me == p - 1 && p > 1) std::this_thread::sleep_for(std::chrono::microseconds(200));
          got.insert(got.end(), batch.begin(), batch.end());
        });
    full = shoal::allreduce(exchange.full_pushes(), shoal::op::sum{});
  }
  std::sort(got.begin(), got.end());
  std::vector<std::uint64_t> want;
  for (std::uint64_t r = 0; r < p; ++r) {
    for (std::uint64_t i = 0; i < sent_by(r); ++i) {
      if (owner_of(r * 1000000 + i) == me) want.push_back(r * 1000000 + i);
    }
  }
  EXPECT_EQ(got, want);  // sorted: each of this rank's items once, none of another's
  // 15000 items of each chunk go, in pieces of 1000, to the crowded queue of 1000: where the senders reach it through
  // shared memory, pushes found it full. (On the MPI and message paths a push may complete only as its owner makes progress, which is also when the
  // owner drains, so there a full queue cannot be forced from here.)
  // Every rank decides alike: the crowded owner itself always sees shared memory, so ask the senders.
  const bool sender_on_shared_memory =
      me != p - 1 && shoal::path_to(static_cast<int>(p - 1)) == shoal::rma_path::shared_memory;
  if (shoal::allreduce(std::uint64_t{sender_on_shared_memory}, shoal::op::max{}) != 0) {
    EXPECT_GT(full, 0u);
  }
}

}  // namespace
