// apps/bsgs/parallel_bsgs.hpp — baby-step giant-step over a shoal::dist_map (the K-V storage paper's application).
//
// With m = ceil(sqrt(C-1)), x = i·m + j and A^x ≡ B ⇔ A^j ≡ B·(A^-m)^i. Baby steps: every rank inserts its share of
// (A^j → j), j < m, keeping the smallest j of a repeated power (insert_or_update with min, run at the owner). Giant
// steps in rounds: in round t rank r evaluates B·(A^-m)^i for the `chunk` values of i starting at (t·p + r)·chunk
// and looks them up with one find_batch; an allreduce(min) ends the search at the first round with a match, which
// holds the smallest i — so the answer is the smallest x, the same at every rank count.
// Collective: every rank calls solve_parallel with the same arguments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
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

template <class Family = shoal::local::flat>
parallel_result solve_parallel(u64 a, u64 b, u64 c, u64 chunk = 1 << 14) {
  constexpr u64 none = std::numeric_limits<u64>::max();  // "no match" for the allreduce(min)
  const u64 m = step_count(c);
  const auto me = static_cast<u64>(shoal::rank());
  const auto np = static_cast<u64>(shoal::size());
  parallel_result out;
  shoal::dist_map<u64, u64, Family> baby;

  shoal::barrier();
  double t0 = MPI_Wtime();
  const u64 lo = m * me / np, hi = m * (me + 1) / np;
  u64 power = pow_mod(a, lo, c);
  for (u64 j = lo; j < hi; ++j) {
    baby.post_insert_or_update(power, j,
                                [](u64& stored, u64 v) { stored = std::min(stored, v); });
    power = mul_mod(power, a, c);
  }
  baby.flush();
  out.baby_seconds = MPI_Wtime() - t0;

  t0 = MPI_Wtime();
  const u64 giant = inverse_mod_prime(pow_mod(a, m, c), c);  // A^-m
  const u64 jump = pow_mod(giant, np * chunk, c);            // one round
  u64 round_start = mul_mod(b % c, pow_mod(giant, me * chunk, c), c);
  u64 finds = 0;
  std::vector<u64> gammas;
  for (u64 round = 0; round * np * chunk < m; ++round) {
    const u64 first = (round * np + me) * chunk;
    const u64 last = std::min(first + chunk, m);
    gammas.clear();
    u64 gamma = round_start;
    for (u64 i = first; i < last; ++i) {
      gammas.push_back(gamma);
      gamma = mul_mod(gamma, giant, c);
    }
    finds += gammas.size();
    const auto found = baby.find_batch(gammas);
    u64 best = none;
    for (std::size_t k = 0; k < found.size(); ++k) {
      if (found[k]) {
        best = (first + k) * m + *found[k];
        break;
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
