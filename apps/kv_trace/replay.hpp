// apps/kv_trace/replay.hpp — clients replaying K-V traces against a dist_map in the service layout (the K-V storage
// paper's benchmark, §4), shared by apps/kv_trace and shoal-bench's `kv` workload.
//
// A client sends every request straight to the server that owns the key (two-level hashing: the key picks the
// server, the server's local table does the rest) and the server answers the client directly (the paper's
// Figure 3). PUTs are fire-and-forget; GETs return futures, checked against the trace's expected values once the
// client has waited for all its requests. The dist_map's blocking factor plays the paper's "MPI_Wait after a batch
// of 100 requests".
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "trace.hpp"
#include "shoal/containers/dist_map.hpp"

namespace kv_trace {

/// Replays `trace` (a client) and returns how many GETs saw a value other than the expected one.
template <class Store>
std::size_t replay(Store& store, const std::vector<request>& trace) {
  std::vector<std::pair<shoal::future<std::optional<std::uint64_t>>, std::uint64_t>> gets;
  for (const auto& r : trace) {
    if (r.kind == op_kind::put) store.post_insert_or_assign(r.key, r.value);
    else gets.emplace_back(store.async_find(r.key), r.expected);
  }
  store.wait();
  std::size_t wrong = 0;
  for (auto& [found, expected] : gets) wrong += found.get() != std::optional<std::uint64_t>(expected);
  return wrong;
}

struct service_run {
  double seconds = 0;          // slowest rank, from a barrier to the end of the service
  std::size_t requests = 0;    // all clients
  std::size_t wrong = 0;       // GETs with a wrong answer, all clients
};

/// Collective. Ranks [0, servers) serve; ranks [servers, servers + clients) replay trace_of(client index); the
/// others are idle clients. With servers == size() (one rank) the layout is co-located and every rank replays.
template <class Family, class TraceOf>
service_run run_service(int servers, int clients, std::size_t blocking_factor, TraceOf&& trace_of) {
  const int me = shoal::rank(), np = shoal::size();
  shoal::dist_map_options options;
  options.blocking_factor = blocking_factor;
  const bool co_located = servers >= np;
  if (!co_located)
    for (int s = 0; s < servers; ++s) options.servers.push_back(s);
  shoal::dist_map<std::uint64_t, std::uint64_t, Family> store(options);
  const bool replays = co_located ? me < clients : (me >= servers && me < servers + clients);
  const std::vector<request> trace = replays ? trace_of(co_located ? me : me - servers) : std::vector<request>{};
  service_run out;
  shoal::barrier();
  const double t0 = MPI_Wtime();
  if (replays) out.wrong = replay(store, trace);
  if (co_located) store.flush();
  else if (store.is_owner()) store.serve();
  else store.close();
  out.seconds = shoal::allreduce(MPI_Wtime() - t0, shoal::op::max{});
  out.requests = shoal::allreduce(trace.size(), shoal::op::sum{});
  out.wrong = shoal::allreduce(out.wrong, shoal::op::sum{});
  return out;
}

}  // namespace kv_trace
