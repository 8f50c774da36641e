// shoal-flights — the live-flights application of the service-oriented skip-list paper (seeds/000 §3.4): flights
// in a shoal::ordered_map keyed by departure and arrival position, inserted when they depart and erased when they
// land, while rank 0 serves a map page and a WebSocket on which clients run 2-D x 2-D range queries live.
//
//   mpirun -np 2 shoal-flights                         http://127.0.0.1:8080/, a generated month of flights
//   mpirun -np 2 shoal-flights --port 0 --start 1:08:00 --speedup 0       frozen clock (deterministic)
//   mpirun -np 2 shoal-flights --flights-csv On_Time.csv                  a real BTS on-time table
//   shoal-flights --dump-schedule flights.csv          writes the generated schedule and exits
// Stops on SIGINT / SIGTERM or after --exit-after seconds. Exit status 2 for bad arguments or input files.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include "flights/airports.hpp"
#include "flights/bts_loader.hpp"
#include "flights/flight_map.hpp"
#include "flights/live_queries.hpp"
#include "flights/schedule.hpp"
#include "flights/sim_clock.hpp"
#include "flights/web_assets.hpp"
#include "flights/web_server.hpp"
#include "shoal/core.hpp"

namespace {

std::atomic<bool> stop_requested{false};
void on_signal(int) { stop_requested = true; }
void request_stop() { stop_requested = true; }  // sent by rank 0 to the other ranks

struct options {
  std::string airports = SHOAL_FLIGHTS_AIRPORTS;
  std::string flights_csv;
  std::string dump_schedule;
  flights::schedule_options schedule;
  std::string start = "0:06:00";
  std::string pause_at;
  double speedup = 60;
  std::string consistency = "sequential";
  int port = 8080;
  std::string bind = "127.0.0.1";
  double exit_after = 0;
  std::size_t budget = 256;
};

shoal::consistency consistency_of(const std::string& name) {
  if (name == "total") return shoal::consistency::total_order;
  if (name == "none") return shoal::consistency::none;
  return shoal::consistency::sequential;
}

std::string airports_json(const flights::airport_table& t) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& a : t.airports) all.push_back({a.iata, a.name, a.lon, a.lat});
  return all.dump();
}

void dump_schedule(const std::string& path, const std::vector<flights::flight>& fs, const flights::airport_table& t) {
  std::ofstream out(path);
  if (!out) throw flights::input_error(path, 0, "cannot write the schedule (check --dump-schedule)");
  out << "id,origin,dest,dep,arr,dep_lon_centi,dep_lat_centi,arr_lon_centi,arr_lat_centi\n";
  for (const auto& f : fs) {
    const auto k = flights::key_of(f, t);
    out << f.id << ',' << t.airports[f.origin].iata << ',' << t.airports[f.dest].iata << ',' << f.dep << ',' << f.arr
        << ',' << k[0] << ',' << k[1] << ',' << k[2] << ',' << k[3] << '\n';
  }
}

/// Number of flights of the schedule in the air at t (for the page's counters): O(log n) per call.
class airborne_counter {
 public:
  explicit airborne_counter(const std::vector<flights::flight>& fs) {
    for (const auto& f : fs) deps_.push_back(f.dep), arrs_.push_back(f.arr);
    std::sort(deps_.begin(), deps_.end());
    std::sort(arrs_.begin(), arrs_.end());
  }
  std::int64_t at(std::int64_t t) const {
    return (std::upper_bound(deps_.begin(), deps_.end(), t) - deps_.begin()) -
           (std::upper_bound(arrs_.begin(), arrs_.end(), t) - arrs_.begin());
  }

 private:
  std::vector<std::int64_t> deps_, arrs_;
};

