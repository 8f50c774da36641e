// apps/flights: the airport table, the schedule generator, the BTS loader, the WebSocket protocol's checks, and the
// 2-D x 2-D range query on a shoal::ordered_map of flights against the schedule, at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "flights/airports.hpp"
#include "flights/bts_loader.hpp"
#include "flights/flight_map.hpp"
#include "flights/protocol.hpp"
#include "flights/schedule.hpp"
#include "flights/sim_clock.hpp"
#include "shoal_test.hpp"

namespace {

const flights::airport_table& table() {
  static const auto t = flights::read_airports(SHOAL_FLIGHTS_AIRPORTS);
  return t;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FlightsData, AirportTableHasHundredsOfNorthAmericanAirports) {
  const auto& t = table();
  EXPECT_GE(t.airports.size(), 300u);
  const auto& atl = t.airports[static_cast<std::size_t>(t.find("ATL"))];
  EXPECT_NEAR(atl.lat, 33.64, 0.01);
  EXPECT_NEAR(atl.lon, -84.43, 0.01);
  for (const auto& a : t.airports) {
    EXPECT_TRUE(a.lat > 14 && a.lat < 72 && a.lon > -170 && a.lon < -50) << a.iata;
    EXPECT_TRUE(a.country == "United States" || a.country == "Canada" || a.country == "Mexico") << a.iata;
  }
}

TEST(FlightsData, AirportErrorsNameFileLineAndField) {
  std::istringstream bad_header("iata,name\nATL,x\n");
  EXPECT_NE(error_of([&] { flights::read_airports(bad_header, "a.csv"); }).find("a.csv:1: expected the header"),
            std::string::npos);
  std::istringstream bad_lat("# comment\niata,name,country,lat,lon\nATL,Atlanta,United States,north,-84.4\n");
  const auto e = error_of([&] { flights::read_airports(bad_lat, "a.csv"); });
  EXPECT_NE(e.find("a.csv:3: column lat: expected degrees"), std::string::npos) << e;
  std::istringstream fields("iata,name,country,lat,lon\nATL,Atlanta,33.6,-84.4\n");
  EXPECT_NE(error_of([&] { flights::read_airports(fields, "a.csv"); }).find("a.csv:2: expected 5 fields"), std::string::npos);
}

TEST(FlightsSchedule, SeededHubHeavyThroughTheDayWithGreatCircleDurations) {
  flights::schedule_options o;
  o.days = 2;
  o.flights_per_day = 4000;
  const auto a = flights::generate_schedule(table(), o);
  EXPECT_EQ(a, flights::generate_schedule(table(), o));  // same seed, same flights
  o.seed = 2;
  EXPECT_NE(a, flights::generate_schedule(table(), o));
  ASSERT_EQ(a.size(), 8000u);
  std::map<int, int> by_origin;
  int hours[24] = {};
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& f = a[i];
    EXPECT_EQ(f.id, static_cast<int>(i));
    if (i) {
      EXPECT_LE(a[i - 1].dep, f.dep);
    }
    EXPECT_NE(f.origin, f.dest);
    const auto& x = table().airports[f.origin];
    const auto& y = table().airports[f.dest];
    EXPECT_GE(flights::great_circle_km(x, y), 150);
    EXPECT_EQ(f.arr - f.dep, flights::flight_seconds(x, y, {}));
    ++by_origin[f.origin];
    ++hours[(f.dep % flights::seconds_per_day) / 3600];
  }
  // ATL-JFK is about 1,220 km: 30 min + 1220 / 800 h = about 2 h 1 min.
  EXPECT_NEAR(flights::flight_seconds(table().airports[0], table().airports[static_cast<std::size_t>(table().find("JFK"))], {}),
              7260, 120);
  std::vector<int> counts;
  for (auto& [k, v] : by_origin) counts.push_back(v);
  std::sort(counts.rbegin(), counts.rend());
  int top10 = 0;
  for (int i = 0; i < 10; ++i) top10 += counts[static_cast<std::size_t>(i)];
  EXPECT_GT(top10, static_cast<int>(a.size()) / 4) << "the ten busiest airports should hold a quarter of departures";
  for (int h = 6; h <= 21; ++h) EXPECT_GT(hours[h], 0) << "no departures at " << h << ":00";
  EXPECT_EQ(hours[1] + hours[2] + hours[3], 0);
}

