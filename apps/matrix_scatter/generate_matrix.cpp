// shoal-matrix-gen — writes a random sparse matrix in MatrixMarket coordinate format (input for matrix_scatter).
//
//   shoal-matrix-gen --rows 100000 --cols 100000 --nnz-per-row 20 --seed 1 -o big.mtx
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "matrix_market.hpp"

int main(int argc, char** argv) {
  CLI::App app{"shoal-matrix-gen: a random sparse matrix in MatrixMarket coordinate format"};
  std::uint32_t rows = 1000, cols = 1000, nnz_per_row = 10;
  std::uint64_t seed = 1;
  std::string out_path;
  app.add_option("--rows", rows, "number of rows");
  app.add_option("--cols", cols, "number of columns");
  app.add_option("--nnz-per-row", nnz_per_row, "mean non-zeros per row");
  app.add_option("--seed", seed, "random seed");
  app.add_option("-o,--output", out_path, "output file (default: standard output)");
  CLI11_PARSE(app, argc, argv);
  if (rows == 0 || cols == 0 || nnz_per_row == 0) {
    std::cerr << "shoal-matrix-gen: --rows, --cols and --nnz-per-row must be positive\n";
    return 2;
  }
  const auto m = matrix_scatter::random_sparse_matrix(rows, cols, nnz_per_row, seed);
  const std::string comment = "random sparse matrix: shoal-matrix-gen --rows " + std::to_string(rows) + " --cols " +
                              std::to_string(cols) + " --nnz-per-row " + std::to_string(nnz_per_row) + " --seed " +
                              std::to_string(seed);
  if (out_path.empty()) {
    matrix_scatter::write_matrix_market(std::cout, m, comment);
  } else {
    std::ofstream out(out_path);
    matrix_scatter::write_matrix_market(out, m, comment);
    if (!out) {
      std::cerr << "shoal-matrix-gen: cannot write " << out_path << "\n";
      return 1;
    }
  }
  return 0;
}
