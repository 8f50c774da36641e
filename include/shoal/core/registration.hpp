// shoal/core/registration.hpp — the one lifetime and allocation substrate of every container (for container authors).
//
// Programs do not need this header; a container built on shoal's core (shoal's own, or a user's) holds one. It is
// the container-side counterpart of core/layer.hpp.
//
// A container holds one `registration`: its team, the run (environment) it was made in, the blocks of the symmetric
// heap this rank allocated for it, and its slot in the run's table of message-handler targets. Every allocation of a
// container goes through it (team-collective, hosted on one team rank, or local), and so does every handler target:
//
//   - Destruction is collective over the team (docs/design.md, "Lifetime"): release() waits for every rank of the
//     team (a barrier, so no rank still reads or writes what is freed), then frees this rank's blocks and its
//     handler slot. A moved-from registration owns nothing and releases nothing.
//   - After the run has ended (the environment was finalized) release() is a no-op: the memory, the communicators
//     and the slots went with the environment, and a later environment's heap never receives a free of them.
//   - check() throws usage_error when the container belongs to another run (made before a finalize, used after a
//     new environment started) or was moved from.
//   - A container that receives messages calls release() in its destructor's body, once its own operations are
//     complete: the barrier then runs while every member still exists (other ranks' last messages are served), and
//     the slot is empty before any member is destroyed.
//   - Handler slots are agreed over the team (the lowest slot free on every rank of the team), so the same container
//     has the same slot on each of its ranks even when its ranks also belong to other teams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"
#include "shoal/core/team.hpp"

namespace shoal {

/// The handler target in `slot` of the running environment (a container registered there).
inline void* handler_target(std::uint32_t slot) { return detail::rt().handler_targets[slot]; }

class registration {
 public:
  static constexpr std::uint32_t no_slot = ~std::uint32_t{0};

  /// Owns nothing (a moved-from container).
  registration() = default;

  /// Collective over `t` (no communication): a container named `name` on team `t` of the running environment.
  /// `name` starts every error message ("shoal::array").
  registration(const team& t, std::string name) : team_(t), run_(t.run()), name_(std::move(name)) {
    if (!t.valid()) {
      throw usage_error(name_ +
                        ": the team is empty on this rank (a rank that split itself out with a negative color "
                        "holds no team); construct containers of a team only on its ranks");
    }
    if (!detail::run_is_live(run_)) {
      detail::rt();  // "not initialized" / "finalized"
      throw usage_error(name_ +
                        ": the team belongs to an environment that has ended; make teams in the running one");
    }
  }

  registration(const registration&) = delete;
  registration& operator=(const registration&) = delete;
  registration(registration&& o) noexcept
      : team_(std::move(o.team_)), run_(std::exchange(o.run_, 0)), name_(std::move(o.name_)),
        blocks_(std::exchange(o.blocks_, {})), slot_(std::exchange(o.slot_, no_slot)) {
    o.team_ = shoal::team();
  }
  registration& operator=(registration&& o) noexcept {
    if (this != &o) {
      release();
      team_ = std::exchange(o.team_, shoal::team());
      run_ = std::exchange(o.run_, 0);
      name_ = std::move(o.name_);
      blocks_ = std::exchange(o.blocks_, {});
      slot_ = std::exchange(o.slot_, no_slot);
    }
    return *this;
  }
  ~registration() { release(); }

  const shoal::team& team() const noexcept { return team_; }
  /// This rank in the container's team.
  int rank() const noexcept { return team_.rank(); }
  /// Ranks of the container's team.
  int size() const noexcept { return team_.size(); }
  std::uint64_t run() const noexcept { return run_; }
  const std::string& name() const noexcept { return name_; }
  bool empty() const noexcept { return run_ == 0; }
  /// Whether the container belongs to the running environment (false when moved from or after its run ended).
  bool live() const noexcept { return detail::run_is_live(run_); }

  /// Throws usage_error unless the container belongs to the running environment.
  void check() const {
    if (live()) [[likely]] return;
    throw_unusable();
  }

  /// Team-collective: every rank of the team allocates n elements; element i of the result is team rank i's block.
  /// On failure on any rank of the team, every rank of the team throws heap_exhausted (agreed over the team only).
  template <remote_storable T>
  std::vector<global_ptr<T>> allocate_collective(std::size_t n) {
    auto all = shoal::allocate_collective<T>(n, team_);
    blocks_.push_back(all[static_cast<std::size_t>(team_.rank())].raw());
    return all;
  }

