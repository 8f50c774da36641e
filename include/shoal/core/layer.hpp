// shoal/core/layer.hpp — what the core offers a communication layer built on it (for layer authors).
//
// Programs do not need this header (containers only for layer::future_state, when they complete futures themselves,
// as dist_map does from its owners' replies). A layer (shoal's active-message layer, include/shoal/am/, is
// one) keeps per-run state of its own — a communicator, buffers, counters — that must start with every environment,
// make progress whenever shoal waits, and end before the environment does. These are the core's hooks for that, and
// the pieces of the core's waiting and settings that such a layer reuses so it behaves like the rest of shoal.
//
//   layer::on_every_start(fn)      at static initialisation: fn runs in every environment, collectively, once the
//                                  runtime is up (world() usable), before the environment's constructor returns;
//                                  a second environment in the same process gets a fresh start
//   layer::add_progress_hook(fn)   while an environment runs (typically from a start function): fn runs at every
//                                  shoal::progress() of this run, i.e. inside every wait of shoal
//   layer::add_finalize_hook(fn)   likewise: fn runs when the environment ends, hooks in reverse order of
//                                  registration, before the heap and the communicators are freed (drain here)
//   layer::current_run()           the running environment's id (1, 2, ... in this process), 0 when none runs
//   layer::run_is_live(id)         whether environment `id` is still up (state of an ended run must not be freed
//                                  into a later one)
//   layer::require_running()       throws usage_error ("not initialized" / "finalized") unless an environment runs
//   layer::note_arrival()          a progress hook received something from another rank: waits restart their
//                                  back-off, so a rank serving a stream of requests stays responsive
//   layer::in_one_sided_wait()     a wait for a one-sided operation runs on this thread; a progress hook then only
//                                  sends and starts no new work (docs/core.md, "Handlers that wait")
//   layer::size_setting(variable)  a size read from an environment variable with the core's strict parser (bytes,
//                                  optional K/M/G/T; a bad value is a usage_error naming the variable)
//   layer::wait(request)           waits for an MPI request the way every shoal wait does (progress, yield, maybe sleep)
//   layer::backoff                 that wait's back-off alone, for a loop that polls by its own means and must not
//                                  run shoal::progress() (the active-message layer's wait for a free send slot)
//   layer::future_state<T>         the shared state behind a shoal::future<T> that a layer completes itself (an rpc
//                                  reply, a batch reply): derive from it, allocate it with layer::make_state<S>(...)
//                                  (a layer::state_ptr<S>, reference counted — not atomically: futures belong to the
//                                  thread that makes the rank's shoal calls), hand it out as future<T>(state_ptr),
//                                  and complete it from a handler with set_value(v) (void: set_value({})) or
//                                  set_error(exception_ptr); test() may be overridden to poll, or to start what the
//                                  future waits for; layer::future_value<T> is the type it holds (T, or an empty
//                                  struct for void). Many futures completed together (a chunk of operations):
//                                  layer::future_cells<T, N>, N small cells (a flag and the value; errors kept
//                                  aside) in one allocation, completed by index with set_value(i, v) /
//                                  set_error(i, e), handing out future_of<T>(i); derive from it and override
//                                  poll(cell) to start what a cell waits for. A future is a pointer to its cell; the
//                                  owner is found from the cell (which knows its offset in the owner)
//   layer::fault_mode()            tests only: the fault mode's settings (SHOAL_FAULTS; nullopt when off), and
//   layer::fault_scheduler<Item>   the one mechanism that delays and reorders a channel's arrivals under it (held
//                                  per sender, released in a seeded order across senders, in order per sender),
//                                  as the core does on its own channel (docs/testing.md, "Faults")
//   SHOAL_MPI(call)                checks an MPI call the core's way: a failure throws shoal::mpi_error with the
//   SHOAL_MPI_CLEANUP(call)        call and MPI's error string (the layer's own communicators must be set to
//                                  MPI_ERRORS_RETURN); the _CLEANUP form, for destructors, prints it and goes on
//
// Every call is local (no communication) and costs a few instructions, except wait, which waits.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "shoal/core/detail/faults.hpp"
#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/detail/size_parse.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/progress.hpp"

