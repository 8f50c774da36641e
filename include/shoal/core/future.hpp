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

#include <concepts>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

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

/// Shared state of a future. `test()` is overridden by producers that must poll (an MPI request); producers that
/// are completed by progress (an rpc reply) call `set_value` / `set_error` from their handler.
template <class V>
struct future_state : counted {
  virtual bool test() { return done; }

  void set_value(V v) {
    value.emplace(std::move(v));
    done = true;
  }
  void set_error(std::exception_ptr e) {
    error = std::move(e);
    done = true;
  }

  bool done = false;
  std::optional<V> value;
  std::exception_ptr error;
};

}  // namespace detail

template <class T = void>
class future {
 public:
  using value_type = T;
  using state_type = detail::future_state<detail::future_value_t<T>>;

  future() = default;
  /// The future of a state of its own (detail::make_counted, or layer::make_state).
  explicit future(detail::counted_ptr<state_type> state) : state_(state.get()), owner_(std::move(state)) {}
  /// The future of a state that lives inside `owner` (states allocated together, as a chunk): owner stays alive
  /// while the future does.
  future(state_type* state, detail::counted_ptr<detail::counted> owner) : state_(state), owner_(std::move(owner)) {}

  future(const future&) = default;
  future& operator=(const future&) = default;
  future(future&& o) noexcept : state_(std::exchange(o.state_, nullptr)), owner_(std::move(o.owner_)) {}
  future& operator=(future&& o) noexcept {
    state_ = std::exchange(o.state_, nullptr);
    owner_ = std::move(o.owner_);
    return *this;
  }

  /// False for a default-constructed future or one whose value was taken by get().
  bool valid() const noexcept { return state_ != nullptr; }

  /// True when the operation has completed; makes progress if it has not.
  bool ready() const {
    check_valid();
    if (state_->done || state_->test()) return true;
    progress();
    return state_->test();
  }

  /// Blocks until the operation completes, making progress meanwhile.
  void wait() const {
    check_valid();
    detail::spin_waiter pause;
    while (!(state_->done || state_->test())) pause();
  }

  /// Waits and returns the result (moving it out; the future is no longer valid afterwards).
  T get() {
    wait();
    const detail::counted_ptr<detail::counted> owner = std::move(owner_);  // keeps the state alive until we return
    state_type* state = std::exchange(state_, nullptr);
    if (state->error) std::rethrow_exception(state->error);
    if constexpr (!std::is_void_v<T>) return std::move(*state->value);
  }

 private:
  void check_valid() const {
    if (!state_) throw usage_error("shoal::future: no state (default-constructed, or get() was already called)");
  }
  state_type* state_ = nullptr;
  detail::counted_ptr<detail::counted> owner_;
};

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
