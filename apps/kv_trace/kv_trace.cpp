// kv_trace — the K-V storage paper's trace-driven benchmark on a dist_map in the service layout: server ranks own
// the data, client ranks replay PUT/GET traces (docs/apps/kv_trace.md for the format).
//
//   mpirun -np 6 kv_trace --servers 2                       4 clients, generated traces of 100,000 requests
//   mpirun -np 6 kv_trace --servers 2 --traces traces/client   clients read traces/client_<i>.trace
//   mpirun -np 1 kv_trace                                    one rank: co-located, the sequential reference
// Prints requests per second and the check of every GET. Exit status 1 if a GET returned a wrong value.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>

#include "kv_trace/replay.hpp"
#include "shoal/core.hpp"

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"kv_trace: clients replay PUT/GET traces against server ranks holding a dist_map"};
  int servers = 0;
  std::size_t ops = 100000, blocking_factor = 100;
  std::uint64_t seed = 1;
  std::string prefix, table = "flat";
  app.add_option("--servers", servers, "server ranks (default: half the ranks; all of them at one rank)");
  app.add_option("--traces", prefix, "read client i's trace from <prefix>_<i>.trace (shoal-kv-tracegen)");
  app.add_option("--ops", ops, "requests per generated trace (without --traces)");
  app.add_option("--seed", seed, "seed of client 0's generated trace (client i: seed + i)");
  app.add_option("-L,--blocking-factor", blocking_factor,
                 "requests a client sends before it waits (0: the whole trace)");
  app.add_option("--table", table, "servers' local table: flat or linear")->check(CLI::IsMember({"flat", "linear"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }
  const int np = shoal::size();
  if (servers <= 0) servers = np == 1 ? 1 : np / 2;
  if (servers > np || (servers == np && np > 1)) {
    if (shoal::rank() == 0) fmt::print(stderr, "kv_trace: --servers must leave at least one client rank\n");
    return 2;
  }
  const int clients = np == 1 ? 1 : np - servers;
  auto trace_of = [&](int client) {
    if (prefix.empty()) return kv_trace::generate_trace(ops, seed + static_cast<std::uint64_t>(client));
    const std::string path = prefix + "_" + std::to_string(client) + ".trace";
    std::ifstream in(path);
    if (!in) throw shoal::error("kv_trace: cannot open " + path);
    return kv_trace::read_trace(in, path);
  };
  if (shoal::rank() == 0) {
    fmt::print("kv_trace: {} server(s), {} client(s), L = {}, {} table, {}\n", servers, clients, blocking_factor, table,
               prefix.empty() ? fmt::format("generated traces of {} requests", ops) : prefix + "_<i>.trace");
  }
  const auto r = table == "linear"
                     ? kv_trace::run_service<shoal::local::linear>(servers, clients, blocking_factor, trace_of)
                     : kv_trace::run_service<shoal::local::flat>(servers, clients, blocking_factor, trace_of);
  if (shoal::rank() == 0) {
    fmt::print("{} requests in {:.3f} s: {:.3f} M requests/s; GETs checked: {}\n", r.requests, r.seconds,
               static_cast<double>(r.requests) / r.seconds / 1e6,
               r.wrong == 0 ? "all correct" : fmt::format("{} WRONG", r.wrong));
  }
  return r.wrong == 0 ? 0 : 1;
}
