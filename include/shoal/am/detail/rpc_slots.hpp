// shoal/am/detail/rpc_slots.hpp — the futures of rpcs waiting for their replies, by the slot number the request
// carries (reused once the reply arrived), and the count of rpc results never taken (reported at finalize).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"
#include "shoal/core/layer.hpp"

namespace shoal::am::detail {

class rpc_slots {
 public:
  std::uint32_t add(shoal::layer::state_ptr<shoal::layer::counted> state) {
    if (!free_.empty()) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      pending_[slot] = std::move(state);
      return slot;
    }
    pending_.push_back(std::move(state));
    return static_cast<std::uint32_t>(pending_.size() - 1);
  }
  shoal::layer::state_ptr<shoal::layer::counted> take(std::uint32_t slot) {
    if (slot >= pending_.size() || !pending_[slot]) throw error("shoal::am: reply for an unknown rpc (corrupt stream)");
    auto state = std::move(pending_[slot]);
    free_.push_back(slot);
    return state;
  }
  /// Results of rpcs not yet taken with future::get() (kept by the futures' states).
  std::size_t& live() { return live_; }

 private:
  std::vector<shoal::layer::state_ptr<shoal::layer::counted>> pending_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace shoal::am::detail
