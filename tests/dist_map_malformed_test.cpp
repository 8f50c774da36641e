// dist_map's handlers given malformed messages: a request of the wrong size, a reply or an error naming a request
// slot that no request waits in (never used, or answered already), a reply of another kind than the request waiting
// in its slot (a batch's bytes to a group, a group's to a batch, a reply of another result type), an error naming an
// operation outside its group.
// Each is refused with an error that says "corrupt stream", reported to the sender at its next am::barrier() like
// any handler failure, before anything is read out of bounds or any future is completed; the map works on
// afterwards with exactly what it held. The messages are made through owner_table_test_access, the one way into
// an owner_table's handlers (owner_table.hpp); the ASan build checks that nothing is touched out of bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/containers/dist_map.hpp"
#include "shoal_test.hpp"

namespace {

using u32 = std::uint32_t;
using map_type = shoal::dist_map<u32, u32>;

/// Operations the malformed requests name: each is refused before any operation of it runs.
struct never_find {
  using wire = std::optional<u32>;
  template <class Table>
  static wire apply(Table&, int, u32) {
    ADD_FAILURE() << "an operation of a malformed request ran";
    return std::nullopt;
  }
};
struct never_insert {
  using wire = shoal::detail::insert_status;
  template <class Table>
  static wire apply(Table&, int, u32, u32) {
    ADD_FAILURE() << "an operation of a malformed request ran";
    return wire::rejected;
  }
};

}  // namespace

namespace shoal::detail {

struct owner_table_test_access {
  using table = decltype(std::declval<map_type&>().t_);
  using bytes = std::span<const std::byte>;

  static u32 id(map_type& m) { return m.t_.id_; }
  /// The slots whose requests wait for a reply now.
  static std::vector<u32> waiting_slots(map_type& m) {
    std::vector<u32> slots;
    for (std::size_t s = 0; s < m.t_.pending_.size(); ++s) {
      if (m.t_.pending_[s].target != nullptr) slots.push_back(static_cast<u32>(s));
    }
    return slots;
  }

  // Requests, as an origin sends them to an owner.
  static void keyed_request(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_keyed_bytes<never_find>, id(m), b);
  }
  static void pair_request(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_pair_bytes<never_insert, u32>, id(m), b);
  }
  static void group_request(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_group_bytes<never_find, u32>, id(m), b);
  }
  static void post_column(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_held_posts<never_insert, u32, u32>, id(m), b);
  }

  // Replies and errors, as an owner sends them back to the origin.
  static void keyed_reply(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_keyed_reply<std::optional<u32>>, id(m), b);
  }
  static void group_reply(map_type& m, int to, bytes b) {
    am::detail::post_bytes(to, &table::template on_group_reply<std::optional<u32>>, id(m), b);
  }
  static void single_reply(map_type& m, int to, u32 slot) {
    shoal::post(to, typename table::template on_reply<std::optional<u32>>{}, id(m), slot, std::optional<u32>(5));
  }
  /// An insert batch's reply (its counts): a result type no find waits for.
  static void counts_reply(map_type& m, int to, u32 slot) {
    shoal::post(to, typename table::template on_reply<batch_insert_result>{}, id(m), slot, batch_insert_result{});
  }
  static void reply_error(map_type& m, int to, u32 slot) {
    shoal::post(to, &table::on_reply_error, id(m), slot, std::string("made up"));
  }
  static void group_error(map_type& m, int to, u32 slot, u32 index) {
    shoal::post(to, &table::template on_group_error<std::optional<u32>>, id(m), slot, index, std::string("made up"));
  }
};

}  // namespace shoal::detail

