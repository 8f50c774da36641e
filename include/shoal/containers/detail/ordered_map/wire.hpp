// shoal/containers/detail/ordered_map/wire.hpp — the byte format of the skip-list service's messages.
//
// A message is one tag byte (its index in the message variant) followed by its fields in the order its `fields(ar)`
// lists them. Two archives run that one list: field_writer writes each field at a cursor into the channel's reused
// encode buffer (cursor_writer: the buffer keeps its largest size, so a message's dozen small fields are plain stores,
// not a zero-filling vector resize each), field_reader reads it back with byte_reader (keys and values by
// shoal::serializable rules: trivially copyable fields and vectors of them are plain memcpys; other types through
// byte_writer). A field that has a `fields` list of its own is written as that list; a key_box travels
// as its vector of dimension ranges; `bits(a, b, c)` packs bools into one byte. A vector of key-value pairs (a range
// part) travels as its length and then each pair's key and value: one allocation and a copy per pair when both are
// plain bytes (std::pair itself is not trivially copyable, so the generic vector rule would not take it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

template <class T>
inline constexpr bool is_pair_vector = false;
template <class A, class B>
inline constexpr bool is_pair_vector<std::vector<std::pair<A, B>>> = true;

template <class A, class B>
inline constexpr bool plain_pair = trivially_serializable<A> && trivially_serializable<B>;

/// Key-value pairs by index from a source that makes pair i (`source.at(i)`): what a vector of pairs is assigned from,
/// so that it is allocated once and each pair written once (a resize would zero it first). Sources: the pairs packed
/// in a message (packed_pairs) and the pairs still in a node's arrays (pairs_source).
template <class Source>
class pairs_iterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = typename Source::value_type;
  using difference_type = std::ptrdiff_t;
  using pointer = void;
  using reference = value_type;

  pairs_iterator() = default;
  pairs_iterator(const Source& source, std::size_t i) : source_(&source), i_(static_cast<difference_type>(i)) {}

  value_type operator*() const { return source_->at(static_cast<std::size_t>(i_)); }
  value_type operator[](difference_type n) const { return *(*this + n); }
  pairs_iterator& operator++() { return *this += 1; }
  pairs_iterator operator++(int) {
    auto before = *this;
    ++*this;
    return before;
  }
  pairs_iterator& operator--() { return *this -= 1; }
  pairs_iterator operator--(int) {
    auto before = *this;
    --*this;
    return before;
  }
  pairs_iterator& operator+=(difference_type n) {
    i_ += n;
    return *this;
  }
  pairs_iterator& operator-=(difference_type n) { return *this += -n; }
  friend pairs_iterator operator+(pairs_iterator it, difference_type n) { return it += n; }
  friend pairs_iterator operator+(difference_type n, pairs_iterator it) { return it += n; }
  friend pairs_iterator operator-(pairs_iterator it, difference_type n) { return it -= n; }
  friend difference_type operator-(const pairs_iterator& a, const pairs_iterator& b) { return a.i_ - b.i_; }
  friend bool operator==(const pairs_iterator& a, const pairs_iterator& b) { return a.i_ == b.i_; }
  friend auto operator<=>(const pairs_iterator& a, const pairs_iterator& b) { return a.i_ <=> b.i_; }

 private:
  const Source* source_ = nullptr;
  difference_type i_ = 0;
};

/// Assigns pairs 0..n-1 of `source` to `out`: one allocation (when its capacity is short), one write per pair.
template <class Source>
void assign_pairs(std::vector<typename Source::value_type>& out, const Source& source, std::size_t n) {
  out.assign(pairs_iterator<Source>(source, 0), pairs_iterator<Source>(source, n));
}

/// Key-value pairs of plain bytes packed as a message holds them: each key's bytes, then its value's.
template <class A, class B>
struct packed_pairs {
  using value_type = std::pair<A, B>;
  static constexpr std::size_t stride = sizeof(A) + sizeof(B);
  const std::byte* first = nullptr;

  value_type at(std::size_t i) const {
    value_type pair;
    std::memcpy(&pair.first, first + i * stride, sizeof(A));
    std::memcpy(&pair.second, first + i * stride + sizeof(A), sizeof(B));
    return pair;
  }
};

