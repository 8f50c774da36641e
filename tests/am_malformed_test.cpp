// The active-message engine given buffers no sender wrote (a corrupted stream): a group header cut short, a group of
// no messages, and handler or function words that name no code of the program — each would have made the engine read
// past the buffer, loop, or jump into data. Each is refused with a shoal::error naming the sender and saying
// "corrupt stream", thrown by the progress step that met it; the rest of that buffer is dropped, and the engine
// goes on delivering what other buffers hold. The buffers are put into the engine's queue through
// engine_test_access (engine.hpp names it a friend; nothing in shoal defines it), without being counted as sent,
// so quiescence is not disturbed.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/am.hpp"
#include "shoal_test.hpp"

namespace shoal::am::detail {

struct engine_test_access {
  /// Queues `bytes` as a buffer received from this rank.
  static void deliver(const std::vector<std::byte>& bytes) {
    engine& e = get();
    block b = new_block(bytes.size() == 0 ? 1 : bytes.size());
    std::memcpy(b.data.get(), bytes.data(), bytes.size());
    const std::byte* first = b.data.get();
    e.rxq_.emplace_back(std::move(b), first, first + bytes.size(), e.rank());
  }
};

}  // namespace shoal::am::detail

namespace {

using access = shoal::am::detail::engine_test_access;

inline std::int64_t handled = 0;
void count_one(std::int64_t v) { handled += v; }

/// Data, not code: a handler word pointing here must be refused.
inline std::int64_t not_code[4] = {};

/// A group header: [handler word][function word][count][team].
std::vector<std::byte> header(std::int32_t word, std::int32_t function, std::uint32_t count, std::uint32_t team = 0) {
  std::vector<std::byte> b(16);
  std::memcpy(b.data(), &word, 4);
  std::memcpy(b.data() + 4, &function, 4);
  std::memcpy(b.data() + 8, &count, 4);
  std::memcpy(b.data() + 12, &team, 4);
  return b;
}

std::int32_t offset_of(const void* p) {
  return static_cast<std::int32_t>(reinterpret_cast<std::intptr_t>(p) - shoal::am::detail::anchor_address());
}

/// shoal::progress() must throw exactly the corrupt-stream error naming `what`.
void expect_refused(const std::string& what) {
  try {
    shoal::progress();
    ADD_FAILURE() << "nothing refused; expected: " << what;
  } catch (const shoal::error& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find(what), std::string::npos) << text;
    EXPECT_NE(text.find("from rank " + std::to_string(shoal::rank())), std::string::npos) << text;
    EXPECT_NE(text.find("corrupt stream"), std::string::npos) << text;
  }
}

/// The engine still delivers: a message to the next rank and back, counted at the barrier.
void expect_engine_works() {
  handled = 0;
  shoal::am::barrier();  // no rank posts before every rank has reset its count
  shoal::post((shoal::rank() + 1) % shoal::size(), &count_one, std::int64_t{3});
  shoal::am::barrier();
  EXPECT_EQ(handled, 3);
}

TEST(am_malformed, a_header_cut_short_is_refused) {
  auto b = header(0, 0, 1);
  b.resize(10);
  access::deliver(b);
  expect_refused("a header cut short");
  expect_engine_works();
}

TEST(am_malformed, a_group_of_no_messages_is_refused) {
  access::deliver(header(1, 0, 0));
  expect_refused("a group of no messages");
  expect_engine_works();
}

TEST(am_malformed, a_handler_word_naming_data_is_refused) {
  // Words that land in this program's data, and on the last byte of the address space below the anchor.
  for (std::int32_t word : {offset_of(&not_code[0]), offset_of(&handled), std::int32_t{INT32_MIN}}) {
    auto b = header(word, 0, 2);
    b.resize(b.size() + 16);  // two messages' worth of bytes, never read
    access::deliver(b);
    expect_refused("a handler word that names no code of this program");
  }
  expect_engine_works();
}

TEST(am_malformed, a_function_word_naming_data_is_refused) {
  // The anchor itself as the handler word (code: that word passes), the function word pointing at data.
  auto b = header(0, offset_of(&not_code[1]), 1);
  b.resize(b.size() + 8);
  access::deliver(b);
  expect_refused("a function word that names no code of this program");
  expect_engine_works();
}

TEST(am_malformed, the_buffers_after_a_refused_one_are_delivered) {
  handled = 0;
  shoal::am::barrier();
  access::deliver(header(offset_of(&not_code[2]), 0, 1));
  shoal::post(shoal::rank(), &count_one, std::int64_t{7});  // travels behind it, in a buffer of its own
  expect_refused("names no code");
  shoal::am::barrier();
  EXPECT_EQ(handled, 7);
}

}  // namespace
