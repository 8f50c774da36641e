// Workload `am`: active messages.
//   message rate — every rank sends --size payloads (default 4M) of 8, 16 and 64 bytes to its right neighbour, whose
//                  handler adds the first word to a sum; timed until am::barrier returns. Once with shoal::post per
//                  payload, once with shoal::post_each over a view that makes the payloads. Against
//                  (a) plain MPI packing the same payloads by hand into buffers of the same size sent with MPI_Isend
//                      (same cap on outstanding sends), the receiver (receives posted ahead) unpacking and adding;
//                  (b) one MPI_Isend per payload (a window of outstanding sends, MPI_Iprobe + MPI_Recv per payload).
//   rpc latency  — rank 0 waits for rpc(1, f, x).get() in a loop while rank 1 serves from inside am::barrier, against
//                  an MPI_Send/MPI_Recv ping-pong.
// Needs at least 2 ranks.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <ranges>
#include <vector>

#include "bench.hpp"
#include "shoal/am.hpp"

namespace {

using shoal::bench::better;
using shoal::bench::context;

template <std::size_t Bytes>
struct payload {
  std::array<std::uint64_t, Bytes / 8> words{};
};

std::uint64_t g_sum = 0;

template <std::size_t Bytes>
void consume(payload<Bytes> p) {
  g_sum += p.words[0];
}

constexpr int tag = 77;

/// (a) hand aggregation: payloads packed into `buffer_bytes` buffers, at most `cap` outstanding MPI_Isend; the
/// receiver keeps `posted` receives posted ahead (a ring, taken in order), so MPI matches an arriving buffer, and
/// answers a rendezvous, in whatever call the rank makes next — the way shoal receives, and faster than a probe and
/// a blocking receive, which waits inside MPI_Recv until the sender progresses a large message.
template <std::size_t Bytes>
void mpi_aggregated(MPI_Comm comm, int dest, std::size_t n, std::size_t buffer_bytes, std::size_t cap) {
  const std::size_t per_buffer = buffer_bytes / Bytes;
  const int buffer_count = static_cast<int>(per_buffer * Bytes);
  std::vector<std::vector<std::byte>> bufs(cap, std::vector<std::byte>(per_buffer * Bytes));
  std::vector<MPI_Request> reqs(cap, MPI_REQUEST_NULL);
  constexpr std::size_t posted = 8;
  std::vector<std::vector<std::byte>> rbufs(posted, std::vector<std::byte>(per_buffer * Bytes));
  std::vector<MPI_Request> rreqs(posted, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < posted; ++i)
    MPI_Irecv(rbufs[i].data(), buffer_count, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &rreqs[i]);
  std::size_t head = 0;
  std::size_t sent = 0, received = 0;
  std::size_t slot = 0;
  auto poll_receive = [&] {
    int flag = 0;
    MPI_Status st;
    MPI_Test(&rreqs[head], &flag, &st);
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    const std::vector<std::byte>& rbuf = rbufs[head];
    for (int off = 0; off < count; off += static_cast<int>(Bytes)) {
      payload<Bytes> p;
      std::memcpy(&p, rbuf.data() + off, Bytes);
      g_sum += p.words[0];
    }
    received += static_cast<std::size_t>(count) / Bytes;
    MPI_Irecv(rbufs[head].data(), buffer_count, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &rreqs[head]);
    head = (head + 1) % posted;
  };
  // The obvious hand aggregation: each payload is produced, appended to the buffer, and the buffer is sent when full
  // (after waiting, receiving meanwhile, for the send that last used this buffer).
  std::size_t fill = 0;
  auto send_buffer = [&] {
    MPI_Isend(bufs[slot].data(), static_cast<int>(fill * Bytes), MPI_BYTE, dest, tag, comm, &reqs[slot]);
    slot = (slot + 1) % cap;
    fill = 0;
    for (;;) {
      int done = 0;
      MPI_Test(&reqs[slot], &done, MPI_STATUS_IGNORE);
      if (done) break;
      poll_receive();
    }
  };
  for (; sent < n; ++sent) {
    payload<Bytes> p;
    p.words[0] = sent;
    std::memcpy(bufs[slot].data() + fill * Bytes, &p, Bytes);
    if (++fill == per_buffer) send_buffer();
  }
  if (fill > 0) send_buffer();
  while (received < n) poll_receive();
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(cap), reqs.data(), &done, MPI_STATUSES_IGNORE);
    if (done) break;
  }
  for (auto& r : rreqs) {  // every payload for this rank has arrived: the posted receives are unmatched
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

/// (b) one MPI_Isend per payload, a window of outstanding sends.
template <std::size_t Bytes>
void mpi_unaggregated(MPI_Comm comm, int dest, std::size_t n) {
  constexpr std::size_t window = 256;
  std::vector<payload<Bytes>> out(window);
  std::vector<MPI_Request> reqs(window, MPI_REQUEST_NULL);
  std::size_t sent = 0, received = 0;
  auto poll_receive = [&] {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      MPI_Iprobe(MPI_ANY_SOURCE, tag, comm, &flag, &st);
      if (!flag) return;
      payload<Bytes> p;
      MPI_Recv(&p, Bytes, MPI_BYTE, st.MPI_SOURCE, tag, comm, MPI_STATUS_IGNORE);
      g_sum += p.words[0];
      ++received;
    }
  };
  while (sent < n) {
    const std::size_t k = std::min(window, n - sent);
    for (std::size_t i = 0; i < k; ++i) {
      out[i].words[0] = sent + i;
      MPI_Isend(&out[i], Bytes, MPI_BYTE, dest, tag, comm, &reqs[i]);
    }
    sent += k;
    for (;;) {
      int done = 0;
      MPI_Testall(static_cast<int>(k), reqs.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      poll_receive();
    }
    poll_receive();
  }
  while (received < n) poll_receive();
}

template <std::size_t Bytes>
void rate(context& ctx, MPI_Comm comm, std::size_t n) {
  const int np = shoal::size();
  const int dest = (shoal::rank() + 1) % np;
  const std::string label = std::to_string(Bytes) + " B";
  const double total = static_cast<double>(n) * np;

  // shoal's forms, each timed until am::barrier has run every message.
  auto shoal_time = [&](const std::string& form, auto&& send) {
    ctx.progress("rate " + label + " shoal" + form);
    return shoal::bench::median_timed(3, [&] {
      send();
      shoal::am::barrier();
    });
  };
  auto make = [](std::size_t i) {
    payload<Bytes> p;
    p.words[0] = i;
    return p;
  };
  const auto payloads = std::views::iota(std::size_t{0}, n) | std::views::transform(make);
  const double ts = shoal_time("", [&] {
    for (std::size_t i = 0; i < n; ++i) shoal::post(dest, [](payload<Bytes> q) { g_sum += q.words[0]; }, make(i));
  });
  const double te =
      shoal_time(", post_each", [&] { shoal::post_each(dest, [](payload<Bytes> q) { g_sum += q.words[0]; }, payloads); });
  double tf = 0, tef = 0;  // the function-pointer forms, at 8 bytes
  if (Bytes == 8) {
    tf = shoal_time(", function pointer", [&] {
      for (std::size_t i = 0; i < n; ++i) shoal::post(dest, &consume<Bytes>, make(i));
    });
    tef = shoal_time(", post_each with a function pointer", [&] { shoal::post_each(dest, &consume<Bytes>, payloads); });
  }
  ctx.progress("rate " + label + " MPI aggregated");
  const double ta = shoal::bench::median_timed(3, [&] {
    mpi_aggregated<Bytes>(comm, dest, n, shoal::am::buffer_size(), shoal::am::max_sends());
  });
  const std::size_t n_single = std::max<std::size_t>(1, n / 8);
  ctx.progress("rate " + label + " MPI per payload");
  const double tu = shoal::bench::median_timed(3, [&] { mpi_unaggregated<Bytes>(comm, dest, n_single); });

  const double shoal_rate = total / ts / 1e6;
  ctx.report({.operation = "post rate", .variant = label, .value = shoal_rate, .unit = "Mmsg/s",
              .baseline = "MPI hand-aggregated", .baseline_value = total / ta / 1e6});
  ctx.report({.operation = "post rate", .variant = label, .value = shoal_rate, .unit = "Mmsg/s",
              .baseline = "MPI_Isend per payload", .baseline_value = static_cast<double>(n_single) * np / tu / 1e6});
  ctx.report({.operation = "post_each rate", .variant = label, .value = total / te / 1e6, .unit = "Mmsg/s",
              .baseline = "MPI hand-aggregated", .baseline_value = total / ta / 1e6});
  if (tf > 0) {
    ctx.report({.operation = "post rate, function ptr", .variant = label, .value = total / tf / 1e6, .unit = "Mmsg/s",
                .baseline = "MPI hand-aggregated", .baseline_value = total / ta / 1e6});
    ctx.report({.operation = "post_each rate, function ptr", .variant = label, .value = total / tef / 1e6,
                .unit = "Mmsg/s", .baseline = "MPI hand-aggregated", .baseline_value = total / ta / 1e6});
  }
}

void latency(context& ctx, MPI_Comm comm, int iters) {
  const int me = shoal::rank();
  ctx.progress("rpc latency");
  // Rank 1 serves from inside am::barrier, the wait a program's serving rank sits in (the barrier's waves cost a few
  // µs in all); it would also serve from inside any other shoal wait, e.g. the timer's allreduce, at a price
  // (docs/am.md, "rpc round trip: where the serving rank waits"). The two loops run in turns, the fastest of
  // bench::rounds each (a single operation beside its baseline on a shared machine, as bench::fastest_timed_pair says).
  const auto [ts, tm] = shoal::bench::fastest_timed_pair(
      shoal::bench::rounds,
      [&] {
        if (me == 0) {
          std::uint64_t x = 0;
          for (int i = 0; i < iters; ++i) x = shoal::rpc(1, [](std::uint64_t v) { return v + 1; }, x).get();
          g_sum += x;
        }
        shoal::am::barrier();
      },
      [&] {
        std::uint64_t x = 0;
        for (int i = 0; i < iters; ++i) {
          if (me == 0) {
            MPI_Send(&x, 1, MPI_UINT64_T, 1, tag, comm);
            MPI_Recv(&x, 1, MPI_UINT64_T, 1, tag, comm, MPI_STATUS_IGNORE);
          } else if (me == 1) {
            MPI_Recv(&x, 1, MPI_UINT64_T, 0, tag, comm, MPI_STATUS_IGNORE);
            ++x;
            MPI_Send(&x, 1, MPI_UINT64_T, 0, tag, comm);
          }
        }
        g_sum += x;
      });
  ctx.report({.operation = "rpc round trip", .variant = "8 B", .value = ts / iters * 1e6, .unit = "us",
              .baseline = "MPI ping-pong", .baseline_value = tm / iters * 1e6, .direction = better::lower});
}

void run_am(context& ctx) {
  if (shoal::size() < 2) {
    if (shoal::rank() == 0) std::fprintf(stderr, "workload am: needs at least 2 ranks, skipped\n");
    return;
  }
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const std::size_t n = ctx.size_or(std::size_t{4} << 20);
  rate<8>(ctx, comm, n);
  rate<16>(ctx, comm, n);
  rate<64>(ctx, comm, n);
  latency(ctx, comm, 20000);
  MPI_Comm_free(&comm);
}

const shoal::bench::registrar reg("am", "active-message rate (8/16/64 B) and rpc latency vs plain MPI", run_am);

}  // namespace
