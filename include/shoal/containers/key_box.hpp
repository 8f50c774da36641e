// shoal/containers/key_box.hpp — range queries over multi-dimensional keys (shoal::ordered_map::range).
//
// A multi-dimensional key is a std::tuple or std::array of integers, ordered dimension by dimension (the tuple's own
// lexicographic operator<). A query names, per dimension, either one value or an inclusive interval, in the paper's
// syntax: "4.[2,8].3.[1,3]" matches keys whose first dimension is 4, second in [2,8], third 3, fourth in [1,3].
// The skip list answers it as one ordered range, from the smallest key of the box to the largest, in which every
// node keeps only the keys inside the box (the ordering is by dimension, so the box is not contiguous).
//
// Cost: parse O(length of the text); contains, lowest, highest, check_for O(dimensions); no communication.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"

namespace shoal {

namespace detail {

template <class T>
struct integer_tuple : std::false_type {};
template <std::integral... E>
struct integer_tuple<std::tuple<E...>> : std::true_type {
  static constexpr std::size_t dims = sizeof...(E);
};
template <std::integral E, std::size_t N>
struct integer_tuple<std::array<E, N>> : std::true_type {
  static constexpr std::size_t dims = N;
};

}  // namespace detail

/// Keys that range queries can address dimension by dimension: a std::tuple or std::array of integers, or one integer.
template <class K>
concept multi_dimensional_key = detail::integer_tuple<K>::value || std::integral<K>;

/// One dimension of a range query: every value in [lo, hi].
struct dimension_range {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
  friend bool operator==(const dimension_range&, const dimension_range&) = default;
};

/// A box over the dimensions of a key, parsed from "4.[2,8].3.[1,3]".
class key_box {
 public:
  key_box() = default;
  explicit key_box(std::vector<dimension_range> dims) : dims_(std::move(dims)) { validate(); }

  /// Parses the paper's syntax: dimensions separated by '.', each an integer or "[lo,hi]" (spaces allowed).
  static key_box parse(std::string_view text) {
    std::vector<dimension_range> dims;
    std::size_t pos = 0;
    auto fail = [&](const std::string& what) -> key_box {
      throw usage_error("shoal::key_box: " + what + " at position " + std::to_string(pos) + " of \"" +
                        std::string(text) + "\" (expected dimensions like 4.[2,8].3.[1,3])");
    };
    auto skip_spaces = [&] {
      while (pos < text.size() && text[pos] == ' ') ++pos;
    };
    auto integer = [&](std::int64_t& out) {
      skip_spaces();
      const char* first = text.data() + pos;
      const char* last = text.data() + text.size();
      auto [ptr, ec] = std::from_chars(first, last, out);
      if (ec == std::errc::result_out_of_range) return fail("integer out of range"), false;
      if (ec != std::errc()) return fail("expected an integer"), false;
      pos += static_cast<std::size_t>(ptr - first);
      skip_spaces();
      return true;
    };
    if (text.empty()) return fail("empty range");
    for (;;) {
      skip_spaces();
      dimension_range d;
      if (pos < text.size() && text[pos] == '[') {
        ++pos;
        integer(d.lo);
        if (pos >= text.size() || text[pos] != ',') return fail("expected ',' inside [lo,hi]");
        ++pos;
        integer(d.hi);
        if (pos >= text.size() || text[pos] != ']') return fail("expected ']'");
        ++pos;
        if (d.hi < d.lo) return fail("empty interval [" + std::to_string(d.lo) + "," + std::to_string(d.hi) + "]");
      } else {
        integer(d.lo);
        d.hi = d.lo;
      }
      dims.push_back(d);
      skip_spaces();
      if (pos == text.size()) break;
      if (text[pos] != '.') return fail("expected '.' between dimensions");
      ++pos;
    }
    return key_box(std::move(dims));
  }

  std::size_t dimensions() const { return dims_.size(); }
  const std::vector<dimension_range>& ranges() const { return dims_; }

