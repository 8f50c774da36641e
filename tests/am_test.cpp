// Tests of active messages (include/shoal/am): remote calls, aggregation, progress, quiescence, ordering, errors.
// Registered at 1-4 ranks, once on default settings and once with 64-byte buffers and a send cap of one
// (tests/am.cmake), so every test also runs where nearly every message overflows a buffer and every send waits.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <ranges>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "shoal/am.hpp"
#include "shoal/core/hash.hpp"
#include "shoal_test.hpp"

// Handlers with external linkage, so their names are in the dynamic symbol table (the test links with -rdynamic).
namespace am_test_handlers {

inline std::vector<std::int64_t> per_source;  // messages handled here, by sender
inline std::int64_t count = 0;
inline std::vector<shoal::global_ptr<std::int64_t>> words_of_ranks;  // one word per rank (allocate_collective)

void count_from(std::int64_t claimed_source) {
  EXPECT_EQ(shoal::am::current_source(), claimed_source);
  ++per_source[static_cast<std::size_t>(claimed_source)];
}

int add(int a, int b) { return a + b; }

void throwing_handler(int value) {
  throw std::runtime_error("value " + std::to_string(value) + " rejected");
}

}  // namespace am_test_handlers

namespace {

namespace h = am_test_handlers;

int me() { return shoal::rank(); }
int np() { return shoal::size(); }
int right() { return (me() + 1) % np(); }

// Clears the counters between two quiescence barriers. A rank leaves a barrier slightly before or after the others
// and may receive the next test's messages while still inside it, so per-test state is always set before a barrier.
void reset() {
  shoal::am::barrier();
  h::per_source.assign(static_cast<std::size_t>(np()), 0);
  h::count = 0;
  shoal::am::barrier();
}

// `n` for chains of dependent messages (each step waits for another rank), or n/10 when ranks outnumber cores:
// MPICH then polls without yielding and every step costs a scheduler time slice.
int chain_scaled(int n) { return shoal::testing::oversubscribed() ? std::max(1, n / 10) : n; }

// `n` for message volumes, or n/10 in the tiny-buffer variant (a few messages per MPI message, one send in flight):
// that variant checks the send-cap logic, not throughput.
int volume_scaled(int n) {
  return shoal::testing::scaled(shoal::am::buffer_size() < 1024 ? std::max(1, n / 10) : n);
}

std::int64_t global_sum(std::int64_t v) { return shoal::allreduce(v, shoal::op::sum{}); }

// ---- remote calls -------------------------------------------------------------------------------------------------

TEST(Am, PingPong) {
  reset();
  const int rounds = chain_scaled(300);
  const int peer = np() > 1 ? 1 : 0;
  if (me() == 0) {
    for (int i = 0; i < rounds; ++i) {
      const int got = shoal::rpc(peer, [](int x) { return x + 1; }, i).get();
      ASSERT_EQ(got, i + 1);
    }
  }
  shoal::am::barrier();
}

TEST(Am, RpcFunctionPointerVoidAndGenericLambda) {
  reset();
  EXPECT_EQ(shoal::rpc(right(), &h::add, 20, 22).get(), 42);
  EXPECT_EQ(shoal::rpc(right(), h::add, 1, 2).get(), 3);  // a function decays to its pointer
  shoal::rpc(right(), [] { ++h::count; }).get();
  EXPECT_EQ(shoal::rpc(right(), [](auto a, auto b) { return a * b; }, 6L, 7L).get(), 42L);
  // Arguments are converted to the handler's parameter types before they travel.
  EXPECT_EQ(shoal::rpc(right(), [](std::string s) { return s.size(); }, "literal").get(), 7u);
  shoal::am::barrier();
  EXPECT_EQ(h::count, 1);
}

struct point {
  double x = 0, y = 0;
  std::string label;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(x, y, label);
  }
  bool operator==(const point&) const = default;
};

TEST(Am, RpcValuesOfEveryKind) {
  reset();
  const int peer = right();
  EXPECT_EQ(shoal::rpc(peer, [](std::string s) { return s + "!"; }, std::string("hi")).get(), "hi!");
  std::vector<double> v(1000);
  std::iota(v.begin(), v.end(), 0.5);
  auto doubled = shoal::rpc(peer, [](std::vector<double> in) {
                   for (auto& x : in) x *= 2;
                   return in;
                 }, v).get();
  ASSERT_EQ(doubled.size(), v.size());
  EXPECT_EQ(doubled[999], 2 * v[999]);
  auto map = shoal::rpc(peer, [](int n) {
               std::map<std::string, std::vector<int>> m;
               for (int i = 0; i < n; ++i) m[std::to_string(i)] = std::vector<int>(static_cast<std::size_t>(i), i);
               return m;
             }, 5).get();
  ASSERT_EQ(map.size(), 5u);
  EXPECT_EQ(map["3"], std::vector<int>({3, 3, 3}));
  point p{1.5, -2.0, "corner"};
  auto moved = shoal::rpc(peer, [](point q, double dx) {
                 q.x += dx;
                 q.label += " moved by " + std::to_string(shoal::rank());
                 return q;
               }, p, 1.0).get();
  EXPECT_EQ(moved.x, 2.5);
  EXPECT_EQ(moved.label, "corner moved by " + std::to_string(peer));
  auto tuple = shoal::rpc(peer, [](std::tuple<int, std::string> t) {
                 return std::optional<std::tuple<std::string, int>>(std::tuple(std::get<1>(t), std::get<0>(t)));
               }, std::tuple<int, std::string>(7, "seven")).get();
  ASSERT_TRUE(tuple.has_value());
  EXPECT_EQ(std::get<0>(*tuple), "seven");
  // A payload much larger than a buffer travels alone.
  std::string big(300000, 'x');
  big[12345] = 'y';
  EXPECT_EQ(shoal::rpc(peer, [](const std::string& s) { return s.size() + (s[12345] == 'y'); }, big).get(), 300001u);
  shoal::am::barrier();
}

// A std::span passed where the handler takes a std::vector travels as that vector (the sender makes no vector), for
// rpc and post alike, const or not, empty or larger than a buffer. (A span for a handler that takes the span itself
// does not compile: its bytes are an address, tests/am_rejects/span_argument.cpp.)
TEST(Am, SpanArgumentsTravelAsTheVectorTheHandlerTakes) {
  reset();
  const int peer = right();
  std::vector<std::uint64_t> v(20000);  // 160 KB: more than a buffer
  std::iota(v.begin(), v.end(), std::uint64_t{1});
  const std::span<const std::uint64_t> all(v);
  const auto sum = [](std::vector<std::uint64_t> in) {
    return std::accumulate(in.begin(), in.end(), std::uint64_t{0});
  };
  EXPECT_EQ(shoal::rpc(peer, sum, all).get(), std::uint64_t{20000} * 20001 / 2);
  const std::span<std::uint64_t> part(v.data() + 10, 3);
  const auto tagged = [](const std::vector<std::uint64_t>& in, int tag) { return in.size() * 100 + in[0] + tag; };
  EXPECT_EQ(shoal::rpc(peer, tagged, part, 7).get(), 3u * 100 + 11 + 7);
  EXPECT_EQ(shoal::rpc(peer, [](std::vector<std::uint64_t> in) { return in.size(); }, std::span<const std::uint64_t>())
                .get(),
            0u);
  static std::vector<std::vector<std::uint64_t>> posted;
  posted.clear();
  shoal::am::barrier();
  for (std::size_t n = 0; n < 4; ++n) {
    shoal::post(peer, [](std::vector<std::uint64_t> in) { posted.push_back(std::move(in)); }, all.subspan(n, n));
  }
  shoal::am::barrier();
  ASSERT_EQ(posted.size(), 4u);
  for (std::size_t n = 0; n < 4; ++n) {
    EXPECT_EQ(posted[n], std::vector<std::uint64_t>(v.begin() + static_cast<std::ptrdiff_t>(n),
                                                    v.begin() + static_cast<std::ptrdiff_t>(2 * n)));
  }
}

