// Workload `hash_map` (BCL Figure 6): fully atomic insert, atomic find, find with promise::find and buffered insert
// (hash_map_buffer, end to end with flush), each as total million operations per second over all ranks. Beside each,
// the same operation hand-written in plain MPI-3 RMA on an MPI_Win_allocate window (the same bucket layout, hash and
// probing); for the buffered insert the per-core limit (one process inserting the same number of keys into an
// absl::flat_hash_map, grown as it fills and reserved for every key) and the ratio to the fully atomic insert (target
// >= 10x). --size = keys per rank. The atomic rows time 50 slices of the keys on shoal's table and the MPI table in
// turns, 5 rounds, the fastest of each slice, with every rank working (rate) and with rank 0 alone (latency; see
// run_hash_map). The buffered insert and its per-core limit run in turns too, 5 rounds, the fastest of each.
#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "bench.hpp"
#include "mpi_window.hpp"
#include "shoal/containers/hash_map_buffer.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

// The plain-MPI reference table: buckets {status, key, value} with the same home bucket and triangular probing. Its
// insert has map semantics like shoal's (a ready bucket's key is read and compared: CAS, then R on an occupied
// bucket), so both sides issue the same MPI operations.
struct mpi_table {
  struct bucket {
    std::uint32_t status;
    std::uint32_t pad;
    std::uint64_t key;
    std::uint64_t value;
  };
  std::size_t per_rank;
  std::size_t total;
  shoal::bench::mpi_window win;

  explicit mpi_table(std::size_t capacity)
      : per_rank((capacity + static_cast<std::size_t>(shoal::size()) - 1) / static_cast<std::size_t>(shoal::size())),
        total(per_rank * static_cast<std::size_t>(shoal::size())), win(per_rank * sizeof(bucket)) {
    std::fill_n(win.local<bucket>(), per_rank, bucket{});
    MPI_Barrier(MPI_COMM_WORLD);
  }
  std::pair<int, std::size_t> home(std::uint64_t key) const {
    const auto slot = static_cast<std::size_t>((static_cast<unsigned __int128>(shoal::hash_value(key)) * total) >> 64);
    return {static_cast<int>(slot / per_rank), slot % per_rank};
  }
  static MPI_Aint at(std::size_t i) { return static_cast<MPI_Aint>(i * sizeof(bucket)); }

  void insert(std::uint64_t key, std::uint64_t value) {
    auto [rank, pos] = home(key);
    const std::uint32_t free_state = 0, reserved = 1, to_ready = 3;
    for (std::size_t i = 0; i < per_rank; ++i) {
      pos = (pos + i) % per_rank;
      std::uint32_t old;
      MPI_Compare_and_swap(&reserved, &free_state, &old, MPI_UINT32_T, rank, at(pos), win.win());
      MPI_Win_flush(rank, win.win());
      if (old != 0) {
        // A map's insert, as shoal's: a ready bucket holding the key ends it (no second copy of a key).
        if ((old & 3) == 2) {
          std::uint64_t there;
          MPI_Get(&there, 8, MPI_BYTE, rank, at(pos) + 8, 8, MPI_BYTE, win.win());
          MPI_Win_flush(rank, win.win());
          if (there == key) return;
        }
        continue;
      }
      const std::uint64_t kv[2] = {key, value};
      MPI_Put(kv, 16, MPI_BYTE, rank, at(pos) + 8, 16, MPI_BYTE, win.win());
      MPI_Win_flush(rank, win.win());
      MPI_Fetch_and_op(&to_ready, &old, MPI_UINT32_T, rank, at(pos), MPI_BXOR, win.win());
      MPI_Win_flush(rank, win.win());
      return;
    }
  }
  bool find_atomic(std::uint64_t key) {
    auto [rank, pos] = home(key);
    const std::uint32_t enter = 4, leave = ~std::uint32_t{3};
    for (std::size_t i = 0; i < per_rank; ++i) {
      pos = (pos + i) % per_rank;
      std::uint32_t old, ignored;
      MPI_Fetch_and_op(&enter, &old, MPI_UINT32_T, rank, at(pos), MPI_SUM, win.win());
      MPI_Win_flush(rank, win.win());
      std::uint64_t kv[2];
      MPI_Get(kv, 16, MPI_BYTE, rank, at(pos) + 8, 16, MPI_BYTE, win.win());
      MPI_Win_flush(rank, win.win());
      MPI_Fetch_and_op(&leave, &ignored, MPI_UINT32_T, rank, at(pos), MPI_SUM, win.win());
      MPI_Win_flush(rank, win.win());
      if ((old & 3) == 0) return false;
      if (kv[0] == key) return true;
    }
    return false;
  }
  bool find_get(std::uint64_t key) {
    auto [rank, pos] = home(key);
    for (std::size_t i = 0; i < per_rank; ++i) {
      pos = (pos + i) % per_rank;
      bucket b;
      MPI_Get(&b, sizeof b, MPI_BYTE, rank, at(pos), sizeof b, MPI_BYTE, win.win());
      MPI_Win_flush_local(rank, win.win());
      if ((b.status & 3) == 0) return false;
      if (b.key == key) return true;
    }
    return false;
  }
};

