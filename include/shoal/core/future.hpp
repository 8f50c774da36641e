// shoal/core/future.hpp — the one completion vocabulary of shoal.
//
// Non-blocking remote memory operations and remote procedure calls both return shoal::future<T>.
//   ready()  polls (and makes progress) without blocking;  wait() blocks, making progress;
//   get()    waits and returns the value (once: it moves the value out), rethrowing a remote error.
//   wait_all(f...) / wait_all(range) waits for several.
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include "shoal/core/error.hpp"
#include "shoal/core/progress.hpp"

namespace shoal {

namespace detail {

struct empty_value {};

template <class T>
using future_value_t = std::conditional_t<std::is_void_v<T>, empty_value, T>;

/// Shared state of a future. `test()` is overridden by producers that must poll (an MPI request); producers that
/// are completed by progress (an rpc reply) call `set_value` / `set_error` from their handler.
template <class V>
struct future_state {
  virtual ~future_state() = default;
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
  explicit future(std::shared_ptr<state_type> state) : state_(std::move(state)) {}

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
    auto state = std::move(state_);
    if (state->error) std::rethrow_exception(state->error);
    if constexpr (!std::is_void_v<T>) return std::move(*state->value);
  }

 private:
  void check_valid() const {
    if (!state_) throw usage_error("shoal::future: no state (default-constructed, or get() was already called)");
  }
  std::shared_ptr<state_type> state_;
};

/// A future that is already complete.
template <class T>
future<std::decay_t<T>> make_ready_future(T&& value) {
  auto s = std::make_shared<typename future<std::decay_t<T>>::state_type>();
  s->set_value(std::forward<T>(value));
  return future<std::decay_t<T>>(std::move(s));
}
inline future<void> make_ready_future() {
  auto s = std::make_shared<future<void>::state_type>();
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
