// shoal/containers/detail/owner_table/completion.hpp — the bookkeeping of CSE_Hash's completion (HASH_Wait) for
// one owner_table on one rank.
//
// As an origin: the owners sent fire-and-forget operations since the last wait (each gets one fence then; per-pair
// FIFO order means the fence's reply comes after every earlier operation ran there; operations with a result need
// none, their replies complete them), the fences still out, the requests issued
// against the blocking factor L, and what fire-and-forget operations reported — inserts rejected for lack of room
// and the first error. As an owner: per origin, the fire-and-forget inserts it rejected and the first error they
// raised since that origin's last fence, which the fence's reply carries back. No messages here: the engine sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"

namespace shoal::detail {

class completion_ledger {
 public:
  /// What an owner reports to one origin at its fence.
  struct origin_report {
    std::uint64_t rejected = 0;
    std::string error;
  };

  completion_ledger(int ranks, std::size_t blocking_factor)
      : wait_at_(blocking_factor != 0 ? blocking_factor : std::numeric_limits<std::size_t>::max()),
        touched_(static_cast<std::size_t>(ranks), 0), from_origin_(static_cast<std::size_t>(ranks)) {}

  // ---- origin side -----------------------------------------------------------------------------------------------

  /// True when the next request must first wait for the earlier ones (L requests issued since the last wait).
  bool must_wait() const { return issued_ >= wait_at_; }
  void issued() { ++issued_; }

  /// `owner` got a fire-and-forget request, which only a fence can confirm.
  void touch(int owner) {
    auto& t = touched_[static_cast<std::size_t>(owner)];
    if (!t) {
      t = 1;
      touched_list_.push_back(owner);
    }
  }

  /// Starts a wait: send(owner) sends a fence to every owner touched since the last wait.
  template <class Send>
  void send_fences(Send&& send) {
    for (int o : touched_list_) {
      touched_[static_cast<std::size_t>(o)] = 0;
      ++fences_;
      send(o);
    }
    touched_list_.clear();
    issued_ = 0;
  }
  bool fences_out() const { return fences_ != 0; }
  /// A fence's reply: what that owner reported.
  void fence_answered(std::uint64_t rejected, std::string error) {
    rejected_ += rejected;
    if (error_.empty()) error_ = std::move(error);
    --fences_;
  }

  /// A fire-and-forget operation run here, inline.
  void rejected_here(std::uint64_t n) { rejected_ += n; }
  void failed_here(std::string what) {
    if (error_.empty()) error_ = std::move(what);
  }

  /// Throws (once) what the fire-and-forget operations reported since the last report: remote_error for the first
  /// error, else container_full with the number of inserts that did not fit (`name`, `capacity`: for the message).
  void report(const std::string& name, std::size_t capacity) {
    const std::uint64_t rejected = std::exchange(rejected_, 0);
    std::string error = std::exchange(error_, {});
    if (!error.empty()) throw remote_error(error);
    if (rejected != 0) {
      throw container_full(name + ": " + std::to_string(rejected) + " fire-and-forget insert(s) (post_*) " +
                           "did not fit (an owner reached dist_map_options::capacity_per_rank = " +
                           std::to_string(capacity) + "); raise capacity_per_rank, or use the batch or future " +
                           "forms, which report exactly what went in");
    }
  }

  // ---- owner side ------------------------------------------------------------------------------------------------

  /// A fire-and-forget operation of `origin` ran here.
  void record(int origin, std::uint64_t rejected) { from_origin_[static_cast<std::size_t>(origin)].rejected += rejected; }
  void record_error(int origin, std::string what) {
    auto& r = from_origin_[static_cast<std::size_t>(origin)];
    if (r.error.empty()) r.error = std::move(what);
  }
  /// At `origin`'s fence: what it reported since its last one.
  origin_report take(int origin) { return std::exchange(from_origin_[static_cast<std::size_t>(origin)], {}); }

 private:
  std::size_t wait_at_;  // the blocking factor L; without one (L = 0) a count never reached
  std::size_t issued_ = 0;
  std::vector<char> touched_;
  std::vector<int> touched_list_;
  std::size_t fences_ = 0;
  std::uint64_t rejected_ = 0;  // fire-and-forget inserts of this rank that did not fit (reported by wait)
  std::string error_;           // first failure of a fire-and-forget operation of this rank
  std::vector<origin_report> from_origin_;  // as an owner: per origin, since its last fence
};

}  // namespace shoal::detail
