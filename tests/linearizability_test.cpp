// Unit tests of the history checker (tests/support/linearizability.hpp) on hand-made histories: each model accepts
// linearizable histories and rejects known non-linearizable ones (a checker that never rejects proves nothing).
// No MPI communication: registered at one rank.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "support/linearizability.hpp"
#include "support/rank_error.hpp"

namespace {

using namespace shoal::testing::history;

// A history built one operation at a time; each client's operations get increasing seq numbers.
class builder {
 public:
  builder& op(int client, std::uint64_t call, std::uint64_t ret, op_kind kind, std::int64_t key, std::int64_t arg,
              bool ok, std::int64_t out = 0, std::int64_t arg2 = 0, std::int64_t out2 = 0) {
    operation o;
    o.client = client;
    o.call_ns = call;
    o.return_ns = ret;
    o.kind = kind;
    o.key = key;
    o.arg = arg;
    o.arg2 = arg2;
    o.ok = ok ? 1 : 0;
    o.out = out;
    o.out2 = out2;
    o.done = 1;
    std::uint32_t seq = 0;
    for (const auto& p : ops_) seq += p.client == client;
    o.seq = seq;
    ops_.push_back(o);
    return *this;
  }
  const std::vector<operation>& ops() const { return ops_; }
  void pop() { ops_.pop_back(); }
  void push(const operation& o) { ops_.push_back(o); }