TEST(FlightsBts, ReadsTheOnTimeTableShape) {
  std::istringstream in(
      "\"FL_DATE\",\"OP_CARRIER\",\"ORIGIN\",\"DEST\",\"CRS_DEP_TIME\",\"DEP_TIME\",\"ARR_TIME\",\"CANCELLED\"\n"
      "2024-01-02,\"DL\",\"ATL\",\"JFK\",\"0800\",\"0805\",\"1010\",0.00\n"
      "2024-01-01,\"AA\",\"LAX\",\"JFK\",\"2200\",\"2210\",\"0640\",0.00\n"
      "2024-01-01,\"AA\",\"LAX\",\"XXX\",\"2200\",\"2210\",\"0640\",0.00\n"
      "2024-01-01,\"AA\",\"LAX\",\"SFO\",\"0900\",\"\",\"\",1.00\n"
      "2024-01-01,\"AA\",\"LAX\",\"SFO\",\"0900\",\"\",\"\",0.00\n");
  const auto r = flights::read_bts(in, "ontime.csv", table());
  ASSERT_EQ(r.flights.size(), 2u);
  EXPECT_EQ(r.rows, 5u);
  EXPECT_EQ(r.skipped_unknown_airport, 1u);
  EXPECT_EQ(r.skipped_cancelled, 1u);
  EXPECT_EQ(r.skipped_no_time, 1u);
  const auto& overnight = r.flights[0];  // day 0, 22:10 → 06:40 next day
  EXPECT_EQ(table().airports[overnight.origin].iata, "LAX");
  EXPECT_EQ(overnight.dep, 22 * 3600 + 600);
  EXPECT_EQ(overnight.arr, 86400 + 6 * 3600 + 2400);
  EXPECT_EQ(r.flights[1].dep, 86400 + 8 * 3600 + 300);  // the next day, actual departure time
}

TEST(FlightsBts, MalformedInputNamesFileLineAndColumn) {
  std::istringstream no_dest("ORIGIN,DEP_TIME,ARR_TIME\nATL,0800,1000\n");
  EXPECT_NE(error_of([&] { flights::read_bts(no_dest, "f.csv", table()); }).find("f.csv:1: the header needs"),
            std::string::npos);
  std::istringstream bad_time("ORIGIN,DEST,DEP_TIME,ARR_TIME\nATL,JFK,0800,1000\nATL,JFK,8h00,1000\n");
  const auto e = error_of([&] { flights::read_bts(bad_time, "f.csv", table()); });
  EXPECT_NE(e.find("f.csv:3: column DEP_TIME: expected a time as hhmm"), std::string::npos) << e;
  std::istringstream short_row("ORIGIN,DEST,DEP_TIME,ARR_TIME\nATL,JFK,0800\n");
  EXPECT_NE(error_of([&] { flights::read_bts(short_row, "f.csv", table()); }).find("f.csv:2: expected at least 4 fields"),
            std::string::npos);
  std::istringstream bad_date("FL_DATE,ORIGIN,DEST,DEP_TIME,ARR_TIME\n2024-13-01,ATL,JFK,0800,1000\n");
  EXPECT_NE(error_of([&] { flights::read_bts(bad_date, "f.csv", table()); }).find("f.csv:2: column FL_DATE"),
            std::string::npos);
}

