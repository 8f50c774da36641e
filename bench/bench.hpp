// bench/bench.hpp — the framework of shoal-bench: workloads register themselves, report rows, and the main program
// prints one table and, with --json, one record per row.
//
// Every row is a ratio measured in one run: shoal's value beside a baseline that does the same work (plain MPI
// written the obvious way, or the sequential per-core limit). `ratio` reads "higher is better for shoal" for every
// metric: value / baseline where more is better (rates), baseline / value where less is better (times, latencies,
// errors). A lower-is-better metric may name a `resolution`, the amount below which it makes no difference (one
// element of rank error): its ratio is (baseline + resolution) / (value + resolution), so an error of 0 against 0.1
// reads 1.1, not infinity, and 3 against 0 reads 0.25, not 0. A ratio that cannot be formed (no baseline, a value of
// 0 with no resolution) is 0 and printed as "-".
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "shoal/core.hpp"
#include "stats.hpp"

namespace shoal::bench {

enum class better { higher, lower };

/// One measurement, by name: ctx.report({.operation = "put", .value = r, .unit = "Mops/s", .baseline = "MPI_Put",
/// .baseline_value = b}).
struct measurement {
  std::string operation;
  std::string variant;
  double value = 0;
  std::string unit;
  std::string baseline;  // what the baseline is ("-" when there is none)
  double baseline_value = 0;
  better direction = better::higher;  // whether a larger value is better (rates) or a smaller one (times, errors)
  double resolution = 0;              // lower-is-better only: differences below this (in `unit`) do not count
};

/// The ratio of a measurement, oriented so that higher is better for shoal (see the top of this file); 0 when none.
double ratio_of(const measurement& m);

struct row {
  std::string workload;
  std::string operation;
  std::string variant;
  int ranks = 0;
  double value = 0;
  std::string unit;
  std::string baseline;
  double baseline_value = 0;
  double ratio = 0;
};

class context {
 public:
  context(std::string workload, std::size_t size, bool terminal) : workload_(std::move(workload)), size_(size),
                                                                   terminal_(terminal) {}

  /// The --size given on the command line, or `fallback` when none was (workloads define what it counts).
  std::size_t size_or(std::size_t fallback) const { return size_ ? size_ : fallback; }

  /// Records one row (rank 0 keeps it).
  void report(const measurement& m);

  /// A progress line on the terminal (rank 0, only when stdout is a terminal).
  void progress(const std::string& what) const;

  /// Prefix added to every variant (shoal-bench sets it to the RMA path for workloads run on both paths).
  void set_variant_prefix(std::string prefix) { prefix_ = std::move(prefix); }

  std::vector<row>& rows() { return rows_; }

 private:
  std::string workload_;
  std::size_t size_;
  bool terminal_;
  std::string prefix_;
  std::vector<row> rows_;
};

struct workload {
  std::string name;
  std::string description;
  std::function<void(context&)> run;
  bool on_both_paths = false;  // run once on the shared-memory path and once on the MPI RMA path
};

std::vector<workload>& registry();

struct registrar {
  registrar(std::string name, std::string description, std::function<void(context&)> run, bool on_both_paths = false) {
    registry().push_back({std::move(name), std::move(description), std::move(run), on_both_paths});
  }
};

// ---- timing ----------------------------------------------------------------------------------------------------

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Collective: runs fn on every rank between two barriers and returns the slowest rank's seconds.
inline double timed(const std::function<void()>& fn) {
  shoal::barrier();
  const double t0 = now();
  fn();
  const double mine = now() - t0;
  return shoal::allreduce(mine, shoal::op::max{});
}

/// Collective: the median over `reps` repetitions of timed(fn).
double median_timed(int reps, const std::function<void()>& fn);

/// Collective: `reps` rounds of timed(a) and timed(b), alternating which goes first (a b, b a, a b, ...), and the
/// fastest round of each. For single operations measured beside their baseline on a shared machine: the two taken
/// in turns see the same load (one after the other they would see two different moments), and the fastest round is
/// the one least disturbed by other processes — the operation's own cost, which is what the ratio is about.
std::pair<double, double> fastest_timed_pair(int reps, const std::function<void()>& a, const std::function<void()>& b);

/// A time no run takes: where a fastest time starts.
inline constexpr double never = 1e300;

/// How many rounds the workloads that time shoal and a baseline in turns run (the fastest of each counts).
inline constexpr int rounds = 5;

/// Collective: round `round` of a beside b, for loops that make fresh state per round outside the clocks — each timed
/// once, one right after the other (which goes first alternates with the round), and each one's fastest time so far
/// kept in ta / tb (start them at `never`).
void time_in_turns(int round, double& ta, double& tb, const std::function<void()>& a, const std::function<void()>& b);

}  // namespace shoal::bench
