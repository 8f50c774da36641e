// apps/matrix_scatter/matrix_market.hpp — sparse matrices in MatrixMarket coordinate format, and random ones.
//
// Reads `%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric|skew-symmetric>`: a banner,
// optional `%` comment lines, a size line `rows cols nnz`, then nnz lines `row col [value]` with 1-based indices.
// Symmetric and skew-symmetric files store one triangle; the reader expands them to every entry (so `entries`
// may hold up to twice the stored count). Pattern matrices get the value 1. Indices in memory are 0-based.
// Errors (a missing banner, an unsupported format, an index out of range, a short file) raise shoal::error naming
// the line.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <istream>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "shoal/core/error.hpp"

namespace matrix_scatter {

/// One non-zero: column index and value. Rows are the keys of the distributed multimap.
struct column_value {
  std::uint32_t col;
  double value;
  friend bool operator==(const column_value&, const column_value&) = default;
  friend bool operator<(const column_value& a, const column_value& b) {
    return a.col != b.col ? a.col < b.col : a.value < b.value;
  }
};

struct triplet {
  std::uint32_t row;
  std::uint32_t col;
  double value;
};

struct coordinate_matrix {
  std::uint32_t rows = 0;
  std::uint32_t cols = 0;
  std::vector<triplet> entries;
};

inline coordinate_matrix read_matrix_market(std::istream& in, const std::string& name = "input") {
  auto fail = [&](std::size_t line, const std::string& why) -> shoal::error {
    return shoal::error("matrix_market: " + name + ":" + std::to_string(line) + ": " + why);
  };
  std::string text;
  std::size_t line = 1;
  if (!std::getline(in, text)) throw fail(line, "empty file (expected a %%MatrixMarket banner)");
  std::istringstream banner(text);
  std::string tag, object, format, field, symmetry;
  banner >> tag >> object >> format >> field >> symmetry;
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  object = lower(object), format = lower(format), field = lower(field), symmetry = lower(symmetry);
  if (tag != "%%MatrixMarket" || object != "matrix") throw fail(line, "not a %%MatrixMarket matrix banner");
  if (format != "coordinate") throw fail(line, "only the coordinate format is supported (got '" + format + "')");
  if (field != "real" && field != "integer" && field != "pattern" && field != "double") {
    throw fail(line, "unsupported field '" + field + "' (real, integer or pattern)");
  }
  if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric") {
    throw fail(line, "unsupported symmetry '" + symmetry + "' (general, symmetric or skew-symmetric)");
  }
  const bool pattern = field == "pattern";
  do {
    ++line;
    if (!std::getline(in, text)) throw fail(line, "missing size line 'rows cols nnz'");
  } while (text.empty() || text[0] == '%');
  std::uint64_t rows = 0, cols = 0, nnz = 0;
  if (!(std::istringstream(text) >> rows >> cols >> nnz)) throw fail(line, "bad size line '" + text + "'");
  if (rows > UINT32_MAX || cols > UINT32_MAX) throw fail(line, "more than 2^32-1 rows or columns");
  coordinate_matrix m;
  m.rows = static_cast<std::uint32_t>(rows);
  m.cols = static_cast<std::uint32_t>(cols);
  m.entries.reserve(symmetry == "general" ? nnz : 2 * nnz);
  for (std::uint64_t k = 0; k < nnz; ++k) {
    ++line;
    if (!std::getline(in, text)) throw fail(line, "file ends after " + std::to_string(k) + " of " +
                                                      std::to_string(nnz) + " entries");
    std::istringstream entry(text);
    std::uint64_t r = 0, c = 0;
    double v = 1.0;
    if (!(entry >> r >> c) || (!pattern && !(entry >> v))) throw fail(line, "bad entry '" + text + "'");
    if (r < 1 || r > rows || c < 1 || c > cols) throw fail(line, "index out of range in '" + text + "'");
    const auto row = static_cast<std::uint32_t>(r - 1), col = static_cast<std::uint32_t>(c - 1);
    m.entries.push_back({row, col, v});
    if (symmetry != "general" && row != col) m.entries.push_back({col, row, symmetry == "symmetric" ? v : -v});
  }
  return m;
}

inline void write_matrix_market(std::ostream& out, const coordinate_matrix& m, const std::string& comment = "") {
  out << "%%MatrixMarket matrix coordinate real general\n";
  if (!comment.empty()) out << "% " << comment << "\n";
  out << m.rows << " " << m.cols << " " << m.entries.size() << "\n";
  out.precision(17);
  for (const auto& e : m.entries) out << e.row + 1 << " " << e.col + 1 << " " << e.value << "\n";
}

/// A random rows × cols matrix with about nnz_per_row distinct non-zeros per row (between 1 and 2·nnz_per_row-1,
/// so row lengths vary as in real matrices), values uniform in [-1, 1).
inline coordinate_matrix random_sparse_matrix(std::uint32_t rows, std::uint32_t cols, std::uint32_t nnz_per_row,
                                              std::uint64_t seed) {
  coordinate_matrix m{rows, cols, {}};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  const std::uint32_t max_len = std::min(cols, std::max<std::uint32_t>(1, 2 * nnz_per_row - 1));
  std::vector<std::uint32_t> chosen;
  for (std::uint32_t r = 0; r < rows; ++r) {
    const auto len = static_cast<std::uint32_t>(1 + rng() % max_len);
    chosen.clear();
    while (chosen.size() < len) {
      const auto c = static_cast<std::uint32_t>(rng() % cols);
      if (std::find(chosen.begin(), chosen.end(), c) == chosen.end()) chosen.push_back(c);
    }
    std::sort(chosen.begin(), chosen.end());
    for (auto c : chosen) m.entries.push_back({r, c, value(rng)});
  }
  return m;
}

}  // namespace matrix_scatter
