// apps/kv_trace/trace.hpp — the K-V storage paper's traces (§4.1): PUT and GET requests whose GET share rises from
// 0 at the first line to 1 at the last, so a trace starts by filling the table and ends by reading it.
//
// Text format, one request per line (keys and values: unsigned 64-bit decimals):
//   # shoal kv trace v1 ops=<n> seed=<s>     header (lines starting with # are comments)
//   PUT <key> <value>                        store value under key (overwrites)
//   GET <key>                                read key
// Generation: line i of n is a GET with probability i/(n-1). A GET reads a key this trace has already PUT (chosen
// uniformly); a PUT writes a fresh random key, or, one time in ten, a new value under a key it already wrote. The
// first line is always a PUT. Because every GET names a key the same trace wrote earlier, replaying a trace
// against a store whose per-client order is FIFO has one right answer per GET: the trace's last value for that
// key (expected_value below) — which is how kv_trace verifies a run.
#pragma once

#include <charconv>
#include <cstdint>
#include <istream>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "shoal/core/error.hpp"

namespace kv_trace {

enum class op_kind : std::uint8_t { put, get };

struct request {
  op_kind kind;
  std::uint64_t key;
  std::uint64_t value;     // PUT: the value written
  std::uint64_t expected;  // GET: the value the trace last wrote under key
};

inline std::vector<request> generate_trace(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<request> trace;
  trace.reserve(n);
  std::vector<std::uint64_t> written;        // keys in order of first PUT
  std::vector<std::uint64_t> latest_value;   // the latest value of written[k]
  for (std::size_t i = 0; i < n; ++i) {
    const double get_share = n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
    if (!written.empty() && unit(rng) < get_share) {
      const std::size_t k = rng() % written.size();
      trace.push_back({op_kind::get, written[k], 0, latest_value[k]});
    } else if (!written.empty() && rng() % 10 == 0) {
      const std::size_t k = rng() % written.size();
      latest_value[k] = rng();
      trace.push_back({op_kind::put, written[k], latest_value[k], 0});
    } else {
      written.push_back(rng());
      latest_value.push_back(rng());
      trace.push_back({op_kind::put, written.back(), latest_value.back(), 0});
    }
  }
  return trace;
}

inline void write_trace(std::ostream& out, const std::vector<request>& trace, std::uint64_t seed) {
  out << "# shoal kv trace v1 ops=" << trace.size() << " seed=" << seed << "\n";
  for (const auto& r : trace) {
    if (r.kind == op_kind::put) out << "PUT " << r.key << " " << r.value << "\n";
    else out << "GET " << r.key << "\n";
  }
}

namespace detail {

/// An unsigned 64-bit decimal, digits only (no sign, no spaces); nullopt otherwise or when out of range.
inline std::optional<std::uint64_t> decimal(const std::string& word) {
  std::uint64_t v = 0;
  const char* end = word.data() + word.size();
  const auto [ptr, ec] = std::from_chars(word.data(), end, v);
  if (word.empty() || word[0] == '+' || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace detail

/// Reads a trace and fills in each GET's expected value (the trace's last PUT of that key before it). Throws
/// shoal::error naming the line for anything but a comment, an empty line, `PUT <key> <value>` or `GET <key>`.
inline std::vector<request> read_trace(std::istream& in, const std::string& name = "trace") {
  std::vector<request> trace;
  std::string text;
  std::size_t line = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> latest;
  while (std::getline(in, text)) {
    ++line;
    if (text.empty() || text[0] == '#') continue;
    std::istringstream split(text);
    std::vector<std::string> fields;
    for (std::string w; split >> w;) fields.push_back(w);
    const auto key = fields.size() >= 2 ? detail::decimal(fields[1]) : std::nullopt;
    const auto value = fields.size() == 3 ? detail::decimal(fields[2]) : std::nullopt;
    request r{};
    if (fields.size() == 3 && fields[0] == "PUT" && key && value) {
      r = {op_kind::put, *key, *value, 0};
      latest[r.key] = r.value;
    } else if (fields.size() == 2 && fields[0] == "GET" && key) {
      r = {op_kind::get, *key, 0, 0};
      auto it = latest.find(r.key);
      if (it == latest.end()) {
        throw shoal::error("kv_trace: " + name + ":" + std::to_string(line) + ": GET of key " +
                           std::to_string(r.key) + " before any PUT of it (traces read only what they wrote)");
      }
      r.expected = it->second;
    } else {
      throw shoal::error("kv_trace: " + name + ":" + std::to_string(line) + ": expected 'PUT <key> <value>' or "
                         "'GET <key>' (keys and values unsigned 64-bit decimals), got '" + text + "'");
    }
    trace.push_back(r);
  }
  return trace;
}

}  // namespace kv_trace
