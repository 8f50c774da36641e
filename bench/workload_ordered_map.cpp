// Workload `ordered_map`: the experiments of the skip-list paper (seeds/000 §3) at the ranks given.
//   FIND 100% under total order / sequential / none, beside a plain-MPI FIND on a range-partitioned sorted array
//   (one request and one reply message per query, the same window of outstanding queries);
//   RANGE-QUERY returning 100 / 1,000 / 10,000 key-values: operations/s (against shoal's finds under none, and
//   against a plain-MPI range on the same sorted array, which is also reported against the plain-MPI finds: what a
//   range costs in finds when written by hand), key-values/s, returned messages/s;
//   the mixed workload 20% INSERT, 20% DELETE, 60% FIND (or RANGE-QUERY of 100); range results are taken as the
//   paper's application takes them, each when its slot in a ring of W outstanding queries is needed again;
//   range queries over 1-4 dimensions (4096 results each).
//   FIND 100% with k (asynchrony) from synchronous forwards to the default; lower_bound 100% (probes);
// Every row whose ratio is against plain MPI (finds, lower_bound, mixed) and the range rows (against finds under
// none) time shoal and its baseline in turns, 5 rounds (3 for ranges), the fastest of each counting — as the
// dist_map and kv workloads: on a shared machine a baseline timed at another moment swung 0.6-1.1x against the same
// shoal rows. The rows by k (against the default k) are each the median of 3 timings.
// --size: key-values in the list (default 10^6, the paper's scale).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include "bench.hpp"
#include "shoal/containers/ordered_map.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;
using map_type = shoal::ordered_map<std::int64_t, std::int64_t>;

constexpr int query_tag = 7101;
constexpr int reply_tag = 7102;

/// Plain MPI's data: rank r owns keys [r*n/p, (r+1)*n/p) of a sorted array (key 2i, value i, as in the map), in two
/// arrays as a hand-written owner would keep them.
struct sorted_part {
  std::vector<std::int64_t> keys, values;

  explicit sorted_part(std::int64_t n) {
    const int me = shoal::rank(), np = shoal::size();
    for (std::int64_t k = n * me / np; k < n * (me + 1) / np; ++k) keys.push_back(2 * k), values.push_back(k);
  }
  /// The rank whose part holds key index k (0 <= k < n): the last r with r * n / p <= k.
  static int owner(std::int64_t k, std::int64_t n) {
    const std::int64_t np = shoal::size();
    return static_cast<int>(((k + 1) * np + n - 1) / n - 1);
  }
  /// The position of the first key >= k.
  std::size_t position(std::int64_t k) const {
    return static_cast<std::size_t>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
  }
  /// The positions of keys in [lo, hi]: the keys are distinct integers, so the end is searched only among the next
  /// hi - lo + 1 of them.
  std::pair<std::size_t, std::size_t> span(std::int64_t lo, std::int64_t hi) const {
    const std::size_t from = position(lo);
    const auto last = keys.begin() + static_cast<std::ptrdiff_t>(
                                         std::min(keys.size(), from + static_cast<std::size_t>(hi - lo + 1)));
    const auto to = std::upper_bound(keys.begin() + static_cast<std::ptrdiff_t>(from), last, hi);
    return {from, static_cast<std::size_t>(to - keys.begin())};
  }
};

/// The plain-MPI query service the finds and ranges below share: each rank keeps `window` queries outstanding and
/// serves the others' queries while it waits; it stops once its own are answered and every rank's are (MPI_Ibarrier).
/// issue(q) sends query q's messages and returns how many replies they bring; serve(status) answers a query message,
/// take(status) receives a reply (both probed, not yet received). Collective (the caller times it).
template <class Issue, class Serve, class Take>
void plain_mpi_service(int queries, int window, Issue&& issue, Serve&& serve, Take&& take) {
  int sent = 0;
  std::int64_t expected = 0, answered = 0;
  MPI_Request done_req = MPI_REQUEST_NULL;
  bool my_part_done = false;
  for (;;) {
    while (sent < queries && expected - answered < window) expected += issue(sent++);
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (flag && st.MPI_TAG == query_tag) {
      serve(st);
    } else if (flag && st.MPI_TAG == reply_tag) {
      take(st);
      ++answered;
    }
    if (!my_part_done && sent == queries && answered == expected) {
      my_part_done = true;
      MPI_Ibarrier(MPI_COMM_WORLD, &done_req);
    }
    if (my_part_done) {
      int all = 0;
      MPI_Test(&done_req, &all, MPI_STATUS_IGNORE);
      if (all) break;
    }
  }
}

