// shoal/am/detail/code_ranges.hpp — where this process's executable code lies. A received group names its handler
// (and a function-pointer handler its function) by an offset from the anchor (wire.hpp); a word that lands outside
// every executable segment of the loaded images can only come from a corrupt stream, and is refused before anything
// jumps there. The segments come from dl_iterate_phdr (glibc's <link.h>): the anchor's image is checked first, with
// two compares; an address outside it (a handler in another image loaded near it) is looked up among every image's
// segments, scanned again once when not found (an image loaded since). Without <link.h> nothing is refused.
#pragma once

#include <cstdint>
#include <vector>

#if __has_include(<link.h>)
#include <link.h>
#define SHOAL_AM_CODE_RANGES 1
#else
#define SHOAL_AM_CODE_RANGES 0
#endif

namespace shoal::am::detail {

class code_ranges {
 public:
  /// The executable segments of the images loaded now; `anchor` lies in the one checked first.
  explicit code_ranges(std::uintptr_t anchor) : anchor_(anchor) { scan(); }

  /// True when `address` lies in executable code of this process.
  bool contains(std::uintptr_t address) {
    if (address - lo_ < hi_ - lo_) [[likely]] return true;
    return in_any(address) || (scan(), in_any(address));
  }

 private:
  struct range {
    std::uintptr_t lo, hi;
  };

  bool in_any(std::uintptr_t address) const {
    for (const range& r : ranges_) {
      if (address - r.lo < r.hi - r.lo) return true;
    }
    return false;
  }

  void scan() {
    ranges_.clear();
#if SHOAL_AM_CODE_RANGES
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* out) {
          auto& ranges = *static_cast<std::vector<range>*>(out);
          for (int i = 0; i < info->dlpi_phnum; ++i) {
            const auto& h = info->dlpi_phdr[i];
            if (h.p_type == PT_LOAD && (h.p_flags & PF_X) != 0) {
              const std::uintptr_t lo = info->dlpi_addr + h.p_vaddr;
              ranges.push_back({lo, lo + h.p_memsz});
            }
          }
          return 0;
        },
        &ranges_);
#endif
    lo_ = 0;
    hi_ = ~std::uintptr_t{0};  // no segment holds the anchor (or none are known): every address passes
    for (const range& r : ranges_) {
      if (anchor_ - r.lo < r.hi - r.lo) lo_ = r.lo, hi_ = r.hi;
    }
  }

  std::uintptr_t anchor_;
  std::uintptr_t lo_ = 0, hi_ = 0;  // the anchor's segment
  std::vector<range> ranges_;
};

}  // namespace shoal::am::detail