TEST(Am, ManyOutstandingRpcs) {
  reset();
  const int n = volume_scaled(2000);
  std::vector<shoal::future<std::int64_t>> futures;
  for (int i = 0; i < n; ++i) {
    futures.push_back(shoal::rpc((me() + i) % np(), [](std::int64_t x) { return x * 3; }, std::int64_t{i}));
  }
  shoal::wait_all(futures);
  for (int i = 0; i < n; ++i) ASSERT_EQ(futures[static_cast<std::size_t>(i)].get(), 3 * i);
  shoal::am::barrier();
}

// ---- floods and the send cap --------------------------------------------------------------------------------------

void flood_and_check(std::int64_t per_pair) {
  reset();
  for (std::int64_t i = 0; i < per_pair; ++i) {
    for (int d = 0; d < np(); ++d) shoal::post(d, &h::count_from, static_cast<std::int64_t>(me()));
  }
  shoal::am::barrier();
  for (int s = 0; s < np(); ++s) EXPECT_EQ(h::per_source[static_cast<std::size_t>(s)], per_pair) << "from " << s;
}

TEST(Am, AllToAllFloodExactCounts) { flood_and_check(volume_scaled(20000)); }

TEST(Am, FloodWithTinyBuffersAndOneOutstandingSend) {
  const auto saved_size = shoal::am::buffer_size();
  const auto saved_sends = shoal::am::max_sends();
  shoal::am::set_buffer_size(shoal::am::min_buffer_size);
  shoal::am::set_max_sends(1);
  flood_and_check(chain_scaled(3000));  // every message waits for the previous send
  shoal::am::set_buffer_size(saved_size);
  shoal::am::set_max_sends(saved_sends);
  EXPECT_THROW(shoal::am::set_buffer_size(1), shoal::usage_error);
  EXPECT_THROW(shoal::am::set_max_sends(0), shoal::usage_error);
}

TEST(Am, FloodFromInsideHandlers) {
  // Every rank asks every rank to flood every rank: the floods are sent from handlers, whose send path must only
  // queue what it receives while it waits for the send cap.
  reset();
  const std::int64_t per_pair = volume_scaled(2000);
  for (int d = 0; d < np(); ++d) {
    shoal::post(d, [](std::int64_t n) {
      for (std::int64_t i = 0; i < n; ++i) {
        for (int t = 0; t < shoal::size(); ++t) shoal::post(t, &h::count_from, std::int64_t{shoal::rank()});
      }
    }, per_pair);
  }
  shoal::am::barrier();
  for (int s = 0; s < np(); ++s) EXPECT_EQ(h::per_source[static_cast<std::size_t>(s)], per_pair * np());
}

// ---- chains, fan-out and quiescence -------------------------------------------------------------------------------

void hop(int origin, std::int64_t hops_left) {
  ++h::count;  // a visit
  if (hops_left == 0) {
    shoal::post(origin, [] { ++h::per_source[0]; });  // the token came home
  } else {
    shoal::post((shoal::rank() + 1) % shoal::size(), &hop, origin, hops_left - 1);
  }
}

TEST(Am, TokenHopsThroughAllRanks) {
  reset();
  const std::int64_t laps = chain_scaled(200);
  shoal::post(right(), &hop, me(), laps * np() - 1);  // every rank starts one token; np tokens, laps laps each
  shoal::am::barrier();
  EXPECT_EQ(h::count, laps * np());   // each token visited each rank `laps` times
  EXPECT_EQ(h::per_source[0], 1);     // and this rank's token came home once
}

// Deterministic random tree: a message (round, id, depth) spawns hash-chosen children on hash-chosen ranks.
std::uint64_t mix(std::uint64_t a, std::uint64_t b) { return shoal::hash_value(a * 0x9e3779b97f4a7c15ull ^ b, 17); }
constexpr int max_depth = 6;
int children_of(std::uint64_t id, int depth) { return depth >= max_depth ? 0 : static_cast<int>(mix(id, 1) % 4); }

std::int64_t spawned = 0;

void grow(std::uint64_t id, int depth) {
  ++h::count;
  const int k = children_of(id, depth);
  for (int c = 0; c < k; ++c) {
    const std::uint64_t child = mix(id, 100 + static_cast<std::uint64_t>(c));
    ++spawned;
    shoal::post(static_cast<int>(child % static_cast<std::uint64_t>(shoal::size())), &grow, child, depth + 1);
  }
}

std::int64_t tree_size(std::uint64_t id, int depth) {
  std::int64_t n = 1;
  for (int c = 0, k = children_of(id, depth); c < k; ++c) n += tree_size(mix(id, 100 + static_cast<std::uint64_t>(c)), depth + 1);
  return n;
}

TEST(Am, RandomRecursiveFanOutBarrierNeverReturnsEarly) {
  const int rounds = chain_scaled(60);
  for (int round = 0; round < rounds; ++round) {
    h::count = 0;
    spawned = 0;
    shoal::am::barrier();  // nobody sends this round's messages before every rank has reset its counters
    std::int64_t expected = 0;
    for (int r = 0; r < np(); ++r) {
      for (int s = 0; s < 3; ++s) expected += tree_size(mix(static_cast<std::uint64_t>(round * 1000 + r), static_cast<std::uint64_t>(s)), 0);
    }
    for (int s = 0; s < 3; ++s) {
      const std::uint64_t root = mix(static_cast<std::uint64_t>(round * 1000 + me()), static_cast<std::uint64_t>(s));
      ++spawned;
      shoal::post(static_cast<int>(root % static_cast<std::uint64_t>(np())), &grow, root, 0);
    }
    shoal::am::barrier();
    // Counted right after the barrier: the reduction takes each rank's value before it makes any progress.
    const std::int64_t handled = global_sum(h::count);
    const std::int64_t sent = global_sum(spawned);
    ASSERT_EQ(handled, expected) << "round " << round;
    ASSERT_EQ(sent, expected) << "round " << round;
  }
}

TEST(Am, BarrierWithNothingToDoAndRepeated) {
  for (int i = 0, n = chain_scaled(20); i < n; ++i) shoal::am::barrier();
  const auto before = shoal::am::stats();
  shoal::am::barrier();  // every rank has taken `before` before any message of this test moves
  shoal::post(right(), [] {});
  shoal::am::barrier();
  const auto after = shoal::am::stats();
  EXPECT_EQ(after.messages_sent - before.messages_sent, 1u);
  EXPECT_EQ(global_sum(static_cast<std::int64_t>(after.messages_handled - before.messages_handled)), np());
}

