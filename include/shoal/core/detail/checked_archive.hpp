// shoal/core/detail/checked_archive.hpp — cereal's binary input, reading from a byte range and refusing sizes the bytes
// cannot hold. shoal writes cereal types (maps, sets, tuples, user types) with cereal::BinaryOutputArchive and reads
// them back with this archive: the same bytes, read in place (no stream), and every container size cereal reads (a
// string's length, a vector's, a map's count) is checked against the bytes left before cereal resizes anything, so a
// corrupt size is a shoal::error, not an allocation of whatever it says (cereal's own archive resizes a string or a
// vector to the size it read, then finds the bytes missing — or does not get that far).
//
// Every element of a sized container takes at least one byte, except elements of an empty class (cereal writes
// nothing for them): a size above the bytes left is refused only past `empty_elements_allowed`, so a container of up
// to that many empty elements still reads, and a corrupt size allocates at most that many elements before the
// missing bytes are found. A bool byte other than 0 or 1 is refused as shoal::byte_reader refuses it.
#pragma once

#include <cereal/cereal.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>

#include "shoal/core/error.hpp"

namespace shoal::detail {

// The errors of both readers of serialized bytes (shoal::byte_reader and this archive), out of line: the checks
// inline into every read, the throws with their strings do not.
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_truncated(std::size_t needed, std::size_t left) {
  throw error("shoal: truncated serialized data (needed " + std::to_string(needed) + " bytes, " +
              std::to_string(left) + " left)");
}
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_truncated_count(std::uint64_t n, std::size_t left) {
  throw error("shoal: truncated serialized data (" + std::to_string(n) + " elements announced, " +
              std::to_string(left) + " bytes left)");
}
[[noreturn, gnu::noinline, gnu::cold]] inline void throw_malformed(const std::string& what) {
  throw error("shoal: malformed serialized data (" + what + ")");
}
/// A serialized bool's byte: 0 or 1, anything else refused (reading it as a bool would be undefined behaviour).
inline bool bool_of_byte(std::uint8_t b) {
  if (b > 1) [[unlikely]] throw_malformed("a bool of value " + std::to_string(b));
  return b == 1;
}

class checked_input_archive : public cereal::InputArchive<checked_input_archive, cereal::AllowEmptyClassElision> {
 public:
  static constexpr std::uint64_t empty_elements_allowed = std::uint64_t{1} << 16;

  checked_input_archive(const std::byte* begin, const std::byte* end)
      : cereal::InputArchive<checked_input_archive, cereal::AllowEmptyClassElision>(this), pos_(begin), end_(end) {}

  void loadBinary(void* data, std::size_t n) {
    if (n > remaining()) [[unlikely]] throw_truncated(n, remaining());
    if (n != 0) std::memcpy(data, pos_, n);
    pos_ += n;
  }

  /// A container's size, just read: refused when its elements cannot all be in the bytes left.
  void check_size(std::uint64_t size) const {
    if (size > remaining() && size > empty_elements_allowed) [[unlikely]] throw_truncated_count(size, remaining());
  }

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - pos_); }
  const std::byte* position() const { return pos_; }

 private:
  const std::byte* pos_;
  const std::byte* end_;
};

// What cereal asks of a binary input archive (the functions cereal::BinaryInputArchive has), plus the size check.
template <class T>
std::enable_if_t<std::is_arithmetic_v<T>> CEREAL_LOAD_FUNCTION_NAME(checked_input_archive& ar, T& t) {
  if constexpr (std::is_same_v<T, bool>) {
    std::uint8_t b = 0;
    ar.loadBinary(&b, 1);
    t = bool_of_byte(b);
  } else {
    ar.loadBinary(std::addressof(t), sizeof(t));
  }
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(checked_input_archive& ar, cereal::BinaryData<T>& bd) {
  ar.loadBinary(bd.data, static_cast<std::size_t>(bd.size));
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(checked_input_archive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(checked_input_archive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  ar.check_size(static_cast<std::uint64_t>(t.size));
}

}  // namespace shoal::detail

CEREAL_REGISTER_ARCHIVE(shoal::detail::checked_input_archive)