void run_hash_map(context& ctx) {
  const int np = shoal::size();
  const auto n = ctx.size_or(100000);
  const double total = static_cast<double>(n) * np;
  std::mt19937_64 rng(1234 + static_cast<std::uint64_t>(shoal::rank()));
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = rng();
  const std::size_t capacity = 2 * n * static_cast<std::size_t>(np);
  auto mops = [&](double seconds) { return total / seconds / 1e6; };

  // Fully atomic insert, atomic find, find-only, in slices of the keys: every slice is timed on shoal's table and on
  // the MPI table in turns (which goes first alternates), in `rounds` rounds on fresh tables, and each side keeps its
  // fastest time per slice; a row is the sum over the slices. A slice is a fraction of a millisecond, so on a shared
  // machine some round of each slice runs undisturbed (bench::fastest_timed_pair does the same for single
  // operations), and the two sides of a slice see the same fill of their tables. Rate rows: every rank works at once
  // (total operations per second). Latency rows: rank 0 alone works (its keys, half of them on the other ranks), the
  // others wait in the barrier, so no rank waits for a lock another one holds (Open MPI's osc/sm serves each atomic
  // under a lock per target): the cost of one operation's calls.
  using shoal::bench::rounds;
  const std::size_t slices = std::max<std::size_t>(1, std::min<std::size_t>(50, n));
  auto slice = [&](std::size_t j) {
    const std::size_t from = j * n / slices, to = (j + 1) * n / slices;
    return std::span<const std::uint64_t>(keys).subspan(from, to - from);
  };
  struct sums {
    double insert, find, find_only;
  };
  auto measure = [&](bool every_rank) -> std::pair<sums, sums> {
    const bool active = every_rank || shoal::rank() == 0;
    const double unset = std::numeric_limits<double>::infinity();
    std::vector<double> si(slices, unset), sf(slices, unset), sg(slices, unset);
    std::vector<double> mi(slices, unset), mf(slices, unset), mg(slices, unset);
    for (int r = 0; r < rounds; ++r) {
      shoal::hash_map<std::uint64_t, std::uint64_t> map(capacity);
      mpi_table ref(capacity);
      auto in_turns = [&](std::vector<double>& shoal_best, std::vector<double>& mpi_best, auto shoal_op, auto mpi_op) {
        for (std::size_t j = 0; j < slices; ++j) {
          const auto ks = active ? slice(j) : std::span<const std::uint64_t>();
          auto run_shoal = [&] {
            for (auto k : ks) shoal_op(k);
          };
          auto run_mpi = [&] {
            for (auto k : ks) mpi_op(k);
          };
          double ts, tm;
          if ((j + static_cast<std::size_t>(r)) % 2 == 0) {
            ts = shoal::bench::timed(run_shoal);
            tm = shoal::bench::timed(run_mpi);
          } else {
            tm = shoal::bench::timed(run_mpi);
            ts = shoal::bench::timed(run_shoal);
          }
          shoal_best[j] = std::min(shoal_best[j], ts);
          mpi_best[j] = std::min(mpi_best[j], tm);
        }
      };
      in_turns(si, mi, [&](std::uint64_t k) { map.insert(k, k); }, [&](std::uint64_t k) { ref.insert(k, k); });
      in_turns(sf, mf, [&](std::uint64_t k) { map.find(k); }, [&](std::uint64_t k) { ref.find_atomic(k); });
      in_turns(
          sg, mg, [&](std::uint64_t k) { map.find(k, shoal::promise::find); },
          [&](std::uint64_t k) { ref.find_get(k); });
      shoal::barrier();
    }
    auto sum = [](const std::vector<double>& t) { return std::accumulate(t.begin(), t.end(), 0.0); };
    return {{sum(si), sum(sf), sum(sg)}, {sum(mi), sum(mf), sum(mg)}};
  };
  ctx.progress("atomic insert / find / find promise, every rank, beside the MPI RMA reference");
  const auto [shoal_rate, mpi_rate] = measure(true);
  const double t_insert = shoal_rate.insert;
  ctx.report({.operation = "insert (fully atomic)", .variant = "u64->u64", .value = mops(shoal_rate.insert),
              .unit = "Mops/s", .baseline = "MPI RMA CAS(+get)+put+XOR", .baseline_value = mops(mpi_rate.insert)});
  ctx.report({.operation = "find (fully atomic)", .variant = "u64->u64", .value = mops(shoal_rate.find),
              .unit = "Mops/s", .baseline = "MPI RMA 2 AMO+get", .baseline_value = mops(mpi_rate.find)});
  ctx.report({.operation = "find (promise::find)", .variant = "u64->u64", .value = mops(shoal_rate.find_only),
              .unit = "Mops/s", .baseline = "MPI RMA get", .baseline_value = mops(mpi_rate.find_only)});
  ctx.progress("atomic insert / find / find promise, rank 0 alone, beside the MPI RMA reference");
  const auto [shoal_one, mpi_one] = measure(false);
  auto us = [&](double seconds) { return seconds / static_cast<double>(n) * 1e6; };
  ctx.report({.operation = "insert latency (fully atomic)", .variant = "u64->u64", .value = us(shoal_one.insert),
              .unit = "us", .baseline = "MPI RMA CAS(+get)+put+XOR", .baseline_value = us(mpi_one.insert),
              .direction = better::lower});
  ctx.report({.operation = "find latency (fully atomic)", .variant = "u64->u64", .value = us(shoal_one.find),
              .unit = "us", .baseline = "MPI RMA 2 AMO+get", .baseline_value = us(mpi_one.find),
              .direction = better::lower});
  ctx.report({.operation = "find latency (promise::find)", .variant = "u64->u64", .value = us(shoal_one.find_only),
              .unit = "us", .baseline = "MPI RMA get", .baseline_value = us(mpi_one.find_only),
              .direction = better::lower});

  // Buffered insert, end to end (insert calls + flush), beside the per-core limit (rank 0 alone inserts every rank's
  // keys into one absl::flat_hash_map): in turns, 5 rounds (a fresh table and map each, made and freed outside the
  // clocks), the fastest of each.
  ctx.progress("buffered insert");
  std::vector<std::uint64_t> all;
  if (shoal::rank() == 0) {
    std::mt19937_64 all_rng(99);
    all.resize(static_cast<std::size_t>(total));
    for (auto& k : all) k = all_rng();
  }
  // Beside two per-core limits: the map grown as it fills (a program that does not know the count), and the map
  // reserved for every key first (as shoal's table is sized at construction; the reserve outside the clock, as the
  // table's construction is). Each in turns with its own run of the buffered insert; the fastest of each counts.
  double t_buffered = shoal::bench::never, t_core = shoal::bench::never, t_reserved = shoal::bench::never;
  const shoal::hash_map_buffer_options opts{
      .mailbox_messages = (n * 24 * static_cast<std::size_t>(np)) / shoal::hash_map_buffer_options{}.message_bytes + 8};
  const auto buffered = [&](shoal::hash_map_buffer<std::uint64_t, std::uint64_t>& buffer) {
    for (auto k : keys) buffer.post_insert(k, k);
    buffer.flush();
  };
  for (int round = 0; round < rounds; ++round) {
    for (const bool reserved : {false, true}) {
      shoal::hash_map<std::uint64_t, std::uint64_t> map(capacity);
      shoal::hash_map_buffer buffer(map, opts);
      absl::flat_hash_map<std::uint64_t, std::uint64_t> local;
      if (reserved) local.reserve(all.size());
      shoal::bench::time_in_turns(
          round, t_buffered, reserved ? t_reserved : t_core, [&] { buffered(buffer); },
          [&] {
            for (auto k : all) local.emplace(k, k);
          });
      shoal::barrier();
    }
  }
  ctx.report({.operation = "buffered insert", .variant = "hash_map_buffer", .value = mops(t_buffered), .unit = "Mops/s",
              .baseline = "per-core absl::flat_hash_map", .baseline_value = mops(t_core)});
  ctx.report({.operation = "buffered insert", .variant = "hash_map_buffer", .value = mops(t_buffered), .unit = "Mops/s",
              .baseline = "per-core absl map, reserved", .baseline_value = mops(t_reserved)});
  ctx.report({.operation = "buffered insert", .variant = "vs fully atomic insert", .value = mops(t_buffered),
              .unit = "Mops/s", .baseline = "shoal atomic insert", .baseline_value = mops(t_insert)});
}

const shoal::bench::registrar reg("hash_map", "BCL Fig. 6: hash_map insert/find/find-only/buffered vs MPI RMA",
                                  run_hash_map, /*on_both_paths=*/true);

}  // namespace