namespace {

using access = shoal::detail::owner_table_test_access;

int me() { return shoal::rank(); }
int right() { return (shoal::rank() + 1) % shoal::size(); }

/// A message of 32-bit words (cut to its first `size` bytes when given).
std::vector<std::byte> words(std::initializer_list<u32> w, std::size_t size = SIZE_MAX) {
  std::vector<std::byte> b(w.size() * sizeof(u32));
  std::memcpy(b.data(), std::data(w), b.size());
  b.resize(std::min(size, b.size()));
  return b;
}

/// am::barrier(), which must report exactly one refused message whose text holds `what`.
void expect_refused(const std::string& what) {
  try {
    shoal::am::barrier();
    ADD_FAILURE() << "nothing refused; expected: " << what;
  } catch (const shoal::remote_error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(what), std::string::npos) << text;
    EXPECT_NE(text.find("corrupt stream"), std::string::npos) << text;
    EXPECT_EQ(text.find("more handler failures"), std::string::npos) << text;
  }
}

/// Keys 0..n-1 of this rank, spread over every owner, inserted; the map holds them and nothing else.
std::vector<u32> fill(map_type& m, u32 n) {
  std::vector<u32> keys;
  std::vector<std::pair<u32, u32>> pairs;
  for (u32 k = 0; k < n; ++k) {
    keys.push_back(static_cast<u32>(me()) * 100000 + k);
    pairs.emplace_back(keys.back(), keys.back());
  }
  const auto counts = m.insert_batch(pairs);
  EXPECT_EQ(counts.inserted, n);
  return keys;
}

void expect_holds(map_type& m, const std::vector<u32>& keys) {
  const auto found = m.find_batch(keys);
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(found[i], std::optional<u32>(keys[i])) << keys[i];
  EXPECT_EQ(m.size(), keys.size() * static_cast<std::size_t>(shoal::size()));
}

/// fill(m, 400), and the first 4 of those keys that the next rank owns.
std::pair<std::vector<u32>, std::vector<u32>> fill_with_theirs(map_type& m) {
  std::pair<std::vector<u32>, std::vector<u32>> out{fill(m, 400), {}};
  for (u32 k : out.first) {
    if (m.owner(k) == right() && out.second.size() < 4) out.second.push_back(k);
  }
  return out;
}

/// Three finds of `theirs` in one group, sent to the next rank (the insert posted after them sends the open group;
/// its reply cannot have come yet): their futures, and the slot the group waits in.
std::pair<std::vector<shoal::future<std::optional<u32>>>, std::vector<u32>> group_waiting(
    map_type& m, const std::vector<u32>& theirs) {
  std::vector<shoal::future<std::optional<u32>>> group;
  for (std::size_t i = 0; i < 3; ++i) group.push_back(m.async_find(theirs[i]));
  m.post_insert_or_assign(theirs[3], theirs[3]);
  return {std::move(group), access::waiting_slots(m)};
}

TEST(dist_map_malformed, requests_of_the_wrong_size_are_refused) {
  map_type m;
  const auto keys = fill(m, 200);
  // A header shorter than its two words.
  access::keyed_request(m, right(), words({7}, 3));
  expect_refused("malformed batch message");
  // A batch part that counts 10 keys and holds 3; one that counts 2 and holds 3.
  access::keyed_request(m, right(), words({0, 10, 1, 2, 3}));
  expect_refused("malformed batch request");
  access::keyed_request(m, right(), words({0, 2, 1, 2, 3}));
  expect_refused("malformed batch request");
  // Pairs: 3 counted, 2 held.
  access::pair_request(m, right(), words({0, 3, 1, 2, 3, 4}));
  expect_refused("malformed batch request");
  // A group larger than any group, and one that counts 3 operations and holds 2.
  access::group_request(m, right(), words({0, 100000, 1}));
  expect_refused("malformed group request");
  access::group_request(m, right(), words({0, 3, 1, 2}));
  expect_refused("malformed group request");
  // A column of posts that ends inside a record (records of key and value: 8 bytes).
  access::post_column(m, right(), words({1, 2, 3}, 10));
  expect_refused("malformed post column");
  expect_holds(m, keys);
}