namespace shoal::layer {

/// The state of a shoal::future<T> (void allowed) completed by a layer: see the header comment. Fields: `done`,
/// `value` (std::optional of T, or of an empty struct for void), `error`.
template <class T>
using future_state = shoal::detail::future_state<shoal::detail::future_value_t<T>>;

/// What a future_state<T> holds as its value: T, or for void an empty struct (set_value({})).
template <class T>
using future_value = shoal::detail::future_value_t<T>;

/// N cells of futures of type T allocated together (see the header comment), and what owns cells of futures.
template <class T, std::size_t N>
using future_cells = shoal::detail::future_cells<shoal::detail::future_value_t<T>, N>;
using future_owner = shoal::detail::future_owner;

/// The reference count behind futures (see the header comment), and an owning pointer to a counted object.
using counted = shoal::detail::counted;
template <class S>
using state_ptr = shoal::detail::counted_ptr<S>;

/// A new state S(args...), owned by the returned pointer.
template <class S, class... Args>
state_ptr<S> make_state(Args&&... args) {
  return shoal::detail::make_counted<S>(std::forward<Args>(args)...);
}

/// Registers `start` to run at the start of every environment (call during static initialisation, e.g.
/// `inline const bool registered = (shoal::layer::on_every_start(&start), true);` in the layer's header).
inline void on_every_start(void (*start)()) { detail::start_hooks().push_back(start); }

/// Runs `hook` at every shoal::progress() of the running environment. usage_error when none runs.
inline void add_progress_hook(std::function<void()> hook) { detail::rt().progress_hooks.push_back(std::move(hook)); }

/// Runs `hook` when the running environment ends (reverse order of registration, before the heap and the
/// communicators are freed). usage_error when none runs.
inline void add_finalize_hook(std::function<void()> hook) { detail::rt().finalize_hooks.push_back(std::move(hook)); }

/// The id of the running environment (1, 2, ... in this process); 0 when none runs.
inline std::uint64_t current_run() noexcept { return detail::current_run(); }

/// True while environment `run` is up.
inline bool run_is_live(std::uint64_t run) noexcept { return detail::run_is_live(run); }

/// Throws the usage_error that says shoal is not initialized, or already finalized, unless an environment runs.
inline void require_running() { (void)detail::rt(); }

/// Tells the waits of shoal that a progress hook received something from another rank.
inline void note_arrival() { ++detail::rt().progress_arrivals; }

/// True while a wait for a one-sided operation runs on this thread.
inline bool in_one_sided_wait() { return detail::rt().one_sided_waits > 0; }

/// The size in environment variable `variable` (unset or empty: nullopt), parsed like SHOAL_HEAP_SIZE.
inline std::optional<std::size_t> size_setting(const char* variable) { return detail::env_size(variable); }

/// Waits for `request` while making progress, backing off like every wait in shoal.
inline void wait(MPI_Request& request) { detail::wait_request(request); }

/// The back-off of shoal's waits without the progress: construct one per wait, call it once per poll with whether
/// the poll achieved anything (after 64 fruitless polls it yields; after 4,096 it sleeps 20 us per poll when this
/// machine runs more ranks than it has CPUs for, else keeps yielding: core/detail/wait_sleep.hpp).
class backoff {
 public:
  void operator()(bool moved) { waiter_.backoff(moved); }

 private:
  detail::spin_waiter waiter_;
};

/// Tests only: the fault mode's settings from SHOAL_FAULTS (nullopt when off; a bad value is a usage_error).
inline std::optional<detail::fault_settings> fault_mode() { return detail::env_faults(); }

/// Holds what a channel received (one lane per sender) and releases it in a seeded random order across lanes, in
/// order per lane (include/shoal/core/detail/faults.hpp); each channel of a rank uses its own fault_stream.
template <class Item>
using fault_scheduler = detail::fault_scheduler<Item>;
using detail::fault_stream;

}  // namespace shoal::layer
