// Workloads `kv`, `bsgs` and `scatter`: the applications of the K-V storage and CSE_Hash papers on dist_map.
//   kv       the K-V paper's speedup table: every (clients, servers) split with clients + servers <= ranks, each
//            client replaying its own generated trace (--size requests, default 50,000; blocks of L = 100 requests,
//            PUTs and GETs batched per server, kv_trace/replay.hpp), Mreq/s beside the 1 client x 1 server run of
//            the same process set (the paper's "serial"); and 1 x 1 beside the per-core replay of the same trace
//            into one local table and beside the same 1 x 1 replay written with MPI_Send / MPI_Recv (which is itself
//            reported beside the per-core replay: what the blocking factor leaves to any 1 x 1 version)
//   bsgs     parallel baby-step giant-step with --size baby steps (default: 2^18, C = largest prime below 2^36, and
//            2^22, C below 2^44) beside the sequential BSGS on one core (same answer checked)
//   scatter  CSE_Hash's matrix scatter of a random matrix with --size rows (default 50,000, 10 non-zeros per row),
//            L = 64: dist_multimap barrier and immediate times beside MPI_Alltoallv doing the same work (rank 0's
//            table of rows in, every owner's table of its rows out) and beside the bare MPI_Alltoallv of triplets
// Each workload runs shoal and its baselines in turns, `rounds` times (alternating which goes first), and the fastest
// run of each counts — as shoal-bench's `dist_map`: on a shared machine one run of each saw two different moments
// (a single bsgs run read 1.03-1.84x the sequential time in three runs of one binary).
#include <array>
#include <cmath>
#include <optional>

#include "bench.hpp"
#include "../apps/bsgs/parallel_bsgs.hpp"
#include "../apps/kv_trace/replay.hpp"
#include "../apps/matrix_scatter/scatter.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

using shoal::bench::rounds;

