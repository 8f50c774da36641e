// shoal/containers/hash_map_buffer.hpp — buffered inserts into a hash_map (BCL §5.3).
//
// Model: one-sided, distributed. post_insert / post_insert_or_assign only append a record (operation, key, value) to
// a local buffer for the key's owner. A buffer that reaches `message_bytes` is shipped into a mailbox hosted in the
// owner's heap (one fetch_add to reserve a slot, one put). flush() — collective — ships the rest, then every owner
// applies the records it received with hash_map::local_insert / local_insert_or_assign (plain CPU stores, no remote
// operation), which turns a latency-bound insert phase into a bandwidth-bound one.
//
// Operations and costs (per record unless stated; M = one shipped message of up to message_bytes). Who: collective
// = every rank of the map's team, in the same order; any rank = one rank's call:
//   hash_map_buffer(map, opts)     collective  allocate the mailboxes on the map's team       B
//   ~hash_map_buffer               collective  then each rank frees its mailbox (no-op after finalize)   B
//   post_insert(k, v)              any rank    buffer; every message_bytes: A + W            local
//   post_insert_or_assign(k, v)    any rank    the same
//   flush()                        collective  ship the rest, barrier, apply locally         B + M(A + W) + local
//                                              (one more round of B per full mailbox)
// post_* = fire and forget: no result per record; flush() completes them and reports what did not fit.
//
// Ordering rules. Until flush() returns, a buffered record is invisible: finds do not see it and it does not see
// the table. flush() applies, on every owner, the records in the order (source rank, that rank's issue order), so
// the outcome for duplicates is defined: for insert, the first record of a key wins (the lowest source rank, then its
// earliest call) unless the key was already in the table; for insert_or_assign the last one wins (the highest source
// rank, then its latest call); a mix applies the records one after the other in that order.
//
// Concurrency promises: between two flush() calls the buffer only ships into mailboxes; the map itself may be used
// with any promise. flush() itself inserts with local_insert, so no other operation on the map may run on any rank
// during flush() (it is collective and every rank is inside it).
//
// Errors: shoal::container_full from flush() on every rank when any owner's block is full (every record that fits
// is still applied);
// shoal::usage_error when one record is larger than message_bytes (the message names the option), and for options
// out of range (message_bytes or mailbox_messages outside [1, 2^31); the message names the field).
//
// Example:
//   shoal::hash_map<std::uint64_t, std::uint64_t> map(1 << 20);
//   shoal::hash_map_buffer buffer(map);               // collective
//   for (auto k : my_keys) buffer.post_insert(k, 1);  // local until a message fills
//   buffer.flush();                                   // collective: every insert is in the table on return
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "shoal/containers/detail/message_exchange.hpp"
#include "shoal/containers/detail/option_check.hpp"
#include "shoal/containers/hash_map.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// Options of a hash_map_buffer (every field defaulted; checked at construction).
struct hash_map_buffer_options {
  /// Payload bytes of one shipped message (the unit of aggregation), in [1, 2^31).
  std::size_t message_bytes = std::size_t{64} << 10;
  /// Messages each rank's mailbox holds between two flushes, in [1, 2^31); more arrive in extra rounds of flush().
  std::size_t mailbox_messages = 128;
};

template <class K, class V>
class hash_map_buffer {
 public:
  using key_type = typename hash_map<K, V>::key_type;
  using mapped_type = typename hash_map<K, V>::mapped_type;

  /// Collective.
  explicit hash_map_buffer(hash_map<K, V>& map, hash_map_buffer_options opts = {})
      : map_(map), exchange_(validated(opts).message_bytes, opts.mailbox_messages, "shoal::hash_map_buffer",
                             map.team()) {}

  /// Buffers an insert (applied at flush(); the first record of a key wins).
  void post_insert(const key_type& key, const mapped_type& value) { append(insert_op, key, value); }

  /// Buffers an insert_or_assign (applied at flush(); the last record of a key wins).
  void post_insert_or_assign(const key_type& key, const mapped_type& value) { append(assign_op, key, value); }