/// Rank 0: the web front end, polled between shoal work.
class front_end {
 public:
  front_end(const options& o, flights::flight_map& map, const flights::airport_table& airports,
            const std::vector<flights::flight>& schedule, const flights::sim_clock& clock)
      : opts_(o), airports_json_(airports_json(airports)), counter_(schedule), clock_(clock),
        queries_(map, {}, [this](std::uint64_t s, std::string text) { server_->send(s, std::move(text)); }) {
    flights::web_handlers h;
    h.page = [this](const std::string& target) -> std::optional<flights::web_page> {
      if (target == "/" || target == "/index.html") return flights::web_page{flights::index_html, "text/html; charset=utf-8"};
      if (target == "/airports.json") return flights::web_page{airports_json_, "application/json"};
      return std::nullopt;
    };
    h.on_open = [this](std::uint64_t s) {
      queries_.open(s);
      server_->send(s, nlohmann::json{{"type", "hello"},
                                      {"ranks", shoal::size()},
                                      {"consistency", opts_.consistency},
                                      {"speedup", clock_.speedup()},
                                      {"sim_time", clock_.now()},
                                      {"flights", counter_.total()}}
                           .dump());
    };
    h.on_message = [this](std::uint64_t s, std::string text) { queries_.receive(s, text); };
    h.on_close = [this](std::uint64_t s) { queries_.close(s); };
    server_ = std::make_unique<flights::web_server>(io_, o.bind, static_cast<unsigned short>(o.port), std::move(h));
  }

  unsigned short port() const { return server_->port(); }

  /// Runs ready network handlers, collects and issues queries, ticks the clock. True when it did anything.
  bool poll() {
    if (io_.stopped()) io_.restart();
    bool busy = io_.poll() > 0;
    busy = queries_.step([this](std::int64_t id, double ms, std::vector<std::pair<flights::flight_key, flights::flight>>& found) {
             nlohmann::json list = nlohmann::json::array();
             for (std::size_t i = 0; i < found.size() && i < flights::live_queries::max_results; ++i) {
               const auto& f = found[i].second;
               list.push_back({f.id, f.origin, f.dest, f.dep, f.arr});
             }
             const auto t = clock_.now();
             return nlohmann::json{{"type", "result"}, {"id", id}, {"sim_time", t}, {"latency_ms", ms},
                                   {"count", found.size()}, {"truncated", found.size() > flights::live_queries::max_results},
                                   {"in_air", counter_.at(t)}, {"flights", std::move(list)}};
           }) || busy;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_tick_) {
      next_tick_ = now + std::chrono::milliseconds(500);
      const auto t = clock_.now();
      server_->broadcast(nlohmann::json{{"type", "clock"}, {"sim_time", t}, {"in_air", counter_.at(t)}}.dump());
    }
    return busy;
  }

 private:
  class counted : public airborne_counter {
   public:
    explicit counted(const std::vector<flights::flight>& fs) : airborne_counter(fs), n_(fs.size()) {}
    std::size_t total() const { return n_; }

   private:
    std::size_t n_;
  };

  const options& opts_;
  std::string airports_json_;
  counted counter_;
  const flights::sim_clock& clock_;
  flights::net::io_context io_;
  std::unique_ptr<flights::web_server> server_;
  flights::live_queries queries_;
  std::chrono::steady_clock::time_point next_tick_{};
};

