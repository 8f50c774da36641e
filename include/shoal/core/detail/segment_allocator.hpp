// shoal/core/detail/segment_allocator.hpp — the allocator of one rank's own heap segment.
//
// Offsets, not pointers: the same allocator serves a segment that other ranks address by offset. Free blocks are
// kept by offset (to coalesce neighbours on release) and by size (best fit in O(log n)). Offset 0 is never handed
// out, so a zero global pointer is null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>

namespace shoal::detail {

class segment_allocator {
 public:
  static constexpr std::size_t reserved_prefix = 64;  // offset 0 stays null

  explicit segment_allocator(std::size_t capacity = 0) { reset(capacity); }

  void reset(std::size_t capacity) {
    capacity_ = capacity;
    in_use_ = 0;
    by_offset_.clear();
    by_size_.clear();
    allocated_.clear();
    if (capacity > reserved_prefix) add_free(reserved_prefix, capacity - reserved_prefix);
  }

  /// Offset of a block of `bytes` aligned to `align` (a power of two), or nullopt when no free block fits.
  std::optional<std::size_t> allocate(std::size_t bytes, std::size_t align) {
    if (bytes == 0) bytes = 1;
    bytes = round_up(bytes, min_align);
    if (align < min_align) align = min_align;
    // Best fit among blocks large enough for the worst-case alignment padding.
    for (auto it = by_size_.lower_bound(bytes); it != by_size_.end(); ++it) {
      const std::size_t off = it->second;
      const std::size_t size = it->first;
      const std::size_t start = round_up(off, align);
      const std::size_t pad = start - off;
      if (pad + bytes > size) continue;
      remove_free(off, size);
      if (pad > 0) add_free(off, pad);
      const std::size_t tail = size - pad - bytes;
      if (tail > 0) add_free(start + bytes, tail);
      allocated_.emplace(start, bytes);
      in_use_ += bytes;
      return start;
    }
    return std::nullopt;
  }

  /// Returns a block to the free lists; false if `offset` is not an allocated block.
  bool deallocate(std::size_t offset) {
    auto it = allocated_.find(offset);
    if (it == allocated_.end()) return false;
    std::size_t off = offset;
    std::size_t size = it->second;
    allocated_.erase(it);
    in_use_ -= size;
    // Coalesce with the following block.
    auto next = by_offset_.find(off + size);
    if (next != by_offset_.end()) {
      const std::size_t nsize = next->second;
      remove_free(next->first, nsize);
      size += nsize;
    }
    // Coalesce with the preceding block.
    auto after = by_offset_.lower_bound(off);
    if (after != by_offset_.begin()) {
      auto prev = std::prev(after);
      if (prev->first + prev->second == off) {
        const std::size_t poff = prev->first;
        const std::size_t psize = prev->second;
        remove_free(poff, psize);
        off = poff;
        size += psize;
      }
    }
    add_free(off, size);
    return true;
  }

  std::size_t capacity() const { return capacity_; }
  std::size_t in_use() const { return in_use_; }
  std::size_t largest_free_block() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }
  bool owns(std::size_t offset) const { return allocated_.count(offset) != 0; }
  std::size_t block_size(std::size_t offset) const {
    auto it = allocated_.find(offset);
    return it == allocated_.end() ? 0 : it->second;
  }

 private:
  static constexpr std::size_t min_align = 16;
  static std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) & ~(a - 1); }

  void add_free(std::size_t off, std::size_t size) {
    by_offset_.emplace(off, size);
    by_size_.emplace(size, off);
  }
  void remove_free(std::size_t off, std::size_t size) {
    by_offset_.erase(off);
    auto [lo, hi] = by_size_.equal_range(size);
    for (auto it = lo; it != hi; ++it) {
      if (it->second == off) {
        by_size_.erase(it);
        return;
      }
    }
  }

  std::size_t capacity_ = 0;
  std::size_t in_use_ = 0;
  std::map<std::size_t, std::size_t> by_offset_;
  std::multimap<std::size_t, std::size_t> by_size_;
  std::unordered_map<std::size_t, std::size_t> allocated_;
};

}  // namespace shoal::detail
