// apps/contig/assemble.hpp — distributed contig generation (BCL §8.2): the k-mer table is built through
// hash_map_buffer (insert phase), then walked (walk.hpp) with the find-only promise, many walks in flight whose next
// k-mers are found together (hash_map::find_many: prefetched on shared memory, gets in flight at once elsewhere)
// (traversal phase). Collective.
#pragma once

#include <mpi.h>

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kmer.hpp"
#include "walk.hpp"
#include "shoal/containers/hash_map_buffer.hpp"

namespace contig {

struct assembly {
  std::vector<std::string> contigs;  // found by this rank (every contig is found by exactly one rank)
  std::size_t total_kmers = 0;        // distinct k-mers in the table
  double insert_seconds = 0;
  double traverse_seconds = 0;
  std::uint64_t lookups = 0;          // finds issued by this rank
};

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Collective: assembles the k-mers every rank passes (each rank its share of the input; k the same everywhere).
/// `starting(phase)` is called as each phase ("k-mer table", "walk") starts.
inline assembly assemble(std::size_t k, const std::vector<kmer_entry>& mine,
                         shoal::hash_map_buffer_options buffer_opts = {},
                         const std::function<void(const char*)>& starting = {}) {
  assembly out;
  if (starting) starting("k-mer table");
  const auto all = shoal::allreduce(mine.size(), shoal::op::sum{});
  shoal::hash_map<kmer_code, extensions> table(2 * all + 64);  // collective: every rank has it on return
  auto t0 = std::chrono::steady_clock::now();
  {
    shoal::hash_map_buffer buffer(table, buffer_opts);
    for (const auto& e : mine) buffer.post_insert(e.kmer, e.ext);
    out.total_kmers = buffer.flush();
  }
  out.insert_seconds = shoal::allreduce(seconds_since(t0), shoal::op::max{});  // flush() completed the table

  if (starting) starting("walk");
  t0 = std::chrono::steady_clock::now();
  walker walk(k, [&](std::span<const kmer_code> keys, std::span<std::optional<extensions>> out) {
    table.find_many(keys, out);  // promise::find: the walk only reads the table
  });
  out.contigs = walk.contigs_from(mine);
  out.lookups = walk.lookups();
  out.traverse_seconds = shoal::allreduce(seconds_since(t0), shoal::op::max{});  // every walk is done
  return out;
}

}  // namespace contig