/// The best hand-written MPI of the 1 client x 1 server replay (rank 1 replays, rank 0 serves; other ranks idle):
/// the client sends each block of L requests as one message of fixed records in trace order (MPI_Send), the server
/// applies them in order to its table and sends back the GETs' answers (one message per block, empty when the block
/// has no GET), the client checks them before the next block (and packs the next block while one is in flight, as the
/// shoal replay plans it); an empty block stops the server. Returns Mreq/s
/// (slowest rank, between two barriers).
double mpi_replay_one_to_one(const std::vector<kv_trace::request>& trace, std::size_t block) {
  struct record {
    std::uint64_t key;
    std::uint64_t value;
    std::uint64_t is_get;
  };
  const int me = shoal::rank();
  constexpr int tag = 91;
  std::size_t wrong = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  if (me == 0) {
    shoal::local::flat_table<std::uint64_t, std::uint64_t> table;
    std::vector<record> in(block);
    std::vector<std::uint64_t> answers;
    answers.reserve(block);
    for (;;) {
      MPI_Status st;
      MPI_Recv(in.data(), static_cast<int>(block * sizeof(record)), MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st);
      int bytes = 0;
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(record);
      if (n == 0) break;
      answers.clear();
      for (std::size_t i = 0; i < n; ++i) {
        if (in[i].is_get) {
          const std::uint64_t* v = table.find(in[i].key);
          answers.push_back(v ? *v : ~std::uint64_t{0});
        } else {
          table.insert_or_assign(in[i].key, in[i].value);
        }
      }
      MPI_Send(answers.data(), static_cast<int>(answers.size()), MPI_UINT64_T, 1, tag, MPI_COMM_WORLD);
    }
  } else if (me == 1) {
    std::array<std::vector<record>, 2> out;  // the block in flight and the next one, packed meanwhile
    auto pack = [&](std::vector<record>& o, std::size_t first) {
      o.clear();
      for (std::size_t i = first; i < std::min(trace.size(), first + block); ++i) {
        const bool get = trace[i].kind == kv_trace::op_kind::get;
        o.push_back({trace[i].key, trace[i].value, get ? 1u : 0u});
      }
    };
    for (auto& o : out) o.reserve(block);
    std::vector<std::uint64_t> answers(block);
    pack(out[0], 0);
    std::size_t current = 0;
    for (std::size_t first = 0; first < trace.size(); first += block, current ^= 1) {
      const std::size_t last = std::min(trace.size(), first + block);
      MPI_Send(out[current].data(), static_cast<int>(out[current].size() * sizeof(record)), MPI_BYTE, 0, tag,
               MPI_COMM_WORLD);
      if (last < trace.size()) pack(out[current ^ 1], last);
      MPI_Recv(answers.data(), static_cast<int>(block), MPI_UINT64_T, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      std::size_t next = 0;
      for (std::size_t i = first; i < last; ++i) {
        if (trace[i].kind == kv_trace::op_kind::get) wrong += answers[next++] != trace[i].expected;
      }
    }
    MPI_Send(out[0].data(), 0, MPI_BYTE, 0, tag, MPI_COMM_WORLD);  // stop
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const double seconds = shoal::allreduce(MPI_Wtime() - t0, shoal::op::max{});
  if (shoal::allreduce(wrong, shoal::op::sum{}) != 0) throw shoal::error("kv workload: wrong MPI replay answers");
  return static_cast<double>(shoal::allreduce(trace.size(), shoal::op::sum{})) / seconds / 1e6;
}

void run_kv(context& ctx) {
  const std::size_t ops = ctx.size_or(50'000);
  const int np = shoal::size();
  auto trace_of = [&](int client) { return kv_trace::generate_trace(ops, 1 + static_cast<std::uint64_t>(client)); };
  // Per-core: one trace into one local table, one core (the fastest of `rounds` runs, a fresh table each).
  double core_rate = 0;
  if (shoal::rank() == 0) {
    const auto trace = trace_of(0);
    for (int round = 0; round < rounds; ++round) {
      shoal::local::flat_table<std::uint64_t, std::uint64_t> table;
      std::size_t wrong = 0;
      const double t0 = shoal::bench::now();
      for (const auto& r : trace) {
        if (r.kind == kv_trace::op_kind::put) table.insert_or_assign(r.key, r.value);
        else wrong += *table.find(r.key) != r.expected;
      }
      core_rate = std::max(core_rate, static_cast<double>(trace.size()) / (shoal::bench::now() - t0) / 1e6);
      if (wrong) throw shoal::error("kv workload: wrong per-core replay");
    }
  }
  core_rate = shoal::broadcast(core_rate);
  // One run of a clients x servers replay (Mreq/s), and the fastest of `rounds`.
  auto run_once = [&](int servers, int clients) {
    const auto r = kv_trace::run_service<shoal::local::flat>(servers, clients, 100, trace_of);
    if (r.wrong) throw shoal::error("kv workload: wrong GET answers");
    return static_cast<double>(r.requests) / r.seconds / 1e6;
  };
  auto measure = [&](int servers, int clients) {
    ctx.progress(std::to_string(clients) + " clients x " + std::to_string(servers) + " servers");
    double best = 0;
    for (int round = 0; round < rounds; ++round) best = std::max(best, run_once(servers, clients));
    return best;
  };
  if (np == 1) {
    ctx.report({.operation = "kv replay 1 client", .variant = "co-located", .value = measure(1, 1), .unit = "Mreq/s",
                .baseline = "per-core replay", .baseline_value = core_rate});
    return;
  }
  // 1 x 1 beside the same replay written by hand with MPI (client: rank 1, the first client's trace), in turns; and
  // where the MPI version stands to the per-core replay: the bound the blocking factor's round trips put on any 1 x 1
  // version.
  ctx.progress("1 client x 1 server, shoal and plain MPI");
  const auto mpi_trace = shoal::rank() == 1 ? trace_of(0) : std::vector<kv_trace::request>{};
  double serial = 0, mpi_serial = 0;
  for (int round = 0; round < rounds; ++round) {
    if (round % 2 == 0) serial = std::max(serial, run_once(1, 1));
    mpi_serial = std::max(mpi_serial, mpi_replay_one_to_one(mpi_trace, 100));
    if (round % 2 == 1) serial = std::max(serial, run_once(1, 1));
  }
  ctx.report({.operation = "kv replay 1 client x 1 server", .variant = std::to_string(ops) + " req/client",
              .value = serial, .unit = "Mreq/s", .baseline = "per-core replay", .baseline_value = core_rate});
  ctx.report({.operation = "kv replay 1 client x 1 server", .variant = std::to_string(ops) + " req/client",
              .value = serial, .unit = "Mreq/s", .baseline = "MPI send/recv replay", .baseline_value = mpi_serial});
  ctx.report({.operation = "kv replay 1 x 1, plain MPI", .variant = std::to_string(ops) + " req/client",
              .value = mpi_serial, .unit = "Mreq/s", .baseline = "per-core replay", .baseline_value = core_rate});
  for (int servers = 1; servers < np; ++servers) {
    for (int clients = 1; clients + servers <= np; ++clients) {
      if (servers == 1 && clients == 1) continue;
      ctx.report({.operation =
                       "kv replay " + std::to_string(clients) + " clients x " + std::to_string(servers) + " servers",
                  .variant = std::to_string(ops) + " req/client", .value = measure(servers, clients), .unit = "Mreq/s",
                  .baseline = "1 client x 1 server", .baseline_value = serial});
    }
  }
}

/// One size of the bsgs rows: m baby steps, C the largest prime below 2^bits with m ≈ sqrt(C).
void run_bsgs_size(context& ctx, std::size_t m) {
  const int bits = std::max(8, static_cast<int>(std::ceil(2 * std::log2(static_cast<double>(m)))));
  const bsgs::u64 c = bsgs::largest_prime_below_power_of_two(std::min(bits, 44));
  const bsgs::u64 a = 5, b = bsgs::pow_mod(a, c / 2 + 12345, c);
  ctx.progress("sequential and parallel, in turns, C < 2^" + std::to_string(bits));
  std::optional<bsgs::u64> seq_x;
  bsgs::parallel_result r;
  const auto [seq_seconds, seconds] = shoal::bench::fastest_timed_pair(
      rounds,
      [&] {
        if (shoal::rank() == 0) seq_x = bsgs::solve_sequential(a, b, c);
      },
      [&] { r = bsgs::solve_parallel(a, b, c); });
  const bsgs::u64 seq_steps =
      seq_x ? bsgs::step_count(c) + *seq_x / bsgs::step_count(c) + 1 : 2 * bsgs::step_count(c);
  const double seq_rate = shoal::broadcast(static_cast<double>(seq_steps) / seq_seconds / 1e6);
  const bsgs::u64 expected = shoal::broadcast(seq_x.value_or(0));
  if (!r.x || *r.x != expected || !bsgs::verify(a, b, c, *r.x)) throw shoal::error("bsgs workload: wrong answer");
  ctx.report({.operation = "bsgs table operations", .variant = "C < 2^" + std::to_string(bits),
              .value = static_cast<double>(r.operations) / seconds / 1e6, .unit = "Mops/s",
              .baseline = "sequential BSGS", .baseline_value = seq_rate});
  ctx.report({.operation = "bsgs time to solve", .variant = "C < 2^" + std::to_string(bits), .value = seconds,
              .unit = "s", .baseline = "sequential BSGS",
              .baseline_value = static_cast<double>(r.operations) / (seq_rate * 1e6), .direction = better::lower});
}

/// --size baby steps, or two sizes: 2^18 (C < 2^36: the sequential solver's table, about 8 MB, stays in a large L3)
/// and the scale of docs/apps/bsgs.md's example, 2^22 (C < 2^44: about 128 MB of table, so that every insert and
/// lookup misses the L2 and the TLB's reach on any machine, and the L3 on most).
void run_bsgs(context& ctx) {
  if (ctx.size_or(0) != 0) return run_bsgs_size(ctx, ctx.size_or(0));
  for (std::size_t m : {std::size_t{1} << 18, std::size_t{1} << 22}) run_bsgs_size(ctx, m);
}

void run_scatter(context& ctx) {
  const auto rows = static_cast<std::uint32_t>(ctx.size_or(50'000));
  const auto matrix = matrix_scatter::random_sparse_matrix(rows, rows, 10, 3);
  shoal::dist_map_options options;
  options.placement = shoal::key_placement::cyclic;
  const auto input = shoal::rank() == 0 ? matrix_scatter::local_rows(matrix) : matrix_scatter::row_table{};
  using shoal::bench::never;
  double barrier = never, immediate = never, alltoallv = never, alltoallv_rows = never;
  const auto shoal_scatter = [&] {
    shoal::dist_multimap<std::uint32_t, matrix_scatter::column_value> store(options);
    const auto t = matrix_scatter::scatter_rows(matrix, store, 64);
    barrier = std::min(barrier, shoal::allreduce(t.barrier, shoal::op::max{}));
    immediate = std::min(immediate, t.immediate);  // rank 0's (the others issue nothing)
    if (!shoal::allreduce(matrix_scatter::verify_rows(matrix, store), shoal::op::min{}))
      throw shoal::error("scatter workload: wrong rows");
  };
  const auto mpi_scatters = [&] {
    double seconds = 0;
    const auto received = matrix_scatter::scatter_alltoallv(matrix, MPI_COMM_WORLD, seconds);
    alltoallv = std::min(alltoallv, shoal::allreduce(seconds, shoal::op::max{}));
    if (!shoal::allreduce(matrix_scatter::verify_triplets(matrix, received, shoal::rank(), shoal::size()),
                          shoal::op::min{}))
      throw shoal::error("scatter workload: wrong MPI_Alltoallv triplets");
    auto table = matrix_scatter::scatter_alltoallv_rows(input, MPI_COMM_WORLD, seconds);
    alltoallv_rows = std::min(alltoallv_rows, shoal::allreduce(seconds, shoal::op::max{}));
    if (!shoal::allreduce(matrix_scatter::verify_rows(matrix, table), shoal::op::min{}))
      throw shoal::error("scatter workload: wrong MPI_Alltoallv rows");
  };
  ctx.progress("dist_multimap and MPI_Alltoallv scatters, in turns");
  for (int round = 0; round < rounds; ++round) {
    if (round % 2 == 0) shoal_scatter();
    mpi_scatters();
    if (round % 2 == 1) shoal_scatter();
  }
  const double nnz = static_cast<double>(matrix.entries.size());
  const std::string variant = std::to_string(matrix.entries.size()) + " nnz, L=64";
  // The same work (rank 0's row table in, every owner's row table out) and the bare exchange of triplets.
  for (const auto& [name, seconds] : {std::pair{"MPI_Alltoallv into row tables", alltoallv_rows},
                                      std::pair{"MPI_Alltoallv of triplets", alltoallv}}) {
    ctx.report({.operation = "scatter barrier time", .variant = variant, .value = barrier / nnz * 1e6,
                .unit = "us/nnz", .baseline = name, .baseline_value = seconds / nnz * 1e6,
                .direction = better::lower});
    ctx.report({.operation = "scatter immediate time", .variant = variant, .value = immediate / nnz * 1e6,
                .unit = "us/nnz", .baseline = name, .baseline_value = seconds / nnz * 1e6,
                .direction = better::lower});
  }
}

const shoal::bench::registrar reg_kv("kv", "K-V paper speedup table: clients x servers replaying traces", run_kv);
const shoal::bench::registrar reg_bsgs("bsgs", "parallel BSGS on dist_map vs sequential BSGS", run_bsgs);
const shoal::bench::registrar reg_scatter("scatter", "CSE_Hash matrix scatter on dist_multimap vs MPI_Alltoallv",
                                          run_scatter);

}  // namespace
