// Workload `bloom` (BCL Figure 6): bloom_filter insert (one fetch_or) and find (one get), total million operations
// per second, beside the same operation in plain MPI-3 RMA (MPI_Fetch_and_op BOR + flush; MPI_Get + flush_local) on
// the same block and mask. --size = values per rank.
#include <cstdint>
#include <random>
#include <vector>

#include "bench.hpp"
#include "mpi_window.hpp"
#include "shoal/containers/bloom_filter.hpp"

namespace {

using shoal::bench::context;

void run_bloom(context& ctx) {
  const int np = shoal::size();
  const auto n = ctx.size_or(200000);
  const double total = static_cast<double>(n) * np;
  std::mt19937_64 rng(77 + static_cast<std::uint64_t>(shoal::rank()));
  std::vector<std::uint64_t> values(n);
  for (auto& v : values) v = rng();
  const std::size_t bits = 16 * n * static_cast<std::size_t>(np);
  const unsigned k = 6;
  auto mops = [&](double seconds) { return total / seconds / 1e6; };

  shoal::bloom_filter<std::uint64_t> filter(bits, k);
  ctx.progress("bloom insert");
  const double t_insert = shoal::bench::timed([&] {
    for (auto v : values) filter.insert(v);
  });
  ctx.progress("bloom find");
  const double t_find = shoal::bench::timed([&] {
    for (auto v : values) filter.find(v);
  });

  // Plain MPI: the same block choice and mask, one word per block.
  const std::size_t blocks = filter.blocks();
  const std::size_t per_rank = (blocks + static_cast<std::size_t>(np) - 1) / static_cast<std::size_t>(np);
  shoal::bench::mpi_window win(per_rank * 8);
  std::fill_n(win.local<std::uint64_t>(), per_rank, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  auto where = [&](std::uint64_t v, std::uint64_t& mask) {
    const auto block = static_cast<std::size_t>((static_cast<unsigned __int128>(shoal::hash_value(v, 1)) * blocks) >> 64);
    std::uint64_t bitsrc = shoal::hash_value(v, 2);
    mask = 0;
    for (unsigned i = 0; i < k; ++i, bitsrc >>= 6) mask |= std::uint64_t{1} << (bitsrc & 63);
    return std::pair<int, MPI_Aint>{static_cast<int>(block / per_rank), static_cast<MPI_Aint>((block % per_rank) * 8)};
  };
  ctx.progress("MPI RMA reference");
  const double m_insert = shoal::bench::timed([&] {
    for (auto v : values) {
      std::uint64_t mask, old;
      auto [rank, disp] = where(v, mask);
      MPI_Fetch_and_op(&mask, &old, MPI_UINT64_T, rank, disp, MPI_BOR, win.win());
      MPI_Win_flush(rank, win.win());
    }
  });
  const double m_find = shoal::bench::timed([&] {
    for (auto v : values) {
      std::uint64_t mask, word;
      auto [rank, disp] = where(v, mask);
      MPI_Get(&word, 8, MPI_BYTE, rank, disp, 8, MPI_BYTE, win.win());
      MPI_Win_flush_local(rank, win.win());
    }
  });
  MPI_Barrier(MPI_COMM_WORLD);
  ctx.report({.operation = "bloom insert", .variant = "k=6, 16 bits/value", .value = mops(t_insert), .unit = "Mops/s",
              .baseline = "MPI RMA fetch_and_op BOR", .baseline_value = mops(m_insert)});
  ctx.report({.operation = "bloom find", .variant = "k=6, 16 bits/value", .value = mops(t_find), .unit = "Mops/s",
              .baseline = "MPI RMA get", .baseline_value = mops(m_find)});
}

const shoal::bench::registrar reg("bloom", "BCL Fig. 6: bloom_filter insert/find vs MPI RMA", run_bloom,
                                  /*on_both_paths=*/true);

}  // namespace