/// Key-values still in a node's sorted arrays, written as a message's vector of pairs without being copied into one
/// first (a range part for a client on another rank: encoded at once, while the node is unchanged).
template <class K, class V>
struct pairs_source {
  using value_type = std::pair<K, V>;
  std::span<const K> keys;
  std::span<const V> values;

  value_type at(std::size_t i) const { return {keys[i], values[i]}; }
};

/// Writes n key-value pairs of plain bytes (key(i), value(i)) at `p`, as a message holds them: each key's bytes, then
/// its value's.
template <class Key, class Value>
void put_packed_pairs(std::byte* p, std::size_t n, Key&& key, Value&& value) {
  using A = std::remove_cvref_t<decltype(key(0))>;
  using B = std::remove_cvref_t<decltype(value(0))>;
  static_assert(plain_pair<A, B>);
  for (std::size_t i = 0; i < n; ++i, p += sizeof(A) + sizeof(B)) {
    std::memcpy(p, &key(i), sizeof(A));
    std::memcpy(p + sizeof(A), &value(i), sizeof(B));
  }
}

/// Writes serializable values from the start of a buffer that is reused for every message: bytes go at a cursor, and
/// the buffer grows (doubling) only past its largest size so far, so its bytes beyond the message are stale, not
/// zeroed. size() is the message's length. The same bytes as shoal::byte_writer appending to an empty vector.
class cursor_writer {
 public:
  explicit cursor_writer(std::vector<std::byte>& out) : out_(out) {}

  void write_bytes(const void* data, std::size_t n) {
    if (n == 0) return;
    std::memcpy(room(n), data, n);
    at_ += n;
  }

  template <serializable T>
  void write(const T& value) {
    if constexpr (trivially_serializable<T>) {
      write_bytes(&value, sizeof(T));
    } else if constexpr (contiguous_serializable<T>) {
      using E = typename T::value_type;
      const std::size_t n = detail::contiguous_bytes<E>(value.size());
      std::byte* p = room(n);
      detail::put_contiguous(p, std::span<const E>(value.data(), value.size()));
      at_ += n;
    } else {
      out_.resize(at_);  // byte_writer appends: the buffer ends at the cursor first
      byte_writer(out_).write(value);
      at_ = out_.size();
    }
  }

  /// Room for `n` more bytes at the cursor (the cursor does not move).
  std::byte* room(std::size_t n) {
    if (out_.size() - at_ < n) out_.resize(std::max(at_ + n, 2 * out_.size()));
    return out_.data() + at_;
  }
  void advance(std::size_t n) { at_ += n; }
  std::size_t size() const { return at_; }

 private:
  std::vector<std::byte>& out_;
  std::size_t at_ = 0;
};

/// Writes the fields a message lists.
class field_writer {
 public:
  explicit field_writer(std::vector<std::byte>& out) : w_(out) {}
  /// The message's vector of pairs (reply<K, V>::items, the only one a message has) is written from `source`; with
  /// `count_only`, only its count is (the pairs are the caller's to write after the message: pairs_at()).
  template <class K, class V>
  field_writer(std::vector<std::byte>& out, const pairs_source<K, V>* source, bool count_only = false)
      : w_(out), source_(source), count_only_(count_only) {}

  template <class... T>
  void operator()(const T&... xs) {
    (put(xs), ...);
  }