// A barrier's wave sums travel in messages of their own (detail::counter_sum: recursive doubling, the ranks beyond
// the largest power of two folded in first). Every group size up to np(), members in two orders, the waves of
// different groups back to back without a barrier between (one set of tags serves them all): every sum exact.
TEST(Am, BarrierWaveSumsAreExactForEveryGroupSizeAndOrder) {
  MPI_Comm comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(shoal::world().comm(), &comm), MPI_SUCCESS);
  const int n = np();
  for (int round = 0; round < 6; ++round) {
    const int step = round % 2 == 0 || n < 3 ? 1 : n - 1;  // n - 1 is coprime with n: a permutation
    for (int size = 1; size <= n; ++size) {
      std::vector<int> ranks(static_cast<std::size_t>(size));
      int place = -1;
      for (int i = 0; i < size; ++i) {
        ranks[static_cast<std::size_t>(i)] = (i * step + round) % n;
        if (ranks[static_cast<std::size_t>(i)] == me()) place = i;
      }
      if (place < 0) continue;
      shoal::am::detail::counter_sum sum(comm, ranks, place, size);
      for (std::uint64_t wave = 0; wave < 3; ++wave) {
        const std::uint64_t tag = static_cast<std::uint64_t>(round * 100 + size) * 10 + wave;
        sum.start({static_cast<std::uint64_t>(me()) + 1, tag});
        shoal::wait_until([&] { return sum.test(); });
        std::uint64_t ranks_sum = 0;
        for (int r : ranks) ranks_sum += static_cast<std::uint64_t>(r) + 1;
        const auto got = sum.result();
        ASSERT_EQ(got[0], ranks_sum) << "round " << round << ", group of " << size << ", wave " << wave;
        ASSERT_EQ(got[1], tag * static_cast<std::uint64_t>(size)) << "round " << round << ", group of " << size;
      }
    }
  }
  shoal::am::barrier();
  MPI_Comm_free(&comm);
}

TEST(Am, HandlerMayWaitForAnRpc) {
  reset();
  // A handler that blocks on an rpc to its right neighbour: the wait runs other handlers, so it cannot deadlock
  // even when every rank does it at once.
  auto f = shoal::rpc(right(), [] {
    const int r = (shoal::rank() + 1) % shoal::size();
    return shoal::rpc(r, [] { return shoal::rank(); }).get() + 1000;
  });
  EXPECT_EQ(f.get(), (right() + 1) % np() + 1000);
  shoal::am::barrier();
}

TEST(Am, HandlersThatWaitForRemoteAtomicsDoNotNestWithoutBound) {
  reset();
  // Every handler does a blocking remote atomic on a word of its right neighbour. Where that atomic is a message
  // (another host, or SHOAL_FORCE_MESSAGES in the "messages" variant) the handler waits, and a wait inside a
  // handler must not start the next queued handler, which would wait in turn: one stack frame chain per queued
  // message, a stack overflow at a few thousand.
  auto words = shoal::allocate_collective<std::int64_t>(1);
  *words[static_cast<std::size_t>(me())].local() = 0;
  h::words_of_ranks = words;
  shoal::barrier();
  const int n = volume_scaled(20000);
  for (int i = 0; i < n; ++i) {
    shoal::post(right(), [] { 
      const auto next = static_cast<std::size_t>((shoal::rank() + 1) % shoal::size());
      (void)shoal::fetch_add(h::words_of_ranks[next], std::int64_t{1});
    });
  }
  shoal::am::barrier();
  shoal::barrier();
  // The word of rank r is incremented by the handlers run on its left neighbour, which come from that rank's left.
  EXPECT_EQ(shoal::atomic_load(words[static_cast<std::size_t>(me())]), n);
  shoal::barrier();
  shoal::deallocate(words[static_cast<std::size_t>(me())]);
}

TEST(Am, ProgressDeliversWithoutBarrier) {
  reset();
  if (np() > 1) {
    if (me() == 1) {
      shoal::post(0, [] { h::count = 7; });
      shoal::am::flush();
    }
    if (me() == 0) {
      shoal::wait_until([] { return h::count == 7; });
    }
  }
  shoal::am::barrier();
}

// progress_transfers lets MPI move what it has and nothing more: no handler runs (not even for messages that have
// arrived), no buffered message leaves; it may be called inside a handler. What was sent before it, a buffer larger
// than any receive slot included, arrives whole afterwards.
TEST(Am, ProgressTransfersRunsNoHandlerAndSendsNothingNew) {
  reset();
  shoal::post(right(), [](std::vector<std::int64_t> v) {
    EXPECT_EQ(v.size(), 40000u);
    EXPECT_EQ(v.back(), 39999);
    ++h::count;
  }, [] {
    std::vector<std::int64_t> v(40000);
    std::iota(v.begin(), v.end(), 0);
    return v;
  }());
  shoal::am::flush();  // the large buffer is on its way
  shoal::post(me(), [] { ++h::count; });
  shoal::post(right(), [] {
    shoal::am::progress_transfers();  // inside a handler: fine, and nothing nests
    ++h::count;
  });
  const shoal::am::statistics before = shoal::am::stats();
  const std::int64_t ran = h::count;  // a neighbour's messages may have run in reset()'s barrier already
  for (int i = 0; i < 200; ++i) shoal::am::progress_transfers();
  const shoal::am::statistics after = shoal::am::stats();
  EXPECT_EQ(h::count, ran);
  EXPECT_EQ(after.buffers_sent, before.buffers_sent);
  EXPECT_EQ(after.messages_handled, before.messages_handled);
  EXPECT_EQ(after.messages_sent, before.messages_sent);
  shoal::am::barrier();
  EXPECT_EQ(h::count, 3);
}

// ---- ordering -----------------------------------------------------------------------------------------------------

std::vector<std::int64_t> next_expected;  // per source
std::int64_t order_violations = 0;

void check_order(std::int64_t seq) {
  auto& next = next_expected[static_cast<std::size_t>(shoal::am::current_source())];
  if (seq != next) ++order_violations;
  next = seq + 1;
}

// Clears the order check, then waits for every rank: state first, then the barrier (a faster rank's messages may
// arrive while this one is still inside it).
void start_order_check() {
  next_expected.assign(static_cast<std::size_t>(np()), 0);
  order_violations = 0;
  reset();
}

// After am::barrier: every rank's `n` messages (sequence numbers 0..n-1) arrived, each in its sender's order.
void expect_in_order(std::int64_t n) {
  EXPECT_EQ(order_violations, 0);
  for (int s = 0; s < np(); ++s) EXPECT_EQ(next_expected[static_cast<std::size_t>(s)], n);
}

void send_mixed_and_check_order(std::int64_t n) {
  start_order_check();
  std::vector<shoal::future<void>> replies;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < np(); ++d) {
      switch (i % 5) {
        case 0: shoal::post(d, &check_order, i); break;
        case 1: shoal::post(d, [](std::int64_t s, std::string) { check_order(s); }, i, std::string(i % 7 * 10, 'a')); break;
        case 2: replies.push_back(shoal::rpc(d, [](std::int64_t s) { check_order(s); }, i)); break;
        case 3:  // larger than any buffer of the tiny variant, and every 50th larger than the default buffer
          shoal::post(d, [](std::int64_t s, std::vector<char>) { check_order(s); }, i,
                       std::vector<char>(i % 50 == 3 ? 70000 : 100, 'b'));
          break;
        default: shoal::post(d, [](std::int64_t s) { check_order(s); }, i);
      }
    }
  }
  shoal::wait_all(replies);
  shoal::am::barrier();
  expect_in_order(n);
}

