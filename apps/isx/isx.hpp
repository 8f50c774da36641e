// apps/isx/isx.hpp — the ISx bucket sort (Hanebutte & Hemstad, PGAS 2015) as in BCL §8.1, twice in one run:
//
//   shoal      every rank hosts one fast_queue; while it buckets its keys by destination, each bucket that reaches
//              the message size (1024 keys by default) is sent with one asynchronous push (one fetch_add claims the
//              slots, one put writes the keys), so communication overlaps bucketing; a barrier ends the exchange and
//              each rank counting-sorts what its queue received.
//   reference  the MPI way: count keys per destination, pack them, MPI_Alltoall of the counts, MPI_Alltoallv of the
//              keys, the same counting sort.
//
// Keys are uniform random in [0, max_key) (max_key defaults to keys_per_rank * ranks); rank r receives the keys in
// [r * width, (r + 1) * width), width = ceil(max_key / ranks). Both methods start from the same keys, and the run
// is verified: each rank's keys are sorted and inside its range, the global count and key sum are those generated,
// and both methods produce identical output.
//
// Times are the slowest rank's: exchange = bucketing + sending + the barrier (or the two collectives); sort = the
// local counting sort; total = both.
#pragma once

#include <libdivide.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "shoal/containers/fast_queue.hpp"
#include "shoal/core.hpp"

namespace isx {

using key_type = std::uint32_t;

struct parameters {
  std::uint64_t keys_per_rank = std::uint64_t{1} << 22;
  std::uint64_t max_key = 0;        // 0: keys_per_rank * ranks
  std::size_t message_size = 1024;  // keys per asynchronous push
  std::uint64_t seed = 1;
  std::size_t queue_capacity = 0;   // 0: expected keys per rank + 8 standard deviations + one message
};

struct timing {
  double exchange = 0;
  double sort = 0;
  double total() const { return exchange + sort; }
};

struct outcome {
  timing shoal;
  timing reference;
  std::uint64_t total_keys = 0;
  bool verified = false;
  std::string problem;  // why verification failed (this rank's view), empty when verified
};

/// The keys of this rank: the same for every run with the same seed and rank count.
inline std::vector<key_type> generate_keys(const parameters& p, std::uint64_t max_key) {
  std::mt19937_64 rng(p.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(shoal::rank()));
  std::uniform_int_distribution<std::uint64_t> dist(0, max_key - 1);
  std::vector<key_type> keys(p.keys_per_rank);
  for (auto& k : keys) k = static_cast<key_type>(dist(rng));
  return keys;
}

/// Counting sort of keys in [base, base + width) into `sorted`, with `counts` as the counters. Both vectors are the
/// caller's and keep their memory between sorts: a sort into memory allocated and touched beforehand pays no page
/// faults. (Each method's sort allocating its own had the sort timed first take fresh pages for both vectors, 2 × 16
/// MiB at 2^22 keys per rank, 8,192 minor faults, while the one timed second reused freed ones, 4,096 faults: the
/// 1.7× "slower local sort" of shoal's method was that, not its keys.)
inline void counting_sort(const std::vector<key_type>& keys, key_type base, std::uint64_t width,
                          std::vector<std::uint32_t>& counts, std::vector<key_type>& sorted) {
  counts.assign(width, 0);
  for (key_type k : keys) ++counts[k - base];
  sorted.resize(keys.size());
  std::size_t at = 0;
  for (std::uint64_t v = 0; v < width; ++v) {
    std::fill_n(sorted.begin() + static_cast<std::ptrdiff_t>(at), counts[v], static_cast<key_type>(base + v));
    at += counts[v];
  }
}

class sorter {
 public:
  explicit sorter(const parameters& p)
      : p_(p),
        ranks_(static_cast<std::uint64_t>(shoal::size())),
        max_key_(p.max_key ? p.max_key : p.keys_per_rank * ranks_),
        width_((max_key_ + ranks_ - 1) / ranks_),
        base_(static_cast<key_type>(std::min<std::uint64_t>(max_key_, width_ * static_cast<std::uint64_t>(shoal::rank())))),
        by_width_(std::max<std::uint64_t>(width_, 1)) {
    if (max_key_ == 0 || max_key_ > (std::uint64_t{1} << 32)) {
      throw shoal::usage_error("isx: max_key must be in [1, 2^32] (keys are 32-bit); got " + std::to_string(max_key_));
    }
    if (p.message_size == 0) throw shoal::usage_error("isx: --message-size must be at least 1");
  }

