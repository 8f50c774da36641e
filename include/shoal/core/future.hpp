// shoal/core/future.hpp — the one completion vocabulary of shoal.
//
// Non-blocking remote memory operations and remote procedure calls both return shoal::future<T>.
//   ready()  polls (and makes progress) without blocking;  wait() blocks, making progress;
//   get()    waits and returns the value (once: it moves the value out), rethrowing a remote error.
//   wait_all(f...) / wait_all(range) waits for several.
//
// A future and the state behind it belong to the thread that makes the rank's shoal calls (active-message handlers
// and container code run there too; the progress thread never touches a future): the state's reference count is a
// plain counter, not an atomic one, so taking and dropping a future costs no locked instruction.
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "shoal/core/error.hpp"
#include "shoal/core/progress.hpp"

namespace shoal {

namespace detail {

struct empty_value {};

/// An object owned by reference counting, the count kept in the object (not atomic: see the header comment). The
/// last counted_ptr to let go deletes it, through the virtual destructor.
class counted {
 public:
  counted() = default;
  counted(const counted&) = delete;
  counted& operator=(const counted&) = delete;
  virtual ~counted() = default;

  void retain() noexcept { ++refs_; }
  void release() noexcept {
    if (--refs_ == 0) delete this;
  }
  /// How many counted_ptr own it now.
  std::uint32_t use_count() const noexcept { return refs_; }