// A rank that sends full buffers or calls progress_transfers takes in the buffers that arrived for it (so their
// senders' rendezvous completes) without running them, at most 2 x max_sends() queued at once (docs/am.md, "Arrivals
// taken in while sending"; a sender outside handlers runs a queue that reached the bound, and takes in more); they run
// later, each once, in every sender's order. A rank alone sends only to itself:
// its buffers go straight to its queue, nothing passes through MPI, and nothing is taken in ahead.
TEST(Am, ArrivalsAreTakenInAheadWithoutRunningThem) {
  start_order_check();
  const int left = (me() + np() - 1) % np();
  const auto per_buffer = static_cast<std::int64_t>(shoal::am::buffer_size() / sizeof(std::int64_t));
  const auto saved_sends = shoal::am::max_sends();
  std::int64_t sent = 0;
  // Four buffers to the right under a cap they do not reach (three when they go through a shared-memory ring, which
  // holds four records: the stream's first, eager buffer and three full ones), pushed out; then only
  // progress_transfers until one of the left neighbour's buffers has been taken in. This rank runs nothing meanwhile
  // (no poll, no wait at the cap or for ring room), so each of them can only be taken in ahead — while this rank
  // sends its own full buffers, or in the loop. (The plain MPI barrier: no rank starts before every rank has left the
  // quiescence barrier, where they would run.)
  const std::size_t ring = shoal::am::host_ring_bytes();
  const std::size_t record = shoal::am::buffer_size() + 8;
  const std::int64_t buffers =
      ring / 2 >= record ? std::min<std::int64_t>(4, static_cast<std::int64_t>(ring / record) - 1) : 4;
  ASSERT_EQ(MPI_Barrier(shoal::world().comm()), MPI_SUCCESS);
  const shoal::am::statistics before = shoal::am::stats();
  shoal::am::set_max_sends(16);
  for (; sent < buffers * per_buffer; ++sent) shoal::post(right(), &check_order, sent);
  shoal::am::flush();
  shoal::am::set_max_sends(saved_sends);
  shoal::am::statistics now = shoal::am::stats();
  if (np() == 1) {
    for (int i = 0; i < 100; ++i) shoal::am::progress_transfers();
    now = shoal::am::stats();
    EXPECT_EQ(now.buffers_taken_ahead, before.buffers_taken_ahead);
  }
  while (now.buffers_taken_ahead == before.buffers_taken_ahead && np() > 1) {
    shoal::am::progress_transfers();
    now = shoal::am::stats();
  }
  EXPECT_EQ(now.messages_handled, before.messages_handled);
  EXPECT_EQ(next_expected[static_cast<std::size_t>(left)], 0);
  // Then every rank streams to the right with a send cap of one (each full buffer sent takes arrivals in), and again
  // with the default cap: the queue taken ahead stays within its bound, and everything runs, in order.
  shoal::am::set_max_sends(1);
  for (const std::int64_t end = sent + volume_scaled(40) * per_buffer; sent < end; ++sent)
    shoal::post(right(), &check_order, sent);
  shoal::am::set_max_sends(saved_sends);
  for (const std::int64_t end = sent + volume_scaled(40) * per_buffer; sent < end; ++sent)
    shoal::post(right(), &check_order, sent);
  shoal::am::barrier();
  EXPECT_EQ(order_violations, 0);
  for (int s = 0; s < np(); ++s) EXPECT_EQ(next_expected[static_cast<std::size_t>(s)], s == left ? sent : 0) << s;
  // The bound over every test of this program (none sets a cap above the default 16); the fault mode may release a
  // held buffer per sender on top.
  EXPECT_LE(shoal::am::stats().longest_queue_ahead, 2 * std::size_t{16} + static_cast<std::size_t>(np()));
}

// Buffers for a rank of the same host go through a shared-memory ring, not MPI (docs/am.md, "Buffers within a host"):
// all of them when a full buffer fits in half a ring, else the smaller ones (the larger go by MPI, announced in the
// ring). Buffers for ranks of other hosts (the multihost runs), and every buffer under SHOAL_AM_SHM_RING=0, go by
// MPI. Each stream is many times its ring (which wraps around, fills, and waits for its receiver), with messages
// larger than a buffer among small ones and rpcs, and arrives whole and in order.
TEST(Am, BuffersToRanksOfThisHostTravelThroughSharedMemory) {
  start_order_check();
  const shoal::team& host = shoal::node_team();
  std::vector<bool> same_host(static_cast<std::size_t>(np()), false);
  for (int i = 0; i < host.size(); ++i) {
    same_host[static_cast<std::size_t>(host.to_world(i))] = host.to_world(i) != me();
  }
  const std::size_t ring = shoal::am::host_ring_bytes();
  if (host.size() == 1) {
    EXPECT_EQ(ring, 0u);
  }
  const std::size_t buffer = shoal::am::buffer_size();
  const auto per_buffer = static_cast<std::int64_t>(buffer / sizeof(std::int64_t));
  const std::int64_t per_rank = std::max<std::int64_t>(4 * static_cast<std::int64_t>(ring) / 8, 8 * per_buffer) +
                                volume_scaled(200);
  const std::vector<std::int64_t> large(buffer / sizeof(std::int64_t) + 5, 7);  // alone in a buffer of its own
  const shoal::am::statistics before = shoal::am::stats();
  std::vector<shoal::future<std::int64_t>> replies;
  std::vector<std::int64_t> asked;  // the sequence number each reply returns
  for (std::int64_t i = 0; i < per_rank; ++i) {
    for (int d = 0; d < np(); ++d) {
      if (i % 997 == 500) {
        shoal::post(d, [](std::int64_t seq, const std::vector<std::int64_t>& v) {
          check_order(seq);
          h::count += static_cast<std::int64_t>(v.size());
        }, i, large);
      } else if (i % 101 == 50) {
        replies.push_back(shoal::rpc(d, [](std::int64_t seq) { return check_order(seq), seq; }, i));
        asked.push_back(i);
      } else {
        shoal::post(d, &check_order, i);
      }
    }
  }
  shoal::am::flush();
  const shoal::am::statistics after = shoal::am::stats();
  shoal::am::barrier();
  expect_in_order(per_rank);
  for (std::size_t k = 0; k < replies.size(); ++k) EXPECT_EQ(replies[k].get(), asked[k]) << k;
  const auto larges = static_cast<std::int64_t>(per_rank > 500 ? (per_rank - 501) / 997 + 1 : 0);
  EXPECT_EQ(h::count, larges * np() * static_cast<std::int64_t>(large.size()));
  const std::uint64_t buffers = after.buffers_sent - before.buffers_sent;
  const std::uint64_t within = after.buffers_within_host - before.buffers_within_host;
  const bool any_here = std::count(same_host.begin(), same_host.end(), true) > 0;
  if (np() > 1) {
    EXPECT_GT(buffers, 0u);
  }
  if (!any_here || ring == 0) {
    EXPECT_EQ(within, 0u);
  } else {
    EXPECT_GT(within, 0u);
    EXPECT_LE(within, buffers);
    // Every buffer to a rank of this host went through its ring when full buffers fit (the large messages, announced
    // in the ring, travel by MPI); then the rings carried at least the buffers that were not large ones.
    const bool all_here = std::count(same_host.begin(), same_host.end(), true) == np() - 1;
    if (all_here && 8 + buffer <= ring / 2) {
      EXPECT_EQ(within + static_cast<std::uint64_t>(larges * (np() - 1)), buffers);
    }
  }
}

