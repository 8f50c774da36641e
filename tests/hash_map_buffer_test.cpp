// shoal::hash_map_buffer: buffered inserts reach the table at flush, the documented order decides duplicates, full
// mailboxes take extra rounds without losing or reordering records, strings travel, oversized records are refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "shoal/containers/hash_map_buffer.hpp"
#include "shoal_test.hpp"

namespace {

int me() { return shoal::rank(); }
int np() { return shoal::size(); }

TEST(HashMapBuffer, EveryBufferedInsertIsFoundAfterFlush) {
  const int n = 5000;
  shoal::hash_map<std::uint64_t, std::uint64_t> m(static_cast<std::size_t>(n * np()) * 2);
  shoal::hash_map_buffer buffer(m);
  for (int i = 0; i < n; ++i) {
    buffer.post_insert(static_cast<std::uint64_t>(me()) * n + i, static_cast<std::uint64_t>(i));
  }
  EXPECT_EQ(buffer.flush(), static_cast<std::size_t>(n * np()));
  const int stride = n / shoal::testing::scaled(400);  // every 12th key, every 250th under MPICH oversubscription
  for (int r = 0; r < np(); ++r) {
    for (int i = r; i < n; i += stride) {
      EXPECT_EQ(m.find(static_cast<std::uint64_t>(r) * n + i, shoal::promise::find), i);
    }
  }
  EXPECT_EQ(m.size(), static_cast<std::size_t>(n * np()));
  EXPECT_EQ(buffer.flush(), 0u) << "an empty flush inserts nothing";
}

// Rule: records apply in (source rank, issue order); post_insert keeps the first, post_insert_or_assign the last.
TEST(HashMapBuffer, DuplicatesFollowTheDocumentedOrder) {
  const int repeats = 50;
  shoal::hash_map_buffer_options small;
  small.message_bytes = 96;  // many messages, and a mailbox that overflows into extra rounds
  small.mailbox_messages = 2;
  shoal::hash_map<int, int> m(4096);
  shoal::hash_map_buffer buffer(m, small);
  for (int i = 0; i < repeats; ++i) {
    buffer.post_insert(1, me() * 1000 + i);
    buffer.post_insert_or_assign(2, me() * 1000 + i);
    buffer.post_insert(100 + i, me());
  }
  if (me() == np() - 1) m.insert(3, -1);  // already present before the flush: insert keeps it
  shoal::barrier();
  buffer.post_insert(3, me());
  buffer.flush();
  EXPECT_EQ(m.find(1), 0) << "post_insert: the first record (rank 0, its first call) wins";
  EXPECT_EQ(m.find(2), (np() - 1) * 1000 + repeats - 1)
      << "post_insert_or_assign: the last (highest rank, latest call)";
  EXPECT_EQ(m.find(3), -1);
  for (int i = 0; i < repeats; ++i) EXPECT_EQ(m.find(100 + i), 0);
  shoal::barrier();
}

// The outboxes are fixed buffers reused after each shipped message (message_exchange.hpp): records that fill a message
// exactly, records that do not fit and ship the message before them, one-record messages, mailboxes that take extra
// rounds, and a second exchange through the same buffers — every record arrives once, with its value.
TEST(HashMapBuffer, MessagesOfEveryFitCarryEveryRecord) {
  constexpr std::size_t record = 1 + sizeof(int) + sizeof(int);  // operation, key, value
  for (const std::size_t message_bytes : {record, 2 * record, 10 * record, 10 * record + 4, std::size_t{4096}}) {
    for (const std::size_t slots : {std::size_t{1}, std::size_t{3}, std::size_t{128}}) {
      // Records per rank: 15 under oversubscription off the shared-memory path (testing::scaled), where every
      // remote atomic and flush waits for its target's time slice; still several messages per mailbox slot.
      const int n = shoal::testing::scaled(300);
      shoal::hash_map<int, int> m(static_cast<std::size_t>(4 * n * np()));
      shoal::hash_map_buffer_options opts;
      opts.message_bytes = message_bytes;
      opts.mailbox_messages = slots;
      shoal::hash_map_buffer buffer(m, opts);
      for (int round = 0; round < 2; ++round) {  // the second exchange reuses the first one's buffers
        const int base = (round * np() + me()) * n;
        for (int i = 0; i < n; ++i) buffer.post_insert(base + i, 7 * (base + i));
        ASSERT_EQ(buffer.flush(), static_cast<std::size_t>(n * np())) << message_bytes << " bytes, " << slots;
      }
      ASSERT_EQ(m.size(), static_cast<std::size_t>(2 * n * np())) << message_bytes << " bytes, " << slots;
      for (int k = me(); k < 2 * n * np(); k += 7) ASSERT_EQ(m.find(k, shoal::promise::find), 7 * k) << k;
      shoal::barrier();
    }
  }
}

TEST(HashMapBuffer, StringsAndOversizedRecords) {
  shoal::hash_map<std::string, std::string> m(1024 * static_cast<std::size_t>(np()));
  shoal::hash_map_buffer_options opts;
  opts.message_bytes = 512;
  shoal::hash_map_buffer buffer(m, opts);
  for (int i = 0; i < 100; ++i) {
    buffer.post_insert("k" + std::to_string(me()) + "_" + std::to_string(i), std::string(i, 'v'));
  }
  EXPECT_THROW(buffer.post_insert("big", std::string(2000, 'x')), shoal::usage_error);
  EXPECT_EQ(buffer.flush(), static_cast<std::size_t>(100 * np()));
  for (int r = 0; r < np(); ++r) {
    for (int i = 0; i < 100; i += 9) EXPECT_EQ(m.find("k" + std::to_string(r) + "_" + std::to_string(i)), std::string(i, 'v'));
  }
  shoal::barrier();
}

TEST(HashMapBuffer, OptionsOutOfRangeNameTheField) {
  shoal::hash_map<int, int> m(16 * static_cast<std::size_t>(np()));
  shoal::hash_map_buffer_options opts;
  opts.message_bytes = 0;
  try {
    shoal::hash_map_buffer buffer(m, opts);
    ADD_FAILURE() << "message_bytes 0 accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_EQ(std::string(e.what()), "shoal::hash_map_buffer_options::message_bytes must be in [1, 2^31) bytes (got 0)");
  }
  opts = {};
  opts.mailbox_messages = std::size_t{1} << 40;
  try {
    shoal::hash_map_buffer buffer(m, opts);
    ADD_FAILURE() << "2^40 mailbox messages accepted";
  } catch (const shoal::usage_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "shoal::hash_map_buffer_options::mailbox_messages must be in [1, 2^31) (got 1099511627776)");
  }
  shoal::barrier();
}

TEST(HashMapBuffer, FullTableIsReportedByFlush) {
  shoal::hash_map<int, int> m(static_cast<std::size_t>(np()) * 4);
  shoal::hash_map_buffer buffer(m);
  for (int i = 0; i < 100; ++i) buffer.post_insert(me() * 100 + i, i);
  // Every rank raises, also those whose own block had room: flush is collective and so is its failure.
  EXPECT_THROW(buffer.flush(), shoal::container_full);
  EXPECT_EQ(m.size(), static_cast<std::size_t>(np()) * 4) << "the records that fitted are in the table";
}

}  // namespace