 private:
  std::vector<operation> ops_;
};

template <class Model>
verdict linearizable(const builder& b, const Model& m, std::uint64_t slack = 0) {
  check_options o;
  o.cross_client_slack_ns = slack;
  return check_linearizable(b.ops(), m, o).outcome;
}
template <class Model>
verdict sequentially_consistent(const builder& b, const Model& m) {
  return check_sequentially_consistent(b.ops(), m).outcome;
}
template <class Model>
verdict in_issue_order(const builder& b, const Model& m) {
  return check_linearizable_in_issue_order(b.ops(), m).outcome;
}

constexpr bool yes = true;
const register_model reg;
const map_model map;
const fifo_model fifo;
const ordered_map_model omap{.group_width = 100, .sentinel_value = -1};

// ---- registers and counters ------------------------------------------------------------------------------------

TEST(RegisterModel, AcceptsAReadOfEitherValueDuringAWrite) {
  for (std::int64_t seen : {0, 1}) {
    builder b;
    b.op(0, 0, 100, op_kind::store, 0, 1, yes).op(1, 10, 20, op_kind::load, 0, 0, yes, seen);
    EXPECT_EQ(linearizable(b, reg), verdict::ok) << "read " << seen;
  }
}

TEST(RegisterModel, RejectsAStaleReadAfterACompletedWrite) {
  builder b;
  b.op(0, 0, 10, op_kind::store, 0, 1, yes).op(1, 20, 30, op_kind::load, 0, 0, yes, 0);
  EXPECT_EQ(linearizable(b, reg), verdict::violation);
}

TEST(RegisterModel, RejectsAReadThatGoesBackInTime) {
  // Two reads during one write: once the first saw the new value, a later read cannot see the old one.
  builder b;
  b.op(0, 0, 100, op_kind::store, 0, 1, yes)
      .op(1, 10, 20, op_kind::load, 0, 0, yes, 1)
      .op(2, 30, 40, op_kind::load, 0, 0, yes, 0);
  EXPECT_EQ(linearizable(b, reg), verdict::violation);
}

TEST(RegisterModel, RejectsAValueNobodyWrote) {
  builder b;
  b.op(0, 0, 10, op_kind::store, 0, 1, yes).op(1, 0, 30, op_kind::load, 0, 0, yes, 7);
  EXPECT_EQ(linearizable(b, reg), verdict::violation);
}

TEST(RegisterModel, AcceptsConcurrentFetchAddsInEitherOrder) {
  builder b;
  b.op(0, 0, 100, op_kind::fetch_add, 0, 1, yes, 2)
      .op(1, 0, 100, op_kind::fetch_add, 0, 2, yes, 0)
      .op(2, 200, 210, op_kind::load, 0, 0, yes, 3);
  EXPECT_EQ(linearizable(b, reg), verdict::ok);
}

TEST(RegisterModel, RejectsALostUpdate) {
  // Two concurrent increments both saw 0, and a later read sees one increment: an update was lost.
  builder b;
  b.op(0, 0, 100, op_kind::fetch_add, 0, 1, yes, 0)
      .op(1, 0, 100, op_kind::fetch_add, 0, 1, yes, 0)
      .op(2, 200, 210, op_kind::load, 0, 0, yes, 1);
  EXPECT_EQ(linearizable(b, reg), verdict::violation);
}

TEST(RegisterModel, RejectsTwoWinnersOfOneCompareExchange) {
  builder b;
  b.op(0, 0, 100, op_kind::compare_exchange, 0, 0, yes, 0, 1)
      .op(1, 0, 100, op_kind::compare_exchange, 0, 0, yes, 0, 2);
  EXPECT_EQ(linearizable(b, reg), verdict::violation);
  builder fine;  // the loser sees the winner's value
  fine.op(0, 0, 100, op_kind::compare_exchange, 0, 0, yes, 0, 1)
      .op(1, 0, 100, op_kind::compare_exchange, 0, 0, yes, 1, 2);
  EXPECT_EQ(linearizable(fine, reg), verdict::ok);
}

TEST(RegisterModel, XorAndExchangeFollowTheirSequentialMeaning) {
  builder b;
  b.op(0, 0, 10, op_kind::fetch_xor, 0, 6, yes, 0)
      .op(0, 20, 30, op_kind::exchange, 0, 9, yes, 6)
      .op(1, 40, 50, op_kind::load, 0, 0, yes, 9);
  EXPECT_EQ(linearizable(b, reg), verdict::ok);
  builder wrong;
  wrong.op(0, 0, 10, op_kind::fetch_xor, 0, 6, yes, 0).op(0, 20, 30, op_kind::exchange, 0, 9, yes, 0);
  EXPECT_EQ(linearizable(wrong, reg), verdict::violation);
}

TEST(RegisterModel, ClockSlackWidensOnlyOperationsOfDifferentClients) {
  // The load is stamped 10 ns after the store returned, on another client: within a 15 ns clock error they may
  // overlap, so the old value is possible. On the store's own client the stamps compare exactly.
  builder other;
  other.op(0, 0, 10, op_kind::store, 0, 1, yes).op(1, 20, 30, op_kind::load, 0, 0, yes, 0);
  EXPECT_EQ(linearizable(other, reg, 15), verdict::ok);
  EXPECT_EQ(linearizable(other, reg, 5), verdict::violation);
  builder same;
  same.op(0, 0, 10, op_kind::store, 0, 1, yes).op(0, 20, 30, op_kind::load, 0, 0, yes, 0);
  EXPECT_EQ(linearizable(same, reg, 15), verdict::violation);
}

TEST(RegisterModel, WordsArePartitions) {
  // A stale read on word 1 is a violation even though word 0's history alone is fine.
  builder b;
  b.op(0, 0, 10, op_kind::store, 0, 5, yes)
      .op(1, 20, 30, op_kind::load, 0, 0, yes, 5)
      .op(0, 40, 50, op_kind::store, 1, 1, yes)
      .op(1, 60, 70, op_kind::load, 1, 0, yes, 0);
  const auto r = check_linearizable(b.ops(), reg);
  EXPECT_EQ(r.partitions, 2u);
  EXPECT_EQ(r.outcome, verdict::violation);
  EXPECT_NE(r.explanation.find("partition 1"), std::string::npos) << r.explanation;
}

// ---- maps ------------------------------------------------------------------------------------------------------

TEST(MapModel, AcceptsAMissDuringAnInsert) {
  builder b;
  b.op(0, 0, 100, op_kind::insert, 7, 70, yes).op(1, 10, 20, op_kind::find, 7, 0, false);
  EXPECT_EQ(linearizable(b, map), verdict::ok);
}

TEST(MapModel, RejectsAFindThatMissesACompletedInsert) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes).op(1, 20, 30, op_kind::find, 7, 0, false);
  EXPECT_EQ(linearizable(b, map), verdict::violation);
}

