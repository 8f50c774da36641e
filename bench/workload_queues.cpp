// Workload `queues`: BCL Figure 7 — circular_queue push and pop under each concurrency promise, and fast_queue
// push and pop, on one queue hosted on rank 0 ("one") and on one queue per rank with every rank spreading its
// operations over all of them ("many"). Beside each, the same algorithm hand-written in plain MPI-3 RMA on an
// MPI_Win_allocate window (fetch-and-op / compare-and-swap, put / get, flush), measured in turns with shoal's queues
// (the fastest of 9 rounds of each, after a warm-up round). Rates are million operations per second in total over all
// ranks; --size sets the operations per rank and phase (default 50000; the fully atomic circular_queue rows use a
// hundredth: their in-order publication serialises every rank). Run once per RMA path.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "bench.hpp"
#include "mpi_window.hpp"
#include "shoal/containers/circular_queue.hpp"
#include "shoal/containers/fast_queue.hpp"

namespace {

using shoal::bench::context;
using word = std::uint64_t;

/// The queue algorithms written directly in MPI-3 RMA: on `host`, four counters (head, tail, head_ready,
/// tail_ready) at displacement 0 and the slots from displacement 64 of the window.
class mpi_ring {
 public:
  mpi_ring(MPI_Win win, int host, word capacity) : win_(win), host_(host), capacity_(capacity) {}

  // BCL Table 4a / 4d: claim by compare-and-swap, put/get + flush, publish by compare-and-swap in claim order.
  bool push_atomic(word v) {
    word t = cache_[tail];
    for (;;) {
      if (!fits(t, 1, head_ready, capacity_)) return false;
      const word seen = cas(tail, t, t + 1);
      if (seen == t) break;
      t = seen;
    }
    cache_[tail] = t + 1;
    put(t, &v, 1);
    while (cas(tail_ready, t, t + 1) != t) {
    }
    return true;
  }
  std::optional<word> pop_atomic() {
    word h = cache_[head];
    for (;;) {
      if (!fits(h, 1, tail_ready, 0)) return std::nullopt;
      const word seen = cas(head, h, h + 1);
      if (seen == h) break;
      h = seen;
    }
    cache_[head] = h + 1;
    word v;
    get(h, &v, 1);
    while (cas(head_ready, h, h + 1) != h) {
    }
    return v;
  }
  // Table 4b / 4e: fetch-and-add claims (handed back when they do not fit) and fetch-and-add publication.
  bool push_phase(word v) {
    if (!claim_phase(tail, head_ready, capacity_, 1)) return false;
    put(claimed_, &v, 1);
    fao(tail_ready, 1);
    return true;
  }
  std::optional<word> pop_phase() {
    if (!claim_phase(head, tail_ready, 0, 1)) return std::nullopt;
    word v;
    get(claimed_, &v, 1);
    fao(head_ready, 1);
    return v;
  }
  // FastQueue: fetch-and-add claim bounded by the other counter, then put / get.
  bool push_fast(const word* v, word n) {
    if (!claim_phase(tail, head, capacity_, n)) return false;
    put(claimed_, v, n);
    return true;
  }
  bool pop_fast(word* v, word n) {
    if (!claim_phase(head, tail, 0, n)) return false;
    get(claimed_, v, n);
    return true;
  }

 private:
  enum : int { head = 0, tail = 1, head_ready = 2, tail_ready = 3 };

  bool fits(word first, word n, int bound, word slack) {
    if (first + n <= cache_[bound] + slack) return true;
    cache_[bound] = std::max(cache_[bound], fao(bound, 0, MPI_NO_OP));
    return first + n <= cache_[bound] + slack;
  }
  bool claim_phase(int counter, int bound, word slack, word n) {
    claimed_ = fao(counter, n);
    if (fits(claimed_, n, bound, slack)) return true;
    fao(counter, word{0} - n);
    return false;
  }
  word fao(int w, word v, MPI_Op op = MPI_SUM) {
    word old;
    MPI_Fetch_and_op(&v, &old, MPI_UINT64_T, host_, w * 8, op, win_);
    MPI_Win_flush(host_, win_);
    return old;
  }
  word cas(int w, word expected, word desired) {
    word old;
    MPI_Compare_and_swap(&desired, &expected, &old, MPI_UINT64_T, host_, w * 8, win_);
    MPI_Win_flush(host_, win_);
    return old;
  }
  // Values are split at the end of the ring.
  template <class Fn>
  void pieces(word first, word n, Fn&& fn) {
    for (word done = 0; done < n;) {
      const word slot = (first + done) % capacity_;
      const word count = std::min(n - done, capacity_ - slot);
      fn(done, static_cast<MPI_Aint>(64 + slot * 8), static_cast<int>(count));
      done += count;
    }
    MPI_Win_flush(host_, win_);
  }
  void put(word first, const word* v, word n) {
    pieces(first, n, [&](word done, MPI_Aint disp, int count) {
      MPI_Put(v + done, count, MPI_UINT64_T, host_, disp, count, MPI_UINT64_T, win_);
    });
  }
  void get(word first, word* v, word n) {
    pieces(first, n, [&](word done, MPI_Aint disp, int count) {
      MPI_Get(v + done, count, MPI_UINT64_T, host_, disp, count, MPI_UINT64_T, win_);
    });
  }

