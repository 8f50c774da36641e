// Workload `core`: latency and rate of get / put (8 B, 4 KiB, 1 MiB), fetch_add and compare_exchange, each beside
// the same operation written directly in MPI-3 RMA. Run once per RMA path (shared memory, MPI).
#include <cstdint>
#include <random>
#include <vector>

#include "bench.hpp"
#include "mpi_window.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

struct sized {
  const char* label;
  std::size_t bytes;
  int iterations;
};

void run_core(context& ctx) {
  const int me = shoal::rank();
  const int np = shoal::size();
  const int peer = (me + 1) % np;
  constexpr std::size_t max_bytes = std::size_t{1} << 20;
  const int scale = static_cast<int>(ctx.size_or(200000));

  auto seg = shoal::allocate_collective<std::byte>(max_bytes);
  auto words = shoal::allocate_collective<std::uint64_t>(64);
  shoal::bench::mpi_window ref(max_bytes + 64 * sizeof(std::uint64_t));
  std::vector<std::byte> buf(max_bytes);
  const MPI_Aint word_disp = static_cast<MPI_Aint>(max_bytes);
  for (int i = 0; i < 64; ++i) {
    words[static_cast<std::size_t>(me)].local()[i] = 0;
    ref.local<std::uint64_t>()[max_bytes / 8 + static_cast<std::size_t>(i)] = 0;
  }
  shoal::barrier();

  // Latency: rank 0 alone works against rank 1 (itself at one rank); the others wait.
  auto latency = [&](const std::string& op, const std::string& variant, int iters, auto shoal_op, auto mpi_op) {
    ctx.progress("latency " + op + " " + variant);
    const bool active = me == 0;
    const double ts = shoal::bench::median_timed(3, [&] {
      if (active)
        for (int i = 0; i < iters; ++i) shoal_op();
    });
    const double tm = shoal::bench::median_timed(3, [&] {
      if (active)
        for (int i = 0; i < iters; ++i) mpi_op();
    });
    ctx.report(op + " latency", variant, ts / iters * 1e6, "us", "MPI-3 RMA", tm / iters * 1e6, better::lower);
  };
  // Rate: every rank works against its neighbour at once; total operations per second.
  auto rate = [&](const std::string& op, const std::string& variant, int iters, auto shoal_op, auto mpi_op) {
    ctx.progress("rate " + op + " " + variant);
    const double ts = shoal::bench::median_timed(3, [&] {
      for (int i = 0; i < iters; ++i) shoal_op();
    });
    const double tm = shoal::bench::median_timed(3, [&] {
      for (int i = 0; i < iters; ++i) mpi_op();
    });
    const double total = static_cast<double>(iters) * np;
    ctx.report(op + " rate", variant, total / ts / 1e6, "Mops/s", "MPI-3 RMA", total / tm / 1e6);
  };

  const int target = np > 1 ? 1 : 0;
  const sized sizes[] = {{"8 B", 8, scale}, {"4 KiB", 4096, std::max(1, scale / 4)},
                         {"1 MiB", max_bytes, std::max(1, scale / 200)}};
  for (const auto& s : sizes) {
    auto dst_s = seg[static_cast<std::size_t>(target)];
    latency("get", s.label, s.iterations, [&] { shoal::get(dst_s, buf.data(), s.bytes); }, [&] {
      MPI_Get(buf.data(), static_cast<int>(s.bytes), MPI_BYTE, target, 0, static_cast<int>(s.bytes), MPI_BYTE,
              ref.win());
      MPI_Win_flush(target, ref.win());
    });
    latency("put", s.label, s.iterations, [&] { shoal::put(dst_s, buf.data(), s.bytes); }, [&] {
      MPI_Put(buf.data(), static_cast<int>(s.bytes), MPI_BYTE, target, 0, static_cast<int>(s.bytes), MPI_BYTE,
              ref.win());
      MPI_Win_flush(target, ref.win());
    });
  }
  auto counter = words[static_cast<std::size_t>(target)];
  std::uint64_t one = 1, result = 0;
  latency("fetch_add", "8 B", scale, [&] { shoal::fetch_add(counter, std::uint64_t{1}); }, [&] {
    MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, target, word_disp, MPI_SUM, ref.win());
    MPI_Win_flush(target, ref.win());
  });
  std::uint64_t cmp = 0;
  latency("compare_exchange", "8 B", scale, [&] { shoal::compare_exchange(counter + 1, std::uint64_t{0}, one); }, [&] {
    MPI_Compare_and_swap(&one, &cmp, &result, MPI_UINT64_T, target, word_disp + 8, ref.win());
    MPI_Win_flush(target, ref.win());
  });

  // Rates: each rank targets its neighbour's words (distinct cache lines per origin).
  auto nbr_seg = seg[static_cast<std::size_t>(peer)] + static_cast<std::ptrdiff_t>(me) * 64;
  auto nbr_word = words[static_cast<std::size_t>(peer)] + 8;
  const MPI_Aint nbr_disp = static_cast<MPI_Aint>(me) * 64;
  rate("get", "8 B", scale, [&] { shoal::get(nbr_seg, buf.data(), 8); }, [&] {
    MPI_Get(buf.data(), 8, MPI_BYTE, peer, nbr_disp, 8, MPI_BYTE, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("put", "8 B", scale, [&] { shoal::put(nbr_seg, buf.data(), 8); }, [&] {
    MPI_Put(buf.data(), 8, MPI_BYTE, peer, nbr_disp, 8, MPI_BYTE, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("fetch_add", "8 B", scale, [&] { shoal::fetch_add(nbr_word, std::uint64_t{1}); }, [&] {
    MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, peer, word_disp + 64, MPI_SUM, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("compare_exchange", "8 B", scale, [&] { shoal::compare_exchange(nbr_word + 1, std::uint64_t{0}, one); }, [&] {
    MPI_Compare_and_swap(&one, &cmp, &result, MPI_UINT64_T, peer, word_disp + 72, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  shoal::barrier();
  shoal::deallocate(seg[static_cast<std::size_t>(me)]);
  shoal::deallocate(words[static_cast<std::size_t>(me)]);
}

const shoal::bench::registrar reg("core", "get/put/atomics latency and rate vs plain MPI-3 RMA", run_core,
                                  /*on_both_paths=*/true);

}  // namespace