TEST(MapModel, RejectsTwoSuccessfulInsertsOfOneKey) {
  builder b;
  b.op(0, 0, 100, op_kind::insert, 7, 70, yes).op(1, 0, 100, op_kind::insert, 7, 71, yes);
  EXPECT_EQ(linearizable(b, map), verdict::violation);
}

TEST(MapModel, RejectsAFindOfAValueThatWasNotStored) {
  // insert does not overwrite: after insert(7, 70) and a refused insert(7, 71), find sees 70.
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes)
      .op(1, 20, 30, op_kind::insert, 7, 71, false)
      .op(1, 40, 50, op_kind::find, 7, 0, yes, 71);
  EXPECT_EQ(linearizable(b, map), verdict::violation);
  builder assigned;  // insert_or_assign does
  assigned.op(0, 0, 10, op_kind::insert, 7, 70, yes)
      .op(1, 20, 30, op_kind::insert_or_assign, 7, 71, false)
      .op(1, 40, 50, op_kind::find, 7, 0, yes, 71);
  EXPECT_EQ(linearizable(assigned, map), verdict::ok);
}

TEST(MapModel, RejectsAFindAfterACompletedErase) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes)
      .op(0, 20, 30, op_kind::erase, 7, 0, yes)
      .op(1, 40, 50, op_kind::find, 7, 0, yes, 70);
  EXPECT_EQ(linearizable(b, map), verdict::violation);
}

TEST(MapModel, ErasedValueMustBeTheStoredOne) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes).op(1, 20, 30, op_kind::erase_value, 7, 0, yes, 70);
  EXPECT_EQ(linearizable(b, map), verdict::ok);
  builder wrong;
  wrong.op(0, 0, 10, op_kind::insert, 7, 70, yes).op(1, 20, 30, op_kind::erase_value, 7, 0, yes, 71);
  EXPECT_EQ(linearizable(wrong, map), verdict::violation);
}

// ---- FIFO queues -----------------------------------------------------------------------------------------------

TEST(FifoModel, AcceptsConcurrentPushesPoppedInEitherOrder) {
  for (std::int64_t first : {1, 2}) {
    builder b;
    b.op(0, 0, 100, op_kind::push, 0, 1, yes)
        .op(1, 0, 100, op_kind::push, 0, 2, yes)
        .op(2, 200, 210, op_kind::pop, 0, 0, yes, first)
        .op(2, 220, 230, op_kind::pop, 0, 0, yes, 3 - first)
        .op(2, 240, 250, op_kind::pop, 0, 0, false);
    EXPECT_EQ(linearizable(b, fifo), verdict::ok) << "first " << first;
  }
}

TEST(FifoModel, RejectsAFifoViolation) {
  builder b;
  b.op(0, 0, 10, op_kind::push, 0, 1, yes)
      .op(1, 20, 30, op_kind::push, 0, 2, yes)
      .op(2, 40, 50, op_kind::pop, 0, 0, yes, 2);
  EXPECT_EQ(linearizable(b, fifo), verdict::violation);
}

TEST(FifoModel, RejectsAnEmptyPopWhileAValueIsQueued) {
  builder b;
  b.op(0, 0, 10, op_kind::push, 0, 1, yes).op(1, 20, 30, op_kind::pop, 0, 0, false);
  EXPECT_EQ(linearizable(b, fifo), verdict::violation);
}

TEST(FifoModel, RejectsAValuePoppedTwice) {
  builder b;
  b.op(0, 0, 10, op_kind::push, 0, 1, yes)
      .op(1, 20, 100, op_kind::pop, 0, 0, yes, 1)
      .op(2, 20, 100, op_kind::pop, 0, 0, yes, 1);
  EXPECT_EQ(linearizable(b, fifo), verdict::violation);
}

TEST(FifoModel, RejectsAPopBeforeItsPush) {
  builder b;
  b.op(1, 0, 10, op_kind::pop, 0, 0, yes, 1).op(0, 20, 30, op_kind::push, 0, 1, yes);
  EXPECT_EQ(linearizable(b, fifo), verdict::violation);
}

// ---- ordered maps ----------------------------------------------------------------------------------------------