  /// Bytes written so far.
  std::size_t size() const { return w_.size(); }
  /// Where the pairs left out (count_only) belong: the offset after their count (SIZE_MAX: none were).
  std::size_t pairs_at() const { return pairs_at_; }

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
    } else if constexpr (is_pair_vector<T>) {
      put_pairs(x);
    } else {
      w_.write(x);
    }
  }

  template <class A, class B>
  void put_pairs(const std::vector<std::pair<A, B>>& items) {
    if (source_ != nullptr) {
      const auto& s = *static_cast<const pairs_source<A, B>*>(source_);
      if (count_only_) {
        w_.write(static_cast<std::uint64_t>(s.keys.size()));
        pairs_at_ = w_.size();
        return;
      }
      return write_pairs(s.keys.size(), [&](std::size_t i) -> const A& { return s.keys[i]; },
                         [&](std::size_t i) -> const B& { return s.values[i]; });
    }
    write_pairs(items.size(), [&](std::size_t i) -> const A& { return items[i].first; },
                [&](std::size_t i) -> const B& { return items[i].second; });
  }

  /// Writes n pairs (key(i), value(i)): the count, then each key and value.
  template <class Key, class Value>
  void write_pairs(std::size_t n, Key&& key, Value&& value) {
    using A = std::remove_cvref_t<decltype(key(0))>;
    using B = std::remove_cvref_t<decltype(value(0))>;
    w_.write(static_cast<std::uint64_t>(n));
    if constexpr (plain_pair<A, B>) {
      put_packed_pairs(w_.room(n * (sizeof(A) + sizeof(B))), n, key, value);
      w_.advance(n * (sizeof(A) + sizeof(B)));
    } else {
      for (std::size_t i = 0; i < n; ++i) put(key(i)), put(value(i));
    }
  }

  cursor_writer w_;
  const void* source_ = nullptr;  // a pairs_source<K, V> of the message's K and V
  bool count_only_ = false;
  std::size_t pairs_at_ = SIZE_MAX;
};

/// Writes the pairs of `source` (plain bytes) at `p`, as a message holds them.
template <class K, class V>
  requires plain_pair<K, V>
void put_packed_pairs(std::byte* p, const pairs_source<K, V>& source) {
  put_packed_pairs(p, source.keys.size(), [&](std::size_t i) -> const K& { return source.keys[i]; },
                   [&](std::size_t i) -> const V& { return source.values[i]; });
}

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
    } else if constexpr (is_pair_vector<T>) {
      get_pairs(x);
    } else {
      x = r_.read<T>();
    }
  }

  template <class A, class B>
  void get_pairs(std::vector<std::pair<A, B>>& items) {
    const auto n = static_cast<std::size_t>(r_.read<std::uint64_t>());
    items.clear();
    if constexpr (plain_pair<A, B>) {
      if (n > r_.remaining() / (sizeof(A) + sizeof(B))) {
        throw error("shoal::ordered_map: truncated message (" + std::to_string(n) + " key-values announced, " +
                    std::to_string(r_.remaining()) + " bytes left)");
      }
      // One allocation and one write per pair (a resize zero-fills first; emplace_back kept the vector's end in
      // memory, one store per pair).
      assign_pairs(items, packed_pairs<A, B>{r_.position()}, n);
      r_.skip(n * (sizeof(A) + sizeof(B)));
    } else {
      items.reserve(std::min(n, r_.remaining()));  // a malformed count does not reserve more than the bytes allow
      for (std::size_t i = 0; i < n; ++i) {
        auto& [a, b] = items.emplace_back();
        get(a), get(b);
      }
    }
  }

  byte_reader r_;
};

template <class K, class V>
struct codec {
  using message_type = message<K, V>;

  /// Writes `m` from the start of `out` and returns its bytes there (the sender reuses one buffer, no allocation or
  /// zero-filling once warm: `out` may be longer than the message); a range reply's key-values from `items` when
  /// given (its own vector is then empty).
  static std::span<const std::byte> encode(const message_type& m, std::vector<std::byte>& out,
                                           const pairs_source<K, V>* items = nullptr) {
    field_writer w(out, items);
    w(static_cast<std::uint8_t>(m.index()));
    std::visit([&](const auto& x) { w(x); }, m);
    return std::span<const std::byte>(out.data(), w.size());
  }

  /// A range reply (`m`) whose key-values, plain bytes, are still in a node's arrays (`items`): writes the message up
  /// to their count from the start of `out` and returns those bytes; the whole message is them followed by the pairs
  /// (put_packed_pairs), items.keys.size() * (sizeof(K) + sizeof(V)) bytes — so the sender can write the pairs where
  /// the message travels from.
  static std::span<const std::byte> encode_head(const message_type& m, std::vector<std::byte>& out,
                                                const pairs_source<K, V>& items)
    requires plain_pair<K, V>
  {
    field_writer w(out, &items, true);
    w(static_cast<std::uint8_t>(m.index()));
    std::visit([&](const auto& x) { w(x); }, m);
    if (w.pairs_at() != w.size()) throw error("shoal::ordered_map: a range reply's key-values are not its last field");
    return std::span<const std::byte>(out.data(), w.size());
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
