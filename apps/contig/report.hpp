// apps/contig/report.hpp — what shoal-contig gathers and prints: strings to rank 0, contig statistics, memory,
// phase timing and progress lines.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "shoal/core.hpp"

namespace contig {

/// Gathers every rank's strings on rank 0 (others get an empty vector). Collective.
inline std::vector<std::string> gather_strings(const std::vector<std::string>& mine) {
  std::string packed;
  for (const auto& s : mine) packed += s + '\n';
  const int bytes = static_cast<int>(packed.size());
  const MPI_Comm comm = shoal::world().comm();
  std::vector<int> counts(static_cast<std::size_t>(shoal::size())), displs(counts.size());
  MPI_Gather(&bytes, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, comm);
  std::string all;
  if (shoal::rank() == 0) {
    int total = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
      displs[i] = total;
      total += counts[i];
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(packed.data(), bytes, MPI_CHAR, all.data(), counts.data(), displs.data(), MPI_CHAR, 0, comm);
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\n') {
      out.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

struct contig_stats {
  std::size_t contigs = 0, bases = 0, n50 = 0, longest = 0;
};

/// Count, total length, N50 (the length L such that contigs of length >= L hold at least half the bases), longest.
inline contig_stats stats_of(const std::vector<std::string>& contigs) {
  contig_stats s;
  std::vector<std::size_t> lengths;
  for (const auto& c : contigs) lengths.push_back(c.size());
  std::sort(lengths.rbegin(), lengths.rend());
  s.contigs = lengths.size();
  for (auto l : lengths) s.bases += l;
  s.longest = lengths.empty() ? 0 : lengths.front();
  std::size_t running = 0;
  for (auto l : lengths) {
    running += l;
    if (2 * running >= s.bases) {
      s.n50 = l;
      break;
    }
  }
  return s;
}

/// "1 rank", "2 ranks".
inline std::string count_of(std::uint64_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

/// This process's peak resident memory (VmHWM) in bytes, 0 where /proc is missing.
inline std::uint64_t peak_rss_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      std::uint64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

inline double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

/// Runs the phases of the pipeline: times each (slowest rank, barrier-separated) and, when rank 0's stderr is a
/// terminal, prints a progress line as each starts.
class phase_clock {
 public:
  explicit phase_clock(const char* program) : program_(program), cpu_start_(process_cpu_seconds()) {
    progress_ = shoal::rank() == 0 && isatty(fileno(stderr));
  }

  /// CPU seconds this process used since the clock was made (all threads; on a shared machine far less than the
  /// phases' wall time when the rank waits or is descheduled).
  double cpu_seconds() const { return process_cpu_seconds() - cpu_start_; }

  template <class F>
  void run(const std::string& name, F&& body) {
    announce(name);
    shoal::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    body();
    const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    phases_.emplace_back(name, shoal::allreduce(mine, shoal::op::max{}));
  }

  /// A phase timed elsewhere (already the slowest rank's time): announce() as it starts, add() when it is done.
  void announce(const std::string& name) const {
    if (progress_) std::fprintf(stderr, "%s: %s ...\n", program_, name.c_str());
  }
  void add(const std::string& name, double seconds) { phases_.emplace_back(name, seconds); }

  double seconds(const std::string& name) const {
    for (const auto& [n, s] : phases_) {
      if (n == name) return s;
    }
    return 0;
  }
  /// "read 0.12 s, count 0.50 s, ..., total 0.9 s"
  std::string line() const {
    std::string out;
    double total = 0;
    char buf[96];
    for (const auto& [n, s] : phases_) {
      std::snprintf(buf, sizeof buf, "%s %.3f s, ", n.c_str(), s);
      out += buf;
      total += s;
    }
    std::snprintf(buf, sizeof buf, "total %.3f s", total);
    return out + buf;
  }

 private:
  static double process_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  }

  const char* program_;
  double cpu_start_;
  bool progress_ = false;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace contig