TEST(OrderedMapModel, LowerBoundDuringAnInsertSeesEitherKey) {
  // Group 0 holds the sentinel 99 (value -1).
  for (bool sees_insert : {true, false}) {
    builder b;
    b.op(0, 0, 100, op_kind::insert, 5, 50, yes)
        .op(1, 10, 20, op_kind::lower_bound, 3, 0, yes, sees_insert ? 5 : 99, 0, sees_insert ? 50 : -1);
    EXPECT_EQ(linearizable(b, omap), verdict::ok);
  }
}

TEST(OrderedMapModel, RejectsALowerBoundThatSkipsACompletedInsert) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes).op(1, 20, 30, op_kind::lower_bound, 3, 0, yes, 99, 0, -1);
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
}

TEST(OrderedMapModel, RejectsALowerBoundOfAnErasedKey) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes)
      .op(0, 20, 30, op_kind::erase, 5, 0, yes)
      .op(1, 40, 50, op_kind::lower_bound, 3, 0, yes, 5, 0, 50);
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
}

// A range's result as the recorder stores it: (count, digest) of the key-values in key order.
struct range_result {
  std::int64_t count, digest;
};
range_result seen(std::vector<std::pair<std::int64_t, std::int64_t>> kv) {
  return {static_cast<std::int64_t>(kv.size()), range_digest(kv)};
}
builder& range(builder& b, int client, std::uint64_t call, std::uint64_t ret, std::int64_t lo, std::int64_t hi,
               range_result r) {
  return b.op(client, call, ret, op_kind::range, lo, hi, yes, r.count, 0, r.digest);
}

TEST(OrderedMapModel, RangeDuringAnInsertSeesEitherState) {
  for (bool sees_insert : {true, false}) {
    builder b;
    b.op(0, 0, 100, op_kind::insert, 5, 50, yes);
    range(b, 1, 10, 20, 0, 99, sees_insert ? seen({{5, 50}, {99, -1}}) : seen({{99, -1}}));
    EXPECT_EQ(linearizable(b, omap), verdict::ok);
  }
}

TEST(OrderedMapModel, RejectsARangeThatMissesACompletedInsert) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes);
  range(b, 1, 20, 30, 0, 10, seen({}));
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
}

TEST(OrderedMapModel, RejectsARangeWithAWrongValueOrAKeyOutsideIt) {
  for (const auto& wrong : {seen({{5, 51}}), seen({{4, 50}}), seen({{5, 50}, {11, 1}})}) {
    builder b;
    b.op(0, 0, 10, op_kind::insert, 5, 50, yes);
    range(b, 1, 20, 30, 0, 10, wrong);
    EXPECT_EQ(linearizable(b, omap), verdict::violation);
  }
}

TEST(OrderedMapModel, RejectsARangeThatSeesALaterInsertButNotAnEarlierOne) {
  // Client 0 inserts 5, then 6; a range that shows 6 without 5 fits no order, not even per client (issue order).
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes).op(0, 20, 30, op_kind::insert, 6, 60, yes);
  range(b, 1, 0, 40, 0, 10, seen({{6, 60}}));
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::violation);
}

TEST(OrderedMapModel, RejectsTwoRangesThatDisagreeOnTheOrderOfTwoInserts) {
  // Two clients insert 5 and 6 at once; one observer sees only 5, another only 6 (then each sees both): no single
  // order of the two inserts explains both observers, under linearizability or sequential consistency.
  builder b;
  b.op(0, 0, 100, op_kind::insert, 5, 50, yes).op(1, 0, 100, op_kind::insert, 6, 60, yes);
  range(b, 2, 10, 20, 0, 10, seen({{5, 50}}));
  range(b, 2, 30, 40, 0, 10, seen({{5, 50}, {6, 60}}));
  range(b, 3, 10, 20, 0, 10, seen({{6, 60}}));
  range(b, 3, 30, 40, 0, 10, seen({{5, 50}, {6, 60}}));
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::violation);
}

// ---- sequential consistency ------------------------------------------------------------------------------------

TEST(SequentialConsistency, AcceptsAStaleReadThatLinearizabilityRejects) {
  // Client 1's find may be ordered before client 0's insert: no real-time order binds them.
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes).op(1, 20, 30, op_kind::find, 7, 0, false);
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::ok);
  EXPECT_EQ(in_issue_order(b, omap), verdict::violation) << "issue order keeps real time, as linearizability";
}

