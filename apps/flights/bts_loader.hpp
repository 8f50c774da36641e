// flights/bts_loader.hpp — reads a real flights table in the shape of the US BTS on-time performance CSV.
//
// Needed columns (by header name, any order, other columns ignored): ORIGIN, DEST (IATA codes) and the times as
// hhmm — DEP_TIME and ARR_TIME (actual) or, without them, CRS_DEP_TIME and CRS_ARR_TIME (scheduled). Optional:
// FL_DATE (YYYY-MM-DD, or M/D/YYYY h:mm:ss AM as some downloads write it) places each flight on its day, counted from
// the earliest date in the file; CANCELLED / DIVERTED = 1 rows are skipped. Times are local clock times: the loader
// does not convert time zones; an arrival before the departure is taken as the next day. Rows with an empty time
// (cancelled flights) and rows whose airports are not in the airport table are skipped and counted.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "flights/airports.hpp"
#include "flights/csv.hpp"
#include "flights/schedule.hpp"

namespace flights {

struct bts_result {
  std::vector<flight> flights;  // sorted by departure, numbered
  std::size_t rows = 0;
  std::size_t skipped_unknown_airport = 0;
  std::size_t skipped_no_time = 0;
  std::size_t skipped_cancelled = 0;
};

namespace detail {

inline int parse_int(std::string_view s, bool& ok) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  ok = ec == std::errc() && ptr == s.data() + s.size();
  return v;
}

/// hhmm ("755", "0755", "2400") → seconds after midnight.
inline std::int32_t parse_hhmm(const std::string& s, const std::string& file, std::size_t line, const std::string& col) {
  bool ok = !s.empty() && s.size() <= 4;
  const int v = ok ? parse_int(s, ok) : 0;
  if (!ok || v < 0 || v > 2400 || v % 100 >= 60)
    throw input_error(file, line, "column " + col + ": expected a time as hhmm (e.g. 0755), got '" + s + "'");
  return (v / 100) * 3600 + (v % 100) * 60;
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
inline std::int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<std::int64_t>(era) * 146097 + doe - 719468;
}

/// "2024-01-31" or "1/31/2024 12:00:00 AM" → days since the epoch.
inline std::int64_t parse_date(const std::string& s, const std::string& file, std::size_t line) {
  int y = 0, m = 0, d = 0;
  bool ok = false;
  if (s.size() >= 10 && s[4] == '-' && s[7] == '-') {
    bool a, b, c;
    y = parse_int(std::string_view(s).substr(0, 4), a);
    m = parse_int(std::string_view(s).substr(5, 2), b);
    d = parse_int(std::string_view(s).substr(8, 2), c);
    ok = a && b && c;
  } else {
    const auto s1 = s.find('/'), s2 = s.find('/', s1 == std::string::npos ? 0 : s1 + 1);
    if (s1 != std::string::npos && s2 != std::string::npos) {
      bool a, b, c;
      m = parse_int(std::string_view(s).substr(0, s1), a);
      d = parse_int(std::string_view(s).substr(s1 + 1, s2 - s1 - 1), b);
      y = parse_int(std::string_view(s).substr(s2 + 1, 4), c);
      ok = a && b && c;
    }
  }
  if (!ok || m < 1 || m > 12 || d < 1 || d > 31 || y < 1900)
    throw input_error(file, line, "column FL_DATE: expected a date as YYYY-MM-DD or M/D/YYYY, got '" + s + "'");
  return days_from_civil(y, m, d);
}

}  // namespace detail

inline bts_result read_bts(std::istream& in, const std::string& file, const airport_table& airports) {
  bts_result out;
  std::string text;
  std::size_t line = 0;
  std::map<std::string, std::size_t> col;
  auto column = [&](const std::string& name) -> std::optional<std::size_t> {
    auto it = col.find(name);
    return it == col.end() ? std::nullopt : std::optional<std::size_t>(it->second);
  };
  // Header.
  while (col.empty() && std::getline(in, text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    auto f = split_csv(text);
    for (std::size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
  }
  if (col.empty()) throw input_error(file, 0, "empty file: expected a header with ORIGIN,DEST,DEP_TIME,ARR_TIME");
  const auto origin = column("ORIGIN"), dest = column("DEST");
  auto dep = column("DEP_TIME"), arr = column("ARR_TIME");
  std::string dep_name = "DEP_TIME", arr_name = "ARR_TIME";
  if (!dep || !arr) dep = column("CRS_DEP_TIME"), arr = column("CRS_ARR_TIME"), dep_name = "CRS_DEP_TIME", arr_name = "CRS_ARR_TIME";
  if (!origin || !dest || !dep || !arr)
    throw input_error(file, line, "the header needs the columns ORIGIN, DEST and DEP_TIME, ARR_TIME (or CRS_DEP_TIME, "
                                  "CRS_ARR_TIME); got '" + text + "'");
  const auto date = column("FL_DATE"), cancelled = column("CANCELLED"), diverted = column("DIVERTED");
  const std::size_t needed = std::max({*origin, *dest, *dep, *arr, date.value_or(0), cancelled.value_or(0), diverted.value_or(0)}) + 1;
  struct pending {
    std::int64_t day;
    flight f;
  };
  std::vector<pending> rows;
  std::int64_t first_day = INT64_MAX;
  while (std::getline(in, text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    auto f = split_csv(text);
    if (f.size() < needed)
      throw input_error(file, line, "expected at least " + std::to_string(needed) + " fields as the header says, got " +
                                        std::to_string(f.size()));
    ++out.rows;
    auto flag = [&](std::optional<std::size_t> c) {
      if (!c) return false;
      const auto& v = f[*c];
      return !v.empty() && v != "0" && v != "0.00" && v != "0.0";
    };
    if (flag(cancelled) || flag(diverted)) { ++out.skipped_cancelled; continue; }
    if (f[*dep].empty() || f[*arr].empty()) { ++out.skipped_no_time; continue; }
    for (auto c : {*origin, *dest})
      if (f[c].size() != 3)
        throw input_error(file, line, std::string("column ") + (c == *origin ? "ORIGIN" : "DEST") +
                                          ": expected a 3-letter IATA code, got '" + f[c] + "'");
    const std::int32_t d = detail::parse_hhmm(f[*dep], file, line, dep_name);
    std::int32_t a = detail::parse_hhmm(f[*arr], file, line, arr_name);
    const int o = airports.find(f[*origin]), t = airports.find(f[*dest]);
    if (o < 0 || t < 0) { ++out.skipped_unknown_airport; continue; }
    if (a <= d) a += seconds_per_day;
    const std::int64_t day = date ? detail::parse_date(f[*date], file, line) : 0;
    first_day = std::min(first_day, day);
    rows.push_back({day, flight{0, static_cast<std::uint16_t>(o), static_cast<std::uint16_t>(t), d, a}});
  }
  for (auto& r : rows) {
    const auto offset = (r.day - first_day) * seconds_per_day;
    if (offset > INT32_MAX / 2) throw input_error(file, 0, "FL_DATE spans more than 30 years");
    r.f.dep += static_cast<std::int32_t>(offset);
    r.f.arr += static_cast<std::int32_t>(offset);
    out.flights.push_back(r.f);
  }
  sort_and_number(out.flights);
  return out;
}

inline bts_result read_bts(const std::string& path, const airport_table& airports) {
  std::ifstream in(path);
  if (!in) throw input_error(path, 0, "cannot open the flights table given with --flights-csv");
  return read_bts(in, path, airports);
}

}  // namespace flights
