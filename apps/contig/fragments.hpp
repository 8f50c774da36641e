// apps/contig/fragments.hpp — the ACGT fragments of reads, as reads.hpp produces them and count.hpp consumes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace contig {

/// The ACGT fragments of the reads one rank read, end to end in one string.
struct read_fragments {
  std::string bases;                  // fragments concatenated
  std::vector<std::uint64_t> ends;    // end offset of each fragment in `bases`
  std::uint64_t reads = 0;            // records read
  std::uint64_t read_bases = 0;       // bases in those records, N and the like included

  std::size_t size() const { return ends.size(); }
  std::string_view operator[](std::size_t i) const {
    const auto begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(bases).substr(begin, ends[i] - begin);
  }
  std::size_t bytes() const { return bases.capacity() + ends.capacity() * sizeof(std::uint64_t); }
};

}  // namespace contig
