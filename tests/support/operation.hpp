// tests/support/operation.hpp — one operation of a recorded concurrent history (no MPI: the checker and its unit
// tests use it alone).
//
// An operation is an interval [call_ns, return_ns] on one client's clock plus what was asked and what came back.
// The fields are plain integers so histories can be gathered between ranks as bytes. Which fields an operation
// kind uses is listed next to the kind; the sequential models (models.hpp) interpret them.
#pragma once

#include <cstdint>
#include <string>

namespace shoal::testing::history {

enum class op_kind : std::uint16_t {
  // registers / counters (key: the word)
  load,              // out = value read
  store,             // arg = value written
  fetch_add,         // arg = addend, out = old value
  fetch_xor,         // arg = mask, out = old value
  exchange,          // arg = new value, out = old value
  compare_exchange,  // arg = expected, arg2 = desired, out = old value (swapped iff out == arg)
  // maps and ordered maps (key: the key)
  insert,            // arg = value, ok = inserted (false: key present, value unchanged)
  insert_or_assign,  // arg = value, ok = inserted (false: assigned)
  find,              // ok = found, out = value
  erase,             // ok = erased
  erase_value,       // ok = erased, out = the value removed
  lower_bound,       // ok = found, out = first key >= key, out2 = its value
  range,             // key = lo, arg = hi (inclusive), ok = 1, out = key-values found, out2 = range_digest of them
  // FIFO queues (key: the segment, see models.hpp)
  push,              // arg = value, ok = pushed (a refused push, ok = 0, changes nothing)
  pop,               // ok = a value came back, out = the value (ok = 0: the queue was empty)
};

struct operation {
  std::uint64_t call_ns = 0;    // invocation, on the recorder's clock
  std::uint64_t return_ns = 0;  // response, on the recorder's clock
  std::int64_t key = 0;         // the object the operation is on: word, key, or queue segment
  std::int64_t arg = 0;
  std::int64_t arg2 = 0;
  std::int64_t out = 0;
  std::int64_t out2 = 0;
  std::int32_t client = 0;      // the rank that issued it
  std::uint32_t seq = 0;        // issue order within the client
  op_kind kind = op_kind::load;
  std::uint8_t ok = 0;
  std::uint8_t done = 0;        // 1 once the response is recorded
};

inline const char* name(op_kind k) {
  switch (k) {
    case op_kind::load: return "load";
    case op_kind::store: return "store";
    case op_kind::fetch_add: return "fetch_add";
    case op_kind::fetch_xor: return "fetch_xor";
    case op_kind::exchange: return "exchange";
    case op_kind::compare_exchange: return "compare_exchange";
    case op_kind::insert: return "insert";
    case op_kind::insert_or_assign: return "insert_or_assign";
    case op_kind::find: return "find";
    case op_kind::erase: return "erase";
    case op_kind::erase_value: return "erase_value";
    case op_kind::lower_bound: return "lower_bound";
    case op_kind::range: return "range";
    case op_kind::push: return "push";
    case op_kind::pop: return "pop";
  }
  return "?";
}

/// One line for failure messages: "client 1 #7 [1200, 1350] fetch_add(key 0, 5, 0) -> ok 0 out 12/0".
inline std::string describe(const operation& o) {
  return "client " + std::to_string(o.client) + " #" + std::to_string(o.seq) + " [" + std::to_string(o.call_ns) +
         ", " + std::to_string(o.return_ns) + "] " + name(o.kind) + "(key " + std::to_string(o.key) + ", " +
         std::to_string(o.arg) + ", " + std::to_string(o.arg2) + ") -> ok " + std::to_string(o.ok) + " out " +
         std::to_string(o.out) + "/" + std::to_string(o.out2);
}

}  // namespace shoal::testing::history
