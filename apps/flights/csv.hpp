// flights/csv.hpp — the little CSV reading the flights app needs: split a line into fields (double quotes allowed,
// as in the BTS tables), and errors that name the file, the line and what was expected there.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace flights {

/// A malformed input file: the message names the file, the line and what was expected.
class input_error : public std::runtime_error {
 public:
  input_error(const std::string& file, std::size_t line, const std::string& what)
      : std::runtime_error(file + (line ? ":" + std::to_string(line) : std::string()) + ": " + what) {}
};

/// Splits one CSV line. Fields may be double-quoted ("a,b" and "" inside quotes); a trailing '\r' is dropped.
inline std::vector<std::string> split_csv(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
      else if (c == '"') quoted = false;
      else fields.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

/// True for lines a reader skips: empty, or a '#' comment.
inline bool blank_or_comment(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line[first] == '#';
}

}  // namespace flights