  MPI_Win win_;
  int host_;
  word capacity_;
  word cache_[4] = {0, 0, 0, 0};
  word claimed_ = 0;
};

struct phase_rates {
  double push = 0;
  double pop = 0;
};

/// One side of a comparison: the push and pop of the i-th operation, and the reset before each round.
struct side {
  std::function<void(std::size_t)> push, pop;
  std::function<void()> reset;
};

/// Collective: rounds of a push phase then a pop phase (every rank `ops` pushes, then `ops` pops, of `values_per_op`
/// values each) on shoal's queues and on the MPI rings in turns (which side goes first alternates); the fastest
/// round's rates of each side, in million values per second (bench.hpp, fastest_timed_pair: on a shared machine
/// the fastest round is the least disturbed). `reset` starts every round on empty queues at position 0, so that
/// shoal's rings and the MPI rings touch the same slots in every round; a first warm-up round of each side is not
/// counted: it takes the first-touch page faults of the rings (each rank maps each page of a shared segment on its
/// first access, about 1 us per 4 KiB page, more than the copy of its bytes).
std::pair<phase_rates, phase_rates> measure(std::size_t ops, std::size_t values_per_op, const side& a,
                                            const side& b) {
  const double total = static_cast<double>(ops * values_per_op) * shoal::size();
  auto round = [&](const side& s, phase_rates& best, bool counted) {
    s.reset();
    const double push_s = shoal::bench::timed([&] {
      for (std::size_t i = 0; i < ops; ++i) s.push(i);
    });
    const double pop_s = shoal::bench::timed([&] {
      for (std::size_t i = 0; i < ops; ++i) s.pop(i);
    });
    if (!counted) return;
    best.push = std::max(best.push, total / push_s / 1e6);
    best.pop = std::max(best.pop, total / pop_s / 1e6);
  };
  phase_rates ra, rb;
  constexpr int rounds = 9;
  for (int rep = 0; rep <= rounds; ++rep) {  // round 0: warm-up
    const bool a_first = rep % 2 == 0;
    round(a_first ? a : b, a_first ? ra : rb, rep > 0);
    round(a_first ? b : a, a_first ? rb : ra, rep > 0);
  }
  return {ra, rb};
}

[[noreturn]] void lost(const char* what) { throw shoal::error(std::string("queues workload: ") + what); }

void run_queues(context& ctx) {
  const int me = shoal::rank();
  const int np = shoal::size();
  const std::size_t ops = ctx.size_or(50000);
  const std::size_t vector_len = 1024;
  // Vectors of 1024: a phase of ops / 256 of them per rank (about 1.6 MB each), short enough to run between two
  // time slices of other processes on a shared machine.
  const std::size_t vector_ops = std::max<std::size_t>(1, ops / 256);
  // Room for one phase: every rank's pushes, single values or vectors.
  const word capacity = static_cast<word>(std::max(ops, vector_ops * vector_len)) * static_cast<word>(np);

  shoal::bench::mpi_window window(64 + capacity * sizeof(word));
  std::vector<mpi_ring> rings;
  auto reset_mpi = [&] {  // zero counters and fresh handles (their caches describe the old counters)
    std::fill_n(window.local<word>(), 8, word{0});
    MPI_Win_sync(window.win());
    rings.clear();
    for (int r = 0; r < np; ++r) rings.emplace_back(window.win(), r, capacity);
    shoal::barrier();
  };
  const word value = static_cast<word>(me);
  // shoal's counterpart of reset_mpi: fresh queues (positions from 0) before every round. The heap hands the freed
  // blocks back, so every round works on the same slots as the MPI rings do.
  auto fresh = [&](auto& queues) {
    return [&queues, np, capacity] {
      queues.clear();
      for (int r = 0; r < np; ++r) queues.emplace_back(r, capacity);
    };
  };

  for (const bool many : {false, true}) {
    const char* where = many ? "many" : "one";
    auto target = [&](std::size_t i) { return many ? static_cast<int>((static_cast<std::size_t>(me) + i) % np) : 0; };

    // circular_queue under each promise.
    struct variant {
      const char* label;
      shoal::concurrency push_promise, pop_promise;
      bool atomic;
    };
    for (const variant v : {variant{"push|pop (atomic)", shoal::promise::any, shoal::promise::any, true},
                            variant{"push-only / pop-only", shoal::promise::push, shoal::promise::pop, false}}) {
      const std::size_t n = v.atomic ? std::max<std::size_t>(1, ops / 100) : ops;
      ctx.progress(std::string("circular_queue ") + where + " " + v.label);
      std::vector<shoal::circular_queue<word>> queues;
      const auto [s, m] = measure(
          n, 1,
          {[&](std::size_t i) {
             if (!queues[static_cast<std::size_t>(target(i))].try_push(value, v.push_promise)) lost("push failed");
           },
           [&](std::size_t i) {
             if (!queues[static_cast<std::size_t>(target(i))].try_pop(v.pop_promise)) lost("pop found nothing");
           },
           fresh(queues)},
          {[&](std::size_t i) {
             auto& ring = rings[static_cast<std::size_t>(target(i))];
             if (!(v.atomic ? ring.push_atomic(value) : ring.push_phase(value))) lost("MPI push failed");
           },
           [&](std::size_t i) {
             auto& ring = rings[static_cast<std::size_t>(target(i))];
             if (!(v.atomic ? ring.pop_atomic() : ring.pop_phase())) lost("MPI pop found nothing");
           },
           reset_mpi});
      ctx.report({.operation = std::string("circular_queue push ") + where, .variant = v.label, .value = s.push,
                  .unit = "Mops/s", .baseline = "MPI-3 RMA", .baseline_value = m.push});
      ctx.report({.operation = std::string("circular_queue pop ") + where, .variant = v.label, .value = s.pop,
                  .unit = "Mops/s", .baseline = "MPI-3 RMA", .baseline_value = m.pop});
    }

    // fast_queue: single values, then vectors of 1024 (rates in million values per second).
    for (const std::size_t len : {std::size_t{1}, vector_len}) {
      const std::size_t n = len == 1 ? ops : vector_ops;
      ctx.progress(std::string("fast_queue ") + where + " x" + std::to_string(len));
      std::vector<shoal::fast_queue<word>> queues;
      const std::vector<word> values(len, value);
      std::vector<word> into(len);  // both sides' pops read into it
      const auto [s, m] = measure(
          n, len,
          {[&](std::size_t i) {
             auto& q = queues[static_cast<std::size_t>(target(i))];
             if (!q.try_push(std::span<const word>(values))) lost("push failed");
           },
           [&](std::size_t i) {
             auto& q = queues[static_cast<std::size_t>(target(i))];
             if (q.try_pop(std::span<word>(into)) != len) lost("pop found too little");
           },
           fresh(queues)},
          {[&](std::size_t i) {
             if (!rings[static_cast<std::size_t>(target(i))].push_fast(values.data(), len)) lost("MPI push failed");
           },
           [&](std::size_t i) {
             auto& ring = rings[static_cast<std::size_t>(target(i))];
             if (!ring.pop_fast(into.data(), len)) lost("MPI pop found too little");
           },
           reset_mpi});
      const std::string label = len == 1 ? "single values" : "vectors of 1024";
      const std::string unit = len == 1 ? "Mops/s" : "Mvalues/s";
      ctx.report({.operation = std::string("fast_queue push ") + where, .variant = label, .value = s.push, .unit = unit,
                  .baseline = "MPI-3 RMA", .baseline_value = m.push});
      ctx.report({.operation = std::string("fast_queue pop ") + where, .variant = label, .value = s.pop, .unit = unit,
                  .baseline = "MPI-3 RMA", .baseline_value = m.pop});
    }
  }
}

const shoal::bench::registrar reg("queues", "circular_queue (each promise) and fast_queue push/pop vs plain MPI RMA",
                                  run_queues, /*on_both_paths=*/true);

}  // namespace
