// shoal/am/remote_call.hpp — run a function on another rank: shoal::post (fire and forget), shoal::post_each (post
// for each element of a range) and shoal::rpc (returns a shoal::future of the result).
//
//   int add(int a, int b) { return a + b; }
//   shoal::post(peer, [](std::string s) { log(s); }, std::string("hello"));     // runs log on `peer`, later
//   shoal::future<int> f = shoal::rpc(peer, &add, 2, 3);                        // add(2, 3) on `peer`
//   int five = f.get();                                                          // waits, making progress
//
// Handler: a function pointer or a lambda without captures (pass what you would capture as arguments), or any empty,
// default-constructible class with a call operator. It is named on the wire by its offset from an anchor in the same
// executable image (identical on every rank of one binary). A class handler is inlined where a group of its messages
// runs; one whose arguments are trivially copyable may add `static void prefetch(const Args&...)`, a hint called with
// each message's arguments a few messages before it runs (start loading what the handler will look up).
// Arguments travel as the handler's parameter types (decayed): trivially copyable types as bytes, std::string and
// vectors of trivially copyable types as length + bytes, everything else (maps, tuples, user types with a cereal
// serialize function) through cereal. A type that cannot travel fails the `shoal::am::sendable` concept at compile
// time. Neither call blocks on the network: the message is appended to the destination's buffer (sent when full,
// at am::flush, inside any wait and in am::barrier); with the send cap reached the caller receives (and, outside
// handlers, runs) incoming messages until a send completes.
//
// shoal::post_each(rank, fn, values) posts fn(v) for every element of a range, the loop inside shoal (a stream to one
// rank packed like a hand-written buffer; docs/am.md, "Streams to one rank").
// Cost: post M=1 (aggregated: one MPI message per buffer), post_each M=1 per element, rpc M=2 (request + reply). No
// allocation per message for trivially copyable arguments; rpc allocates its future's state.
// Errors: usage_error for a rank out of range or a call outside the environment, and from post_each when computing
// a value posts or rpcs to its rank, flushes or makes progress; a handler that throws becomes a
// shoal::remote_error naming the handler and both ranks — from future::get() for rpc, from the sender's next
// am::barrier() for post.
#pragma once

#include <cstdint>
#include <memory>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shoal/am/detail/engine.hpp"
#include "shoal/am/detail/handler.hpp"
#include "shoal/core/future.hpp"

namespace shoal::am {

/// Every argument of a call to handler F with Args... can travel (after conversion to the handler's parameters).
template <class F, class... Args>
concept sendable_arguments = detail::every_type_is_serializable<typename detail::call_traits<F, Args...>::wire>::value;

/// The result of handler F called with Args... (decayed; void allowed).
template <class F, class... Args>
using result_of_t = std::decay_t<
    typename detail::invoke_result_of<F, typename detail::call_traits<F, Args...>::params>::type>;

/// The result of handler F can travel back (void, or sendable).
template <class F, class... Args>
concept sendable_result = std::is_void_v<result_of_t<F, Args...>> || sendable<result_of_t<F, Args...>>;

}  // namespace shoal::am

namespace shoal::am::detail {

template <class F, class... Args>
void check_call() {
  static_assert(handler<F>,
                "shoal::post / shoal::rpc: the handler must be a function pointer or a lambda WITHOUT captures "
                "(its code is named by an id valid on every rank, captured state cannot travel); pass the values "
                "you would capture as extra arguments");
  using traits = call_traits<F, Args...>;
  static_assert(args_convert<typename traits::wire, Args...>::value,
                "shoal::post / shoal::rpc: the arguments do not match the handler's parameters (count or type)");
}

[[noreturn]] inline void throw_bad_rank(int rank, int size) {
  throw usage_error("shoal::post / shoal::rpc: rank " + std::to_string(rank) + " is out of range (0.." +
                    std::to_string(size - 1) + ")");
}

inline engine& engine_for(int rank) {
  engine& e = get();
  if (static_cast<unsigned>(rank) >= static_cast<unsigned>(e.size())) [[unlikely]] throw_bad_rank(rank, e.size());
  return e;
}

/// Sends `bytes` to `rank`, where fn(tag, bytes) runs later, with the bytes as they arrived (fire and forget, like
/// shoal::post). For containers with a wire format of their own (the ordered map): one copy into the destination's
/// buffer, none on arrival. Handlers may run inside the call (while it waits for room to write), before `bytes` is
/// copied: they must not write to or free its storage.
inline void post_bytes(int rank, bytes_handler fn, std::uint32_t tag, std::span<const std::byte> bytes) {
  write_bytes(engine_for(rank), rank, fn, tag, bytes);
}

/// Room for a byte message of `size` bytes to `rank` (as post_bytes): the caller writes the message's bytes at the
/// returned address before it makes any other shoal call — so a message is written where it travels from, without a
/// buffer of the caller's own. Handlers may run inside the call, before the room is returned.
inline std::byte* reserve_bytes(int rank, bytes_handler fn, std::uint32_t tag, std::size_t size) {
  return reserve_bytes(engine_for(rank), rank, fn, tag, size);
}

}  // namespace shoal::am::detail