  /// Collective: completes every buffered record on every rank. Returns the number of keys that were new to the
  /// table, summed over all ranks.
  std::size_t flush() {
    std::size_t inserted = 0;
    std::string failure;
    std::vector<record> records;
    for (const auto& m : exchange_.complete()) {
      const std::span<const std::byte> payload = m.payload();
      if constexpr (fixed_records) {  // records read in place, at fixed offsets
        const std::size_t n = payload.size() / record_bytes;
        auto at = [&](std::size_t i) { return payload.data() + i * record_bytes; };
        apply_records(n, [&](std::size_t i) { return load<key_type>(at(i) + 1); },
                      [&](std::size_t i) { return record{load<std::uint8_t>(at(i)), load<key_type>(at(i) + 1),
                                                         load<mapped_type>(at(i) + 1 + sizeof(key_type))}; },
                      inserted, failure);
      } else {
        records.clear();
        byte_reader r(payload);
        while (r.remaining() > 0) {
          const auto op = r.read<std::uint8_t>();
          auto key = r.read<key_type>();
          records.push_back(record{op, std::move(key), r.read<mapped_type>()});
        }
        apply_records(records.size(), [&](std::size_t i) -> const key_type& { return records[i].key; },
                      [&](std::size_t i) -> const record& { return records[i]; }, inserted, failure);
      }
    }
    map_.reclaim();
    const auto total = map_.team().allreduce(inserted, op::sum{});
    if (map_.team().allreduce(failure.empty() ? 0 : 1, op::max{}) != 0) {
      throw container_full(failure.empty() ? "shoal::hash_map_buffer::flush: the table is full on another rank "
                                             "(construct the hash_map larger or resize it)"
                                           : failure);
    }
    return total;
  }

 private:
  static const hash_map_buffer_options& validated(const hash_map_buffer_options& o) {
    detail::check_option(o.message_bytes >= 1 && o.message_bytes < (std::size_t{1} << 31),
                         "hash_map_buffer_options::message_bytes", "in [1, 2^31) bytes", o.message_bytes);
    detail::check_option(o.mailbox_messages >= 1 && o.mailbox_messages < (std::size_t{1} << 31),
                         "hash_map_buffer_options::mailbox_messages", "in [1, 2^31)", o.mailbox_messages);
    return o;
  }

  static constexpr std::uint8_t insert_op = 0, assign_op = 1;
  static constexpr std::size_t prefetch_distance = 16;
  struct record {
    std::uint8_t op;
    key_type key;
    mapped_type value;
  };
  /// Trivially copyable keys and values make every record [op][key bytes][value bytes], the same bytes byte_writer
  /// writes: appended with one copy and read in place.
  static constexpr bool fixed_records = trivially_serializable<key_type> && trivially_serializable<mapped_type>;
  static constexpr std::size_t record_bytes = 1 + sizeof(key_type) + sizeof(mapped_type);

  template <class T>
  static T load(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
  }

  void append(std::uint8_t op, const key_type& key, const mapped_type& value) {
    if constexpr (fixed_records) {
      std::byte rec[record_bytes];
      rec[0] = static_cast<std::byte>(op);
      std::memcpy(rec + 1, &key, sizeof(key_type));
      std::memcpy(rec + 1 + sizeof(key_type), &value, sizeof(mapped_type));
      exchange_.append_bytes(map_.owner(key), rec, record_bytes);
    } else {
      exchange_.append(map_.owner(key), [&](byte_writer& w) {
        w.write(op);
        w.write(key);
        w.write(value);
      });
    }
  }

  /// Applies records 0..n-1 (key_at(i): record i's key, record_at(i): the record) as local_insert /
  /// local_insert_or_assign, loading each home bucket prefetch_distance records ahead (a table larger than the caches)
  /// and placing each key once: the places of the records between a prefetch and its insert wait in a ring (placing
  /// a key again at its insert, as local_prefetch then local_insert do, cost 5-7 ns of a 12-22 ns insert).
  template <class KeyAt, class RecordAt>
  void apply_records(std::size_t n, KeyAt&& key_at, RecordAt&& record_at, std::size_t& inserted,
                     std::string& failure) {
    using place = typename hash_map<K, V>::place;
    std::array<place, prefetch_distance> ahead;  // record j's place at ahead[j % prefetch_distance]
    const auto look_ahead = [&](std::size_t j) {
      place& where = ahead[j % prefetch_distance];
      where = map_.placement(key_at(j));
      map_.prefetch_own(where);
    };
    for (std::size_t i = 0; i < std::min(prefetch_distance, n); ++i) look_ahead(i);
    for (std::size_t i = 0; i < n; ++i) {
      const place where = ahead[i % prefetch_distance];
      if (i + prefetch_distance < n) look_ahead(i + prefetch_distance);
      const auto& rec = record_at(i);
      try {
        inserted += map_.cpu_insert_at(where, rec.key, rec.value, rec.op == assign_op) ? 1 : 0;
      } catch (const container_full& e) {
        if (failure.empty()) failure = e.what();
      }
    }
  }

  hash_map<K, V>& map_;
  detail::message_exchange exchange_;
};

}  // namespace shoal