int run(const options& o, const flights::airport_table& airports, const std::vector<flights::flight>& schedule) {
  const auto end = flights::schedule_end(schedule);
  const std::int64_t start = flights::parse_sim_time(o.start);
  const std::int64_t stop_at = o.pause_at.empty() ? end : std::min(end, flights::parse_sim_time(o.pause_at));
  flights::sim_clock clock(start, o.speedup, stop_at);

  shoal::ordered_map_options mo;
  mo.semantics = consistency_of(o.consistency);
  mo.granularity = 128;  // a few thousand flights in the air: smaller nodes spread a query over more of them
  flights::flight_map map(mo);
  flights::traffic traffic(map, schedule, airports, shoal::rank(), shoal::size());
  traffic.advance(start, SIZE_MAX);  // the flights in the air at the start
  map.barrier();                     // collective: every rank's are in

  std::unique_ptr<front_end> web;
  if (shoal::rank() == 0) {
    web = std::make_unique<front_end>(o, map, airports, schedule, clock);
    fmt::print("shoal-flights: {} flights, {} airports, {} ranks, consistency {}, clock from {} at {}x\n",
               schedule.size(), airports.airports.size(), shoal::size(), o.consistency, start, o.speedup);
    fmt::print("shoal-flights: serving http://{}:{}/\n", o.bind, web->port());
    std::fflush(stdout);
  }
  shoal::barrier();
  clock.restart();
  const auto wall0 = std::chrono::steady_clock::now();
  while (!stop_requested) {
    bool busy = traffic.advance(clock.now(), o.budget) > 0;
    if (web) busy = web->poll() || busy;
    shoal::progress();
    if (shoal::rank() == 0 && o.exit_after > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() > o.exit_after)
      stop_requested = true;
    if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (shoal::rank() == 0) {
    for (int r = 1; r < shoal::size(); ++r) shoal::post(r, &request_stop);
    fmt::print("shoal-flights: stopping (rank 0 inserted {}, erased {})\n", traffic.inserted(), traffic.erased());
    std::fflush(stdout);
  }
  map.wait();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"shoal-flights: live flights in a distributed skip list, with a web map (docs/apps/flights.md)"};
  options o;
  app.add_option("--airports", o.airports, "airport table CSV (iata,name,country,lat,lon)");
  app.add_option("--flights-csv", o.flights_csv, "a BTS on-time style CSV (ORIGIN, DEST, DEP_TIME, ARR_TIME[, FL_DATE]) "
                                                 "instead of the generated schedule");
  app.add_option("--seed", o.schedule.seed, "schedule generator seed");
  app.add_option("--days", o.schedule.days, "days of generated schedule")->check(CLI::Range(1, 366));
  app.add_option("--flights-per-day", o.schedule.flights_per_day, "generated flights per day")->check(CLI::Range(1, 200000));
  app.add_option("--start", o.start, "simulated start time: seconds, hh:mm or d:hh:mm");
  app.add_option("--pause-at", o.pause_at, "the simulated clock stops at this time (same forms as --start)");
  app.add_option("--speedup", o.speedup, "simulated seconds per wall second (0: frozen clock)")->check(CLI::Range(0.0, 1e6));
  app.add_option("--consistency", o.consistency, "ordered_map semantics")->check(CLI::IsMember({"total", "sequential", "none"}));
  app.add_option("--port", o.port, "HTTP and WebSocket port (0: a free one, printed)")->check(CLI::Range(0, 65535));
  app.add_option("--bind", o.bind, "address to listen on");
  app.add_option("--exit-after", o.exit_after, "stop after this many wall seconds (0: run until SIGINT/SIGTERM)");
  app.add_option("--budget", o.budget, "inserts and erases a rank issues per loop step")->check(CLI::Range(1, 1 << 20));
  app.add_option("--dump-schedule", o.dump_schedule, "write the schedule as CSV to this file and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    const auto airports = flights::read_airports(o.airports);
    std::vector<flights::flight> schedule;
    if (!o.flights_csv.empty()) {
      auto r = flights::read_bts(o.flights_csv, airports);
      if (shoal::rank() == 0)
        fmt::print("shoal-flights: {}: {} rows, {} flights; skipped {} with unknown airports, {} without times, {} "
                   "cancelled or diverted\n", o.flights_csv, r.rows, r.flights.size(), r.skipped_unknown_airport,
                   r.skipped_no_time, r.skipped_cancelled);
      schedule = std::move(r.flights);
      if (schedule.empty()) throw flights::input_error(o.flights_csv, 0, "no usable flight in the file");
    } else {
      schedule = flights::generate_schedule(airports, o.schedule);
    }
    if (!o.dump_schedule.empty()) {
      if (shoal::rank() == 0) dump_schedule(o.dump_schedule, schedule, airports);
      return 0;
    }
    flights::parse_sim_time(o.start);
    if (!o.pause_at.empty()) flights::parse_sim_time(o.pause_at);
    return run(o, airports, schedule);
  } catch (const flights::input_error& e) {
    if (shoal::rank() == 0) fmt::print(stderr, "shoal-flights: {}\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    if (shoal::rank() == 0) fmt::print(stderr, "shoal-flights: {}\n", e.what());
    return 2;
  } catch (const boost::system::system_error& e) {
    fmt::print(stderr, "shoal-flights: cannot listen on {}:{}: {} (choose another --port, or 0)\n", o.bind, o.port,
               e.code().message());
    MPI_Abort(MPI_COMM_WORLD, 3);
    return 3;
  }
}