  std::uint64_t max_key() const { return max_key_; }
  /// The rank whose range holds k. A multiply and a shift (libdivide), not a hardware division: `k / width_` with a
  /// 64-bit `div` held 40% of the samples of shoal's bucketing loop (perf, 2 ranks, 2^22 keys per rank).
  int owner(key_type k) const { return static_cast<int>(std::uint64_t{k} / by_width_); }

  /// The default queue capacity: the keys a rank expects (its share of the key range) plus 8 standard deviations
  /// and one message.
  std::size_t queue_capacity() const {
    if (p_.queue_capacity) return p_.queue_capacity;
    const double total = static_cast<double>(p_.keys_per_rank * ranks_);
    const double expected = total * static_cast<double>(width_) / static_cast<double>(max_key_);
    return static_cast<std::size_t>(expected + 8 * std::sqrt(expected) + static_cast<double>(p_.message_size) + 16);
  }

  /// shoal: one fast_queue per rank, asynchronous pushes of message_size keys overlapped with bucketing.
  std::vector<key_type> exchange_with_queues(const std::vector<key_type>& keys,
                                             std::vector<shoal::fast_queue<key_type>>& queues) const {
    const std::size_t nranks = static_cast<std::size_t>(ranks_);
    std::vector<std::vector<key_type>> buckets(nranks);
    for (auto& b : buckets) b.reserve(p_.message_size);
    std::vector<shoal::future<bool>> in_flight;
    std::size_t rejected = 0;  // pushes that found their queue full
    auto send = [&](std::size_t dest) {
      in_flight.push_back(queues[dest].async_try_push(std::move(buckets[dest])));
      buckets[dest] = {};
      buckets[dest].reserve(p_.message_size);
      if (in_flight.size() >= 2 * nranks) rejected += retire(in_flight, /*all=*/false);
    };
    for (key_type k : keys) {
      const auto dest = static_cast<std::size_t>(owner(k));
      buckets[dest].push_back(k);
      if (buckets[dest].size() == p_.message_size) send(dest);
    }
    for (std::size_t dest = 0; dest < nranks; ++dest)
      if (!buckets[dest].empty()) send(dest);
    rejected += retire(in_flight, /*all=*/true);
    // Every key is in its queue; every rank learns whether some push did not fit, so all throw alike.
    if (shoal::allreduce(rejected, shoal::op::sum{}) > 0) {
      throw shoal::container_full("isx: a receiving queue of " + std::to_string(queue_capacity()) +
                                  " keys is full; raise --queue-capacity (isx::parameters::queue_capacity)");
    }
    std::vector<key_type> mine;
    auto& own = queues[static_cast<std::size_t>(shoal::rank())];
    own.try_pop(mine, own.capacity(), shoal::promise::local);
    return mine;
  }

  /// Reference: MPI_Alltoall of the counts, MPI_Alltoallv of the packed keys.
  std::vector<key_type> exchange_with_alltoallv(const std::vector<key_type>& keys) const {
    const std::size_t nranks = static_cast<std::size_t>(ranks_);
    std::vector<int> send_counts(nranks, 0), send_displs(nranks, 0), recv_counts(nranks, 0), recv_displs(nranks, 0);
    for (key_type k : keys) ++send_counts[static_cast<std::size_t>(owner(k))];
    for (std::size_t r = 1; r < nranks; ++r) send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
    std::vector<key_type> packed(keys.size());
    std::vector<int> at = send_displs;
    for (key_type k : keys) packed[static_cast<std::size_t>(at[static_cast<std::size_t>(owner(k))]++)] = k;
    MPI_Comm comm = shoal::world().comm();
    MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
    for (std::size_t r = 1; r < nranks; ++r) recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
    std::vector<key_type> mine(static_cast<std::size_t>(recv_displs.back() + recv_counts.back()));
    MPI_Alltoallv(packed.data(), send_counts.data(), send_displs.data(), MPI_UINT32_T, mine.data(),
                  recv_counts.data(), recv_displs.data(), MPI_UINT32_T, comm);
    return mine;
  }