 private:
  std::uint32_t refs_ = 0;
};

/// Owns a counted object (T derives from counted): copying adds an owner, destroying removes one.
template <class T>
class counted_ptr {
 public:
  counted_ptr() = default;
  explicit counted_ptr(T* p) noexcept : p_(p) {
    if (p_ != nullptr) p_->retain();
  }
  counted_ptr(const counted_ptr& o) noexcept : counted_ptr(o.p_) {}
  counted_ptr(counted_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <class U>
    requires std::convertible_to<U*, T*>
  counted_ptr(counted_ptr<U> o) noexcept : p_(o.release_ownership()) {}  // NOLINT: implicit, as shared_ptr's
  counted_ptr& operator=(counted_ptr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~counted_ptr() {
    if (p_ != nullptr) p_->release();
  }

  T* get() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  T* operator->() const noexcept { return p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  /// Gives up this pointer's share without decrementing: the caller now holds it (a converting move).
  T* release_ownership() noexcept { return std::exchange(p_, nullptr); }
  /// Takes over a share already counted (the other half of release_ownership).
  static counted_ptr adopt(T* p) noexcept {
    counted_ptr c;
    c.p_ = p;
    return c;
  }

 private:
  T* p_ = nullptr;
};

/// A new T(args...) with one owner.
template <class T, class... Args>
counted_ptr<T> make_counted(Args&&... args) {
  return counted_ptr<T>(new T(std::forward<Args>(args)...));
}

/// The same object, owned as a T (its dynamic type must be T or derive from it).
template <class T, class U>
counted_ptr<T> static_counted_cast(counted_ptr<U> p) noexcept {
  return counted_ptr<T>::adopt(static_cast<T*>(p.release_ownership()));
}

template <class T>
using future_value_t = std::conditional_t<std::is_void_v<T>, empty_value, T>;

class future_owner;

/// The completion of one future: whether it completed and, once it has, its value. A cell that completed without a
/// value failed; its error is kept by its owner (future_owner::error_of), so a cell is small enough to be allocated
/// by the dozen (future_cells). A cell lives inside its owner and knows how far in (`owner_offset`), so a future is
/// a pointer to its cell and nothing else.
template <class V>
struct future_cell {
  bool done;                   // set by the owner when it is built (adopt_cell), with the next field
  std::uint16_t owner_offset;  // bytes from the owner's start to this cell
  std::optional<V> value;

  future_owner& owner() const noexcept;
};

/// Owns cells of futures: one cell of its own (future_state), or many allocated together (future_cells). Keeps them
/// alive (the count), is asked when a cell is not done yet, and keeps the errors of cells that failed.
class future_owner : public counted {
 public:
  /// `cell` (one of this owner's) was not done: polls, or starts what it waits for; true once it is done.
  virtual bool poll(const void* cell) = 0;
  /// The error of `cell`, done without a value.
  virtual std::exception_ptr error_of(const void* cell) const = 0;

 protected:
  /// Tells `cell`, inside this owner, where its owner starts.
  template <class V>
  void adopt_cell(future_cell<V>& cell) noexcept {
    const auto offset = reinterpret_cast<const char*>(&cell) - reinterpret_cast<const char*>(this);
    cell.done = false;
    cell.owner_offset = static_cast<std::uint16_t>(offset);
  }
};

template <class V>
future_owner& future_cell<V>::owner() const noexcept {
  // The owner set owner_offset from its own address to this cell's (adopt_cell): step back by it.
  const char* at = reinterpret_cast<const char*>(this) - owner_offset;
  return *reinterpret_cast<future_owner*>(const_cast<char*>(at));
}

/// Shared state of a future that has a cell of its own. `test()` is overridden by producers that must poll (an MPI
/// request); producers that are completed by progress (an rpc reply) call `set_value` / `set_error` from their handler.
template <class V>
struct future_state : future_owner, future_cell<V> {
  future_state() noexcept { adopt_cell(static_cast<future_cell<V>&>(*this)); }

  virtual bool test() { return this->done; }
  bool poll(const void*) final { return test(); }
  std::exception_ptr error_of(const void*) const final { return error; }

  void set_value(V v) {
    this->value.emplace(std::move(v));
    this->done = true;
  }
  void set_error(std::exception_ptr e) {
    error = std::move(e);
    this->done = true;
  }

  std::exception_ptr error;
};

/// N cells allocated together (one allocation for N futures), completed by index; the few errors are kept aside, so a
/// cell is its flag and its value. Derive to poll (override poll, e.g. to send what the cells wait for).
template <class V, std::size_t N>
class future_cells : public future_owner {
 public:
  using cell_type = future_cell<V>;
  static_assert(sizeof(future_owner) + alignof(cell_type) + (N - 1) * sizeof(cell_type) < 65536,
                "future_cells: a cell's offset in its owner must fit 16 bits; allocate fewer cells together");

  future_cells() noexcept {
    for (cell_type& c : cells_) adopt_cell(c);
  }

  /// The future of cell `index`, sharing ownership of the cells (T: the future's type, whose value type is V).
  template <class T>
  auto future_of(std::uint32_t index);

  bool cell_done(std::uint32_t index) const { return cells_[index].done; }
  void set_value(std::uint32_t index, V v) {
    cells_[index].value.emplace(std::move(v));
    cells_[index].done = true;
  }
  void set_error(std::uint32_t index, std::exception_ptr e) {
    errors_.emplace_back(index, std::move(e));
    cells_[index].done = true;
  }

  bool poll(const void* cell) override { return static_cast<const cell_type*>(cell)->done; }
  std::exception_ptr error_of(const void* cell) const override {
    const auto index = static_cast<std::uint32_t>(static_cast<const cell_type*>(cell) - cells_.data());
    for (const auto& [i, e] : errors_) {
      if (i == index) return e;
    }
    return nullptr;
  }

 private:
  std::array<cell_type, N> cells_;
  std::vector<std::pair<std::uint32_t, std::exception_ptr>> errors_;  // (cell, its error): failures are rare
};

}  // namespace detail

template <class T = void>
class future {
 public:
  using value_type = T;
  using state_type = detail::future_state<detail::future_value_t<T>>;
  using cell_type = detail::future_cell<detail::future_value_t<T>>;

  future() = default;
  /// The future of a state of its own (detail::make_counted, or layer::make_state): takes over `state`'s share.
  explicit future(detail::counted_ptr<state_type> state) noexcept
      : cell_(static_cast<cell_type*>(state.release_ownership())) {}

  future(const future& o) noexcept : cell_(o.cell_) {
    if (cell_ != nullptr) cell_->owner().retain();
  }
  future& operator=(const future& o) noexcept {
    future copy(o);
    std::swap(cell_, copy.cell_);
    return *this;
  }
  future(future&& o) noexcept : cell_(std::exchange(o.cell_, nullptr)) {}
  future& operator=(future&& o) noexcept {
    future taken(std::move(o));
    std::swap(cell_, taken.cell_);
    return *this;
  }
  ~future() {
    if (cell_ != nullptr) cell_->owner().release();
  }

  /// False for a default-constructed future or one whose value was taken by get().
  bool valid() const noexcept { return cell_ != nullptr; }

  /// True when the operation has completed; makes progress if it has not.
  bool ready() const {
    check_valid();
    if (cell_->done || cell_->owner().poll(cell_)) return true;
    progress();
    return cell_->owner().poll(cell_);
  }

  /// Blocks until the operation completes, making progress meanwhile.
  void wait() const {
    check_valid();
    if (cell_->done) return;
    detail::spin_waiter pause;
    while (!cell_->owner().poll(cell_)) pause();
  }

  /// Waits and returns the result (moving it out; the future is no longer valid afterwards).
  T get() {
    wait();
    cell_type* cell = std::exchange(cell_, nullptr);
    // Our share of the owner, released when we return: it keeps the cell alive until the value is moved out.
    const auto owner = detail::counted_ptr<detail::future_owner>::adopt(&cell->owner());
    if (!cell->value) std::rethrow_exception(failure(*owner, cell));
    if constexpr (!std::is_void_v<T>) return std::move(*cell->value);
  }

 private:
  template <class V, std::size_t N>
  friend class detail::future_cells;
  /// The future of a cell its owner keeps (cells allocated together, detail::future_cells): adds a share of `owner`,
  /// the cell's, which stays alive while the future does (given by the owner: no read of the cell's offset).
  future(cell_type* cell, detail::future_owner& owner) noexcept : cell_(cell) { owner.retain(); }

  void check_valid() const {
    if (!cell_) throw usage_error("shoal::future: no state (default-constructed, or get() was already called)");
  }
  /// The error of a cell done without a value (a producer that completed it with neither is a bug in shoal).
  static std::exception_ptr failure(const detail::future_owner& owner, const cell_type* cell) {
    std::exception_ptr e = owner.error_of(cell);
    return e ? e : std::make_exception_ptr(error("shoal::future: completed with neither a value nor an error"));
  }
  cell_type* cell_ = nullptr;  // the owner is found from the cell (future_cell::owner): a future is one pointer
};

template <class V, std::size_t N>
template <class T>
auto detail::future_cells<V, N>::future_of(std::uint32_t index) {
  static_assert(std::is_same_v<future_value_t<T>, V>, "future_cells::future_of<T>: T's value type is not V");
  return future<T>(&cells_[index], *this);
}

/// A future that is already complete.
template <class T>
future<std::decay_t<T>> make_ready_future(T&& value) {
  auto s = detail::make_counted<typename future<std::decay_t<T>>::state_type>();
  s->set_value(std::forward<T>(value));
  return future<std::decay_t<T>>(std::move(s));
}
inline future<void> make_ready_future() {
  auto s = detail::make_counted<future<void>::state_type>();
  s->set_value({});
  return future<void>(std::move(s));
}

/// Waits for every future given.
template <class F>
concept waitable = requires(const F& f) { f.wait(); };

template <waitable... F>
void wait_all(const F&... futures) {
  (futures.wait(), ...);
}

/// Waits for every future in a range.
template <class Range>
  requires requires(Range& r) { r.begin()->wait(); }
void wait_all(Range& futures) {
  for (auto& f : futures) f.wait();
}

}  // namespace shoal