TEST(dist_map_malformed, replies_naming_no_waiting_request_are_refused) {
  map_type m;
  const auto keys = fill(m, 200);
  constexpr u32 never_used = 12345;
  access::keyed_reply(m, me(), words({never_used, 0, 1, 2}));
  expect_refused("request slot 12345, which no request of this rank waits in");
  access::group_reply(m, me(), words({never_used, 0}));
  expect_refused("request slot 12345");
  access::single_reply(m, me(), never_used);
  expect_refused("request slot 12345");
  access::reply_error(m, me(), never_used);
  expect_refused("request slot 12345");
  access::group_error(m, me(), never_used, 0);
  expect_refused("request slot 12345");
  access::keyed_reply(m, me(), words({0}, 2));  // shorter than its header
  expect_refused("malformed batch message");

  // Slots that waited and were answered: a second reply naming one is refused, not delivered again.
  const auto found = m.find_batch(keys);
  ASSERT_EQ(found.size(), keys.size());
  EXPECT_TRUE(access::waiting_slots(m).empty());
  if (shoal::size() > 1) {  // a batch to other ranks waited in slot 0 (at one rank nothing leaves, no slot is used)
    access::keyed_reply(m, me(), words({0, 0, 1}));
    expect_refused("request slot 0, which no request of this rank waits in");
    access::single_reply(m, me(), 0);
    expect_refused("request slot 0");
  }
  expect_holds(m, keys);
}

TEST(dist_map_malformed, a_group_error_naming_an_operation_outside_its_group_is_refused) {
  if (shoal::size() < 2) GTEST_SKIP() << "needs a group sent to another rank (at one rank every group runs here)";
  map_type m;
  const auto [keys, theirs] = fill_with_theirs(m);
  ASSERT_EQ(theirs.size(), 4u);
  auto [group, slots] = group_waiting(m, theirs);
  ASSERT_EQ(slots.size(), 1u);
  access::group_error(m, me(), slots[0], 3);  // the group holds operations 0..2
  expect_refused("malformed group error");
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(group[i].get(), std::optional<u32>(theirs[i])) << i;
  m.flush();
  expect_holds(m, keys);
}

TEST(dist_map_malformed, a_reply_of_another_kind_than_its_slot_waits_for_is_refused) {
  if (shoal::size() < 2) GTEST_SKIP() << "needs requests waiting for another rank (at one rank all run here)";
  map_type m;
  const auto [keys, theirs] = fill_with_theirs(m);
  ASSERT_EQ(theirs.size(), 4u);
  // Each injected reply names the one slot waiting then; the barrier that reports it also lets the true reply in.

  // A group of finds waits: a batch's reply (bytes for 3 results) and a reply of another result type are refused.
  using inject = void (*)(map_type&, u32 slot);
  const inject to_group[] = {[](map_type& mm, u32 slot) { access::keyed_reply(mm, me(), words({slot, 0, 1, 2, 3})); },
                             [](map_type& mm, u32 slot) { access::counts_reply(mm, me(), slot); }};
  for (inject wrong : to_group) {
    auto [group, slots] = group_waiting(m, theirs);
    ASSERT_EQ(slots.size(), 1u);
    const u32 slot = slots[0];
    wrong(m, slot);
    expect_refused("request slot " + std::to_string(slot) + ", whose request waits for another kind of reply");
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(group[i].get(), std::optional<u32>(theirs[i])) << i;
    m.flush();
  }

  // A batch's part waits: a group's reply, a single find's and a group error are refused.
  const inject to_batch[] = {[](map_type& mm, u32 slot) { access::group_reply(mm, me(), words({slot, 0})); },
                             [](map_type& mm, u32 slot) { access::single_reply(mm, me(), slot); },
                             [](map_type& mm, u32 slot) { access::group_error(mm, me(), slot, 0); }};
  for (inject wrong : to_batch) {
    auto batch = m.async_find_batch(theirs);
    const auto slots = access::waiting_slots(m);
    ASSERT_EQ(slots.size(), 1u);
    wrong(m, slots[0]);
    expect_refused("waits for another kind of reply");
    const auto found = batch.get();
    ASSERT_EQ(found.size(), theirs.size());
    for (std::size_t i = 0; i < theirs.size(); ++i) EXPECT_EQ(found[i], std::optional<u32>(theirs[i])) << i;
  }
  EXPECT_TRUE(access::waiting_slots(m).empty());
  expect_holds(m, keys);
}

}  // namespace