TEST(SequentialConsistency, RejectsAClientThatMissesItsOwnInsert) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes).op(0, 5, 30, op_kind::find, 7, 0, false);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::violation);
}

TEST(SequentialConsistency, RejectsAKeyThatComesBack) {
  // Client 1 sees the key, then not, then again, with a single insert and a single erase by client 0.
  builder b;
  b.op(0, 0, 10, op_kind::insert, 7, 70, yes)
      .op(0, 20, 30, op_kind::erase, 7, 0, yes)
      .op(1, 0, 5, op_kind::find, 7, 0, yes, 70)
      .op(1, 6, 8, op_kind::find, 7, 0, false)
      .op(1, 9, 12, op_kind::find, 7, 0, yes, 70);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::violation);
}

TEST(SequentialConsistency, AcceptsAStaleRangeAndLowerBoundThatLinearizabilityRejects) {
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes);
  range(b, 1, 20, 30, 0, 10, seen({}));
  b.op(1, 40, 50, op_kind::lower_bound, 0, 0, yes, 99, 0, -1);
  EXPECT_EQ(linearizable(b, omap), verdict::violation);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::ok);
}

TEST(SequentialConsistency, RejectsALowerBoundOrRangeThatMissesTheClientsOwnInsert) {
  builder lb;
  lb.op(0, 0, 10, op_kind::insert, 5, 50, yes).op(0, 20, 30, op_kind::lower_bound, 0, 0, yes, 99, 0, -1);
  EXPECT_EQ(sequentially_consistent(lb, omap), verdict::violation);
  builder r;
  r.op(0, 0, 10, op_kind::insert, 5, 50, yes);
  range(r, 0, 20, 30, 0, 10, seen({}));
  EXPECT_EQ(sequentially_consistent(r, omap), verdict::violation);
}

TEST(SequentialConsistency, RejectsAClientWhoseOwnEraseIsUndone) {
  // The client erased 5 and then sees it again, with nobody re-inserting it.
  builder b;
  b.op(0, 0, 10, op_kind::insert, 5, 50, yes).op(0, 20, 30, op_kind::erase, 5, 0, yes);
  b.op(0, 40, 50, op_kind::find, 5, 0, yes, 50);
  EXPECT_EQ(sequentially_consistent(b, omap), verdict::violation);
}

// ---- linearizable in issue order, key by key (ordered_map under sequential consistency) ---------------------------

const ordered_map_key_model omap_keys{{}, 100, -1};

// A range seen key by key: one find per key of [lo, hi], sharing the range's stamps and sequence number.
builder& range_per_key(builder& b, int client, std::uint64_t call, std::uint64_t ret, std::int64_t lo, std::int64_t hi,
                       std::vector<std::pair<std::int64_t, std::int64_t>> kv) {
  b.op(client, call, ret, op_kind::range, lo, hi, yes);
  operation read = b.ops().back();
  b.pop();
  for (const auto& o : key_observations(read, lo, hi, kv)) b.push(o);
  return b;
}

TEST(IssueOrder, KeyObservationsCoverEveryKeyOfTheRead) {
  operation read;
  read.client = 3;
  read.seq = 7;
  read.call_ns = 10;
  read.return_ns = 20;
  const std::vector<std::pair<std::int64_t, std::int64_t>> kv{{4, 40}, {6, 60}};
  const auto parts = key_observations(read, 3, 6, kv);
  ASSERT_EQ(parts.size(), 4u);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(parts[i].key, 3 + static_cast<std::int64_t>(i));
    EXPECT_EQ(parts[i].kind, op_kind::find);
    EXPECT_EQ(parts[i].seq, 7u);
    EXPECT_EQ(parts[i].client, 3);
    EXPECT_EQ(parts[i].call_ns, 10u);
    EXPECT_EQ(parts[i].return_ns, 20u);
  }
  EXPECT_EQ(parts[0].ok, 0);
  EXPECT_EQ(parts[1].ok, 1);
  EXPECT_EQ(parts[1].out, 40);
  EXPECT_EQ(parts[2].ok, 0);
  EXPECT_EQ(parts[3].ok, 1);
  EXPECT_EQ(parts[3].out, 60);
  // A key the read should not have returned (outside [lo, hi]): an operation the checker rejects as malformed.
  const std::vector<std::pair<std::int64_t, std::int64_t>> stray{{4, 40}, {9, 90}};
  const auto wrong = key_observations(read, 3, 6, stray);
  ASSERT_EQ(wrong.size(), 5u);
  EXPECT_EQ(wrong[4].key, 9);
  EXPECT_EQ(wrong[4].done, 0);
  EXPECT_NE(check_linearizable_in_issue_order(wrong, map).outcome, verdict::ok);
}

