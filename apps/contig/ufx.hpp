// apps/contig/ufx.hpp — reading a rank's share of a UFX-like k-mer file (format in kmer.hpp and docs/apps/contig.md).
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kmer.hpp"

namespace contig {

/// The lines whose first byte lies in this rank's share [size*r/p, size*(r+1)/p) of the file.
inline std::vector<ufx_record> read_ufx_share(const std::string& path, int rank, int ranks) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(in.tellg());
  const std::uint64_t begin = size * static_cast<std::uint64_t>(rank) / static_cast<std::uint64_t>(ranks);
  const std::uint64_t end = size * static_cast<std::uint64_t>(rank + 1) / static_cast<std::uint64_t>(ranks);
  std::uint64_t pos = begin;
  std::string line;
  if (begin > 0) {  // a line that started before our share belongs to the previous rank
    in.seekg(static_cast<std::streamoff>(begin - 1));
    std::getline(in, line);
    pos = begin - 1 + line.size() + 1;
  } else {
    in.seekg(0);
  }
  std::vector<ufx_record> out;
  std::size_t k = 0;
  while (pos < end && std::getline(in, line)) {
    pos += line.size() + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    auto r = parse_ufx_line(line, 0);
    if (k == 0) k = r.kmer.size();
    if (r.kmer.size() != k) throw std::runtime_error(path + ": k-mers of different lengths (" + std::to_string(k) +
                                                     " and " + std::to_string(r.kmer.size()) + ")");
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace contig
