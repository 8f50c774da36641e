// shoal/containers/detail/ordered_map/wire.hpp — the byte format of the skip-list service's messages.
//
// A message is one tag byte (its index in the message variant) followed by its fields in the order its `fields(ar)`
// lists them. Two archives run that one list: field_writer appends each field with shoal's byte_writer, field_reader
// reads it back with byte_reader (keys and values by shoal::serializable rules: trivially copyable fields and vectors
// of them are plain memcpys). A field that has a `fields` list of its own is written as that list; a key_box travels
// as its vector of dimension ranges; `bits(a, b, c)` packs bools into one byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "shoal/containers/detail/ordered_map/messages.hpp"
#include "shoal/containers/key_box.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/serialize.hpp"

namespace shoal::detail::ordered_map {

template <class T, class Ar>
concept has_fields = requires(T& x, Ar& ar) { x.fields(ar); };

/// Writes the fields a message lists.
class field_writer {
 public:
  explicit field_writer(std::vector<std::byte>& out) : w_(out) {}

  template <class... T>
  void operator()(const T&... xs) {
    (put(xs), ...);
  }

  template <class... B>
  void bits(const B&... flags) {
    std::uint8_t packed = 0;
    int i = 0;
    ((packed = static_cast<std::uint8_t>(packed | (flags ? 1u << i : 0u)), ++i), ...);
    w_.write(packed);
  }

 private:
  template <class T>
  void put(const T& x) {
    if constexpr (has_fields<T, field_writer>) {
      const_cast<T&>(x).fields(*this);  // fields() only reads through a writer
    } else if constexpr (std::is_same_v<T, key_box>) {
      w_.write(x.ranges());
    } else {
      w_.write(x);
    }
  }

  byte_writer w_;
};

/// Reads the fields a message lists, in the order field_writer wrote them.
class field_reader {
 public:
  explicit field_reader(std::span<const std::byte> bytes) : r_(bytes) {}

  template <class... T>
  void operator()(T&... xs) {
    (get(xs), ...);
  }

  template <class... B>
  void bits(B&... flags) {
    const auto packed = r_.read<std::uint8_t>();
    int i = 0;
    ((flags = (packed >> i) & 1u, ++i), ...);
  }

  std::uint8_t tag() { return r_.read<std::uint8_t>(); }

 private:
  template <class T>
  void get(T& x) {
    if constexpr (has_fields<T, field_reader>) {
      x.fields(*this);
    } else if constexpr (std::is_same_v<T, key_box>) {
      auto d = r_.read<std::vector<dimension_range>>();
      x = d.empty() ? key_box() : key_box(std::move(d));
    } else {
      x = r_.read<T>();
    }
  }

  byte_reader r_;
};

template <class K, class V>
struct codec {
  using message_type = message<K, V>;

  /// Writes `m` into `out` (cleared first: the sender reuses one buffer, no allocation once warm).
  static void encode(const message_type& m, std::vector<std::byte>& out) {
    out.clear();
    field_writer w(out);
    w(static_cast<std::uint8_t>(m.index()));
    std::visit([&](const auto& x) { w(x); }, m);
  }

  static message_type decode(std::span<const std::byte> bytes) {
    field_reader r(bytes);
    return decode_as(r, r.tag(), std::make_index_sequence<std::variant_size_v<message_type>>{});
  }

 private:
  template <std::size_t... I>
  static message_type decode_as(field_reader& r, std::uint8_t tag, std::index_sequence<I...>) {
    message_type out;
    const bool found = ((tag == I ? (r(out.template emplace<I>()), true) : false) || ...);  // read in place
    if (!found) throw error("shoal::ordered_map: unknown message tag " + std::to_string(tag));
    return out;
  }
};

}  // namespace shoal::detail::ordered_map
