// flights/live_queries.hpp — rank 0's side of the protocol: each WebSocket session's current query, re-run at the
// period the client asked for, one range query in flight per session at a time. Runs on the MPI thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flights/flight_map.hpp"
#include "flights/protocol.hpp"

namespace flights {

class live_queries {
 public:
  using clock = std::chrono::steady_clock;
  using send_fn = std::function<void(std::uint64_t session, std::string text)>;
  static constexpr std::size_t max_results = 20000;  // a result lists at most this many flights ("truncated")

  live_queries(flight_map& map, protocol_limits limits, send_fn send)
      : map_(map), limits_(limits), send_(std::move(send)) {}

  void open(std::uint64_t session) { sessions_.emplace(session, state(limits_.messages_per_second)); }
  void close(std::uint64_t session) { sessions_.erase(session); }  // a range in flight completes unobserved

  /// A client's message: a new query replaces the session's current one and runs at once.
  void receive(std::uint64_t session, const std::string& text) {
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    auto& s = it->second;
    if (!s.limiter.allow(clock::now())) {
      send_(session, error_message("too many queries: at most " + std::to_string(static_cast<int>(limits_.messages_per_second)) +
                                   " messages per second per connection; this one was dropped"));
      return;
    }
    auto msg = parse_client_message(text, limits_);
    if (auto* e = std::get_if<protocol_error>(&msg)) return send_(session, error_message(e->message));
    if (std::holds_alternative<stop_request>(msg)) {
      s.live.reset();
      return;
    }
    s.live = std::get<query_request>(msg);
    s.due = clock::now();
  }

  /// Collects finished ranges (calling `result` to format them) and issues the queries that are due. Returns true
  /// when it did anything.
  bool step(const std::function<nlohmann::json(std::int64_t id, double latency_ms,
                                               std::vector<std::pair<flight_key, flight>>&)>& result) {
    bool busy = false;
    const auto now = clock::now();
    for (auto& [session, s] : sessions_) {
      if (s.pending && s.pending->ready()) {
        auto flights = s.pending->get();
        s.pending.reset();
        const double ms = std::chrono::duration<double, std::milli>(clock::now() - s.issued).count();
        send_(session, result(s.pending_id, ms, flights).dump());
        busy = true;
      }
      if (!s.pending && s.live && now >= s.due) {
        s.pending = map_.async_range(query_box(s.live->dep, s.live->arr));
        s.pending_id = s.live->id;
        s.issued = now;
        if (s.live->every_ms > 0) s.due = now + std::chrono::milliseconds(s.live->every_ms);
        else s.live.reset();
        ++issued_;
        busy = true;
      }
    }
    return busy;
  }

  std::uint64_t issued() const { return issued_; }

 private:
  struct state {
    explicit state(double rate) : limiter(rate) {}
    rate_limiter limiter;
    std::optional<query_request> live;
    clock::time_point due;
    std::optional<shoal::future<std::vector<std::pair<flight_key, flight>>>> pending;
    std::int64_t pending_id = 0;
    clock::time_point issued;
  };

  flight_map& map_;
  protocol_limits limits_;
  send_fn send_;
  std::map<std::uint64_t, state> sessions_;
  std::uint64_t issued_ = 0;
};

}  // namespace flights
