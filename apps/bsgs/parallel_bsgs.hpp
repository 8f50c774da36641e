// apps/bsgs/parallel_bsgs.hpp — baby-step giant-step over a shoal::dist_map (the K-V storage paper's application).
//
// With m = ceil(sqrt(C-1)), x = i·m + j and A^x ≡ B ⇔ A^j ≡ B·(A^-m)^i. Baby steps: every rank inserts its share of
// (A^j → j), j < m, in batches of `batch` steps (insert_or_update_batch with min, run at the owner: one message per
// owner and batch; the owner keeps the smallest j of a repeated power), into shards reserved for their share. The
// keys are residues mod C spread evenly over their range, so a power's owner is the power modulo the number of ranks
// (key_placement::cyclic, CSE_Hash's k % p) — as balanced as hashing it, without the hash. Giant
// steps in rounds: in round t rank r evaluates B·(A^-m)^i for the `chunk` values of i starting at (t·p + r)·chunk
// and looks them up with find_batch in batches of `batch` keys, all in flight at once; an allreduce(min) ends the
// search at the first round with a match, which holds the smallest i — so the answer is the smallest x, the same at
// every rank count. A batch's powers are computed before it is issued, in four chains (geometric_run): computed
// alone, one chain would wait for each 128-bit remainder in turn.
// Collective: every rank calls solve_parallel with the same arguments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "number_theory.hpp"
#include "shoal/containers/dist_map.hpp"

namespace bsgs {

struct parallel_result {
  std::optional<u64> x;
  double baby_seconds = 0;
  double giant_seconds = 0;
  u64 operations = 0;  // table operations, all ranks: m inserts + the finds issued
};

/// `chunk`: giant steps per rank and round; `batch`: keys per batch operation (one message per owner each), small
/// enough that an owner's part fits one active-message buffer (64 KiB; at 2 ranks a part of 4,096 baby steps is
/// 32 KiB; a larger message travels apart, announced, and the owner receives it blocking: at 2 ranks, batches of
/// 16,384 baby steps took 2-5x longer than of 2,048), large enough that a batch's fixed costs stay small (4,096
/// against 2,048: 3-5% less time to solve, docs/apps/bsgs.md).
template <class Family = shoal::local::flat>
parallel_result solve_parallel(u64 a, u64 b, u64 c, u64 chunk = 1 << 14, u64 batch = 1 << 12) {
  constexpr u64 none = std::numeric_limits<u64>::max();  // "no match" for the allreduce(min)
  const u64 m = step_count(c);
  const auto me = static_cast<u64>(shoal::rank());
  const auto np = static_cast<u64>(shoal::size());
  if (batch == 0) batch = chunk;
  parallel_result out;
  shoal::dist_map_options options;
  options.placement = shoal::key_placement::cyclic;
  shoal::dist_map<u64, u64, Family> baby(options);

  shoal::barrier();
  double t0 = MPI_Wtime();
  baby.local_reserve(m / np + m / (8 * np) + 1024);  // this rank's share of the keys and some: no rehash on the way
  const u64 lo = m * me / np, hi = m * (me + 1) / np;
  u64 power = pow_mod(a, lo, c);
  std::vector<std::pair<u64, u64>> steps;  // (A^j, j)
  std::vector<shoal::future<shoal::batch_insert_result>> inserted;
  for (u64 start = lo; start < hi; start += batch) {
    const u64 end = std::min(start + batch, hi);
    steps.resize(end - start);
    power = geometric_run(power, a, c, end - start, [&](u64 i, u64 p) { steps[i] = {p, start + i}; });
    inserted.push_back(
        baby.async_insert_or_update_batch(steps, [](u64& stored, u64 v) { stored = std::min(stored, v); }));
  }
  baby.flush();
  for (auto& f : inserted) {
    if (f.get().rejected != 0) throw shoal::container_full("bsgs: a baby step did not fit in the table");
  }
  out.baby_seconds = MPI_Wtime() - t0;

  t0 = MPI_Wtime();
  const u64 giant = inverse_mod_prime(pow_mod(a, m, c), c);  // A^-m
  const u64 jump = pow_mod(giant, np * chunk, c);            // one round
  u64 round_start = mul_mod(b % c, pow_mod(giant, me * chunk, c), c);
  u64 finds = 0;
  std::vector<u64> gammas;
  std::vector<shoal::future<std::vector<std::optional<u64>>>> found;  // the round's batches, in order of i
  for (u64 round = 0; round * np * chunk < m; ++round) {
    const u64 first = (round * np + me) * chunk;
    const u64 last = std::min(first + chunk, m);
    u64 gamma = round_start;
    found.clear();
    for (u64 start = first; start < last; start += batch) {
      gammas.resize(std::min(start + batch, last) - start);
      gamma = geometric_run(gamma, giant, c, gammas.size(), [&](u64 i, u64 g) { gammas[i] = g; });
      finds += gammas.size();
      found.push_back(baby.async_find_batch(gammas));
    }
    u64 best = none;
    u64 i = first;
    for (auto& f : found) {
      for (const auto& j : f.get()) {
        if (j && best == none) best = i * m + *j;
        ++i;
      }
    }
    best = shoal::allreduce(best, shoal::op::min{});
    if (best != none) {
      out.x = best;
      break;
    }
    round_start = mul_mod(round_start, jump, c);
  }
  out.giant_seconds = shoal::allreduce(MPI_Wtime() - t0, shoal::op::max{});
  out.baby_seconds = shoal::allreduce(out.baby_seconds, shoal::op::max{});
  out.operations = m + shoal::allreduce(finds, shoal::op::sum{});
  return out;
}

}  // namespace bsgs