/// Plain MPI finds over `sorted_part`: a query is one message to the owner, which answers with one message.
void plain_mpi_finds(const sorted_part& data, std::int64_t n, int queries, int window, std::mt19937_64& rng) {
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::int64_t in_key = 0;
  std::array<std::int64_t, 2> in_reply{};
  std::vector<std::int64_t> out_keys(static_cast<std::size_t>(window));
  plain_mpi_service(
      queries, window,
      [&](int q) {
        const std::int64_t k = pick(rng);
        auto& slot = out_keys[static_cast<std::size_t>(q % window)];
        slot = 2 * k;
        MPI_Send(&slot, 1, MPI_INT64_T, sorted_part::owner(k, n), query_tag, MPI_COMM_WORLD);
        return 1;
      },
      [&](const MPI_Status& st) {
        MPI_Recv(&in_key, 1, MPI_INT64_T, st.MPI_SOURCE, query_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const std::size_t at = data.position(in_key);
        const bool found = at < data.keys.size() && data.keys[at] == in_key;
        std::array<std::int64_t, 2> answer{in_key, found ? in_key / 2 : -1};
        MPI_Send(answer.data(), 2, MPI_INT64_T, st.MPI_SOURCE, reply_tag, MPI_COMM_WORLD);
      },
      [&](const MPI_Status& st) {
        MPI_Recv(in_reply.data(), 2, MPI_INT64_T, st.MPI_SOURCE, reply_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      });
}

/// Plain MPI range queries of `results` key-values over `sorted_part`, as a user would write them beside the finds
/// above: a query {lo, hi, slot} goes to every owner of part of [lo, hi] (a range crosses an owner's end about once in
/// n / p / results queries); each owner answers with {slot, count} and its key-value pairs, packed from its two
/// arrays; the client assigns a part to the query's result vector (one allocation, as a future's result) and inserts
/// any other part in key order. Results are kept in a ring of `window` slots and counted when their slot is reused,
/// as shoal's range rows take them (results_ring below). Returns the key-values received.
std::uint64_t plain_mpi_ranges(const sorted_part& data, std::int64_t n, int results, int queries, int window,
                               std::mt19937_64& rng) {
  using kv = std::pair<std::int64_t, std::int64_t>;
  std::uniform_int_distribution<std::int64_t> pick(0, n - results);
  std::vector<std::vector<kv>> slots(static_cast<std::size_t>(window));
  std::vector<std::array<std::int64_t, 3>> out(static_cast<std::size_t>(window));
  std::array<std::int64_t, 3> in_query{};
  std::vector<std::int64_t> in_reply;
  // Replies go with MPI_Isend: a reply above the eager limit (1,000 results and more) sent with MPI_Send would wait for
  // its receive while the client, sending its own reply, could not post it.
  std::deque<std::pair<MPI_Request, std::vector<std::int64_t>>> replies;
  std::vector<std::vector<std::int64_t>> spare;
  std::uint64_t got = 0;
  plain_mpi_service(
      queries, window,
      [&](int q) {
        const auto slot = static_cast<std::size_t>(q % window);
        got += slots[slot].size();
        slots[slot].clear();
        const std::int64_t lo = pick(rng), hi = lo + results - 1;
        out[slot] = {2 * lo, 2 * hi, static_cast<std::int64_t>(slot)};
        const int first = sorted_part::owner(lo, n), last = sorted_part::owner(hi, n);
        for (int owner = first; owner <= last; ++owner)
          MPI_Send(out[slot].data(), 3, MPI_INT64_T, owner, query_tag, MPI_COMM_WORLD);
        return last - first + 1;
      },
      [&](const MPI_Status& st) {
        MPI_Recv(in_query.data(), 3, MPI_INT64_T, st.MPI_SOURCE, query_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const auto [from, to] = data.span(in_query[0], in_query[1]);
        std::vector<std::int64_t> reply;
        if (!spare.empty()) reply = std::move(spare.back()), spare.pop_back();
        reply.resize(2 + 2 * (to - from));
        reply[0] = in_query[2];
        reply[1] = static_cast<std::int64_t>(to - from);
        for (std::size_t i = from, at = 2; i < to; ++i, at += 2) {
          reply[at] = data.keys[i];
          reply[at + 1] = data.values[i];
        }
        auto& [req, bytes] = replies.emplace_back(MPI_REQUEST_NULL, std::move(reply));
        MPI_Isend(bytes.data(), static_cast<int>(bytes.size()), MPI_INT64_T, st.MPI_SOURCE, reply_tag, MPI_COMM_WORLD,
                  &req);
        for (int done = 1; done && !replies.empty();) {
          MPI_Test(&replies.front().first, &done, MPI_STATUS_IGNORE);
          if (done) spare.push_back(std::move(replies.front().second)), replies.pop_front();
        }
      },
      [&](const MPI_Status& st) {
        int words = 0;
        MPI_Get_count(&st, MPI_INT64_T, &words);
        in_reply.resize(static_cast<std::size_t>(words));
        MPI_Recv(in_reply.data(), words, MPI_INT64_T, st.MPI_SOURCE, reply_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        auto& result = slots[static_cast<std::size_t>(in_reply[0])];
        const auto count = static_cast<std::size_t>(in_reply[1]);
        auto pair_at = [&](std::size_t i) { return kv{in_reply[2 + 2 * i], in_reply[3 + 2 * i]}; };
        if (result.empty()) {
          result.reserve(count);
          for (std::size_t i = 0; i < count; ++i) result.push_back(pair_at(i));
        } else if (count > 0) {  // another part of the query: in key order among those already here
          const auto at = std::upper_bound(result.begin(), result.end(), pair_at(0).first,
                                           [](std::int64_t k, const kv& e) { return k < e.first; });
          std::vector<kv> part;
          for (std::size_t i = 0; i < count; ++i) part.push_back(pair_at(i));
          result.insert(at, part.begin(), part.end());
        }
      });
  for (auto& [req, bytes] : replies) MPI_Wait(&req, MPI_STATUS_IGNORE);  // matched: every client has its replies
  for (const auto& r : slots) got += r.size();
  return got;
}

/// The range queries' results as the paper's application takes them (seeds/000 §3: each client keeps W requests
/// outstanding and re-posts as soon as a complete reply arrives): a ring of W futures, the oldest one's key-values
/// taken (counted) before its slot is issued again. Holding every result of a round until its end instead (10,000
/// vectors of 1.6 KB per rank) measured the cache misses of those 16 MB rather than the map: 0.25-0.35 of the finds'
/// rate against 0.39-0.48 with the ring, in one sitting (docs/containers/ordered_map.md, session 32).
class results_ring {
 public:
  explicit results_ring(std::size_t window) : slots_(std::max<std::size_t>(window, 1)) {}
  template <class Issue>
  void issue(std::uint64_t& got, Issue&& issue) {
    auto& slot = slots_[next_++ % slots_.size()];
    if (slot.valid()) got += slot.get().size();
    slot = issue();
  }
  void drain(std::uint64_t& got) {
    for (auto& slot : slots_)
      if (slot.valid()) got += slot.get().size();
  }

 private:
  std::vector<shoal::future<std::vector<std::pair<std::int64_t, std::int64_t>>>> slots_;
  std::size_t next_ = 0;
};

void run_ordered_map(context& ctx) {
  const int me = shoal::rank(), np = shoal::size();
  const auto n = static_cast<std::int64_t>(ctx.size_or(1000000));
  shoal::ordered_map_options opts;
  opts.nodes_per_rank = static_cast<std::size_t>(n) / 16 + 1024;
  map_type m(opts);
  ctx.progress("filling " + std::to_string(n) + " key-values");
  {
    // Keys 0, 2, 4, ... inserted in a random order (odd keys stay free for the mixed workload's inserts).
    std::vector<std::int64_t> mine;
    for (std::int64_t k = me; k < n; k += np) mine.push_back(k);
    std::shuffle(mine.begin(), mine.end(), std::mt19937_64(42 + static_cast<std::uint64_t>(me)));
    for (auto k : mine) m.async_insert(2 * k, k);
    m.barrier();
  }
  std::mt19937_64 rng(7 + static_cast<std::uint64_t>(me));
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  const int finds = std::max(2000, static_cast<int>(std::min<std::int64_t>(n, 200000) / np));

  const sorted_part sorted(n);
  std::mt19937_64 mpi_rng(99 + static_cast<std::uint64_t>(me));
  auto mpi_finds = [&] { plain_mpi_finds(sorted, n, finds, 64, mpi_rng); };
  auto shoal_finds = [&] {
    for (int i = 0; i < finds; ++i) m.async_find(2 * pick(rng));
    m.barrier();
  };
  // shoal's `work` (`ops` operations per rank) beside the plain-MPI finds, in turns: {shoal rate, MPI rate}.
  auto beside_mpi = [&](int ops, const std::function<void()>& work) {
    const auto [t, t_mpi] = shoal::bench::fastest_timed_pair(shoal::bench::rounds, work, mpi_finds);
    return std::pair{ops * np / t, finds * np / t_mpi};
  };
  const std::pair<shoal::consistency, const char*> semantics[] = {{shoal::consistency::total_order, "total order"},
                                                                  {shoal::consistency::sequential, "sequential"},
                                                                  {shoal::consistency::none, "none"}};
  double none_find_rate = 0;
  for (auto [c, label] : semantics) {
    ctx.progress(std::string("find, ") + label);
    m.set_consistency(c);
    const auto [rate, mpi_rate] = beside_mpi(finds, shoal_finds);
    if (c == shoal::consistency::none) none_find_rate = rate;
    ctx.report({.operation = "find 100%", .variant = label, .value = rate / 1e6, .unit = "Mops/s",
                .baseline = "plain MPI find", .baseline_value = mpi_rate / 1e6});
  }
  // The median of 3 timings: one timing of these sub-second phases swung by a third between runs on a shared machine.
  auto timed_finds = [&](int count) {
    const double t = shoal::bench::median_timed(3, [&] {
      for (int i = 0; i < count; ++i) m.async_find(2 * pick(rng));
      m.barrier();
    });
    return count * np / t;
  };

  // k, the degree of asynchrony: how many forwards to other ranks a node makes before one must arrive first. Under
  // total order every request passes the head, the node k throttles most.
  m.set_consistency(shoal::consistency::total_order);
  double default_k_rate = 0;
  for (std::size_t k : {opts.asynchrony, std::size_t{16}, std::size_t{1}, std::size_t{0}}) {
    ctx.progress("find, k = " + std::to_string(k));
    m.set_asynchrony(k);
    const double rate = timed_finds(finds);
    if (k == opts.asynchrony) default_k_rate = rate;
    ctx.report({.operation = "find 100% by k", .variant = "total order, k = " + std::to_string(k), .value = rate / 1e6,
                .unit = "Mops/s", .baseline = "default k = " + std::to_string(opts.asynchrony),
                .baseline_value = default_k_rate / 1e6});
  }
  m.set_asynchrony(opts.asynchrony);
  m.set_consistency(shoal::consistency::sequential);

  // lower_bound: the node of the key answers, and every node where the search descends is probed.
  {
    ctx.progress("lower_bound");
    const auto [rate, mpi_rate] = beside_mpi(finds, [&] {
      for (int i = 0; i < finds; ++i) m.async_lower_bound(2 * pick(rng) + 1);
      m.barrier();
    });
    ctx.report({.operation = "lower_bound 100%", .variant = "sequential", .value = rate / 1e6, .unit = "Mops/s",
                .baseline = "plain MPI find", .baseline_value = mpi_rate / 1e6});
  }

  // Range queries (no consistency, as in the paper's Figure 9).
  m.set_consistency(shoal::consistency::none);
  for (int results : {100, 1000, 10000}) {
    if (results * 4 > n) continue;
    ctx.progress("range " + std::to_string(results));
    // 10^6 key-values per rank in all (10,000 queries of 100): long enough that the window's ramp and the closing
    // barrier stay a small part of the time (with 1,000 queries of 100 they were most of it, about 2 ms).
    const int queries = std::max(20, static_cast<int>(200000000 / results / np / 100));
    std::uint64_t returned = 0, parts = 0, mpi_returned = 0;
    auto shoal_ranges = [&] {
      const auto parts_before = m.stats().range_parts;
      std::uint64_t got = 0;
      results_ring ring(m.window());
      for (int i = 0; i < queries; ++i) {
        const std::int64_t lo = std::uniform_int_distribution<std::int64_t>(0, n - results)(rng);
        ring.issue(got, [&] { return m.async_range(2 * lo, 2 * (lo + results - 1)); });
      }
      ring.drain(got);
      m.barrier();
      returned = got;  // every round returns about the same: the last one's counts go with the fastest time
      parts = m.stats().range_parts - parts_before;
    };
    auto mpi_ranges = [&] { mpi_returned = plain_mpi_ranges(sorted, n, results, queries, 64, mpi_rng); };
    // Beside finds under none, and the plain-MPI ranges beside the plain-MPI finds, in turns (3 rounds: a round of
    // 10,000 results takes about half a second).
    double t = shoal::bench::never, t_find = shoal::bench::never;
    double t_mpi = shoal::bench::never, t_mpi_find = shoal::bench::never;
    for (int round = 0; round < 3; ++round) {
      shoal::bench::time_in_turns(round, t, t_find, shoal_ranges, shoal_finds);
      shoal::bench::time_in_turns(round, t_mpi, t_mpi_find, mpi_ranges, mpi_finds);
    }
    if (mpi_returned != static_cast<std::uint64_t>(queries) * static_cast<std::uint64_t>(results)) {
      throw shoal::error("ordered_map workload: the plain-MPI ranges returned " + std::to_string(mpi_returned) +
                         " key-values, not " + std::to_string(queries * results));
    }
    const double find_rate = finds * np / t_find;
    parts = shoal::allreduce(parts, shoal::op::sum{});
    const double kv = static_cast<double>(shoal::allreduce(returned, shoal::op::sum{}));
    const std::string v = std::to_string(results) + " results";
    ctx.report({.operation = "range ops", .variant = v, .value = queries * np / t / 1e3, .unit = "Kops/s",
                .baseline = "find ops (none)", .baseline_value = find_rate / 1e3});
    ctx.report({.operation = "range ops", .variant = v, .value = queries * np / t / 1e3, .unit = "Kops/s",
                .baseline = "plain MPI range ops", .baseline_value = queries * np / t_mpi / 1e3});
    // What a range costs hand-written, in finds: the reference for shoal's range against its own finds above.
    ctx.report({.operation = "plain MPI range ops", .variant = v, .value = queries * np / t_mpi / 1e3, .unit = "Kops/s",
                .baseline = "plain MPI find ops", .baseline_value = finds * np / t_mpi_find / 1e3});
    ctx.report({.operation = "range key-values", .variant = v, .value = kv / t / 1e6, .unit = "Mkv/s",
                .baseline = "find kv (none)", .baseline_value = find_rate / 1e6});
    ctx.report({.operation = "range returned msgs", .variant = v, .value = static_cast<double>(parts) / t / 1e6,
                .unit = "Mmsg/s", .baseline = "find replies (none)", .baseline_value = find_rate / 1e6});
  }

  // Mixed: 20% insert, 20% delete, 60% find or range of 100.
  for (bool ranges : {false, true}) {
    ctx.progress(ranges ? "mixed with ranges" : "mixed with finds");
    const int ops = ranges ? finds / 10 : finds;
    std::uint64_t kv = 0;
    const auto [rate, mpi_rate] = beside_mpi(ops, [&] {
      kv = 0;  // every round returns about the same: the last one's count goes with the fastest time
      results_ring ring(m.window());
      for (int i = 0; i < ops; ++i) {
        const int kind = static_cast<int>(rng() % 10);
        const std::int64_t k = pick(rng);
        if (kind < 2) m.async_insert(2 * k + 1, k);
        else if (kind < 4) m.async_erase(2 * k + 1);
        else if (ranges) ring.issue(kv, [&] { return m.async_range(2 * k, 2 * k + 198); });
        else m.async_find(2 * k);
      }
      ring.drain(kv);
      m.barrier();
    });
    ctx.report({.operation = ranges ? "mixed 20/20/60 range" : "mixed 20/20/60 find", .variant = "none",
                .value = rate / 1e6, .unit = "Mops/s", .baseline = "plain MPI find", .baseline_value = mpi_rate / 1e6});
    if (ranges) {
      // key-values per operation (the last round's) times the fastest round's operations per second
      const double kvs = static_cast<double>(shoal::allreduce(kv, shoal::op::sum{})) / (ops * np) * rate;
      ctx.report({.operation = "mixed range key-values", .variant = "none", .value = kvs / 1e6, .unit = "Mkv/s",
                  .baseline = "find kv (none)", .baseline_value = none_find_rate / 1e6});
    }
  }
  m.barrier();

  // Range queries over 1..4 dimensions, 4096 results each, on a grid of about min(n, 65536) keys.
  double one_dim_rate = 0, one_dim_msgs = 0;
  const auto grid_keys = std::min<std::int64_t>(n, 65536);
  auto dims_run = [&]<std::size_t D>(std::integral_constant<std::size_t, D>) {
    using key = std::array<int, D>;
    const int side = static_cast<int>(std::llround(std::pow(static_cast<double>(grid_keys), 1.0 / D)));
    const int width = static_cast<int>(std::llround(std::pow(4096.0, 1.0 / D)));
    shoal::ordered_map_options o;
    o.semantics = shoal::consistency::none;
    o.nodes_per_rank = static_cast<std::size_t>(grid_keys) / 16 + 1024;
    shoal::ordered_map<key, std::int64_t> g(o);
    std::int64_t total = 1;
    for (std::size_t d = 0; d < D; ++d) total *= side;
    for (std::int64_t i = me; i < total; i += np) {
      key k{};
      std::int64_t rest = i;
      for (std::size_t d = D; d-- > 0;) k[d] = static_cast<int>(rest % side), rest /= side;
      g.async_insert(k, i);
    }
    g.barrier();
    ctx.progress("range over " + std::to_string(D) + " dimensions");
    const int queries = 40;
    const auto parts_before = shoal::allreduce(g.stats().range_parts, shoal::op::sum{});
    std::uint64_t returned = 0;
    const double t = shoal::bench::timed([&] {
      std::vector<shoal::future<std::vector<std::pair<key, std::int64_t>>>> fs;
      for (int q = 0; q < queries; ++q) {
        std::vector<shoal::dimension_range> box;
        for (std::size_t d = 0; d < D; ++d) {
          const int lo = static_cast<int>(rng() % static_cast<std::uint64_t>(std::max(1, side - width + 1)));
          box.push_back({lo, lo + width - 1});
        }
        fs.push_back(g.async_range(shoal::key_box(box)));
      }
      for (auto& f : fs) returned += f.get().size();
      g.barrier();
    });
    const auto parts = shoal::allreduce(g.stats().range_parts, shoal::op::sum{}) - parts_before;
    const double kv = static_cast<double>(shoal::allreduce(returned, shoal::op::sum{})) / t;
    const double msgs = static_cast<double>(parts) / t;
    if (D == 1) one_dim_rate = kv, one_dim_msgs = msgs;
    const std::string v = std::to_string(D) + "-D, " + std::to_string(width) + "^" + std::to_string(D);
    ctx.report({.operation = "range key-values by dims", .variant = v, .value = kv / 1e6, .unit = "Mkv/s",
                .baseline = "1-D range", .baseline_value = one_dim_rate / 1e6});
    ctx.report({.operation = "range msgs by dims", .variant = v, .value = msgs / 1e3, .unit = "Kmsg/s",
                .baseline = "1-D range msgs", .baseline_value = one_dim_msgs / 1e3});
  };
  dims_run(std::integral_constant<std::size_t, 1>{});
  dims_run(std::integral_constant<std::size_t, 2>{});
  dims_run(std::integral_constant<std::size_t, 3>{});
  dims_run(std::integral_constant<std::size_t, 4>{});
}

const shoal::bench::registrar reg("ordered_map",
                                  "skip-list service: find under 3 semantics vs plain MPI, ranges, mixed, dimensions",
                                  run_ordered_map);

}  // namespace
