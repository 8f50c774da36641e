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

/// A table of rows: row -> its (column, value) pairs. Rank 0's input (Figure 1), and what the MPI_Alltoallv version
/// leaves on every rank.
using row_table = shoal::local::flat_table<std::uint32_t, std::vector<column_value>>;

/// Rank 0's local table of rows (Figure 1): row -> its (column, value) pairs in file order.
inline row_table local_rows(const coordinate_matrix& m) {
  row_table rows;
  for (const auto& e : m.entries) rows.try_emplace(e.row).first->push_back({e.col, e.value});
  return rows;
}

/// Collective. Scatters rank 0's `matrix` (ignored elsewhere) into `rows` with blocking factor L (Figure 2).
template <class Multimap>
scatter_times scatter_rows(const coordinate_matrix& matrix, Multimap& rows, std::size_t blocking_factor) {
  scatter_times t;
  // Rank 0's input (Figure 1) is built before the clocks start: the other ranks' flush() times it otherwise.
  row_table table = shoal::rank() == 0 ? local_rows(matrix) : row_table{};
  shoal::barrier();
  if (shoal::rank() == 0) {
    // The clock is read at the ends of each block of L requests (not around each row): immediate is the time from
    // a block's start to its last request, completion adds the waits.
    std::size_t in_flight = 0;
    double block_start = MPI_Wtime();
    for (std::uint32_t i = 0; i < matrix.rows; ++i) {
      // Rows leave in row order, which is no order in the hash table: each extract missed the cache on its slot
      // (perf: a quarter of rank 0's time on that load). The slot of the row 8 ahead is loaded meanwhile.
      table.prefetch(i + 8);
      if (auto row = table.extract(i)) {  // hash_delete_x
        rows.post_insert(i, std::move(*row));  // HASH_Insert (the row is rank 0's to give: moved, not copied)
        ++in_flight;
      }
      if (in_flight == blocking_factor || i + 1 == matrix.rows) {
        const double issued = MPI_Wtime();
        t.immediate += issued - block_start;
        if (in_flight > 0) rows.wait();  // HASH_Wait
        in_flight = 0;
        block_start = MPI_Wtime();
        t.completion += block_start - issued;
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

namespace detail {

/// Collective: sends `send` (triplets grouped by destination rank, `send_counts` per rank) with one MPI_Alltoallv
/// (counts by MPI_Alltoall) and returns what this rank received, in source order.
inline std::vector<triplet> exchange_triplets(const std::vector<triplet>& send, const std::vector<int>& send_counts,
                                              MPI_Comm comm) {
  const std::size_t np = send_counts.size();
  std::vector<int> recv_counts(np, 0);
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm);
  std::vector<int> sbytes(np), rbytes(np), sdispl(np), rdispl(np);
  for (std::size_t r = 0; r < np; ++r) {
    sbytes[r] = send_counts[r] * static_cast<int>(sizeof(triplet));
    rbytes[r] = recv_counts[r] * static_cast<int>(sizeof(triplet));
  }
  std::exclusive_scan(sbytes.begin(), sbytes.end(), sdispl.begin(), 0);
  std::exclusive_scan(rbytes.begin(), rbytes.end(), rdispl.begin(), 0);
  std::vector<triplet> received(static_cast<std::size_t>(std::accumulate(recv_counts.begin(), recv_counts.end(), 0)));
  MPI_Alltoallv(send.data(), sbytes.data(), sdispl.data(), MPI_BYTE, received.data(), rbytes.data(), rdispl.data(),
                MPI_BYTE, comm);
  return received;
}

}  // namespace detail

/// Collective. The matrix's triplets sent to their owners with one MPI_Alltoallv, straight from `matrix` (ignored
/// except on rank 0): the bare exchange, less work than the scatter (no row table on either side). Returns the
/// received triplets; `seconds` gets the time between two barriers.
inline std::vector<triplet> scatter_alltoallv(const coordinate_matrix& matrix, MPI_Comm comm, double& seconds) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  std::vector<int> send_counts(static_cast<std::size_t>(np), 0);
  std::vector<triplet> send;
  if (me == 0) {
    for (const auto& e : matrix.entries) ++send_counts[e.row % static_cast<std::uint32_t>(np)];
    std::vector<int> next(static_cast<std::size_t>(np), 0);
    std::exclusive_scan(send_counts.begin(), send_counts.end(), next.begin(), 0);
    send.resize(matrix.entries.size());
    for (const auto& e : matrix.entries)
      send[static_cast<std::size_t>(next[e.row % static_cast<std::uint32_t>(np)]++)] = e;
  }
  auto received = detail::exchange_triplets(send, send_counts, comm);
  MPI_Barrier(comm);
  seconds = MPI_Wtime() - t0;
  return received;
}

/// Collective. The same work as scatter_rows written with one MPI_Alltoallv: rank 0 reads its local table of rows
/// (`table`, Figure 1's input, as scatter_rows gets it; ignored elsewhere), packs each row's triplets for the row's
/// owner (rank row mod p), and every rank puts what it receives into a table of its rows (reserved for their number;
/// a row's triplets arrive together). `seconds` gets the time between two barriers.
inline row_table scatter_alltoallv_rows(const row_table& table, MPI_Comm comm, double& seconds) {
  int me = 0, np = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &np);
  const auto owner = [np](std::uint32_t row) { return static_cast<std::size_t>(row % static_cast<std::uint32_t>(np)); };
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  std::vector<int> send_counts(static_cast<std::size_t>(np), 0);
  std::vector<triplet> send;
  if (me == 0) {
    table.for_each([&](const std::uint32_t& row, const std::vector<column_value>& cvs) {
      send_counts[owner(row)] += static_cast<int>(cvs.size());
    });
    std::vector<int> next(static_cast<std::size_t>(np), 0);
    std::exclusive_scan(send_counts.begin(), send_counts.end(), next.begin(), 0);
    send.resize(static_cast<std::size_t>(std::accumulate(send_counts.begin(), send_counts.end(), 0)));
    table.for_each([&](const std::uint32_t& row, const std::vector<column_value>& cvs) {
      triplet* out = send.data() + next[owner(row)];
      for (const auto& cv : cvs) *out++ = triplet{row, cv.col, cv.value};
      next[owner(row)] += static_cast<int>(cvs.size());
    });
  }
  const auto received = detail::exchange_triplets(send, send_counts, comm);
  row_table rows;
  std::size_t distinct = 0;
  for (std::size_t i = 0; i < received.size(); ++i) distinct += i == 0 || received[i].row != received[i - 1].row;
  rows.reserve(distinct);
  for (std::size_t i = 0; i < received.size();) {
    std::size_t j = i;
    while (j < received.size() && received[j].row == received[i].row) ++j;
    auto& cvs = *rows.try_emplace(received[i].row).first;
    cvs.reserve(cvs.size() + (j - i));
    for (; i < j; ++i) cvs.push_back({received[i].col, received[i].value});
  }
  MPI_Barrier(comm);
  seconds = MPI_Wtime() - t0;
  return rows;
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

/// True when the rows `for_each_row(f)` shows (it calls f(const uint32_t& row, std::vector<column_value>&) once per
/// row this rank holds) are exactly this rank's rows of `matrix`.
template <class ForEachRow>
bool holds_exactly_its_rows(const coordinate_matrix& matrix, ForEachRow&& for_each_row) {
  std::vector<std::pair<std::uint32_t, std::vector<column_value>>> got;
  for_each_row([&](const std::uint32_t& r, std::vector<column_value>& vs) {
    auto sorted = vs;
    std::sort(sorted.begin(), sorted.end());
    got.emplace_back(r, std::move(sorted));
  });
  std::sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return got == expected_rows(matrix, shoal::rank(), shoal::size());
}

/// True when this rank's shard of `rows` holds exactly its rows of `matrix`.
template <class Multimap>
bool verify_rows(const coordinate_matrix& matrix, Multimap& rows) {
  return holds_exactly_its_rows(matrix, [&](auto&& f) { rows.local_for_each(f); });
}

/// True when `rows` (from scatter_alltoallv_rows) holds exactly this rank's rows of `matrix`.
inline bool verify_rows(const coordinate_matrix& matrix, row_table& rows) {
  return holds_exactly_its_rows(matrix, [&](auto&& f) { rows.for_each(f); });
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