TEST(FlightsProtocol, QueriesParseAndBadInputBecomesAnErrorMessage) {
  auto q = flights::parse_client_message(R"({"type":"query","id":3,"dep":[-80,38,-70,44],"arr":[-125,32,-114,42],"every_ms":500})");
  ASSERT_TRUE(std::holds_alternative<flights::query_request>(q));
  const auto& r = std::get<flights::query_request>(q);
  EXPECT_EQ(r.id, 3);
  EXPECT_EQ(r.every_ms, 500);
  EXPECT_EQ(r.dep.lon0, -80);
  EXPECT_EQ(r.dep.lat1, 44);
  EXPECT_TRUE(std::holds_alternative<flights::stop_request>(flights::parse_client_message(R"({"type":"stop"})")));
  for (const char* bad : {"{", "[]", R"({"type":1})", R"({"type":"x"})", R"({"type":"query","dep":[0,0,1,1]})",
                          R"({"type":"query","dep":[0,0,1,100],"arr":[0,0,1,1]})",
                          R"({"type":"query","dep":[1,0,0,1],"arr":[0,0,1,1]})",
                          R"({"type":"query","dep":[0,0,1,1],"arr":[0,0,1,1],"every_ms":1})",
                          R"({"type":"query","id":"a","dep":[0,0,1,1],"arr":[0,0,1,1]})"})
    EXPECT_TRUE(std::holds_alternative<flights::protocol_error>(flights::parse_client_message(bad))) << bad;
  flights::rate_limiter limit(10);
  const auto t = std::chrono::steady_clock::now();
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += limit.allow(t);
  EXPECT_LE(allowed, 21);
  EXPECT_GE(allowed, 19);
}

TEST(FlightsClock, SimulatedTimeForms) {
  EXPECT_EQ(flights::parse_sim_time("1:09:30"), 86400 + 9 * 3600 + 1800);
  EXPECT_EQ(flights::parse_sim_time("06:15"), 6 * 3600 + 900);
  EXPECT_EQ(flights::parse_sim_time("4000"), 4000);
  EXPECT_THROW(flights::parse_sim_time("noon"), std::invalid_argument);
  flights::sim_clock frozen(500, 0, 10000);
  EXPECT_EQ(frozen.now(), 500);
}

/// Every rank runs its share of the traffic up to time t, then every rank checks a few boxes against the schedule.
void check_queries_follow_the_schedule(shoal::consistency c) {
  flights::schedule_options o;
  o.days = 1;
  o.flights_per_day = 3000;
  const auto schedule = flights::generate_schedule(table(), o);
  shoal::ordered_map_options mo;
  mo.semantics = c;
  mo.granularity = 16;  // many nodes, so a box spans several of them and both ranks
  flights::flight_map map(mo);
  flights::traffic traffic(map, schedule, table(), shoal::rank(), shoal::size());
  const std::vector<std::pair<flights::geo_box, flights::geo_box>> boxes = {
      {{-180, 180, -90, 90}, {-180, 180, -90, 90}},
      {{-80, -70, 38, 44}, {-125, -114, 32, 42}},
      {{-100, -80, 25, 40}, {-90, -70, 35, 45}},
      {{-84.43, -84.42, 33.63, 33.64}, {-130, -60, 20, 60}},  // ATL exactly (bounds on the key's grid)
  };
  for (std::int64_t t : {6 * 3600, 9 * 3600 + 1800, 13 * 3600, 20 * 3600, 40 * 3600}) {
    traffic.advance(t, SIZE_MAX);
    map.barrier();
    for (const auto& [dep, arr] : boxes) {
      std::vector<std::int32_t> got;
      for (auto& [k, f] : map.range(flights::query_box(dep, arr))) {
        EXPECT_EQ(k, flights::key_of(f, table()));
        got.push_back(f.id);
      }
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, flights::airborne_between(schedule, table(), t, dep, arr)) << "t = " << t;
    }
    map.barrier();
  }
  EXPECT_TRUE(traffic.finished());
  EXPECT_EQ(map.size(), 0u);
}

TEST(FlightsMap, RangeQueriesEqualTheScheduleSequential) { check_queries_follow_the_schedule(shoal::consistency::sequential); }
TEST(FlightsMap, RangeQueriesEqualTheScheduleNone) { check_queries_follow_the_schedule(shoal::consistency::none); }
TEST(FlightsMap, RangeQueriesEqualTheScheduleTotal) { check_queries_follow_the_schedule(shoal::consistency::total_order); }

}  // namespace
