// shoal/core/serialize.hpp — how values become bytes, for the heap and for messages alike.
//
// One rule for the whole library: a trivially copyable type travels as its bytes; std::string and std::vector of
// trivially copyable elements as a length and their bytes; every other type (maps, tuples, nested containers, user
// types with a cereal `serialize` function) through cereal's binary archive — written by cereal::BinaryOutputArchive
// and read back by detail::checked_input_archive (the same bytes, every container size checked against the bytes
// left before anything is allocated for it). A type that fits none of these is rejected at compile time by the
// `serializable` concept, whose name appears in the error.
#pragma once

#include <cereal/archives/binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/optional.hpp>
#include <cereal/types/set.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/tuple.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/unordered_set.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <streambuf>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shoal/core/detail/checked_archive.hpp"
#include "shoal/core/error.hpp"

namespace shoal {

namespace detail {
/// Views (std::span, std::string_view) are trivially copyable, but their bytes are an address on this rank.
template <class T>
inline constexpr bool is_view = false;
template <class T, std::size_t N>
inline constexpr bool is_view<std::span<T, N>> = true;
template <class C, class Traits>
inline constexpr bool is_view<std::basic_string_view<C, Traits>> = true;
}  // namespace detail

/// Copied as raw bytes.
template <class T>
concept trivially_serializable = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !detail::is_view<T>;

/// A string or vector whose elements are copied as raw bytes after a length.
template <class T>
concept contiguous_serializable =
    std::is_same_v<T, std::string> ||
    (requires { typename T::value_type; } && std::is_same_v<T, std::vector<typename T::value_type>> &&
     !std::is_same_v<typename T::value_type, bool> && trivially_serializable<typename T::value_type>);

/// Serialized by cereal (standard containers, tuples, user types with a serialize/save/load function template: the
/// bytes are read back by shoal's checked binary archive, not cereal::BinaryInputArchive).
template <class T>
concept cereal_serializable = cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value &&
                              cereal::traits::is_input_serializable<T, detail::checked_input_archive>::value &&
                              std::is_default_constructible_v<T>;

namespace detail {
/// A std::vector whose elements are not copied as raw bytes (strings, vectors, cereal types, bool): written as its
/// length and then each element by shoal's own rules — the bytes cereal writes for it, but read back with the length
/// checked against the bytes left before anything is allocated (cereal would resize to whatever a corrupt length
/// says). Elements of an empty class, which may take no bytes, stay with cereal.
template <class T>
inline constexpr bool is_element_vector = false;
template <class E>
inline constexpr bool is_element_vector<std::vector<E>> = !std::is_empty_v<E>;
}  // namespace detail

/// Every type shoal can store remotely or send in a message.
template <class T>
concept serializable =
    !std::is_pointer_v<T> && (trivially_serializable<T> || contiguous_serializable<T> || cereal_serializable<T>);

namespace detail {

/// std::streambuf that appends to a byte vector (for cereal's output archive).
class vector_outbuf : public std::streambuf {
 public:
  explicit vector_outbuf(std::vector<std::byte>& out) : out_(out) {}

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    const auto* b = reinterpret_cast<const std::byte*>(s);
    out_.insert(out_.end(), b, b + n);
    return n;
  }
  int_type overflow(int_type ch) override {
    if (ch != traits_type::eof()) out_.push_back(static_cast<std::byte>(ch));
    return ch;
  }

 private:
  std::vector<std::byte>& out_;
};

}  // namespace detail

/// Appends serialized values to a byte vector.
namespace detail {

/// Bytes that `n` elements take written as a std::vector of them: a 64-bit length, then the elements' bytes.
template <trivially_serializable T>
constexpr std::size_t contiguous_bytes(std::size_t n) {
  return sizeof(std::uint64_t) + n * sizeof(T);
}

/// Writes `elements` as a std::vector of them at `p`, which has room for contiguous_bytes<T>(elements.size()), and
/// moves `p` past them (the bytes byte_writer::write_contiguous appends).
template <trivially_serializable T>
void put_contiguous(std::byte*& p, std::span<const T> elements) {
  const std::uint64_t n = elements.size();
  std::memcpy(p, &n, sizeof n);
  p += sizeof n;
  if (n != 0) std::memcpy(p, elements.data(), elements.size_bytes());  // an empty one may have no buffer
  p += elements.size_bytes();
}

}  // namespace detail

class byte_writer {
 public:
  explicit byte_writer(std::vector<std::byte>& out) : out_(out) {}