// SHOAL_AM_SHM_RING: bytes (rounded up to 64), 0 for none, and a value below the smallest ring refused on every rank —
// also on the ranks whose own value was fine, so that no rank goes on into a collective the others left.
TEST(Am, SharedMemoryRingSettingIsAgreedAndChecked) {
  const MPI_Comm comm = shoal::world().comm();
  const char* saved = std::getenv("SHOAL_AM_SHM_RING");
  const std::string keep = saved ? saved : "";
  unsetenv("SHOAL_AM_SHM_RING");
  EXPECT_EQ(shoal::am::detail::agreed_ring_bytes(comm, 65536), 4 * (65536 + 8) + 32);  // four records, rounded to 64
  setenv("SHOAL_AM_SHM_RING", "1000", 1);
  EXPECT_EQ(shoal::am::detail::agreed_ring_bytes(comm, 65536), 1024u);
  setenv("SHOAL_AM_SHM_RING", me() == np() - 1 ? "0" : "4K", 1);  // any rank's 0 turns the rings off everywhere
  EXPECT_EQ(shoal::am::detail::agreed_ring_bytes(comm, 65536), 0u);
  setenv("SHOAL_AM_SHM_RING", me() == 0 ? "100" : "4K", 1);
  try {
    (void)shoal::am::detail::agreed_ring_bytes(comm, 65536);
    ADD_FAILURE() << "a ring of 100 bytes on rank 0 was accepted";
  } catch (const shoal::usage_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("SHOAL_AM_SHM_RING"), std::string::npos) << text;
    EXPECT_NE(text.find(me() == 0 ? "100 bytes is below the smallest shared-memory ring of 256" : "a rank's value"),
              std::string::npos) << text;
  }
  setenv("SHOAL_AM_SHM_RING", "1x", 1);
  EXPECT_THROW((void)shoal::am::detail::agreed_ring_bytes(comm, 65536), shoal::usage_error);  // malformed: before
  if (saved) setenv("SHOAL_AM_SHM_RING", keep.c_str(), 1);                                     // any collective
  else unsetenv("SHOAL_AM_SHM_RING");
}

// Receive slots are as large as the largest buffer any rank started with; a rank that raises its buffer size later
// sends buffers larger than its peers' slots (announced, then received apart), a rank that lowers it sends small
// ones. Both kinds keep their place in each pair's order.
TEST(Am, PerPairOrderWhenRanksChangeTheirBufferSize) {
  const auto saved = shoal::am::buffer_size();
  const std::int64_t n = volume_scaled(3000);  // the same on every rank
  shoal::am::set_buffer_size(me() % 2 == 0 ? 4 * saved : 512);
  send_mixed_and_check_order(n);
  shoal::am::set_buffer_size(saved);
}

// The test-only fault mode (SHOAL_FAULTS, core/detail/faults.hpp; its parsing: fault_mode_test.cpp): under
// am.faults.np3 buffers from other ranks really are held back (the order tests above then run with deliveries
// reordered across senders).
TEST(Am, FaultModeHoldsBackBuffersFromOtherRanks) {
  if (std::getenv("SHOAL_FAULTS") == nullptr || np() < 2) GTEST_SKIP() << "runs under SHOAL_FAULTS (am.faults.np3)";
  for (int i = 0; i < 200; ++i) {
    for (int d = 0; d < np(); ++d) shoal::post(d, [](int) {}, i);
    shoal::am::flush();
  }
  shoal::am::barrier();
  const std::uint64_t delayed = shoal::am::detail::get().buffers_delayed();
  EXPECT_GT(shoal::allreduce(delayed, shoal::op::sum{}), 0u);
}

void check_order_too(std::int64_t seq) { check_order(seq); }  // same type as check_order: a different function

TEST(Am, GroupsOfOneHandlerKeepOrderAcrossFunctionsEmptyMessagesAndWaits) {
  start_order_check();
  // Consecutive messages for one handler travel as one group: runs of each of two functions of the same type, of a
  // message without arguments, and of a lambda that sometimes waits for an rpc in the middle of its group (the wait
  // runs the rest of the group in a nested loop).
  const std::int64_t n = volume_scaled(3000);
  std::int64_t empty_sent = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < np(); ++d) {
      const std::int64_t phase = i / 4 % 4;
      if (phase == 0) shoal::post(d, &check_order, i);
      if (phase == 1) shoal::post(d, &check_order_too, i);
      if (phase == 2) {
        shoal::post(d, [](std::int64_t s, bool wait) {
          check_order(s);
          if (wait) shoal::rpc((shoal::rank() + 1) % shoal::size(), [] {}).get();
        }, i, i % 64 == 9);
      }
      if (phase == 3) {
        shoal::post(d, [] { ++h::count; });
        ++empty_sent;
        shoal::post(d, &check_order, i);
      }
    }
  }
  shoal::am::barrier();
  expect_in_order(n);
  EXPECT_EQ(global_sum(h::count), global_sum(empty_sent));
}

// Small plain messages run in chunks of chunk_messages, read before the chunk runs (run_post). A handler that waits
// in the middle of a long group — at every place of a chunk, and in a group's tail shorter than a chunk — lets a
// nested loop take over the rest of its group: every message still runs once, in order, at sizes chunked (8 to 32
// bytes) and not (40 bytes). At 3 and 4 ranks this also hung before session 45: a handler run while a flush waited
// for send room wrote its rpc into the buffer being sent, which its wait's flushes did not send (engine::make_room).
template <std::size_t Bytes>
struct sized_message {
  std::int64_t seq;
  std::array<std::int64_t, Bytes / 8 - 1> pad{};
};
template <>
struct sized_message<8> {
  std::int64_t seq;
};

template <std::size_t Bytes>
void long_groups_with_waits() {
  using message = sized_message<Bytes>;
  static_assert(sizeof(message) == Bytes);
  start_order_check();
  const std::int64_t n = volume_scaled(4000);
  for (std::int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < np(); ++d) {
      shoal::post(d, [](message m) {
        check_order(m.seq);
        // One message in 37 waits, at each place of a chunk in turn.
        if (m.seq % 37 == m.seq / 37 % shoal::am::detail::chunk_messages) {
          shoal::rpc((shoal::rank() + 1) % shoal::size(), [] {}).get();
        }
      }, message{.seq = i});
    }
    if (i % 301 == 300) shoal::am::flush();  // groups of every length, tails shorter than a chunk included
  }
  shoal::am::barrier();
  expect_in_order(n);
}

TEST(Am, HandlersThatWaitInsideLongGroupsOfSmallMessagesKeepOrder) {
  long_groups_with_waits<8>();
  long_groups_with_waits<16>();
  long_groups_with_waits<32>();
  long_groups_with_waits<40>();
}