  /// The local counting sort of what a method received, into `sorted` (counters in `counts`; see counting_sort).
  void sort_local(const std::vector<key_type>& mine, std::vector<std::uint32_t>& counts,
                  std::vector<key_type>& sorted) const {
    counting_sort(mine, base_, local_width(), counts, sorted);
  }

  /// Collective. Runs both methods on the same keys and verifies them.
  outcome run() const {
    outcome out;
    const auto keys = generate_keys(p_, max_key_);
    std::vector<shoal::fast_queue<key_type>> queues;
    for (int r = 0; r < shoal::size(); ++r) queues.emplace_back(r, queue_capacity());

    // The sorts' memory, allocated and touched before either is timed: the same conditions for both methods.
    std::vector<std::uint32_t> counts(local_width());
    std::vector<key_type> sorted(queue_capacity()), reference_sorted(queue_capacity());

    std::vector<key_type> received;
    out.shoal.exchange = timed([&] { received = exchange_with_queues(keys, queues); });
    out.shoal.sort = timed([&] { sort_local(received, counts, sorted); });

    std::vector<key_type> reference_received;
    out.reference.exchange = timed([&] { reference_received = exchange_with_alltoallv(keys); });
    out.reference.sort = timed([&] { sort_local(reference_received, counts, reference_sorted); });

    out.problem = check(keys, sorted, reference_sorted, out.total_keys);
    out.verified = shoal::allreduce(out.problem.empty() ? 1 : 0, shoal::op::min{}) == 1;
    return out;
  }

 private:
  std::uint64_t local_width() const { return std::min<std::uint64_t>(width_, max_key_ - base_); }

  /// Drops the completed pushes (all of them, waiting, when `all`); returns how many found their queue full.
  static std::size_t retire(std::vector<shoal::future<bool>>& in_flight, bool all) {
    std::size_t rejected = 0;
    std::erase_if(in_flight, [&](shoal::future<bool>& f) {
      if (!all && !f.ready()) return false;
      if (!f.get()) ++rejected;
      return true;
    });
    return rejected;
  }

  static double timed(const auto& fn) {
    shoal::barrier();
    const double t0 = MPI_Wtime();
    fn();
    return shoal::allreduce(MPI_Wtime() - t0, shoal::op::max{});
  }

  /// This rank's verdict (empty when everything holds); total_keys is set on every rank.
  std::string check(const std::vector<key_type>& keys, const std::vector<key_type>& sorted,
                    const std::vector<key_type>& reference_sorted, std::uint64_t& total_keys) const {
    std::uint64_t generated_sum = 0, sorted_sum = 0;
    for (key_type k : keys) generated_sum += k;
    for (key_type k : sorted) sorted_sum += k;
    total_keys = shoal::allreduce(static_cast<std::uint64_t>(sorted.size()), shoal::op::sum{});
    const auto all_generated = shoal::allreduce(generated_sum, shoal::op::sum{});
    const auto all_sorted = shoal::allreduce(sorted_sum, shoal::op::sum{});
    if (total_keys != p_.keys_per_rank * ranks_) {
      return "count: " + std::to_string(total_keys) + " keys sorted, " + std::to_string(p_.keys_per_rank * ranks_) +
             " generated";
    }
    if (all_sorted != all_generated) return "the sum of the sorted keys differs from the sum of the generated keys";
    if (!std::is_sorted(sorted.begin(), sorted.end())) return "rank " + std::to_string(shoal::rank()) + " not sorted";
    if (!sorted.empty() && (sorted.front() < base_ || sorted.back() - base_ >= local_width())) {
      return "rank " + std::to_string(shoal::rank()) + " holds a key outside its range";
    }
    if (sorted != reference_sorted) return "rank " + std::to_string(shoal::rank()) + " differs from MPI_Alltoallv";
    return {};
  }

  parameters p_;
  std::uint64_t ranks_;
  std::uint64_t max_key_;
  std::uint64_t width_;
  key_type base_;
  libdivide::divider<std::uint64_t> by_width_;  // divides by width_ (1 while max_key is 0, which the constructor rejects)
};

}  // namespace isx
