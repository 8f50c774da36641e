// apps/matrix_scatter/scatter.hpp — CSE_Hash's one-sided matrix scatter (§2.1, Figures 1 and 2), and the same
// scatter written with MPI_Alltoallv, for apps/matrix_scatter and shoal-bench's `scatter` workload.
//
// Rank 0 holds the matrix in a local hash table keyed by row (Figure 1). For every row i in order it removes the
// row from its local table and inserts it, as one request of n values, into a dist_multimap whose owner of row i is
// rank i mod p (key_placement::cyclic); after L requests it waits for them (HASH_Wait), and at the end everyone
// flushes (HASH_Flush) (Figure 2). Times, as the paper defines them, on rank 0:
//   immediate  time spent initiating: removing rows from the local table and issuing the inserts
//   completion immediate + time spent in wait()
//   barrier    completion + time spent in the collective flush()
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

#include "matrix_market.hpp"
#include "shoal/containers/dist_multimap.hpp"

namespace matrix_scatter {

struct scatter_times {
  double immediate = 0;
  double completion = 0;
  double barrier = 0;
};

/// Rank 0's local table of rows (Figure 1): row -> its (column, value) pairs in file order.
inline shoal::local::flat_table<std::uint32_t, std::vector<column_value>> local_rows(const coordinate_matrix& m) {
  shoal::local::flat_table<std::uint32_t, std::vector<column_value>> rows;
  for (const auto& e : m.entries) rows.try_emplace(e.row).first->push_back({e.col, e.value});
  return rows;
}

/// Collective. Scatters rank 0's `matrix` (ignored elsewhere) into `rows` with blocking factor L (Figure 2).
template <class Multimap>
scatter_times scatter_rows(const coordinate_matrix& matrix, Multimap& rows, std::size_t blocking_factor) {
  scatter_times t;
  shoal::barrier();
  if (shoal::rank() == 0) {
    auto table = local_rows(matrix);
    std::size_t in_flight = 0;
    for (std::uint32_t i = 0; i < matrix.rows; ++i) {
      double t0 = MPI_Wtime();
      auto row = table.extract(i);  // hash_delete_x
      if (row) {
        rows.post_insert(i, std::span<const column_value>(*row));  // HASH_Insert
        ++in_flight;
      }
      double t1 = MPI_Wtime();
      t.immediate += t1 - t0;
      if (in_flight == blocking_factor || (i + 1 == matrix.rows && in_flight > 0)) {
        rows.wait();  // HASH_Wait
        in_flight = 0;
        t.completion += MPI_Wtime() - t1;
      }
    }
  }
  const double t0 = MPI_Wtime();
  rows.flush();  // HASH_Flush
  t.barrier = MPI_Wtime() - t0;
  t.completion += t.immediate;
  t.barrier += t.completion;
  return t;
}

/// Collective. The same scatter with one MPI_Alltoallv (rank 0 sends, everyone receives its rows as triplets).
/// Returns the received triplets; `seconds` gets the time between two barriers.
inline std::vector<triplet> scatter_alltoallv(const coordinate_matrix& matrix, MPI_Comm comm, double& seconds) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  std::vector<int> send_counts(static_cast<std::size_t>(np), 0), recv_counts(static_cast<std::size_t>(np), 0);
  std::vector<triplet> send;
  if (me == 0) {
    for (const auto& e : matrix.entries) ++send_counts[e.row % static_cast<std::uint32_t>(np)];
    std::vector<int> next(static_cast<std::size_t>(np), 0);
    std::exclusive_scan(send_counts.begin(), send_counts.end(), next.begin(), 0);
    send.resize(matrix.entries.size());
    for (const auto& e : matrix.entries)
      send[static_cast<std::size_t>(next[e.row % static_cast<std::uint32_t>(np)]++)] = e;
  }
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  std::vector<int> sbytes(static_cast<std::size_t>(np)), rbytes(static_cast<std::size_t>(np)),
      sdispl(static_cast<std::size_t>(np)), rdispl(static_cast<std::size_t>(np));
  for (std::size_t r = 0; r < sbytes.size(); ++r) {
    sbytes[r] = send_counts[r] * static_cast<int>(sizeof(triplet));
    rbytes[r] = recv_counts[r] * static_cast<int>(sizeof(triplet));
  }
  std::exclusive_scan(sbytes.begin(), sbytes.end(), sdispl.begin(), 0);
  std::exclusive_scan(rbytes.begin(), rbytes.end(), rdispl.begin(), 0);
  std::vector<triplet> received(static_cast<std::size_t>(std::accumulate(recv_counts.begin(), recv_counts.end(), 0)));
  MPI_Alltoallv(send.data(), sbytes.data(), sdispl.data(), MPI_BYTE, received.data(), rbytes.data(), rdispl.data(),
                MPI_BYTE, comm);
  MPI_Barrier(comm);
  seconds = MPI_Wtime() - t0;
  return received;
}

/// The rows of `matrix` that rank `me` of `np` owns (row mod np == me), each sorted by column.
inline std::vector<std::pair<std::uint32_t, std::vector<column_value>>> expected_rows(const coordinate_matrix& matrix,
                                                                                       int me, int np) {
  shoal::local::flat_table<std::uint32_t, std::vector<column_value>> mine;
  for (const auto& e : matrix.entries)
    if (e.row % static_cast<std::uint32_t>(np) == static_cast<std::uint32_t>(me))
      mine.try_emplace(e.row).first->push_back({e.col, e.value});
  std::vector<std::pair<std::uint32_t, std::vector<column_value>>> out;
  mine.for_each([&](const std::uint32_t& r, std::vector<column_value>& vs) {
    std::sort(vs.begin(), vs.end());
    out.emplace_back(r, std::move(vs));
  });
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

/// True when this rank's shard of `rows` holds exactly its rows of `matrix`.
template <class Multimap>
bool verify_rows(const coordinate_matrix& matrix, Multimap& rows) {
  std::vector<std::pair<std::uint32_t, std::vector<column_value>>> got;
  rows.local_for_each([&](const std::uint32_t& r, std::vector<column_value>& vs) {
    auto sorted = vs;
    std::sort(sorted.begin(), sorted.end());
    got.emplace_back(r, std::move(sorted));
  });
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return got == expected_rows(matrix, shoal::rank(), shoal::size());
}

/// True when the triplets this rank received by Alltoallv are exactly its rows of `matrix`.
inline bool verify_triplets(const coordinate_matrix& matrix, const std::vector<triplet>& received, int me, int np) {
  const bool all_mine = std::all_of(received.begin(), received.end(), [&](const triplet& e) {
    return e.row % static_cast<std::uint32_t>(np) == static_cast<std::uint32_t>(me);
  });
  coordinate_matrix mine{matrix.rows, matrix.cols, received};
  return all_mine && expected_rows(mine, me, np) == expected_rows(matrix, me, np);
}

}  // namespace matrix_scatter