// Seeded random schedules: every rank runs the same number of random steps — posts of several sizes (plain words,
// fixed-size structs chunked and not, strings, vectors larger than a buffer), post_each runs, rpcs whose answers are
// checked later, flushes, progress — and a message's handler may itself wait for an rpc (to any rank, itself included),
// post a counted message onwards, or poll. Every few hundred steps an am::barrier, after which each rank has run every
// ordered message sent to it so far, once and in its sender's order (the counts sent are exchanged), and every onward
// message sent anywhere has run. The seeds are fixed (failures name theirs); SHOAL_TEST_SEED adds one.
namespace schedule {

inline std::int64_t onward_sent = 0, onward_run = 0;  // messages posted by handlers, and run

/// What a message's handler does after its order check (chosen by the sender's generator).
enum action : int { nothing = 0, wait_for_rpc = 1, post_onward = 2, poll = 3 };

void act(int what, int target) {
  switch (what) {
    case wait_for_rpc: EXPECT_EQ(shoal::rpc(target, [](int x) { return x + 1; }, target).get(), target + 1); break;
    case post_onward:
      ++onward_sent;
      shoal::post(target, [] { ++onward_run; });
      break;
    case poll: shoal::progress(); break;
    default: break;
  }
}

void run(std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  start_order_check();
  onward_sent = onward_run = 0;
  shoal::am::barrier();
  std::mt19937_64 gen(seed * 1000003u + static_cast<std::uint64_t>(me()));
  auto below = [&](std::uint64_t n) { return static_cast<int>(gen() % n); };
  std::vector<std::int64_t> sent(static_cast<std::size_t>(np()), 0);  // ordered messages sent, per destination
  std::vector<std::pair<shoal::future<std::int64_t>, std::int64_t>> answers;  // rpc and its expected answer
  const int steps = volume_scaled(2000);
  const auto check_arrivals = [&] {
    for (auto& [f, expected] : answers) EXPECT_EQ(f.get(), expected);
    answers.clear();
    shoal::am::barrier();
    std::vector<std::int64_t> to_me(sent.size());
    ASSERT_EQ(MPI_Alltoall(sent.data(), 1, MPI_INT64_T, to_me.data(), 1, MPI_INT64_T, shoal::world().comm()),
              MPI_SUCCESS);
    EXPECT_EQ(order_violations, 0);
    for (std::size_t s = 0; s < sent.size(); ++s) EXPECT_EQ(next_expected[s], to_me[s]) << "from rank " << s;
    EXPECT_EQ(global_sum(onward_sent), global_sum(onward_run));
  };
  for (int step = 0; step < steps; ++step) {
    const int d = below(static_cast<std::uint64_t>(np()));
    const int target = below(static_cast<std::uint64_t>(np()));
    const int what = below(10) == 0 ? below(4) : nothing;  // about one handler in 13 does something
    std::int64_t& seq = sent[static_cast<std::size_t>(d)];
    switch (below(20)) {
      case 0: case 1: case 2: case 3: case 4:
        shoal::post(d, [](std::int64_t q, int w, int t) { check_order(q); act(w, t); }, seq++, what, target);
        break;
      case 5: case 6:
        shoal::post(d, [](sized_message<32> m, int w, int t) { check_order(m.seq); act(w, t); },
                    sized_message<32>{.seq = seq++}, what, target);
        break;
      case 7:
        shoal::post(d, [](sized_message<40> m, int w, int t) { check_order(m.seq); act(w, t); },
                    sized_message<40>{.seq = seq++}, what, target);
        break;
      case 8: case 9:
        shoal::post(d, [](std::int64_t q, std::string text, int w, int t) {
          check_order(q);
          EXPECT_EQ(text, std::string(static_cast<std::size_t>(q % 300), 'x'));
          act(w, t);
        }, seq, std::string(static_cast<std::size_t>(seq % 300), 'x'), what, target);
        ++seq;
        break;
      case 10: {  // every 16th larger than the default buffer
        const std::size_t bytes = below(16) == 0 ? 70000 : static_cast<std::size_t>(below(2000));
        shoal::post(d, [](std::int64_t q, std::vector<char> v, std::uint64_t n) {
          check_order(q);
          EXPECT_EQ(v.size(), n);
        }, seq++, std::vector<char>(bytes, 'v'), std::uint64_t{bytes});
        break;
      }
      case 11: case 12: {
        const std::int64_t k = below(200);
        shoal::post_each(d, [](std::int64_t q) { check_order(q); }, std::views::iota(seq, seq + k));
        seq += k;
        break;
      }
      case 13: case 14: {
        const std::int64_t x = static_cast<std::int64_t>(gen() % 1000000);
        answers.emplace_back(shoal::rpc(d, [](std::int64_t v, int w, int t) {
          act(w, t);
          return 3 * v + 1;
        }, x, what, target), 3 * x + 1);
        if (answers.size() > 8 || below(4) == 0) {  // some answers waited for at once, some much later
          auto& [f, expected] = answers[static_cast<std::size_t>(below(answers.size()))];
          if (f.valid()) {
            EXPECT_EQ(f.get(), expected);
          }
          std::erase_if(answers, [](const auto& a) { return !a.first.valid(); });
        }
        break;
      }
      case 15: shoal::am::flush(); break;
      case 16: shoal::progress(); break;
      default:
        shoal::post(d, [](sized_message<16> m) { check_order(m.seq); }, sized_message<16>{.seq = seq++});
    }
    if (step % 500 == 499) check_arrivals();  // every rank runs the same number of steps: a collective point
  }
  check_arrivals();
}

}  // namespace schedule

TEST(Am, SeededSchedulesRunEveryMessageOnceInOrderWithHandlersThatWait) {
  std::vector<std::uint64_t> seeds{1, 2, 3};
  if (const char* extra = std::getenv("SHOAL_TEST_SEED")) seeds.push_back(std::strtoull(extra, nullptr, 10));
  for (const std::uint64_t seed : seeds) schedule::run(seed);
}

// post_each fills a destination's buffer from a cursor of its own: its messages keep their place among posts of the
// same handler and of others, across buffer boundaries (the tiny-buffer variant: a handful per buffer), for lambdas,
// function pointers and arguments that are not trivially copyable (posted one by one).
TEST(Am, PostEachKeepsOrderAmongPostsAndAcrossBuffers) {
  start_order_check();
  const std::int64_t n = volume_scaled(20000);
  std::int64_t seq = 0;
  for (int round = 0; seq < n; ++round) {
    const std::int64_t k = 1 + round * 37 % 3001;  // 1 .. 3001 messages at a time
    auto seqs = std::views::iota(seq, seq + k);
    for (int d = 0; d < np(); ++d) {
      switch (round % 4) {
        case 0: shoal::post_each(d, [](std::int64_t s) { check_order(s); }, seqs); break;
        case 1: shoal::post_each(d, &check_order, seqs); break;
        case 2:
          shoal::post_each(d, [](std::string s) { check_order(std::stoll(s)); },
                           seqs | std::views::transform([](std::int64_t s) { return std::to_string(s); }));
          break;
        default:
          for (const std::int64_t s : seqs) shoal::post(d, [](std::int64_t v) { check_order(v); }, s);
      }
    }
    seq += k;
  }
  shoal::post_each(right(), &check_order, std::vector<std::int64_t>{});  // nothing to send
  shoal::am::barrier();
  expect_in_order(seq);
}

// Computing post_each's values must not write to the held buffer or run handlers: a usage_error naming what to do
// instead, after which every message given before the refusal is delivered and the buffer works as before.
TEST(Am, PostEachRefusesValuesThatSendToTheHeldRank) {
  reset();
  const int dest = right();
  const std::int64_t n = volume_scaled(5000);
  auto sending = std::views::iota(std::int64_t{0}, n) | std::views::transform([dest, n](std::int64_t i) {
                   if (i == n / 2) shoal::post(dest, [] { ++h::count; });
                   return i;
                 });
  try {
    shoal::post_each(dest, [](std::int64_t) { ++h::count; }, sending);
    ADD_FAILURE() << "a post to the held rank from inside post_each's values was accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("compute the values first"), std::string::npos) << e.what();
  }
  auto progressing = std::views::iota(std::int64_t{0}, n) | std::views::transform([n](std::int64_t i) {
                       if (i == n - 1) shoal::progress();
                       return i;
                     });
  EXPECT_THROW(shoal::post_each(dest, [](std::int64_t) { ++h::count; }, progressing), shoal::usage_error);
  // Values that post elsewhere are fine (no rank is its own right neighbour above one rank).
  if (np() > 1) {
    auto elsewhere = std::views::iota(std::int64_t{0}, n) | std::views::transform([](std::int64_t i) {
                       shoal::post(me(), [] { ++h::count; });
                       return i;
                     });
    shoal::post_each(dest, [](std::int64_t) { ++h::count; }, elsewhere);
  }
  shoal::post(dest, [] { ++h::count; });  // the buffer works as before
  shoal::am::barrier();
  // Delivered: n/2 + (n - 1) values before each refusal, then 2n for `elsewhere`, and the last post.
  const std::int64_t per_rank = n / 2 + (n - 1) + (np() > 1 ? 2 * n : 0) + 1;
  EXPECT_EQ(global_sum(h::count), per_rank * np());
}

