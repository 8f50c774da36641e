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
// missing bytes are found.
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

class checked_input_archive : public cereal::InputArchive<checked_input_archive, cereal::AllowEmptyClassElision> {
 public:
  static constexpr std::uint64_t empty_elements_allowed = std::uint64_t{1} << 16;

  checked_input_archive(const std::byte* begin, const std::byte* end)
      : cereal::InputArchive<checked_input_archive, cereal::AllowEmptyClassElision>(this), pos_(begin), end_(end) {}

  void loadBinary(void* data, std::size_t n) {
    if (n > remaining()) [[unlikely]] {
      throw error("shoal: truncated serialized data (needed " + std::to_string(n) + " bytes, " +
                  std::to_string(remaining()) + " left)");
    }
    if (n != 0) std::memcpy(data, pos_, n);
    pos_ += n;
  }

  /// A container's size, just read: refused when its elements cannot all be in the bytes left.
  void check_size(std::uint64_t size) const {
    if (size > remaining() && size > empty_elements_allowed) [[unlikely]] {
      throw error("shoal: truncated serialized data (" + std::to_string(size) + " elements announced, " +
                  std::to_string(remaining()) + " bytes left)");
    }
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
  ar.loadBinary(std::addressof(t), sizeof(t));
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