namespace shoal {

/// Runs fn(args...) on `rank`, later (fire and forget: no result; am::barrier completes it). Any rank. See the header
/// comment.
template <class F, class... Args>
  requires am::sendable_arguments<F, Args...>
void post(int rank, F fn, Args&&... args) {
  namespace d = am::detail;
  d::check_call<F, Args...>();
  using traits = d::call_traits<F, Args...>;
  using wire = typename traits::wire;
  const std::int32_t word = d::word_of(&d::run_post<F, typename traits::params, wire>);
  std::uint64_t key = d::group_key(word);
  if constexpr (std::is_pointer_v<F>) key = d::group_key(word, d::word_of(fn));
  if constexpr (d::all_trivial<wire>::value) {  // the inline path first: no engine pointer to follow
    const auto put = [&](std::byte* p) { d::put_plain<wire>(p, std::tuple<>{}, std::forward<Args>(args)...); };
    if (d::append_inline<d::all_trivial<wire>::bytes>(rank, key, put)) [[likely]] return;
  }
  d::write_message<wire>(d::engine_for(rank), rank, key, std::tuple<>{}, std::forward<Args>(args)...);
}

/// Runs fn(v) on `rank` for each element v of `values`, in order (fire and forget, like post for each element in
/// turn). Any rank. For a trivially copyable argument the destination's buffer is filled from a cursor held in
/// registers across the elements, as one would pack a buffer by hand; otherwise it is post per element. The elements
/// are computed while that buffer is held: computing one must not post or rpc to `rank`, flush or make progress (a
/// usage_error says so; posting to other ranks is fine); a view that only computes values (std::views::transform
/// over data) is what this is for.
template <class F, std::ranges::input_range R>
  requires am::sendable_arguments<F, std::ranges::range_reference_t<R>>
void post_each(int rank, F fn, R&& values) {
  namespace d = am::detail;
  using V = std::ranges::range_reference_t<R>;
  d::check_call<F, V>();
  using traits = d::call_traits<F, V>;
  d::engine& e = d::engine_for(rank);
  if constexpr (d::all_trivial<typename traits::wire>::value) {
    const std::int32_t word = d::word_of(&d::run_post<F, typename traits::params, typename traits::wire>);
    std::uint64_t key = d::group_key(word);
    if constexpr (std::is_pointer_v<F>) key = d::group_key(word, d::word_of(fn));
    [&]<class W>(d::type_list<W>) {
      d::write_each<W>(e, rank, key, std::ranges::begin(values), std::ranges::end(values));
    }(typename traits::wire{});
  } else {
    for (auto&& v : values) post(rank, fn, std::forward<decltype(v)>(v));
  }
}

/// Runs fn(args...) on `rank` and returns a future of its result (void allowed). Any rank.
template <class F, class... Args>
  requires am::sendable_arguments<F, Args...> && am::sendable_result<F, Args...>
future<am::result_of_t<F, Args...>> rpc(int rank, F fn, Args&&... args) {
  namespace d = am::detail;
  d::check_call<F, Args...>();
  using traits = d::call_traits<F, Args...>;
  using R = am::result_of_t<F, Args...>;
  d::engine& e = d::engine_for(rank);
  auto state = shoal::layer::make_state<d::rpc_state<R>>();
  const std::uint32_t slot = e.add_pending(state);
  const std::int32_t word = d::word_of(&d::run_rpc<F, typename traits::params, typename traits::wire, R>);
  try {
    if constexpr (std::is_pointer_v<F>) {
      d::write_message<typename traits::wire>(e, rank, d::group_key(word, d::word_of(fn)), std::tuple{slot},
                                              std::forward<Args>(args)...);
    } else {
      d::write_message<typename traits::wire>(e, rank, d::group_key(word), std::tuple{slot},
                                              std::forward<Args>(args)...);
    }
  } catch (...) {
    e.take_pending(slot);
    throw;
  }
  return future<R>(std::move(state));
}

}  // namespace shoal