TEST(IssueOrder, RejectsAClientsConcurrentOperationsTakingEffectOutOfIssueOrder) {
  // Client 0 issues insert(7), then find(7) while the insert is still running (two futures): linearizability lets
  // the find go first, issue order does not.
  builder b;
  b.op(0, 0, 100, op_kind::insert, 7, 70, yes).op(0, 10, 50, op_kind::find, 7, 0, false);
  EXPECT_EQ(linearizable(b, map), verdict::ok);
  EXPECT_EQ(in_issue_order(b, map), verdict::violation);
}

TEST(IssueOrder, AcceptsReadsOfTwoKeysAtDifferentMomentsThatOneOrderOfTheGroupRejects) {
  // Client 0 inserted 2, then issues insert(5) and erase(2) (both running at once); client 1 inserts 2 again (so
  // after the erase), then its range sees its 2 and not 5: it read the node of 5 before client 0's insert arrived
  // there. Key by key each read fits; as one read of the group no order that keeps both issue orders explains it
  // (the range comes after client 1's insert, after the erase, after the insert of 5).
  const std::vector<std::pair<std::int64_t, std::int64_t>> seen_kv{{2, 21}, {99, -1}};
  auto history = [&](bool per_key, std::uint64_t range_call) {
    builder b;
    b.op(0, 0, 10, op_kind::insert, 2, 20, yes).op(0, 20, 100, op_kind::insert, 5, 50, yes);
    b.op(0, 30, 60, op_kind::erase, 2, 0, yes);
    b.op(1, 62, 68, op_kind::insert, 2, 21, yes);
    if (per_key) return range_per_key(b, 1, range_call, range_call + 10, 0, 99, seen_kv);
    return range(b, 1, range_call, range_call + 10, 0, 99, seen(seen_kv));
  };
  EXPECT_EQ(sequentially_consistent(history(false, 70), omap), verdict::violation);
  EXPECT_EQ(in_issue_order(history(true, 70), omap_keys), verdict::ok);
  EXPECT_EQ(in_issue_order(history(true, 110), omap_keys), verdict::violation) << "5 was there from 100 on";
}

TEST(IssueOrder, RejectsALowerBoundThatSeesItsClientsLaterInsert) {
  // lower_bound(3) -> 4, where client 0 inserted 4 only after issuing the lower_bound (both running at once).
  builder b;
  b.op(0, 0, 100, op_kind::lower_bound, 3, 0, yes);
  operation read = b.ops().back();
  b.pop();
  const std::vector<std::pair<std::int64_t, std::int64_t>> seen_kv{{4, 40}};
  for (const auto& o : key_observations(read, 3, 4, seen_kv)) b.push(o);
  b.op(0, 10, 50, op_kind::insert, 4, 40, yes);
  EXPECT_EQ(in_issue_order(b, omap_keys), verdict::violation);
}

// ---- relaxed queue rank errors (rank_error.hpp) ------------------------------------------------------------

