// Workload `flights`: the live-flights application (apps/flights, seeds/000 §3.4) without its web front end. Every
// rank steps simulated time through a generated day in 60 s steps, inserting its flights as they depart and
// erasing them once landed, while it keeps one 4-D (+ id) range query — a random departure box to a random arrival
// box — in flight at all times. Reported: insert+erase rate with the queries running, and the queries' latency
// percentiles; the baseline is the same steps and the same queries (every rank's) on one process's
// absl::btree_map, in the same run. --size: flights per day (default 20,000; the run takes a few seconds).
#include <absl/container/btree_map.h>

#include <algorithm>
#include <random>
#include <vector>

#include "bench.hpp"
#include "flights/flight_map.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;
using box_pair = std::pair<flights::geo_box, flights::geo_box>;
constexpr std::int64_t step_seconds = 60;

/// Rank r's query boxes: departure boxes of 10 x 6 degrees, arrival boxes of 16 x 10, over the continent.
std::vector<box_pair> queries_of(int rank, std::size_t count) {
  std::mt19937_64 rng(1000 + static_cast<std::uint64_t>(rank));
  std::uniform_real_distribution<double> lon(-125, -70), lat(25, 50);
  std::vector<box_pair> out;
  for (std::size_t i = 0; i < count; ++i) {
    const double a = lon(rng), b = lat(rng), c = lon(rng), d = lat(rng);
    out.push_back({{a, a + 10, b, b + 6}, {c, c + 16, d, d + 10}});
  }
  return out;
}

struct latencies {
  std::vector<double> ms;
  double percentile(double p) const { return ms.empty() ? 0 : shoal::bench::percentile(ms, p); }
};

/// The skip list: returns {seconds, operations, this rank's latencies}.
struct run_result {
  double seconds = 0;
  double updates = 0;
  latencies lat;
  double results = 0;
};

run_result run_shoal(shoal::consistency c, const std::vector<flights::flight>& schedule,
                     const flights::airport_table& airports, std::int64_t end) {
  shoal::ordered_map_options o;
  o.semantics = c;
  o.granularity = 128;
  flights::flight_map map(o);
  flights::traffic traffic(map, schedule, airports, shoal::rank(), shoal::size());
  const auto boxes = queries_of(shoal::rank(), static_cast<std::size_t>(end / step_seconds) + 1);
  run_result r;
  r.seconds = shoal::bench::timed([&] {
    std::optional<shoal::future<std::vector<std::pair<flights::flight_key, flights::flight>>>> pending;
    double issued = 0;
    std::size_t next = 0;
    for (std::int64_t t = 0; t <= end; t += step_seconds) {
      traffic.advance(t, SIZE_MAX);
      if (pending && pending->ready()) {
        r.results += static_cast<double>(pending->get().size());
        r.lat.ms.push_back((shoal::bench::now() - issued) * 1e3);
        pending.reset();
      }
      if (!pending) {
        const auto& [dep, arr] = boxes[next++ % boxes.size()];
        issued = shoal::bench::now();
        pending = map.async_range(flights::query_box(dep, arr));
      }
    }
    if (pending) {
      r.results += static_cast<double>(pending->get().size());
      r.lat.ms.push_back((shoal::bench::now() - issued) * 1e3);
    }
    map.barrier();
  });
  r.updates = static_cast<double>(traffic.inserted() + traffic.erased());
  return r;
}

