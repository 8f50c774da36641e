// shoal/containers/detail/owner_table/byte_batches.hpp — batches whose keys, values and results are plain bytes.
//
// A find or erase batch over trivially copyable keys, with trivially copyable results, moves the way a hand-written
// all-to-all does: the keys are cut by owner in one counting sort (the input positions in one array, each owner's
// keys contiguous beside them); each other owner's part travels as one AM byte message copied straight from that
// array; the owner reads the keys where they arrived and writes each result straight into its reply; the origin
// copies the results from the reply to their input positions. No vector per part, no encoding or decoding.
// A pair batch (insert, insert_or_assign, insert_or_update) over trivially copyable keys and values is cut the same
// way, each record's value copied beside its key; the owner runs the pairs where they arrived and answers with its
// counts.
// Wire (byte messages, am::detail::reserve_bytes): request [u32 slot][u32 count][count keys] (a pair batch: then
// [count values]); reply [u32 slot][u32 status][count results] (result_codec: a result's bytes, or for an optional
// value the values, then a presence byte each), status 1 when the part failed at the owner (its error follows in a
// message of its own, which completes the batch) — a pair batch's reply is its counts, an ordinary message. Keys,
// values and results are read and written with memcpy: a message starts at any alignment in the AM buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"

namespace shoal::detail {

/// Keys K and results W that may travel as their bytes (every rank runs the same program).
template <class K, class W>
inline constexpr bool byte_batchable = std::is_trivially_copyable_v<K> && std::is_trivially_copyable_v<W> &&
                                       std::is_default_constructible_v<K> && std::is_default_constructible_v<W>;

/// The most inputs a byte batch of `record_bytes` per input takes: positions are 32-bit and a part's message stays
/// below the AM's 4 GiB.
inline constexpr std::size_t byte_batch_inputs(std::size_t record_bytes) {
  return (std::numeric_limits<std::uint32_t>::max() - 64) / record_bytes;
}

/// The working arrays of a cut, kept by the container between batches (arrays of the batch's size, written afresh
/// each time: reusing them spares a batch the page faults of new memory).
template <class K>
struct cut_buffers {
  std::vector<std::uint32_t> owner;  // per input, its owner
  std::vector<K> keys;               // the inputs' keys, grouped by part
  std::vector<std::byte> values;     // a pair batch's values, records of the value's size beside their keys
};

/// A batch cut by owner in one counting sort: parts in ascending owner order; part p's inputs are
/// order[start[p] .. start[p + 1]) (input positions, ascending) and its keys buffers.keys[start[p] .. start[p + 1]).
template <class K>
struct keyed_cut {
  std::vector<int> owners;
  std::vector<std::uint32_t> start{0};
  std::vector<std::uint32_t> order;
  cut_buffers<K> buffers;
};

/// Cuts inputs 0..n-1 (key_at(i): input i's key, converted to K) among `ranks` owners, in `buffers` (taken over and
/// returned in the cut); owners_of(n, key_at, out) writes each input's owner (owner_placement::owners_of), or is not
/// called when `single_owner` >= 0 names the only one. place(j, i) runs as input i takes record j of the cut (a pair
/// batch copies its value there).
template <class K, class KeyAt, class OwnersOf, class Place>
keyed_cut<K> cut_keys(std::size_t n, int ranks, int single_owner, KeyAt&& key_at, OwnersOf&& owners_of,
                      cut_buffers<K> buffers, Place&& place) {
  keyed_cut<K> cut;
  cut.buffers = std::move(buffers);
  if (n == 0) return cut;
  cut.order.resize(n);
  std::vector<K>& keys = cut.buffers.keys;
  keys.resize(n);
  if (single_owner >= 0) {
    cut.owners.push_back(single_owner);
    cut.start.push_back(static_cast<std::uint32_t>(n));
    for (std::size_t i = 0; i < n; ++i) {
      cut.order[i] = static_cast<std::uint32_t>(i);
      keys[i] = static_cast<K>(key_at(i));
      place(static_cast<std::uint32_t>(i), i);
    }
    return cut;
  }
  std::vector<std::uint32_t>& owner = cut.buffers.owner;
  owner.resize(n);
  owners_of(n, key_at, owner.data());
  // With few owners, four lanes, each a quarter of the inputs (the last one takes the rest) with its own counters, run
  // interleaved: one set of counters made most inputs wait for the previous one's count (a load and a store to the
  // same counter); four chains overlap (2 owners: 6.1 -> 4.6 ns per key). With many owners consecutive inputs seldom
  // share a counter and four sets only take more cache (16 owners: 4.9 -> 6.4), so one lane. Each owner's part holds
  // lane 0's inputs, then lane 1's.., so its input positions still ascend.
  const auto width = static_cast<std::size_t>(ranks);
  const auto cut_in = [&]<std::size_t lanes>(std::integral_constant<std::size_t, lanes>) {
    const std::size_t quarter = n / lanes;
    std::vector<std::uint32_t> next(lanes * width, 0);
    std::array<std::uint32_t*, lanes> lane_next;
    for (std::size_t l = 0; l < lanes; ++l) lane_next[l] = next.data() + l * width;
    for (std::size_t i = 0; i < quarter; ++i) {
      for (std::size_t l = 0; l < lanes; ++l) ++lane_next[l][owner[l * quarter + i]];
    }
    for (std::size_t i = lanes * quarter; i < n; ++i) ++lane_next[lanes - 1][owner[i]];
    std::uint32_t at = 0;
    for (std::size_t r = 0; r < width; ++r) {
      const std::uint32_t first = at;
      for (std::size_t l = 0; l < lanes; ++l) at += std::exchange(lane_next[l][r], at);
      if (at != first) {
        cut.owners.push_back(static_cast<int>(r));
        cut.start.push_back(at);
      }
    }
    const auto take = [&](std::size_t l, std::size_t i) {
      const std::uint32_t j = lane_next[l][owner[i]]++;
      cut.order[j] = static_cast<std::uint32_t>(i);
      keys[j] = static_cast<K>(key_at(i));
      place(j, i);
    };
    for (std::size_t i = 0; i < quarter; ++i) {
      for (std::size_t l = 0; l < lanes; ++l) take(l, l * quarter + i);
    }
    for (std::size_t i = lanes * quarter; i < n; ++i) take(lanes - 1, i);
  };
  if (width <= 8) cut_in(std::integral_constant<std::size_t, 4>{});
  else cut_in(std::integral_constant<std::size_t, 1>{});
  return cut;
}

/// The two words that open a byte batch's request (slot, count) and reply (slot, status).
struct byte_batch_header {
  static constexpr std::size_t bytes = 2 * sizeof(std::uint32_t);
  std::uint32_t slot = 0;
  std::uint32_t word = 0;

