// shoal-kv-tracegen — writes K-V traces (format in trace.hpp and docs/apps/kv_trace.md), one file per client.
//
//   shoal-kv-tracegen --ops 100000 --clients 4 --seed 1 --prefix traces/client   → traces/client_0.trace ...
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "trace.hpp"

int main(int argc, char** argv) {
  CLI::App app{"shoal-kv-tracegen: PUT/GET traces with a rising GET share (K-V storage paper, section 4.1)"};
  std::size_t ops = 100000;
  int clients = 1;
  std::uint64_t seed = 1;
  std::string prefix = "client";
  app.add_option("--ops", ops, "requests per trace");
  app.add_option("--clients", clients, "number of traces (client i uses seed + i)");
  app.add_option("--seed", seed, "random seed of client 0");
  app.add_option("--prefix", prefix, "output files are <prefix>_<i>.trace");
  CLI11_PARSE(app, argc, argv);
  for (int c = 0; c < clients; ++c) {
    const std::string path = prefix + "_" + std::to_string(c) + ".trace";
    std::ofstream out(path);
    kv_trace::write_trace(out, kv_trace::generate_trace(ops, seed + static_cast<std::uint64_t>(c)),
                          seed + static_cast<std::uint64_t>(c));
    if (!out) {
      std::cerr << "shoal-kv-tracegen: cannot write " << path << "\n";
      return 1;
    }
  }
  return 0;
}
