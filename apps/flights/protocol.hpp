// flights/protocol.hpp — the WebSocket protocol between the page and shoal-flights (docs/apps/flights.md).
//
// Client → server, one JSON object per message:
//   {"type":"query","id":7,"dep":[west,south,east,north],"arr":[west,south,east,north],"every_ms":500}
//       the flights in the air now from the dep box to the arr box (degrees); every_ms > 0 re-runs it at that period
//       (live updates) until the next query or stop; 0 runs it once.
//   {"type":"stop"}   no more live updates.
// Server → client: "hello" once, "result" per query run, "clock" twice a second, "error" for bad input (the
// connection stays open). Every check here is on input a client controls, so every failure is an "error" message.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "flights/flight_map.hpp"

namespace flights {

struct query_request {
  std::int64_t id = 0;
  geo_box dep, arr;
  int every_ms = 0;
};
struct stop_request {};
struct protocol_error {
  std::string message;
};
using client_message = std::variant<query_request, stop_request, protocol_error>;

struct protocol_limits {
  std::size_t max_message_bytes = 4096;
  int min_every_ms = 100;
  int max_every_ms = 60000;
  double messages_per_second = 10;  // per connection, with a burst of twice that
};

namespace detail {

inline bool read_box(const nlohmann::json& j, const char* name, geo_box& out, std::string& error) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array() || it->size() != 4) {
    error = std::string("'") + name + "' must be an array [west, south, east, north] of 4 numbers (degrees)";
    return false;
  }
  double v[4];
  for (int i = 0; i < 4; ++i) {
    if (!(*it)[i].is_number()) {
      error = std::string("'") + name + "'[" + std::to_string(i) + "] must be a number";
      return false;
    }
    v[i] = (*it)[i].get<double>();
  }
  out = {v[0], v[2], v[1], v[3]};
  if (!(out.lon0 >= -180 && out.lon1 <= 180 && out.lat0 >= -90 && out.lat1 <= 90)) {
    error = std::string("'") + name + "' is out of range: longitudes must lie in [-180, 180], latitudes in [-90, 90]";
    return false;
  }
  if (!(out.lon0 <= out.lon1 && out.lat0 <= out.lat1)) {
    error = std::string("'") + name + "' is empty: it needs west <= east and south <= north";
    return false;
  }
  return true;
}

}  // namespace detail

inline client_message parse_client_message(const std::string& text, const protocol_limits& limits = {}) {
  if (text.size() > limits.max_message_bytes)
    return protocol_error{"message too long: " + std::to_string(text.size()) + " bytes, at most " +
                          std::to_string(limits.max_message_bytes)};
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return protocol_error{"malformed JSON: expected an object like {\"type\":\"query\",...}"};
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    return protocol_error{"expected a JSON object with a string field \"type\" (\"query\" or \"stop\")"};
  const auto type = j["type"].get<std::string>();
  if (type == "stop") return stop_request{};
  if (type != "query") return protocol_error{"unknown message type '" + type + "': expected \"query\" or \"stop\""};
  query_request q;
  if (j.contains("id")) {
    if (!j["id"].is_number_integer()) return protocol_error{"'id' must be an integer"};
    q.id = j["id"].get<std::int64_t>();
  }
  std::string error;
  if (!detail::read_box(j, "dep", q.dep, error) || !detail::read_box(j, "arr", q.arr, error)) return protocol_error{error};
  if (j.contains("every_ms")) {
    if (!j["every_ms"].is_number_integer()) return protocol_error{"'every_ms' must be an integer (milliseconds)"};
    const auto every = j["every_ms"].get<std::int64_t>();
    if (every != 0 && (every < limits.min_every_ms || every > limits.max_every_ms))
      return protocol_error{"'every_ms' must be 0 (once) or in [" + std::to_string(limits.min_every_ms) + ", " +
                            std::to_string(limits.max_every_ms) + "]"};
    q.every_ms = static_cast<int>(every);
  }
  return q;
}

inline std::string error_message(const std::string& what) {
  return nlohmann::json{{"type", "error"}, {"message", what}}.dump();
}

/// A token bucket: `rate` messages per second, bursts of 2 * rate.
class rate_limiter {
 public:
  explicit rate_limiter(double rate) : rate_(rate), tokens_(2 * rate) {}
  bool allow(std::chrono::steady_clock::time_point now) {
    const double dt = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    tokens_ = std::min(2 * rate_, tokens_ + dt * rate_);
    if (tokens_ < 1) return false;
    tokens_ -= 1;
    return true;
  }

 private:
  double rate_, tokens_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace flights
