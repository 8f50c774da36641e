// matrix_scatter — CSE_Hash's example (§2.1): rank 0 reads a sparse matrix in MatrixMarket coordinate format and
// scatters its rows row-cyclically through a shoal::dist_multimap keyed by row, with blocking factor L; every rank
// verifies its rows; then the same scatter with MPI_Alltoallv, in the same run, and the ratio.
//
//   mpirun -np 4 matrix_scatter                               the matrix shipped in data/
//   mpirun -np 4 matrix_scatter --matrix big.mtx -L 50        a file (see shoal-matrix-gen)
//   mpirun -np 4 matrix_scatter --random 100000 --nnz-per-row 20
// Exit status 1 if any rank's rows are wrong, 2 for bad arguments or an unreadable matrix.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>

#include "matrix_scatter/scatter.hpp"
#include "shoal/core.hpp"

#ifndef SHOAL_DATA_DIR
#define SHOAL_DATA_DIR "data"
#endif

int main(int argc, char** argv) {
  shoal::environment env(argc, argv);
  CLI::App app{"matrix_scatter: CSE_Hash's row-cyclic matrix scatter on a dist_multimap, beside MPI_Alltoallv"};
  std::string path = std::string(SHOAL_DATA_DIR) + "/matrix_scatter_small.mtx";
  std::uint32_t random_rows = 0, nnz_per_row = 10;
  std::size_t blocking_factor = 64;
  std::string table = "flat";
  app.add_option("--matrix", path, "MatrixMarket coordinate file (read on every rank: rank 0 scatters it, the "
                                   "others check what they receive)");
  app.add_option("--random", random_rows, "use a random square matrix with this many rows instead of a file");
  app.add_option("--nnz-per-row", nnz_per_row, "mean non-zeros per row of --random");
  app.add_option("-L,--blocking-factor", blocking_factor, "requests in flight before rank 0 waits (CSE_Hash's L)")
      ->check(CLI::PositiveNumber);
  app.add_option("--table", table, "local table: flat or linear")->check(CLI::IsMember({"flat", "linear"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return shoal::rank() == 0 ? app.exit(e) : e.get_exit_code();
  }
  matrix_scatter::coordinate_matrix matrix;
  std::string source;
  try {
    if (random_rows) {
      matrix = matrix_scatter::random_sparse_matrix(random_rows, random_rows, nnz_per_row, 1);
      source = fmt::format("random {}x{}", random_rows, random_rows);
    } else {
      std::ifstream in(path);
      if (!in) throw shoal::error("matrix_scatter: cannot open " + path + " (set --matrix)");
      matrix = matrix_scatter::read_matrix_market(in, path);
      source = path;
    }
  } catch (const shoal::error& e) {
    if (shoal::rank() == 0) fmt::print(stderr, "{}\n", e.what());
    return 2;
  }
  const int np = shoal::size();
  const auto nnz = static_cast<double>(matrix.entries.size());
  if (shoal::rank() == 0) {
    fmt::print("matrix_scatter: {} ({} rows, {} non-zeros) over {} ranks, L = {}, {} table\n", source, matrix.rows,
               matrix.entries.size(), np, blocking_factor, table);
  }

  shoal::dist_map_options options;
  options.placement = shoal::key_placement::cyclic;
  auto run = [&](auto& rows) {
    const auto t = matrix_scatter::scatter_rows(matrix, rows, blocking_factor);
    const bool ok = shoal::allreduce(matrix_scatter::verify_rows(matrix, rows) ? 1 : 0, shoal::op::min{}) == 1;
    return std::make_pair(t, ok);
  };
  matrix_scatter::scatter_times t;
  bool rows_ok;
  if (table == "linear") {
    shoal::dist_multimap<std::uint32_t, matrix_scatter::column_value, shoal::local::linear> rows(options);
    std::tie(t, rows_ok) = run(rows);
  } else {
    shoal::dist_multimap<std::uint32_t, matrix_scatter::column_value> rows(options);
    std::tie(t, rows_ok) = run(rows);
  }

  // The same work with MPI_Alltoallv (rank 0's table of rows in, every owner's table of its rows out), and the bare
  // exchange of the matrix's triplets (less work: no table on either side).
  double alltoallv_seconds = 0, triplets_seconds = 0;
  const auto input = shoal::rank() == 0 ? matrix_scatter::local_rows(matrix) : matrix_scatter::row_table{};
  auto by_alltoallv = matrix_scatter::scatter_alltoallv_rows(input, MPI_COMM_WORLD, alltoallv_seconds);
  const auto received = matrix_scatter::scatter_alltoallv(matrix, MPI_COMM_WORLD, triplets_seconds);
  const bool alltoallv_ok =
      shoal::allreduce(matrix_scatter::verify_rows(matrix, by_alltoallv) &&
                               matrix_scatter::verify_triplets(matrix, received, shoal::rank(), np)
                           ? 1
                           : 0,
                       shoal::op::min{}) == 1;
  alltoallv_seconds = shoal::allreduce(alltoallv_seconds, shoal::op::max{});
  triplets_seconds = shoal::allreduce(triplets_seconds, shoal::op::max{});

  if (shoal::rank() == 0) {
    auto line = [&](const char* what, double s) {
      fmt::print("  {:<22} {:>10.6f} s  {:>9.4f} us/non-zero\n", what, s, s / nnz * 1e6);
    };
    fmt::print("dist_multimap scatter (rank 0's times, CSE_Hash section 2.1):\n");
    line("immediate", t.immediate);
    line("completion", t.completion);
    line("barrier", t.barrier);
    fmt::print("MPI_Alltoallv scatter:\n");
    line("into row tables", alltoallv_seconds);
    line("triplets only", triplets_seconds);
    fmt::print("ratio barrier / alltoallv into row tables: {:.2f}\n", t.barrier / alltoallv_seconds);
    fmt::print("verified: dist_multimap rows {}, alltoallv rows {}\n", rows_ok ? "ok" : "WRONG",
               alltoallv_ok ? "ok" : "WRONG");
  }
  return rows_ok && alltoallv_ok ? 0 : 1;
}