// Handler classes with a prefetch hint: the AM layer calls prefetch with each message's plain arguments before the
// message runs (ahead of it). hint_record keeps what the hints and the runs saw; each test's handler derives from it.
std::vector<std::int64_t> hinted_next;  // per source: the messages hinted so far (they are hinted in order)
std::int64_t hints = 0;
std::int64_t run_before_hint = 0;

struct hint_record {
  static void prefetch(const std::int64_t& source, const std::int64_t& seq) {
    ++hints;
    auto& next = hinted_next[static_cast<std::size_t>(source)];
    if (seq == next) ++next;
  }
  /// Message `seq` of `source` runs.
  static void ran(std::int64_t source, std::int64_t seq) {
    if (seq >= hinted_next[static_cast<std::size_t>(source)]) ++run_before_hint;
    check_order(seq);
  }
  static void reset() {
    next_expected.assign(static_cast<std::size_t>(np()), 0);
    hinted_next.assign(static_cast<std::size_t>(np()), 0);
    order_violations = 0;
    hints = 0;
    run_before_hint = 0;
    shoal::barrier();  // every rank is ready for the messages before any is sent
  }
  /// After every rank sent messages 0..n-1 to every rank: each ran in order, each was hinted once, before it ran (no
  /// handler here waits, so no group restarts).
  static void expect_each_hinted_once_before_it_ran(std::int64_t n) {
    EXPECT_EQ(order_violations, 0);
    EXPECT_EQ(run_before_hint, 0);
    for (int s = 0; s < np(); ++s) {
      EXPECT_EQ(next_expected[static_cast<std::size_t>(s)], n);
      EXPECT_EQ(hinted_next[static_cast<std::size_t>(s)], n);
    }
    EXPECT_EQ(hints, n * np());
  }
};

struct hinted_handler : hint_record {
  void operator()(std::int64_t source, std::int64_t seq) const { ran(source, seq); }
};

TEST(Am, HandlersWithAPrefetchHintSeeEachMessageBeforeItRuns) {
  hint_record::reset();
  const std::int64_t n = volume_scaled(5000);
  for (std::int64_t i = 0; i < n; ++i) {
    for (int d = 0; d < np(); ++d) shoal::post(d, hinted_handler{}, std::int64_t{me()}, i);
  }
  shoal::am::barrier();
  hint_record::expect_each_hinted_once_before_it_ran(n);
}

// Messages whose arguments end in a vector are decoded one at a time; a hint taking the plain arguments before the
// vector sees each message of its group once, before it runs, the vectors' lengths (empty, a few, thousands) skipped
// to reach the next message.
std::int64_t wrong_values = 0;

std::size_t values_of(std::int64_t seq) { return seq % 500 == 7 ? 3000 : static_cast<std::size_t>(seq % 9); }

struct prefix_hinted_handler : hint_record {
  void operator()(std::int64_t source, std::int64_t seq, const std::vector<std::int64_t>& values) const {
    if (values != std::vector<std::int64_t>(values_of(seq), seq ^ source)) ++wrong_values;
    ran(source, seq);
  }
};

TEST(Am, PlainArgumentsBeforeAVectorAreHintedAheadOfEachMessage) {
  hint_record::reset();
  wrong_values = 0;
  const std::int64_t n = volume_scaled(3000);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::vector<std::int64_t> values(values_of(i), i ^ me());
    for (int d = 0; d < np(); ++d) shoal::post(d, prefix_hinted_handler{}, std::int64_t{me()}, i, values);
  }
  shoal::am::barrier();
  EXPECT_EQ(wrong_values, 0);
  hint_record::expect_each_hinted_once_before_it_ran(n);
}

// ---- errors -------------------------------------------------------------------------------------------------------

TEST(Am, RpcHandlerExceptionBecomesRemoteError) {
  reset();
  try {
    shoal::rpc(right(), [](int v) -> int { throw std::runtime_error("bad " + std::to_string(v)); }, 5).get();
    ADD_FAILURE() << "no exception";
  } catch (const shoal::remote_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("lambda"), std::string::npos) << what;
    EXPECT_NE(what.find("sent by rank " + std::to_string(me())), std::string::npos) << what;
    EXPECT_NE(what.find("on rank " + std::to_string(right())), std::string::npos) << what;
    EXPECT_NE(what.find("bad 5"), std::string::npos) << what;
  }
  shoal::am::barrier();
}

// Strings and vectors of plain elements are written straight into the buffer (their size is known first): one
// handler's messages of every length share its group (empty ones, a converted argument, a span for the vector, one
// larger than any buffer), and each arrives with exactly its bytes, in order.
TEST(Am, StringsAndVectorsArriveExactlyFromEveryArgumentForm) {
  reset();
  static std::int64_t next = 0, wrong = 0;
  next = 0;
  wrong = 0;
  shoal::am::barrier();
  auto check = [](std::int64_t i, std::string s, std::vector<std::uint32_t> v, std::uint16_t tail) {
    if (i != next++) ++wrong;
    const auto len = static_cast<std::size_t>(i % 5 == 4 ? 70000 : i % 13);
    if (s != std::string(len % 7, static_cast<char>('a' + i % 26))) ++wrong;
    if (v.size() != len) ++wrong;
    for (std::size_t j = 0; j < v.size(); ++j) {
      wrong += v[j] != static_cast<std::uint32_t>(i * 3 + static_cast<std::int64_t>(j));
    }
    if (tail != static_cast<std::uint16_t>(i)) ++wrong;
  };
  constexpr std::int64_t n = 400;
  std::vector<std::uint32_t> values;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto len = static_cast<std::size_t>(i % 5 == 4 ? 70000 : i % 13);  // every 5th larger than a 64 KiB buffer
    values.resize(len);
    for (std::size_t j = 0; j < len; ++j) values[j] = static_cast<std::uint32_t>(i * 3 + static_cast<std::int64_t>(j));
    const std::string text(len % 7, static_cast<char>('a' + i % 26));
    switch (i % 3) {
      case 0: shoal::post(right(), check, i, text, values, static_cast<std::uint16_t>(i)); break;
      case 1:  // a const char* made into the string; a span for the vector
        shoal::post(right(), check, i, text.c_str(), std::span<const std::uint32_t>(values),
                    static_cast<std::uint16_t>(i));
        break;
      default:  // temporaries
        shoal::post(right(), check, i, std::string(text), std::vector<std::uint32_t>(values),
                    static_cast<std::uint16_t>(i));
    }
  }
  shoal::am::barrier();
  EXPECT_EQ(next, n);
  EXPECT_EQ(wrong, 0);
}