/// One process, absl::btree_map: every flight, and every rank's queries (as many as they ran, one at a time).
run_result run_btree(const std::vector<flights::flight>& schedule, const flights::airport_table& airports,
                     std::int64_t end, const std::vector<std::size_t>& queries_per_rank) {
  absl::btree_map<flights::flight_key, flights::flight> map;
  std::vector<std::uint32_t> by_arr(schedule.size());
  for (std::size_t i = 0; i < schedule.size(); ++i) by_arr[i] = static_cast<std::uint32_t>(i);
  std::stable_sort(by_arr.begin(), by_arr.end(), [&](auto a, auto b) { return schedule[a].arr < schedule[b].arr; });
  std::vector<std::vector<box_pair>> boxes;
  for (int r = 0; r < static_cast<int>(queries_per_rank.size()); ++r) boxes.push_back(queries_of(r, static_cast<std::size_t>(end / step_seconds) + 1));
  run_result r;
  std::size_t next_dep = 0, next_arr = 0, step = 0;
  const double t0 = shoal::bench::now();
  for (std::int64_t t = 0; t <= end; t += step_seconds, ++step) {
    for (; next_dep < schedule.size() && schedule[next_dep].dep <= t; ++next_dep)
      if (schedule[next_dep].arr > t) map.emplace(flights::key_of(schedule[next_dep], airports), schedule[next_dep]), ++r.updates;
    for (; next_arr < by_arr.size() && schedule[by_arr[next_arr]].arr <= t; ++next_arr)
      r.updates += static_cast<double>(map.erase(flights::key_of(schedule[by_arr[next_arr]], airports)));
    for (std::size_t q = 0; q < queries_per_rank.size(); ++q) {
      if (step >= queries_per_rank[q]) continue;
      const auto box = flights::query_box(boxes[q][step].first, boxes[q][step].second);
      const double t1 = shoal::bench::now();
      std::size_t found = 0;
      const auto hi = box.highest<flights::flight_key>();
      for (auto it = map.lower_bound(box.lowest<flights::flight_key>()); it != map.end() && !(hi < it->first); ++it)
        found += box.contains(it->first);
      r.lat.ms.push_back((shoal::bench::now() - t1) * 1e3);
      r.results += static_cast<double>(found);
    }
  }
  r.seconds = shoal::bench::now() - t0;
  return r;
}

void run_flights(context& ctx) {
  const auto airports = flights::read_airports(SHOAL_FLIGHTS_AIRPORTS);
  flights::schedule_options so;
  so.days = 1;
  so.flights_per_day = static_cast<int>(ctx.size_or(20000));
  const auto schedule = flights::generate_schedule(airports, so);
  const std::int64_t end = flights::schedule_end(schedule);
  // The baseline runs as many queries per rank as the skip list answered in its run (measured first, sequential).
  const std::pair<shoal::consistency, const char*> semantics[] = {{shoal::consistency::sequential, "sequential"},
                                                                  {shoal::consistency::none, "none"},
                                                                  {shoal::consistency::total_order, "total order"}};
  for (auto [c, label] : semantics) {
    ctx.progress(std::string("flights, ") + label);
    auto mine = run_shoal(c, schedule, airports, end);
    // Every rank's latencies and query count on every rank.
    std::vector<double> all_ms;
    std::vector<std::size_t> counts;
    for (int r = 0; r < shoal::size(); ++r) {
      auto part = shoal::broadcast(mine.lat.ms, r);
      counts.push_back(part.size());
      all_ms.insert(all_ms.end(), part.begin(), part.end());
    }
    const double updates = shoal::allreduce(mine.updates, shoal::op::sum{});
    const double results = shoal::allreduce(mine.results, shoal::op::sum{});
    run_result base;
    if (shoal::rank() == 0) base = run_btree(schedule, airports, end, counts);
    shoal::barrier();
    latencies lat{all_ms};
    const std::string v = std::string(label) + ", " + std::to_string(schedule.size()) + " flights";
    ctx.report({.operation = "flights insert+erase, queries running", .variant = v,
                .value = updates / mine.seconds / 1e3, .unit = "Kops/s", .baseline = "absl::btree_map, 1 process",
                .baseline_value = base.updates / base.seconds / 1e3});
    for (double p : {0.5, 0.9, 0.99}) {
      ctx.report({.operation = "flights 4-D range latency p" + std::to_string(static_cast<int>(p * 100)), .variant = v,
                  .value = lat.percentile(p), .unit = "ms", .baseline = "absl::btree_map, 1 process",
                  .baseline_value = base.lat.percentile(p), .direction = better::lower});
    }
    ctx.report({.operation = "flights range results per query", .variant = v,
                .value = all_ms.empty() ? 0 : results / static_cast<double>(all_ms.size()), .unit = "flights",
                .baseline = "absl::btree_map, 1 process",
                .baseline_value = base.lat.ms.empty() ? 0 : base.results / static_cast<double>(base.lat.ms.size())});
  }
}

const shoal::bench::registrar reg("flights",
                                  "live flights (seeds/000 §3.4): inserts and erases with concurrent 4-D range queries "
                                  "vs one process's absl::btree_map",
                                  run_flights);

}  // namespace