TEST(RankError, IsZeroForAFifoHistory) {
  builder b;
  b.op(0, 0, 10, op_kind::push, 0, 1, yes).op(1, 20, 30, op_kind::push, 0, 2, yes);
  b.op(0, 40, 50, op_kind::pop, 0, 0, yes, 1).op(1, 60, 70, op_kind::pop, 0, 0, yes, 2);
  const auto r = measure_rank_errors(b.ops(), 0);
  EXPECT_TRUE(r.malformed.empty()) << r.malformed;
  EXPECT_EQ(r.surely, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(r.possibly, (std::vector<std::size_t>{0, 0}));
}

TEST(RankError, CountsASurelyOlderElementThatAPopSkipped) {
  // 1 and 2 were queued one after the other, long before the pop that returned 2; 1 was popped only later.
  builder b;
  b.op(0, 0, 10, op_kind::push, 0, 1, yes).op(0, 20, 30, op_kind::push, 0, 2, yes).op(0, 35, 38, op_kind::push, 0, 3, yes);
  b.op(1, 40, 50, op_kind::pop, 0, 0, yes, 3).op(1, 60, 70, op_kind::pop, 0, 0, yes, 1);
  const auto r = measure_rank_errors(b.ops(), 0);
  EXPECT_EQ(r.surely, (std::vector<std::size_t>{2, 0}));
  EXPECT_EQ(measure_rank_errors(b.ops(), 5).surely, (std::vector<std::size_t>{1, 0})) << "slack: 2 is not surely older than 3";
}

TEST(RankError, ConcurrentPushesAreNeitherSurelyOlderNorIgnored) {
  builder b;
  b.op(0, 0, 100, op_kind::push, 0, 1, yes).op(1, 0, 100, op_kind::push, 0, 2, yes);
  b.op(2, 200, 210, op_kind::pop, 0, 0, yes, 2).op(2, 220, 230, op_kind::pop, 0, 0, yes, 1);
  const auto r = measure_rank_errors(b.ops(), 0);
  EXPECT_EQ(r.surely, (std::vector<std::size_t>{0, 0}));
  EXPECT_EQ(r.possibly, (std::vector<std::size_t>{1, 0}));
}

TEST(RankError, RejectsAValuePoppedTwiceOrNeverPushed) {
  builder twice;
  twice.op(0, 0, 10, op_kind::push, 0, 1, yes).op(1, 20, 30, op_kind::pop, 0, 0, yes, 1).op(2, 20, 30, op_kind::pop, 0, 0, yes, 1);
  EXPECT_NE(measure_rank_errors(twice.ops(), 0).malformed.find("popped twice"), std::string::npos);
  builder ghost;
  ghost.op(0, 0, 10, op_kind::push, 0, 1, yes).op(1, 20, 30, op_kind::pop, 0, 0, yes, 7);
  EXPECT_NE(measure_rank_errors(ghost.ops(), 0).malformed.find("never pushed"), std::string::npos);
}

// ---- the search itself -----------------------------------------------------------------------------------------

TEST(Search, DecidesManyConcurrentOperationsQuickly) {
  // 12 clients increment at once; their old values are a permutation of 0..11: 12! orders, one fits.
  builder b;
  const std::int64_t olds[] = {5, 0, 11, 3, 8, 1, 10, 2, 7, 4, 9, 6};
  for (int c = 0; c < 12; ++c) b.op(c, 0, 1000, op_kind::fetch_add, 0, 1, yes, olds[c]);
  b.op(0, 2000, 2010, op_kind::load, 0, 0, yes, 12);
  const auto r = check_linearizable(b.ops(), reg);
  EXPECT_EQ(r.outcome, verdict::ok);
  EXPECT_LT(r.steps, 10'000u);
}

TEST(Search, ReportsUndecidedAtTheStepLimit) {
  builder b;
  for (int c = 0; c < 12; ++c) b.op(c, 0, 1000, op_kind::store, 0, c, yes);
  b.op(0, 2000, 2010, op_kind::load, 0, 0, yes, 99);  // impossible: the full search is 12! orders
  check_options o;
  o.max_steps = 1000;
  const auto r = check_linearizable(b.ops(), reg, o);
  EXPECT_EQ(r.outcome, verdict::undecided);
  EXPECT_NE(r.explanation.find("step limit"), std::string::npos) << r.explanation;
}

TEST(Search, AnIncompleteOperationIsUndecided) {
  builder b;
  b.op(0, 0, 10, op_kind::store, 0, 1, yes);
  auto ops = b.ops();
  ops[0].done = 0;
  EXPECT_EQ(check_linearizable(ops, reg).outcome, verdict::undecided);
}

}  // namespace
