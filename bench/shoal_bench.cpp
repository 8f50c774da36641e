// shoal-bench — the main program: runs workloads, prints one table of ratios, and writes JSON with --json.
//
//   mpirun -np 2 shoal-bench                       every workload at its default size
//   mpirun -np 2 shoal-bench --workload core --size 100000 --json out.json
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <mpi.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "bench.hpp"
#include "shoal/core/detail/size_parse.hpp"

namespace {

void print_table(const std::vector<shoal::bench::row>& rows) {
  fmt::print("{:<14} {:<28} {:<26} {:>5} {:>12} {:<8} {:<26} {:>12} {:>7}\n", "workload", "operation", "variant",
             "ranks", "value", "unit", "baseline", "baseline", "ratio");
  for (const auto& r : rows) {
    // A ratio that cannot be formed (no baseline) is 0 in the records and "-" here.
    const std::string ratio = r.ratio > 0 ? fmt::format("{:.2f}", r.ratio) : "-";
    fmt::print("{:<14} {:<28} {:<26} {:>5} {:>12.4g} {:<8} {:<26} {:>12.4g} {:>7}\n", r.workload, r.operation,
               r.variant, r.ranks, r.value, r.unit, r.baseline, r.baseline_value, ratio);
  }
}

nlohmann::json to_json(const std::vector<shoal::bench::row>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    out.push_back({{"workload", r.workload},
                   {"operation", r.operation},
                   {"variant", r.variant},
                   {"ranks", r.ranks},
                   {"value", r.value},
                   {"unit", r.unit},
                   {"baseline", r.baseline},
                   {"baseline_value", r.baseline_value},
                   {"ratio", r.ratio}});
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 0);
  int provided = 0;
  // MPI_THREAD_MULTIPLE lets shoal run its progress thread when the job spans hosts (docs/core.md, "Progress").
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

  CLI::App app{"shoal-bench: shoal's operations beside plain MPI and the per-core limit, as ratios"};
  std::vector<std::string> selected;
  std::string size_text;
  std::string json_path;
  std::string heap_text = "1G";
  bool list = false;
  app.add_option("-w,--workload", selected, "workloads to run (default: all)");
  app.add_option("-s,--size", size_text, "problem size per rank for the workload (e.g. 100000, 1M); default per workload");
  app.add_option("--json", json_path, "write one JSON record per row to this file");
  app.add_option("--heap", heap_text, "symmetric heap per rank (SHOAL_HEAP_SIZE)");
  app.add_flag("--list", list, "list the workloads and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = world_rank == 0 ? app.exit(e) : (e.get_exit_code());
    MPI_Finalize();
    return rc;
  }
  auto& all = shoal::bench::registry();
  if (list) {
    if (world_rank == 0) {
      for (const auto& w : all) fmt::print("{:<14} {}\n", w.name, w.description);
    }
    MPI_Finalize();
    return 0;
  }
  for (const auto& name : selected) {
    bool known = std::any_of(all.begin(), all.end(), [&](const auto& w) { return w.name == name; });
    if (!known) {
      if (world_rank == 0) fmt::print(stderr, "shoal-bench: unknown workload '{}'; --list shows them\n", name);
      MPI_Finalize();
      return 2;
    }
  }

  std::size_t size = 0;
  std::size_t heap = 0;
  try {
    if (!size_text.empty()) size = shoal::detail::parse_size(size_text, "--size");
    heap = shoal::detail::env_size("SHOAL_HEAP_SIZE").value_or(shoal::detail::parse_size(heap_text, "--heap"));
  } catch (const shoal::error& e) {
    if (world_rank == 0) fmt::print(stderr, "shoal-bench: {}\n", e.what());
    MPI_Finalize();
    return 2;
  }
  const bool terminal = isatty(STDERR_FILENO) && isatty(STDOUT_FILENO);

  std::vector<shoal::bench::row> rows;
  int rc = 0;
  for (const auto& w : all) {
    if (!selected.empty() && std::find(selected.begin(), selected.end(), w.name) == selected.end()) continue;
    std::vector<bool> paths = w.on_both_paths ? std::vector<bool>{false, true} : std::vector<bool>{false};
    for (bool force_mpi : paths) {
      shoal::options opts;
      opts.heap_size = heap;
      if (w.on_both_paths) opts.force_mpi_path = force_mpi;
      shoal::environment env(opts);
      shoal::bench::context ctx(w.name, size, terminal);
      // One host: the RMA path of the run. Across hosts: the number of hosts (and the forced path); the core
      // workload adds the path each of its targets takes (same-host, cross-host).
      const std::string hosts = shoal::host_count() > 1 ? std::to_string(shoal::host_count()) + "-hosts" : "";
      if (w.on_both_paths && hosts.empty()) ctx.set_variant_prefix(force_mpi ? "mpi-path" : "shm-path");
      else if (!hosts.empty()) ctx.set_variant_prefix(force_mpi ? hosts + "/mpi-path" : hosts);
      try {
        w.run(ctx);
      } catch (const std::exception& e) {
        fmt::print(stderr, "shoal-bench: workload {} failed on rank {}: {}\n", w.name, shoal::rank(), e.what());
        rc = 1;
      }
      rows.insert(rows.end(), ctx.rows().begin(), ctx.rows().end());
      if (terminal && world_rank == 0) fmt::print(stderr, "\r\033[K");
    }
  }
  if (world_rank == 0) {
    print_table(rows);
    if (!json_path.empty()) {
      std::ofstream out(json_path);
      out << to_json(rows).dump(2) << "\n";
      if (!out) {
        fmt::print(stderr, "shoal-bench: cannot write {}\n", json_path);
        rc = 1;
      }
    }
  }
  MPI_Finalize();
  return rc;
}
