// flights/airports.hpp — the airport table (data/airports.csv): IATA code, name, country, latitude, longitude.
#pragma once

#include <charconv>
#include <cmath>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "flights/csv.hpp"

namespace flights {

struct airport {
  std::string iata;
  std::string name;
  std::string country;
  double lat = 0;
  double lon = 0;
};

struct airport_table {
  std::vector<airport> airports;
  std::unordered_map<std::string, std::uint16_t> by_iata;

  /// The index of `iata`, or -1.
  int find(const std::string& iata) const {
    auto it = by_iata.find(iata);
    return it == by_iata.end() ? -1 : it->second;
  }
};

inline double parse_degrees(const std::string& text, double limit, const std::string& file, std::size_t line,
                            const char* column) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v) || std::abs(v) > limit) {
    throw input_error(file, line, std::string("column ") + column + ": expected degrees in [-" +
                                      std::to_string(static_cast<int>(limit)) + ", " +
                                      std::to_string(static_cast<int>(limit)) + "], got '" + text + "'");
  }
  return v;
}

/// Reads a CSV with the header `iata,name,country,lat,lon` ('#' comment lines allowed before it).
inline airport_table read_airports(std::istream& in, const std::string& file) {
  airport_table t;
  std::string text;
  std::size_t line = 0;
  bool header = false;
  while (std::getline(in, text)) {
    ++line;
    if (blank_or_comment(text)) continue;
    auto f = split_csv(text);
    if (!header) {
      if (f != std::vector<std::string>{"iata", "name", "country", "lat", "lon"})
        throw input_error(file, line, "expected the header 'iata,name,country,lat,lon', got '" + text + "'");
      header = true;
      continue;
    }
    if (f.size() != 5) throw input_error(file, line, "expected 5 fields (iata,name,country,lat,lon), got " +
                                                         std::to_string(f.size()));
    if (f[0].size() != 3) throw input_error(file, line, "expected a 3-letter IATA code, got '" + f[0] + "'");
    if (t.by_iata.count(f[0])) throw input_error(file, line, "airport " + f[0] + " appears twice");
    if (t.airports.size() >= 65535) throw input_error(file, line, "more than 65535 airports");
    airport a{f[0], f[1], f[2], parse_degrees(f[3], 90, file, line, "lat"), parse_degrees(f[4], 180, file, line, "lon")};
    t.by_iata.emplace(a.iata, static_cast<std::uint16_t>(t.airports.size()));
    t.airports.push_back(std::move(a));
  }
  if (!header) throw input_error(file, 0, "no header line 'iata,name,country,lat,lon' (empty file?)");
  if (t.airports.size() < 2) throw input_error(file, 0, "at least 2 airports are needed");
  return t;
}

inline airport_table read_airports(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw input_error(path, 0, "cannot open the airport table (pass --airports PATH)");
  return read_airports(in, path);
}

}  // namespace flights
