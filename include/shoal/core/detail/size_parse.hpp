// shoal/core/detail/size_parse.hpp — read sizes such as "512M" from settings.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "shoal/core/error.hpp"

namespace shoal::detail {

/// Parses "4096", "64K", "512M", "2G", "1T" (binary multiples, optional trailing "B"/"iB"). Throws usage_error naming
/// `setting`, the text and what is accepted on malformed text and on a size that does not fit in 64 bits.
inline std::size_t parse_size(std::string_view text, std::string_view setting) {
  const auto fail = [&](const char* why) {
    return usage_error(std::string(setting) + "=\"" + std::string(text) + "\" " + why +
                       "; write a number of bytes with an optional unit K, M, G or T (binary multiples), e.g. 4096, "
                       "64K, 512M or 2G");
  };
  constexpr std::uint64_t max = std::numeric_limits<std::size_t>::max();
  std::size_t i = 0;
  std::uint64_t value = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const auto digit = static_cast<std::uint64_t>(text[i] - '0');
    if (value > (max - digit) / 10) throw fail("is too large (more than 2^64 - 1 bytes)");
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) throw fail("is not a size");
  std::string_view rest = text.substr(i);
  std::uint64_t mult = 1;
  if (!rest.empty()) {
    switch (std::toupper(static_cast<unsigned char>(rest[0]))) {
      case 'K': mult = 1ull << 10; break;
      case 'M': mult = 1ull << 20; break;
      case 'G': mult = 1ull << 30; break;
      case 'T': mult = 1ull << 40; break;
      case 'B': mult = 1; break;
      default: throw fail("has an unknown unit");
    }
    rest.remove_prefix(1);
    if (rest == "iB" || rest == "ib" || rest == "B" || rest == "b") rest = {};
    if (!rest.empty()) throw fail("has trailing characters");
  }
  if (value > max / mult) throw fail("is too large (more than 2^64 - 1 bytes)");
  return static_cast<std::size_t>(value * mult);
}

/// The value of environment variable `name` parsed as a size, if set and non-empty.
inline std::optional<std::size_t> env_size(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return parse_size(v, name);
}

/// A boolean setting's text: 1/0, on/off, yes/no, true/false (any case); anything else throws usage_error naming
/// `setting`, the text and the accepted spellings.
inline bool parse_flag(std::string_view text, std::string_view setting) {
  std::string s(text);
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "1" || s == "on" || s == "yes" || s == "true") return true;
  if (s == "0" || s == "off" || s == "no" || s == "false") return false;
  throw usage_error(std::string(setting) + "=\"" + std::string(text) +
                    "\" is not a boolean; use 1/0, on/off, yes/no or true/false");
}

/// A boolean setting: unset or empty is false; otherwise parse_flag's spellings.
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return false;
  return parse_flag(v, name);
}

/// Human-readable size: "512 MiB".
inline std::string format_size(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024.0 && u < 4 && (bytes % (1ull << (10 * (u + 1)))) == 0) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0 && bytes >= 1024) return std::to_string(bytes) + " B";
  return std::to_string(static_cast<std::uint64_t>(v)) + " " + units[u];
}

}  // namespace shoal::detail