  static byte_batch_header read(const std::byte* p, std::size_t size) {
    if (size < bytes) throw error("shoal::dist_map: malformed batch message (corrupt stream)");
    byte_batch_header h;
    std::memcpy(&h.slot, p, sizeof h.slot);
    std::memcpy(&h.word, p + sizeof h.slot, sizeof h.word);
    return h;
  }
  void write(std::byte* p) const {
    std::memcpy(p, &slot, sizeof slot);
    std::memcpy(p + sizeof slot, &word, sizeof word);
  }
};

/// Record i of a run of Ts at `p` (any alignment), and its writing.
template <class T>
T load_record(const std::byte* p, std::size_t i) {
  T v;
  std::memcpy(static_cast<void*>(&v), p + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store_record(std::byte* p, std::size_t i, const T& v) {
  std::memcpy(p + i * sizeof(T), static_cast<const void*>(&v), sizeof(T));
}

/// How the results of a byte batch's part travel: `bytes` per result; write / read result i of a part of n results
/// whose results start at `body`. In general a result's own bytes.
template <class W>
struct result_codec {
  static constexpr std::size_t bytes = sizeof(W);
  static void write(std::byte* body, std::size_t, std::size_t i, const W& w) { store_record(body, i, w); }
  static W read(const std::byte* body, std::size_t, std::size_t i) { return load_record<W>(body, i); }
};
/// An optional plain value (find, erase) travels as the values (a default one where there is none), then a presence
/// byte per result: the optional is never assembled in memory and copied whole — that copy's wide read waited for the
/// narrower writes just before it (a stalled store forward, ~3 ns per key in the owner's loop) — and a 32-bit value
/// takes 5 bytes instead of 8.
template <class T>
  requires std::is_default_constructible_v<T>
struct result_codec<std::optional<T>> {
  static constexpr std::size_t bytes = sizeof(T) + 1;
  static void write(std::byte* body, std::size_t n, std::size_t i, const std::optional<T>& w) {
    store_record(body, i, w ? *w : T{});
    body[n * sizeof(T) + i] = std::byte{w.has_value()};
  }
  static std::optional<T> read(const std::byte* body, std::size_t n, std::size_t i) {
    if (body[n * sizeof(T) + i] == std::byte{0}) return std::nullopt;
    return load_record<T>(body, i);
  }
};

/// A keyed batch's limit (a key out, a result back).
template <class K, class W>
inline constexpr std::size_t byte_batch_limit =
    byte_batch_inputs(sizeof(K) > result_codec<W>::bytes ? sizeof(K) : result_codec<W>::bytes);

}  // namespace shoal::detail