  void write_bytes(const void* data, std::size_t n) {
    // resize + memcpy rather than insert: GCC 12 at -O3 reports a false -Wstringop-overflow in vector::insert's
    // inlined memmove when the writer is reused after clear() (the ordered map's encode buffer).
    if (n == 0) return;
    const std::size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, data, n);
  }

  template <serializable T>
  void write(const T& value) {
    if constexpr (trivially_serializable<T>) {
      write_bytes(&value, sizeof(T));
    } else if constexpr (contiguous_serializable<T>) {
      write_contiguous(std::span<const typename T::value_type>(value.data(), value.size()));
    } else if constexpr (detail::is_element_vector<T>) {
      const std::uint64_t n = value.size();
      write_bytes(&n, sizeof n);
      for (const auto& e : value) write(static_cast<const typename T::value_type&>(e));
    } else {
      detail::vector_outbuf buf(out_);
      std::ostream os(&buf);
      cereal::BinaryOutputArchive ar(os);
      ar(value);
    }
  }

  /// Elements written as a std::vector<T> of them is (read back as one): the length, then their bytes.
  template <trivially_serializable T>
  void write_contiguous(std::span<const T> elements) {
    const std::size_t at = out_.size();
    out_.resize(at + detail::contiguous_bytes<T>(elements.size()));
    std::byte* p = out_.data() + at;
    detail::put_contiguous(p, elements);
  }

  std::vector<std::byte>& buffer() { return out_; }

 private:
  std::vector<std::byte>& out_;
};

/// Reads serialized values from a byte range, in the order they were written.
class byte_reader {
 public:
  byte_reader(const std::byte* begin, std::size_t size) : pos_(begin), end_(begin + size) {}
  explicit byte_reader(std::span<const std::byte> bytes) : byte_reader(bytes.data(), bytes.size()) {}

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - pos_); }
  const std::byte* position() const { return pos_; }
  /// Moves past `n` bytes read in place through position().
  void skip(std::size_t n) {
    need(n);
    pos_ += n;
  }

  void read_bytes(void* dst, std::size_t n) {
    need(n);
    std::memcpy(dst, pos_, n);
    pos_ += n;
  }

  template <serializable T>
  T read() {
    if constexpr (std::is_same_v<T, bool>) {
      std::uint8_t b;
      read_bytes(&b, 1);
      return detail::bool_of_byte(b);
    } else if constexpr (trivially_serializable<T>) {
      T v;
      read_bytes(&v, sizeof(T));
      return v;
    } else if constexpr (contiguous_serializable<T>) {
      std::uint64_t n;
      read_bytes(&n, sizeof n);
      T v;
      constexpr std::size_t width = sizeof(typename T::value_type);
      if (n > SIZE_MAX / width) [[unlikely]] {  // n * width would wrap around
        detail::throw_malformed(std::to_string(n) + " elements of " + std::to_string(width) + " bytes announced");
      }
      const std::size_t bytes = static_cast<std::size_t>(n) * width;
      need(bytes);
      v.resize(static_cast<std::size_t>(n));
      if (bytes != 0) std::memcpy(v.data(), pos_, bytes);  // an empty vector has no buffer: memcpy(nullptr) is UB
      pos_ += bytes;
      return v;
    } else if constexpr (detail::is_element_vector<T>) {
      std::uint64_t n;
      read_bytes(&n, sizeof n);
      if (n > remaining()) [[unlikely]] detail::throw_truncated_count(n, remaining());  // each element: >= 1 byte
      T v;
      v.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) v.push_back(read<typename T::value_type>());
      return v;
    } else {
      detail::checked_input_archive ar(pos_, end_);
      T v{};
      try {
        ar(v);
      } catch (const cereal::Exception& e) {  // what cereal checks itself (a std::variant's index out of range, ...)
        detail::throw_malformed(e.what());
      }
      pos_ = ar.position();
      return v;
    }
  }

 private:
  // The check inlines into every read (the message decoders keep the reader in registers); the throw, with its
  // string, stays out of line (checked_archive.hpp).
  void need(std::size_t n) const {
    if (remaining() < n) [[unlikely]] detail::throw_truncated(n, remaining());
  }
  const std::byte* pos_;
  const std::byte* end_;
};

/// The serialized bytes of one value.
template <serializable T>
std::vector<std::byte> to_bytes(const T& value) {
  std::vector<std::byte> out;
  byte_writer(out).write(value);
  return out;
}

/// The value serialized in `bytes` by to_bytes.
template <serializable T>
T from_bytes(std::span<const std::byte> bytes) {
  return byte_reader(bytes).read<T>();
}

}  // namespace shoal
