// flights/flight_map.hpp — flights in a shoal::ordered_map and the 2-D x 2-D range query over them.
//
// Key: (departure lon, departure lat, arrival lon, arrival lat, flight id), coordinates in hundredths of a degree
// (integers, as the ordered_map's box queries need). The map orders keys dimension by dimension, so a query box
// "[lon0,lon1].[lat0,lat1].[lon2,lon3].[lat2,lat3].[0,max]" is answered as one ordered range in which every node
// keeps only the keys inside the box (key_box, the paper's range syntax).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "flights/airports.hpp"
#include "flights/schedule.hpp"
#include "shoal/containers/ordered_map.hpp"

namespace flights {

using flight_key = std::array<std::int32_t, 5>;
using flight_map = shoal::ordered_map<flight_key, flight>;

/// Degrees → hundredths of a degree (the key's unit), rounded to nearest.
inline std::int32_t centi(double degrees) { return static_cast<std::int32_t>(std::lround(degrees * 100.0)); }

inline flight_key key_of(const flight& f, const airport_table& t) {
  const auto& a = t.airports[f.origin];
  const auto& b = t.airports[f.dest];
  return {centi(a.lon), centi(a.lat), centi(b.lon), centi(b.lat), f.id};
}

/// A box on the map in degrees, bounds inclusive.
struct geo_box {
  double lon0 = -180, lon1 = 180, lat0 = -90, lat1 = 90;
  bool contains(const airport& a) const {
    const auto x = centi(a.lon), y = centi(a.lat);
    return x >= centi(lon0) && x <= centi(lon1) && y >= centi(lat0) && y <= centi(lat1);
  }
};

/// The 4-D (+ id) box of flights departing in `dep` and arriving in `arr`.
inline shoal::key_box query_box(const geo_box& dep, const geo_box& arr) {
  return shoal::key_box({{centi(dep.lon0), centi(dep.lon1)},
                         {centi(dep.lat0), centi(dep.lat1)},
                         {centi(arr.lon0), centi(arr.lon1)},
                         {centi(arr.lat0), centi(arr.lat1)},
                         {0, std::numeric_limits<std::int32_t>::max()}});
}

/// The same query answered from the schedule alone (the tests' oracle): flights in the air at `t` from dep to arr.
inline std::vector<std::int32_t> airborne_between(const std::vector<flight>& schedule, const airport_table& t,
                                                  std::int64_t time, const geo_box& dep, const geo_box& arr) {
  std::vector<std::int32_t> ids;
  for (const auto& f : schedule)
    if (f.airborne_at(time) && dep.contains(t.airports[f.origin]) && arr.contains(t.airports[f.dest])) ids.push_back(f.id);
  return ids;
}

/// One rank's share of the traffic: it inserts its flights (id % ranks == rank) when they depart and erases them
/// once they have arrived. Not collective; advance() issues at most `budget` operations per call.
class traffic {
 public:
  traffic(flight_map& map, const std::vector<flight>& schedule, const airport_table& airports, int rank, int ranks)
      : map_(map), schedule_(schedule), airports_(airports) {
    for (const auto& f : schedule)
      if (f.id % ranks == rank) by_dep_.push_back(static_cast<std::uint32_t>(f.id));
    by_arr_ = by_dep_;
    std::stable_sort(by_arr_.begin(), by_arr_.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return schedule_[a].arr < schedule_[b].arr; });
  }

  /// Issues the inserts and erases due at simulated time `now` (flights that departed and landed in the same step
  /// are never inserted). Returns the number of operations issued.
  std::size_t advance(std::int64_t now, std::size_t budget) {
    std::size_t issued = 0;
    while (issued < budget && next_dep_ < by_dep_.size() && schedule_[by_dep_[next_dep_]].dep <= now) {
      const auto& f = schedule_[by_dep_[next_dep_++]];
      if (f.arr <= now) continue;
      in_air_.emplace(f.id, map_.async_insert(key_of(f, airports_), f));
      ++inserted_, ++issued;
    }
    while (issued < budget && next_arr_ < by_arr_.size() && schedule_[by_arr_[next_arr_]].arr <= now) {
      const auto& f = schedule_[by_arr_[next_arr_]];
      auto it = in_air_.find(f.id);
      if (it != in_air_.end()) {
        // Under consistency::none an erase could overtake its own insert: wait until the insert has answered.
        if (!it->second.ready()) break;
        in_air_.erase(it);
        map_.async_erase(key_of(f, airports_));
        ++erased_, ++issued;
      }
      ++next_arr_;
    }
    return issued;
  }

  std::size_t inserted() const { return inserted_; }
  std::size_t erased() const { return erased_; }
  std::size_t in_air() const { return in_air_.size(); }
  /// True when nothing is left to insert or erase.
  bool finished() const { return next_dep_ == by_dep_.size() && next_arr_ == by_arr_.size(); }

 private:
  flight_map& map_;
  const std::vector<flight>& schedule_;
  const airport_table& airports_;
  std::vector<std::uint32_t> by_dep_, by_arr_;
  std::size_t next_dep_ = 0, next_arr_ = 0, inserted_ = 0, erased_ = 0;
  std::unordered_map<std::int32_t, shoal::future<bool>> in_air_;
};

}  // namespace flights
