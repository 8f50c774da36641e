// apps/contig/fasta.hpp — reading and writing FASTA for the contig tools.
#pragma once

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace contig {

/// Every sequence of a FASTA file (lines after a '>' header joined).
inline std::vector<std::string> read_fasta(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> out;
  std::string line;
  bool open = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '>') {
      out.emplace_back();
      open = true;
    } else if (open) {
      out.back() += line;
    } else {
      throw std::runtime_error(path + ": sequence data before the first '>' header");
    }
  }
  return out;
}

/// Writes sequences as `>name_i length=L` records wrapped at 80 columns.
inline void write_fasta(const std::string& path, const std::vector<std::string>& seqs, const std::string& name) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    out << '>' << name << '_' << i << " length=" << seqs[i].size() << '\n';
    for (std::size_t p = 0; p < seqs[i].size(); p += 80) out << seqs[i].substr(p, 80) << '\n';
  }
  if (!out) throw std::runtime_error("error writing " + path);
}

}  // namespace contig
