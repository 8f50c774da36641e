// apps/kv_trace/replay.hpp — clients replaying K-V traces against a dist_map in the service layout (the K-V storage
// paper's benchmark, §4), shared by apps/kv_trace and shoal-bench's `kv` workload.
//
// A client sends its requests straight to the servers that own the keys (two-level hashing: the key picks the
// server, the server's local table does the rest) and the servers answer the client directly (the paper's Figure 3).
// The trace is replayed in blocks of L requests (the blocking factor, the paper's "MPI_Wait after a batch of 100
// requests"): the client issues a block, waits for every answer, checks the GETs against the trace's expected
// values, then goes on. Inside a block the requests travel batched — the PUTs as one insert_or_assign_batch and the
// GETs as one find_batch, each one message per server — in segments that keep the trace's order:
//   * a segment's PUT batch is issued before its GET batch, and from one client to one server messages arrive in
//     issue order, so a GET sees every PUT before it in its segment (and in earlier segments and blocks);
//   * a PUT of a key that a GET of the open segment reads would be seen too early by that GET: the segment ends
//     before such a PUT (the GETs before it are issued first);
//   * PUTs of one key in one segment apply in input order (the batch keeps it per server), so the last one stays.
// Each GET thus has the one answer the sequential replay gives: the trace's last PUT of its key before it.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "trace.hpp"
#include "shoal/am/control.hpp"
#include "shoal/containers/dist_map.hpp"

namespace kv_trace {

struct replay_result {
  std::size_t wrong = 0;     // GETs that saw a value other than the expected one
  std::size_t segments = 0;  // PUT / GET batch pairs issued (at least one per non-empty block)
};

/// One block of a trace, cut into segments (see above) before it is issued: its PUTs and its GETs in trace order, the
/// GETs' expected values, and where each segment's PUTs and GETs end.
class block_plan {
 public:
  /// Plans requests [first, last) of `trace`.
  void plan(const std::vector<request>& trace, std::size_t first, std::size_t last) {
    puts_.clear();
    gets_.clear();
    expected_.clear();
    ends_.clear();
    std::size_t segment_gets = 0;  // where the open segment's GETs start
    read_bits_.fill(0);
    for (std::size_t i = first; i < last; ++i) {
      const request& r = trace[i];
      const unsigned bit = bit_of(r.key);
      if (r.kind == op_kind::put) {
        if ((read_bits_[bit / 64] >> (bit % 64)) & 1) {
          if (std::find(gets_.begin() + static_cast<std::ptrdiff_t>(segment_gets), gets_.end(), r.key) !=
              gets_.end()) {
            ends_.emplace_back(puts_.size(), gets_.size());  // the segment ends before this PUT
            segment_gets = gets_.size();
            read_bits_.fill(0);
          }
        }
        puts_.emplace_back(r.key, r.value);
      } else {
        gets_.push_back(r.key);
        expected_.push_back(r.expected);
        read_bits_[bit / 64] |= std::uint64_t{1} << (bit % 64);
      }
    }
    if (ends_.empty() || ends_.back() != std::pair{puts_.size(), gets_.size()}) {
      ends_.emplace_back(puts_.size(), gets_.size());
    }
  }

  /// Issues the planned segments in order (PUT batch, then GET batch, per segment) and hands their messages to MPI.
  /// The plan must stay as it is until the store's wait() returns. Returns how many segments were issued.
  template <class Store, class Found, class Stored>
  std::size_t issue(Store& store, Found& found, Stored& stored) const {
    std::size_t p = 0, g = 0, segments = 0;
    for (const auto& [p_end, g_end] : ends_) {
      if (p_end == p && g_end == g) continue;
      if (p_end > p) stored.push_back(store.async_insert_or_assign_batch(std::span(puts_).subspan(p, p_end - p)));
      if (g_end > g) found.push_back(store.async_find_batch(std::span(gets_).subspan(g, g_end - g)));
      p = p_end;
      g = g_end;
      ++segments;
    }
    shoal::am::flush();
    return segments;
  }

  /// The expected value of the block's i-th GET.
  std::uint64_t expected(std::size_t i) const { return expected_[i]; }

 private:
  static unsigned bit_of(std::uint64_t key) { return static_cast<unsigned>((key * 0x9E3779B97F4A7C15ull) >> 54); }

  std::vector<std::pair<std::uint64_t, std::uint64_t>> puts_;
  std::vector<std::uint64_t> gets_;
  std::vector<std::uint64_t> expected_;
  std::vector<std::pair<std::size_t, std::size_t>> ends_;  // per segment: the end of its PUTs and of its GETs
  // A filter of the open segment's GET keys (1024 bits): a PUT whose bit is clear cannot conflict.
  std::array<std::uint64_t, 16> read_bits_{};
};

/// Replays `trace` (a client) against a dist_map<uint64_t, uint64_t> in blocks of `block` requests (0: the whole
/// trace is one block), waiting for each block before the next is issued; see above for the batching and the order it
/// keeps. The next block is planned while the current one is in flight (planning only reads the trace).
template <class Store>
replay_result replay(Store& store, const std::vector<request>& trace, std::size_t block) {
  replay_result out;
  std::vector<shoal::future<std::vector<std::optional<std::uint64_t>>>> found;  // the block's GET batches, in order
  std::vector<shoal::future<shoal::batch_insert_result>> stored;
  std::array<block_plan, 2> plans;
  const std::size_t step = block == 0 ? trace.size() : block;
  if (!trace.empty()) plans[0].plan(trace, 0, std::min(trace.size(), step));
  std::size_t current = 0;
  for (std::size_t first = 0; first < trace.size(); first += step, current ^= 1) {
    out.segments += plans[current].issue(store, found, stored);
    if (const std::size_t next_first = first + step; next_first < trace.size()) {
      plans[current ^ 1].plan(trace, next_first, std::min(trace.size(), next_first + step));
    }
    store.wait();
    std::size_t next = 0;
    for (auto& f : found) {
      for (const auto& v : f.get()) out.wrong += v != std::optional<std::uint64_t>(plans[current].expected(next++));
    }
    for (auto& f : stored) {
      if (const auto r = f.get(); r.rejected != 0) {
        throw shoal::container_full("kv_trace: " + std::to_string(r.rejected) + " PUT(s) did not fit");
      }
    }
    found.clear();
    stored.clear();
  }
  return out;
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
  shoal::dist_map_options options;  // no blocking factor in the map: replay() waits after every block of L requests
  const bool co_located = servers >= np;
  if (!co_located)
    for (int s = 0; s < servers; ++s) options.servers.push_back(s);
  shoal::dist_map<std::uint64_t, std::uint64_t, Family> store(options);
  const bool replays = co_located ? me < clients : (me >= servers && me < servers + clients);
  const std::vector<request> trace = replays ? trace_of(co_located ? me : me - servers) : std::vector<request>{};
  service_run out;
  shoal::barrier();
  const double t0 = MPI_Wtime();
  if (replays) out.wrong = replay(store, trace, blocking_factor).wrong;
  if (co_located) store.flush();
  else if (store.is_owner()) store.serve();
  else store.close();
  out.seconds = shoal::allreduce(MPI_Wtime() - t0, shoal::op::max{});
  out.requests = shoal::allreduce(trace.size(), shoal::op::sum{});
  out.wrong = shoal::allreduce(out.wrong, shoal::op::sum{});
  return out;
}

}  // namespace kv_trace
