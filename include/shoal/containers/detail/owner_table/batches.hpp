// shoal/containers/detail/owner_table/batches.hpp — how a batch is cut by owner and put back together.
//
// A batch over n inputs is split into one part per owner; each part travels as one operation. Batches with per-key
// results keep each part's input positions and gather its arguments from them; batches that return counts append
// each input straight to its owner's arguments (owner_table::cut_arguments_by_owner). The owners' replies merge into
// one result — counts added, or per-key results scattered back to their input positions.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <span>
#include <vector>

#include "shoal/am/control.hpp"
#include "shoal/containers/detail/owner_table/replies.hpp"
#include "shoal/containers/dist_map_results.hpp"

namespace shoal::detail {

/// A batch cut into parts, one per owner it addresses: the owners, and each part's input positions (empty when the
/// merge needs none).
struct batch_cut {
  std::vector<int> owners;
  std::vector<std::vector<std::size_t>> positions;
};

/// Batch merges: add the counts of every owner; or put each owner's results back at their input positions.
struct merge_counts {
  void operator()(batch_insert_result& total, batch_insert_result&& part, const std::vector<std::size_t>&) const {
    total += part;
  }
};
struct scatter_back {
  template <class T>
  void operator()(std::vector<T>& out, std::vector<T>&& part, const std::vector<std::size_t>& positions) const {
    for (std::size_t i = 0; i < positions.size(); ++i) out[positions[i]] = std::move(part[i]);
  }
};

/// The elements of `range` at `positions`, as Ts.
template <class T, class Range>
std::vector<T> gather(const Range& range, const std::vector<std::size_t>& positions) {
  std::vector<T> out;
  out.reserve(positions.size());
  for (std::size_t i : positions) out.push_back(static_cast<T>(range[i]));
  return out;
}

/// Keys a batch's loop at the owner prefetches ahead: about as many table lookups as the core overlaps.
inline constexpr std::size_t batch_prefetch_distance = 8;

/// Runs f(i) for i = 0..n-1 at the owner, with key key_at(i + batch_prefetch_distance) prefetched in `table` before
/// f(i) when the local table offers prefetch (shoal::local::flat does): a part's lookups overlap their cache misses
/// instead of taking them one after another. Every am::transfer_stride operations MPI moves what it has meanwhile
/// (am::progress_transfers): a batch's own part runs while the other parts travel, and on transports that move a
/// large message only while both ranks call MPI, a part's milliseconds of local work would otherwise hold them.
/// Always inlined into its caller: there key_at and f are the caller's own lambdas, whose captures (the records, the
/// reject count) stay in registers; called out of line it reached them through their closures' memory and loaded them
/// again after every insert's call into the table (an insert cost 7-17 % more cycles than a hand-written loop's, and
/// 0-7 % once inlined: docs/containers/dist_map.md, session 44).
template <class Table, class KeyAt, class F>
[[gnu::always_inline]] inline void for_each_prefetched(const Table& table, std::size_t n, KeyAt&& key_at, F&& f) {
  if (n == 1) {  // nothing to overlap (a group of one single operation)
    f(0);
    return;
  }
  constexpr std::size_t stride = am::transfer_stride;
  static_assert((stride & (stride - 1)) == 0, "a power of two: the test below is a mask");
  const auto step = [&](std::size_t i) {
    f(i);
    if (((i + 1) & (stride - 1)) == 0 && i + 1 < n) [[unlikely]] am::progress_transfers();
  };
  if constexpr (requires { table.prefetch(key_at(0)); }) {
    for (std::size_t i = 0; i < std::min(n, batch_prefetch_distance); ++i) table.prefetch(key_at(i));
    for (std::size_t i = 0; i < n; ++i) {
      if (i + batch_prefetch_distance < n) table.prefetch(key_at(i + batch_prefetch_distance));
      step(i);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) step(i);
  }
}
template <class Table, class K, class F>
[[gnu::always_inline]] inline void for_each_prefetched(const Table& table, std::span<const K> keys, F&& f) {
  for_each_prefetched(table, keys.size(), [&](std::size_t i) -> const K& { return keys[i]; }, std::forward<F>(f));
}
template <class Table, class K, class F>
[[gnu::always_inline]] inline void for_each_prefetched(const Table& table, const std::vector<K>& keys, F&& f) {
  for_each_prefetched(table, std::span<const K>(keys), std::forward<F>(f));
}

/// A batch of one single-key operation: runs Single at the owner for every key it received, results in order.
template <class Single>
struct per_key_batch_op {
  using single = Single;
  using wire = std::vector<typename Single::wire>;
  template <class Engine, class K>
  static wire apply(Engine& t, int, std::vector<K> keys) {
    wire out;
    out.reserve(keys.size());
    for_each_prefetched(t.shard(), keys,
                        [&](std::size_t i) { out.push_back(Single::apply(t, 0, std::move(keys[i]))); });
    return out;
  }
};

/// A batch of one single pair operation (insert, assign, upsert: Single::apply(engine, origin, key, value) ->
/// insert_status) at the owner: Single for pairs 0..n-1 (key_at(i), value_at(i)), in order, keys prefetched; the
/// counts (key_at / value_at may hand out references: each pair is moved from once). Shared by the pair batches that
/// travel as vectors and as bytes.
template <class Single, class Engine, class KeyAt, class ValueAt>
[[gnu::always_inline]] inline batch_insert_result run_counted(Engine& t, int origin, std::size_t n, KeyAt&& key_at,
                                                              ValueAt&& value_at) {
  batch_insert_result r;
  for_each_prefetched(t.shard(), n, key_at, [&](std::size_t i) {
    switch (Single::apply(t, origin, std::move(key_at(i)), std::move(value_at(i)))) {
      case insert_status::inserted: ++r.inserted; break;
      case insert_status::existing: ++r.existing; break;
      case insert_status::rejected: ++r.rejected; break;
    }
  });
  return r;
}

/// A batch of one single pair operation over the (key, value) pairs the owner received (as two columns), counted.
template <class Single>
struct counted_pair_batch_op {
  using single = Single;
  using wire = batch_insert_result;
  template <class Engine, class K, class V>
  static wire apply(Engine& t, int, std::vector<K> keys, std::vector<V> values) {
    return run_counted<Single>(
        t, 0, keys.size(), [&](std::size_t i) -> K& { return keys[i]; },
        [&](std::size_t i) -> V& { return values[i]; });
  }
};

}  // namespace shoal::detail