  /// Team-collective: team rank `host` allocates n elements, every rank of the team learns the pointer. If the host
  /// cannot allocate, every rank of the team throws heap_exhausted.
  template <remote_storable T>
  global_ptr<T> allocate_hosted(int host, std::size_t n) {
    check_host(host);
    std::string why;
    std::uint64_t raw = 0;
    if (team_.rank() == host) {
      try {
        raw = allocate<T>(n).raw();
      } catch (const heap_exhausted& e) {
        why = e.what();
      }
    }
    raw = team_.broadcast(raw, host);
    if (raw == 0) {
      throw heap_exhausted(!why.empty() ? name_ + ": " + why
                                        : name_ + ": host rank " + std::to_string(host) +
                                              " cannot allocate " + detail::format_size(n * sizeof(T)) +
                                              "; raise SHOAL_HEAP_SIZE or shoal::options::heap_size");
    }
    if (team_.rank() == host) blocks_.push_back(raw);
    return global_ptr<T>::from_raw(raw);
  }

  /// Local: n elements in this rank's segment, freed with the container (or by deallocate).
  template <remote_storable T>
  global_ptr<T> allocate_local(std::size_t n) {
    auto p = allocate<T>(n);
    blocks_.push_back(p.raw());
    return p;
  }

  /// Local: frees a block this registration allocated on this rank before the container ends (a resize, a
  /// migration). A pointer of another rank or not held here is ignored (the rank that holds it frees it).
  template <class T>
  void deallocate(global_ptr<T> p) {
    if (p.is_null()) return;
    for (auto& raw : blocks_) {
      if (raw == p.raw()) {
        raw = blocks_.back();
        blocks_.pop_back();
        shoal::deallocate(p);
        return;
      }
    }
  }

  /// Team-collective: puts `target` into a handler slot agreed by every rank of the team; messages name the
  /// container by slot() and find it again with handler_target(slot()). Freed by release().
  void register_target(void* target) {
    auto& table = detail::rt().handler_targets;
    std::uint32_t candidate = 0;
    for (;;) {
      std::uint32_t free = candidate;
      while (free < table.size() && table[free] != nullptr) ++free;
      const auto hi = team_.allreduce(free, op::max{});
      const auto lo = team_.allreduce(free, op::min{});
      candidate = hi;
      if (hi == lo) break;  // free on every rank of the team
    }
    while (table.size() <= candidate) table.push_back(nullptr);
    table[candidate] = target;
    slot_ = candidate;
  }
  std::uint32_t slot() const noexcept { return slot_; }

  /// Collective over the team (see the header comment): barrier, then frees this rank's blocks and slot. No-op when
  /// moved from or after the run has ended. Errors are swallowed: a destructor must not throw.
  void release() noexcept {
    if (live()) {
      try {
        team_.barrier();
      } catch (...) {
      }
      for (const auto raw : blocks_) {
        try {
          shoal::deallocate(global_ptr<std::byte>::from_raw(raw));
        } catch (...) {
        }
      }
      if (slot_ != no_slot) detail::g_runtime->handler_targets[slot_] = nullptr;
    }
    blocks_.clear();
    slot_ = no_slot;
    run_ = 0;
  }

  /// Throws usage_error unless `host` is a rank of the team (the same check on every rank, so all throw alike).
  void check_host(int host) const {
    if (host < 0 || host >= team_.size()) {
      throw usage_error(name_ + ": host rank " + std::to_string(host) +
                        " is outside the team of " + std::to_string(team_.size()) + " ranks");
    }
  }

 private:
  [[noreturn]] void throw_unusable() const {
    if (run_ == 0) {
      throw usage_error(name_ +
                        ": this handle was moved from (or never constructed); use the object it was moved to");
    }
    if (detail::g_runtime == nullptr) detail::rt();  // "not initialized" / "finalized"
    throw usage_error(name_ + ": made in environment run " + std::to_string(run_) +
                      ", used in run " + std::to_string(detail::g_runtime->run) +
                      "; a container belongs to the environment it was made in (its memory went with it)");
  }

  shoal::team team_;
  std::uint64_t run_ = 0;
  std::string name_ = "shoal container";  // "shoal::array", ...: the prefix of every error message
  std::vector<std::uint64_t> blocks_;  // raw global pointers of this rank's blocks
  std::uint32_t slot_ = no_slot;
};

}  // namespace shoal