  /// Throws unless the box has exactly the dimensions of K and every bound fits K's element types.
  template <multi_dimensional_key K>
  void check_for() const {
    constexpr std::size_t n = dims_of<K>();
    if (dims_.size() != n) {
      throw usage_error("shoal::key_box: the range has " + std::to_string(dims_.size()) +
                        " dimensions but the key type has " + std::to_string(n));
    }
    for_each_dim<K>([&](std::size_t i, auto tag) {
      using E = typename decltype(tag)::type;
      const auto& d = dims_[i];
      if (!fits<E>(d.lo) || !fits<E>(d.hi)) {
        throw usage_error("shoal::key_box: dimension " + std::to_string(i + 1) + " bound out of range of its type");
      }
    });
  }

  /// The smallest and the largest key of the box (in the key's dimension-by-dimension order).
  template <multi_dimensional_key K>
  K lowest() const { return corner<K>(true); }
  template <multi_dimensional_key K>
  K highest() const { return corner<K>(false); }

  /// True when every dimension of `key` lies in its interval.
  template <multi_dimensional_key K>
  bool contains(const K& key) const {
    if (dims_.empty()) return true;
    bool inside = true;
    for_each_dim<K>([&](std::size_t i, auto) {
      const auto v = static_cast<std::int64_t>(element(key, i));
      inside = inside && v >= dims_[i].lo && v <= dims_[i].hi;
    });
    return inside;
  }

  /// Number of keys in the box (product of the interval widths), saturating.
  std::uint64_t volume() const {
    std::uint64_t v = 1;
    for (const auto& d : dims_) {
      // hi - lo in unsigned arithmetic (it does not fit int64 for the widest intervals); w == 0 means 2^64 keys.
      const std::uint64_t w = static_cast<std::uint64_t>(d.hi) - static_cast<std::uint64_t>(d.lo) + 1;
      v = (w == 0 || v > UINT64_MAX / w) ? UINT64_MAX : v * w;
    }
    return v;
  }

  bool empty_box() const { return dims_.empty(); }

  friend bool operator==(const key_box&, const key_box&) = default;

 private:
  template <class K>
  static constexpr std::size_t dims_of() {
    if constexpr (std::integral<K>) return 1;
    else return detail::integer_tuple<K>::dims;
  }
  template <class E>
  static bool fits(std::int64_t v) {
    if constexpr (std::is_unsigned_v<E>) {
      return v >= 0 && static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(std::numeric_limits<E>::max());
    } else {
      return v >= static_cast<std::int64_t>(std::numeric_limits<E>::min()) &&
             v <= static_cast<std::int64_t>(std::numeric_limits<E>::max());
    }
  }
  template <class T>
  struct type_tag {
    using type = T;
  };
  template <class K, class F>
  static void for_each_dim(F&& f) {
    if constexpr (std::integral<K>) {
      f(std::size_t{0}, type_tag<K>{});
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (f(I, type_tag<std::tuple_element_t<I, K>>{}), ...);
      }(std::make_index_sequence<dims_of<K>()>{});
    }
  }
  template <class K>
  static auto element(const K& key, std::size_t i) {
    std::int64_t out = 0;
    if constexpr (std::integral<K>) {
      out = static_cast<std::int64_t>(key);
    } else {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((i == I ? (out = static_cast<std::int64_t>(std::get<I>(key)), 0) : 0), ...);
      }(std::make_index_sequence<dims_of<K>()>{});
    }
    return out;
  }
  template <class K>
  K corner(bool low) const {
    check_for<K>();
    if constexpr (std::integral<K>) {
      return static_cast<K>(low ? dims_[0].lo : dims_[0].hi);
    } else {
      K key{};
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((std::get<I>(key) = static_cast<std::tuple_element_t<I, K>>(low ? dims_[I].lo : dims_[I].hi)), ...);
      }(std::make_index_sequence<dims_of<K>()>{});
      return key;
    }
  }

  std::vector<dimension_range> dims_;

  void validate() const {
    for (const auto& d : dims_)
      if (d.hi < d.lo) throw usage_error("shoal::key_box: an interval with hi < lo");
  }
};

}  // namespace shoal
