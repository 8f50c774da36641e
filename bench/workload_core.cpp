// Workload `core`: latency and rate of get / put (8 B, 4 KiB, 1 MiB), fetch_add and compare_exchange, each beside
// the same operation written directly in MPI-3 RMA, the two measured in turns (11 short rounds each, the fastest of
// each: bench.hpp, fastest_timed_pair). Run once per RMA path (shared memory, MPI).
// Across hosts, every variant names the path its target takes (`same-host`, `cross-host`): rank 0 measures latency
// against a rank of its own host (if any) and against the first rank of another host, and the cross-host 8 B rows
// also stand beside an MPI_Send/MPI_Recv ping-pong between the same two ranks. Where MPI cannot make a window
// across the hosts (Open MPI's default one-sided component over TCP), the MPI-3 RMA rows are left out.
#include <cstdint>
#include <random>
#include <string>
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

/// Round trip of an 8-byte MPI_Send / MPI_Recv between rank 0 and `target`, in microseconds (collective).
double ping_pong_us(int target, int iters) {
  const int me = shoal::rank();
  std::uint64_t token = 0;
  return shoal::bench::median_timed(3, [&] {
           if (me == 0) {
             for (int i = 0; i < iters; ++i) {
               MPI_Send(&token, 1, MPI_UINT64_T, target, 77, MPI_COMM_WORLD);
               MPI_Recv(&token, 1, MPI_UINT64_T, target, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
             }
           } else if (me == target) {
             for (int i = 0; i < iters; ++i) {
               MPI_Recv(&token, 1, MPI_UINT64_T, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
               MPI_Send(&token, 1, MPI_UINT64_T, 0, 77, MPI_COMM_WORLD);
             }
           }
         }) /
         iters * 1e6;
}

/// The latency targets of rank 0 (collective: rank 0's view): the next rank of its host (itself at one rank) and,
/// across hosts, the first rank of another host.
std::vector<int> latency_targets() {
  const int np = shoal::size();
  const bool hosts = shoal::host_count() > 1;
  std::vector<int> targets;
  for (int t = 1; t < np && targets.empty(); ++t)
    if (!hosts || shoal::same_host(t)) targets.push_back(t);
  if (targets.empty() && !hosts) targets.push_back(0);
  for (int t = 1; t < np && hosts; ++t) {
    if (!shoal::same_host(t)) {
      targets.push_back(t);
      break;
    }
  }
  return shoal::broadcast(targets);
}

void run_core(context& ctx) {
  const int me = shoal::rank();
  const int np = shoal::size();
  const int peer = (me + 1) % np;
  constexpr std::size_t max_bytes = std::size_t{1} << 20;
  const int scale = static_cast<int>(ctx.size_or(200000));
  const bool hosts = shoal::host_count() > 1;
  // Rounds of shoal's operation and of its baseline, in turns, each of a quarter of the iterations: short enough that
  // one of them runs undisturbed on a shared machine (bench::fastest_timed_pair).
  constexpr int reps = 11;

  auto seg = shoal::allocate_collective<std::byte>(max_bytes);
  auto words = shoal::allocate_collective<std::uint64_t>(64);
  shoal::bench::mpi_window ref(max_bytes + 64 * sizeof(std::uint64_t), shoal::bench::mpi_window::no_throw{});
  std::vector<std::byte> buf(max_bytes);
  const MPI_Aint word_disp = static_cast<MPI_Aint>(max_bytes);
  for (int i = 0; i < 64; ++i) {
    words[static_cast<std::size_t>(me)].local()[i] = 0;
    if (ref.ok()) ref.local<std::uint64_t>()[max_bytes / 8 + static_cast<std::size_t>(i)] = 0;
  }
  shoal::barrier();

  // Latency: rank 0 alone works against `target`; the others wait (in a barrier, serving requests). Returns
  // shoal's microseconds per operation; reports it beside MPI-3 RMA where MPI has a window.
  auto latency = [&](const std::string& variant, const std::string& op, int iters, auto shoal_op, auto mpi_op) {
    ctx.progress("latency " + op + " " + variant);
    const bool active = me == 0;
    const int n = std::max(1, iters / 4);  // per round
    auto run_shoal = [&] {
      if (active)
        for (int i = 0; i < n; ++i) shoal_op();
    };
    if (!ref.ok()) return shoal::bench::median_timed(reps, run_shoal) / n * 1e6;
    const auto [ts, tm] = shoal::bench::fastest_timed_pair(reps, run_shoal, [&] {
      if (active)
        for (int i = 0; i < n; ++i) mpi_op();
    });
    ctx.report({.operation = op + " latency", .variant = variant, .value = ts / n * 1e6, .unit = "us",
                .baseline = "MPI-3 RMA", .baseline_value = tm / n * 1e6, .direction = better::lower});
    return ts / n * 1e6;
  };

  std::uint64_t one = 1, result = 0, cmp = 0;
  const sized sizes[] = {{"8 B", 8, scale}, {"4 KiB", 4096, std::max(1, scale / 4)},
                         {"1 MiB", max_bytes, std::max(1, scale / 200)}};
  for (const int target : latency_targets()) {
    const bool cross = hosts && shoal::broadcast(shoal::same_host(target) ? 0 : 1) == 1;
    const std::string where = !hosts ? "" : cross ? "cross-host/" : "same-host/";
    const int div = cross ? 20 : 1;  // across hosts every operation is a network round trip: fewer of them
    // Beside a cross-host 8 B row: the same two ranks' MPI ping-pong (the network's round trip).
    auto beside_ping_pong = [&](const std::string& op, double us, int iters) {
      if (cross) {
        ctx.report({.operation = op + " latency", .variant = where + "8 B", .value = us, .unit = "us",
                    .baseline = "MPI send/recv ping-pong", .baseline_value = ping_pong_us(target, iters),
                    .direction = better::lower});
      }
    };
    for (const auto& s : sizes) {
      const int iters = std::max(1, s.iterations / div);
      auto dst_s = seg[static_cast<std::size_t>(target)];
      const double get_us = latency(where + s.label, "get", iters, [&] { shoal::get(dst_s, buf.data(), s.bytes); }, [&] {
        MPI_Get(buf.data(), static_cast<int>(s.bytes), MPI_BYTE, target, 0, static_cast<int>(s.bytes), MPI_BYTE,
                ref.win());
        MPI_Win_flush(target, ref.win());
      });
      const double put_us = latency(where + s.label, "put", iters, [&] { shoal::put(dst_s, buf.data(), s.bytes); }, [&] {
        MPI_Put(buf.data(), static_cast<int>(s.bytes), MPI_BYTE, target, 0, static_cast<int>(s.bytes), MPI_BYTE,
                ref.win());
        MPI_Win_flush(target, ref.win());
      });
      if (s.bytes == 8) {
        beside_ping_pong("get", get_us, iters);
        beside_ping_pong("put", put_us, iters);
      }
    }
    const int iters = std::max(1, scale / div);
    auto counter = words[static_cast<std::size_t>(target)];
    const double add_us = latency(where + "8 B", "fetch_add", iters, [&] { shoal::fetch_add(counter, std::uint64_t{1}); }, [&] {
      MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, target, word_disp, MPI_SUM, ref.win());
      MPI_Win_flush(target, ref.win());
    });
    beside_ping_pong("fetch_add", add_us, iters);
    const double cas_us = latency(
        where + "8 B", "compare_exchange", iters, [&] { shoal::compare_exchange(counter + 1, std::uint64_t{0}, one); },
        [&] {
          MPI_Compare_and_swap(&one, &cmp, &result, MPI_UINT64_T, target, word_disp + 8, ref.win());
          MPI_Win_flush(target, ref.win());
        });
    beside_ping_pong("compare_exchange", cas_us, iters);
  }

  // Rate: every rank works against its neighbour at once; total operations per second. Across hosts the variant
  // says whether every neighbour is on another host (cross-host), on the same one (same-host), or some of each.
  const int cross_peers = shoal::allreduce(hosts && !shoal::same_host(peer) ? 1 : 0, shoal::op::sum{});
  const std::string ring = !hosts            ? ""
                           : cross_peers == np ? "cross-host/"
                           : cross_peers == 0  ? "same-host/"
                                               : "mixed-hosts/";
  const int rate_iters = cross_peers > 0 ? std::max(1, scale / 20) : scale;
  auto rate = [&](const std::string& op, auto shoal_op, auto mpi_op) {
    ctx.progress("rate " + op);
    if (!ref.ok()) return;
    const int n = std::max(1, rate_iters / 4);  // per round
    const auto [ts, tm] = shoal::bench::fastest_timed_pair(
        reps, [&] { for (int i = 0; i < n; ++i) shoal_op(); }, [&] { for (int i = 0; i < n; ++i) mpi_op(); });
    const double total = static_cast<double>(n) * np;
    ctx.report({.operation = op + " rate", .variant = ring + "8 B", .value = total / ts / 1e6, .unit = "Mops/s",
                .baseline = "MPI-3 RMA", .baseline_value = total / tm / 1e6});
  };
  // Each rank targets its neighbour's words (distinct cache lines per origin).
  auto nbr_seg = seg[static_cast<std::size_t>(peer)] + static_cast<std::ptrdiff_t>(me) * 64;
  auto nbr_word = words[static_cast<std::size_t>(peer)] + 8;
  const MPI_Aint nbr_disp = static_cast<MPI_Aint>(me) * 64;
  rate("get", [&] { shoal::get(nbr_seg, buf.data(), 8); }, [&] {
    MPI_Get(buf.data(), 8, MPI_BYTE, peer, nbr_disp, 8, MPI_BYTE, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("put", [&] { shoal::put(nbr_seg, buf.data(), 8); }, [&] {
    MPI_Put(buf.data(), 8, MPI_BYTE, peer, nbr_disp, 8, MPI_BYTE, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("fetch_add", [&] { shoal::fetch_add(nbr_word, std::uint64_t{1}); }, [&] {
    MPI_Fetch_and_op(&one, &result, MPI_UINT64_T, peer, word_disp + 64, MPI_SUM, ref.win());
    MPI_Win_flush(peer, ref.win());
  });
  rate("compare_exchange", [&] { shoal::compare_exchange(nbr_word + 1, std::uint64_t{0}, one); }, [&] {
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
