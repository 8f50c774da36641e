// flights/schedule.hpp — flights and the seeded schedule generator.
//
// A schedule is a vector of flights sorted by departure, ids 0..n-1 in that order. Times are simulated seconds from
// the schedule's start (day 0, 00:00). The generator draws a route network once (origin and destination by airport
// weight, so hubs get most routes), gives each route departures through the day (banks in the morning, at midday and
// in the evening), and repeats it every day with a few minutes of jitter. A flight's duration is taxi and climb time
// plus the great-circle distance at cruise speed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "flights/airports.hpp"

namespace flights {

struct flight {
  std::int32_t id = 0;
  std::uint16_t origin = 0;  // index into the airport table
  std::uint16_t dest = 0;
  std::int32_t dep = 0;  // simulated seconds
  std::int32_t arr = 0;
  /// In the air at simulated time t: departed, not yet arrived.
  bool airborne_at(std::int64_t t) const { return dep <= t && t < arr; }
  friend bool operator==(const flight&, const flight&) = default;
};

constexpr std::int32_t seconds_per_day = 86400;

/// Great-circle distance in km (haversine, mean Earth radius).
inline double great_circle_km(const airport& a, const airport& b) {
  constexpr double radius = 6371.0, rad = 3.14159265358979323846 / 180.0;
  const double dlat = (b.lat - a.lat) * rad, dlon = (b.lon - a.lon) * rad;
  const double h = std::sin(dlat / 2) * std::sin(dlat / 2) +
                   std::cos(a.lat * rad) * std::cos(b.lat * rad) * std::sin(dlon / 2) * std::sin(dlon / 2);
  return 2 * radius * std::asin(std::min(1.0, std::sqrt(h)));
}

struct schedule_options {
  std::uint64_t seed = 1;
  int days = 30;                 // the paper held one month of flights
  int flights_per_day = 20000;   // about half of the daily US commercial departures
  double cruise_kmh = 800;
  int overhead_minutes = 30;     // taxi, climb and descent
  double min_route_km = 150;     // shorter hops are not flown
};

/// Weight of each airport: the table lists each country's airports roughly busiest first, so the weight falls with
/// the position inside the country (Zipf-like) — the first few are hubs. Canada and Mexico are scaled down.
inline std::vector<double> airport_weights(const airport_table& t) {
  std::vector<double> w;
  std::unordered_map<std::string, int> position;
  for (const auto& a : t.airports) {
    const int p = position[a.country]++;
    const double scale = a.country == "United States" ? 1.0 : 0.3;
    w.push_back(scale / std::pow(p + 3.0, 1.15));
  }
  return w;
}

/// Flight duration in seconds for a route.
inline std::int32_t flight_seconds(const airport& a, const airport& b, const schedule_options& o) {
  return static_cast<std::int32_t>(o.overhead_minutes * 60 + great_circle_km(a, b) / o.cruise_kmh * 3600.0);
}

/// A departure time of day in seconds: three banks (07:30, 12:30, 18:00) and a flat share from 05:30 to 23:00.
inline std::int32_t draw_departure(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  const double pick = u(rng);
  double hours;
  if (pick < 0.25) hours = std::normal_distribution<double>(7.5, 1.0)(rng);
  else if (pick < 0.45) hours = std::normal_distribution<double>(12.5, 1.2)(rng);
  else if (pick < 0.7) hours = std::normal_distribution<double>(18.0, 1.3)(rng);
  else hours = 5.5 + u(rng) * 17.5;
  hours = std::clamp(hours, 5.0, 23.5);
  return static_cast<std::int32_t>(hours * 3600) / 300 * 300;  // on the 5-minute grid
}

/// Sorts flights by departure (then route) and numbers them 0..n-1 in that order.
inline void sort_and_number(std::vector<flight>& fs) {
  std::sort(fs.begin(), fs.end(), [](const flight& a, const flight& b) {
    return std::tie(a.dep, a.origin, a.dest, a.arr) < std::tie(b.dep, b.origin, b.dest, b.arr);
  });
  for (std::size_t i = 0; i < fs.size(); ++i) fs[i].id = static_cast<std::int32_t>(i);
}

/// The seeded schedule: same options, same airports → the same flights on every rank and every run.
inline std::vector<flight> generate_schedule(const airport_table& t, const schedule_options& o) {
  if (o.days < 1 || o.flights_per_day < 1) throw std::invalid_argument("flights: --days and --flights-per-day must be >= 1");
  std::mt19937_64 rng(o.seed);
  const auto weights = airport_weights(t);
  std::discrete_distribution<int> pick_airport(weights.begin(), weights.end());
  struct route {
    std::uint16_t origin, dest;
    std::int32_t seconds;
    std::vector<std::int32_t> departures;
  };
  std::vector<route> routes;
  int daily = 0;
  // Routes: an origin and a destination by weight; each route flies 1..5 times a day (busier between hubs).
  for (int attempts = 0; daily < o.flights_per_day && attempts < 100 * o.flights_per_day; ++attempts) {
    const int a = pick_airport(rng), b = pick_airport(rng);
    if (a == b || great_circle_km(t.airports[a], t.airports[b]) < o.min_route_km) continue;
    route r{static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b), flight_seconds(t.airports[a], t.airports[b], o), {}};
    const int times = std::min(o.flights_per_day - daily, 1 + static_cast<int>(rng() % 5));
    for (int i = 0; i < times; ++i) r.departures.push_back(draw_departure(rng));
    daily += times;
    routes.push_back(std::move(r));
  }
  std::vector<flight> out;
  out.reserve(static_cast<std::size_t>(daily) * static_cast<std::size_t>(o.days));
  std::uniform_int_distribution<int> jitter(-2, 2);  // in 5-minute steps
  for (int day = 0; day < o.days; ++day) {
    for (const auto& r : routes) {
      for (auto d : r.departures) {
        flight f;
        f.origin = r.origin;
        f.dest = r.dest;
        f.dep = std::max(0, day * seconds_per_day + d + 300 * jitter(rng));
        f.arr = f.dep + r.seconds;
        out.push_back(f);
      }
    }
  }
  sort_and_number(out);
  return out;
}


/// The end of the schedule: the last arrival.
inline std::int64_t schedule_end(const std::vector<flight>& fs) {
  std::int64_t end = 0;
  for (const auto& f : fs) end = std::max<std::int64_t>(end, f.arr);
  return end;
}

}  // namespace flights