// The replies of one handler travel in one group per buffer: values (fixed size, counted by the group's size) and
// failures (serialized text, counted one by one) interleave in it, in both orders; every future gets its own
// answer and the barrier's message counts still agree.
TEST(Am, RepliesOfFixedAndVariableSizeShareAGroup) {
  reset();
  constexpr int n = 600;
  auto f = [](int v) -> std::uint64_t {
    if (v % 3 == 1 || v % 7 == 0) throw std::runtime_error("odd one " + std::to_string(v));
    return std::uint64_t{3} * static_cast<std::uint64_t>(v);
  };
  std::vector<shoal::future<std::uint64_t>> answers;
  for (int v = 0; v < n; ++v) answers.push_back(shoal::rpc(right(), f, v));
  int failures = 0;
  for (int v = 0; v < n; ++v) {
    const bool fails = v % 3 == 1 || v % 7 == 0;
    try {
      const std::uint64_t got = answers[static_cast<std::size_t>(v)].get();
      EXPECT_FALSE(fails) << v;
      EXPECT_EQ(got, std::uint64_t{3} * static_cast<std::uint64_t>(v));
    } catch (const shoal::remote_error& e) {
      ++failures;
      EXPECT_TRUE(fails) << v;
      EXPECT_NE(std::string(e.what()).find("odd one " + std::to_string(v)), std::string::npos) << e.what();
    }
  }
  int expected_failures = 0;
  for (int v = 0; v < n; ++v) expected_failures += v % 3 == 1 || v % 7 == 0;
  EXPECT_EQ(failures, expected_failures);
  shoal::am::barrier();
}

/// Runs am::barrier(), which must throw the remote_error of a reported handler failure: its text ("" if none came).
std::string barrier_failure() {
  try {
    shoal::am::barrier();
  } catch (const shoal::remote_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

TEST(Am, RpcFailureWithoutAFutureIsReportedAtBarrier) {
  reset();
  // The future is dropped at once: the reply finds nobody holding the state (its count is the pending slot's alone)
  // and reports the failure like a fire-and-forget one.
  (void)shoal::rpc(right(), [](int v) -> int { throw std::runtime_error("unwatched " + std::to_string(v)); }, 7);
  auto kept = shoal::rpc(right(), [](int v) { return v + 1; }, 8);  // held: its value is still delivered
  const std::string what = barrier_failure();
  EXPECT_NE(what.find("unwatched 7"), std::string::npos) << what;
  EXPECT_EQ(what.find("more handler failures"), std::string::npos) << what;
  EXPECT_EQ(kept.get(), 9);
  shoal::am::barrier();  // reported once
}

TEST(Am, PostHandlerExceptionReportedToSenderAtBarrier) {
  reset();
  shoal::post(right(), &h::throwing_handler, 42);
  shoal::post(right(), &h::throwing_handler, 43);
  const std::string what = barrier_failure();
  EXPECT_NE(what.find("am_test_handlers::throwing_handler"), std::string::npos) << what;
  EXPECT_NE(what.find("sent by rank " + std::to_string(me())), std::string::npos) << what;
  EXPECT_NE(what.find("on rank " + std::to_string(right())), std::string::npos) << what;
  EXPECT_NE(what.find("value 42 rejected"), std::string::npos) << what;
  EXPECT_NE(what.find("1 more"), std::string::npos) << what;
  shoal::am::barrier();  // reported once
}

// Byte messages (am::detail::post_bytes, the ordered map's transport): the handler sees the tag and the bytes as
// they arrived, in order among the sender's posts, from empty to larger than any buffer; a handler that throws is
// reported to the sender like any post.
void check_bytes(std::uint32_t tag, std::span<const std::byte> bytes) {
  const auto seq = static_cast<std::int64_t>(tag);
  EXPECT_EQ(bytes.size(), static_cast<std::size_t>(seq % 13 == 5 ? 70000 : seq % 9 * 100));
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != static_cast<std::byte>(seq + static_cast<std::int64_t>(i))) {
      ADD_FAILURE() << "byte " << i << " of message " << seq;
      break;
    }
  }
  check_order(seq);
}

void throw_on_bytes(std::uint32_t tag, std::span<const std::byte> bytes) {
  throw std::runtime_error("bytes " + std::to_string(tag) + "/" + std::to_string(bytes.size()) + " rejected");
}

// A stream to one rank (docs/am.md, "Buffer sizes"): its first buffer holds one eager message (4,000 bytes), and once
// that one fills, every next buffer is full size — not a ramp of doublings (4,000, 8,000, 16,000, ...), which sent
// this stream in 8 MPI messages where the bound below is 6.
TEST(Am, AStreamTravelsInFullBuffersAfterItsFirst) {
  const std::size_t buffer = shoal::am::buffer_size();
  if (buffer < 16 * 1024) {
    GTEST_SKIP() << "needs buffers that hold many 1,000-byte messages (SHOAL_AM_BUFFER is " << buffer << ")";
  }
  reset();
  using payload = std::array<std::byte, 1000>;
  const std::size_t n = 300;
  const shoal::am::statistics before = shoal::am::stats();
  for (std::size_t i = 0; i < n; ++i) shoal::post(right(), [](payload) { ++h::count; }, payload{});
  shoal::am::flush();
  const shoal::am::statistics after = shoal::am::stats();
  // The first buffer holds 3 messages; each full one at least (buffer - 64) / 1,000 (a group header per buffer).
  const std::size_t per_full = (buffer - 64) / sizeof(payload);
  const std::size_t most = right() == me() ? 0 : 1 + (n - 3 + per_full - 1) / per_full;
  EXPECT_LE(after.buffers_sent - before.buffers_sent, most);
  shoal::am::barrier();
  EXPECT_EQ(global_sum(h::count), static_cast<std::int64_t>(n) * np());
}

TEST(Am, ByteMessagesArriveWholeAndInOrder) {
  start_order_check();
  const std::int64_t n = volume_scaled(600);
  std::vector<std::byte> bytes;
  for (std::int64_t i = 0; i < n; ++i) {
    bytes.resize(static_cast<std::size_t>(i % 13 == 5 ? 70000 : i % 9 * 100));
    for (std::size_t j = 0; j < bytes.size(); ++j) bytes[j] = static_cast<std::byte>(i + static_cast<std::int64_t>(j));
    for (int d = 0; d < np(); ++d) {
      if (i % 4 == 1) {
        shoal::post(d, &check_order, i);  // the same order check through an ordinary post
      } else {
        shoal::am::detail::post_bytes(d, &check_bytes, static_cast<std::uint32_t>(i), bytes);
      }
    }
  }
  shoal::am::barrier();
  expect_in_order(n);

  reset();
  shoal::am::detail::post_bytes(right(), &throw_on_bytes, 7, bytes);
  const std::string what = barrier_failure();
  EXPECT_NE(what.find("bytes 7/" + std::to_string(bytes.size()) + " rejected"), std::string::npos) << what;
  EXPECT_NE(what.find("on rank " + std::to_string(right())), std::string::npos) << what;
  EXPECT_THROW(shoal::am::detail::post_bytes(np(), &check_bytes, 0, bytes), shoal::usage_error);
  shoal::am::barrier();
}

TEST(Am, Misuse) {
  reset();
  EXPECT_THROW(shoal::post(np(), [] {}), shoal::usage_error);
  EXPECT_THROW(shoal::post(-1, [] {}), shoal::usage_error);
  EXPECT_THROW(shoal::rpc(np(), [] { return 1; }), shoal::usage_error);
  EXPECT_THROW(shoal::am::current_source(), shoal::usage_error);
  EXPECT_FALSE(shoal::am::in_handler());
  EXPECT_TRUE(shoal::rpc(right(), [] { return shoal::am::in_handler(); }).get());
  // The quiescence barrier is collective: calling it from a handler fails that handler.
  EXPECT_THROW(shoal::rpc(right(), [] { shoal::am::barrier(); }).get(), shoal::remote_error);
  shoal::am::barrier();
}

}  // namespace
