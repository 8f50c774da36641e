// shoal/am/detail/handler.hpp — what a handler is, how its arguments travel, and the trampolines that run it.
#pragma once

#include <cxxabi.h>
#include <dlfcn.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "shoal/am/detail/engine.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/serialize.hpp"

namespace shoal::am {

/// A type that can be an argument or a result of a remote call (see shoal::serializable).
template <class T>
concept sendable = serializable<std::remove_cvref_t<T>>;

/// A handler: a function pointer, or a lambda without captures (an empty, default-constructible class).
template <class F>
concept handler = (std::is_pointer_v<F> && std::is_function_v<std::remove_pointer_t<F>>) ||
                  (std::is_class_v<F> && std::is_empty_v<F> && std::is_default_constructible_v<F>);

}  // namespace shoal::am

namespace shoal::am::detail {

template <class... T>
struct type_list {};

/// Parameters and result of a handler whose signature is known (function pointers, non-generic lambdas).
template <class F>
struct signature {
  static constexpr bool known = false;
};
template <class R, class... P>
struct signature<R (*)(P...)> {
  static constexpr bool known = true;
  using result = R;
  using params = type_list<P...>;
};
template <class R, class... P>
struct signature<R (*)(P...) noexcept> : signature<R (*)(P...)> {};
template <class R, class C, class... P>
struct signature<R (C::*)(P...) const> : signature<R (*)(P...)> {};
template <class R, class C, class... P>
struct signature<R (C::*)(P...) const noexcept> : signature<R (*)(P...)> {};
template <class R, class C, class... P>
struct signature<R (C::*)(P...)> : signature<R (*)(P...)> {};
template <class R, class C, class... P>
struct signature<R (C::*)(P...) noexcept> : signature<R (*)(P...)> {};

template <class F>
struct call_operator_signature : signature<void> {};
template <class F>
  requires requires { &F::operator(); }
struct call_operator_signature<F> : signature<decltype(&F::operator())> {};

template <class F>
using handler_signature = std::conditional_t<std::is_pointer_v<F>, signature<F>, call_operator_signature<F>>;

/// How a call with arguments Args... reaches handler F: the parameter types `params` (what the handler is called
/// with), the types on the wire `wire` (decayed parameters) and the result.
template <class F, class... Args>
struct call_traits {
  using sig = handler_signature<F>;
  static constexpr bool known = sig::known;

  template <class L>
  struct decay_list;
  template <class... P>
  struct decay_list<type_list<P...>> {
    using type = type_list<std::remove_cvref_t<P>...>;
  };

  // Generic lambdas: the arguments' own decayed types travel and are passed as rvalues.
  using params = typename std::conditional_t<known, sig, signature<void (*)(std::remove_cvref_t<Args>&&...)>>::params;
  using wire = typename decay_list<params>::type;
};

template <class F, class Params>
struct invoke_result_of;
template <class F, class... P>
struct invoke_result_of<F, type_list<P...>> {
  using type = std::invoke_result_t<F, P&&...>;
};

/// A std::span of plain elements passed for a std::vector parameter: it travels as that vector (its length, then the
/// elements' bytes), without a vector made on the sending rank.
template <class W, class A>
constexpr bool span_for_vector() {
  using D = std::remove_cvref_t<A>;
  if constexpr (requires { typename W::value_type; }) {
    using T = typename W::value_type;
    return std::is_same_v<W, std::vector<T>> && contiguous_serializable<W> &&
           (std::is_same_v<D, std::span<const T>> || std::is_same_v<D, std::span<T>>);
  } else {
    return false;
  }
}

template <class Wire, class... Args>
struct args_convert : std::false_type {};
template <class... W, class... Args>
  requires(sizeof...(W) == sizeof...(Args))
struct args_convert<type_list<W...>, Args...>
    : std::bool_constant<((std::is_constructible_v<W, Args&&> || span_for_vector<W, Args>()) && ...)> {};

template <class Wire>
struct every_type_is_serializable;
template <class... W>
struct every_type_is_serializable<type_list<W...>> : std::bool_constant<(sendable<W> && ...)> {};

template <class Wire>
struct all_trivial;
template <class... W>
struct all_trivial<type_list<W...>> : std::bool_constant<(trivially_serializable<W> && ...)> {
  static constexpr std::size_t bytes = (std::size_t{0} + ... + sizeof(W));
  /// Where each argument starts in a message of this handler (prefix sums of the sizes).
  static constexpr std::array<std::size_t, sizeof...(W)> offsets = [] {
    std::array<std::size_t, sizeof...(W)> out{};
    std::size_t at = 0, i = 0;
    ((out[i++] = at, at += sizeof(W)), ...);
    return out;
  }();
};

// ---- handler words -----------------------------------------------------------------------------------------------

[[noreturn]] inline void throw_outside_image() {
  throw usage_error(
      "shoal::am: a handler is not in the same executable image as shoal (a shared library far from the program); "
      "define handlers in the program that includes shoal/am.hpp");
}

/// The offset of a function from the anchor, the same on every rank of the same binary.
template <class Fn>
std::int32_t word_of(Fn* fn) {
  const std::intptr_t d = reinterpret_cast<std::intptr_t>(fn) - anchor_address();
  if (d < INT32_MIN || d > INT32_MAX) [[unlikely]] throw_outside_image();
  return static_cast<std::int32_t>(d);
}

template <class Fn>
Fn* function_at(std::int32_t word) {
  return reinterpret_cast<Fn*>(anchor_address() + word);
}

// ---- names for error messages ------------------------------------------------------------------------------------

inline std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

/// The handler's name: the lambda's type, or the function's symbol (when the dynamic symbol table has it, e.g.
/// with -rdynamic) else its signature.
template <class F>
std::string handler_name([[maybe_unused]] F fn) {
  if constexpr (std::is_pointer_v<F>) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(fn), &info) != 0 && info.dli_sname != nullptr &&
        info.dli_saddr == reinterpret_cast<void*>(fn)) {
      return demangle(info.dli_sname);
    }
    return "function of type " + demangle(typeid(F).name()) + " at image offset " + std::to_string(word_of(fn));
  } else {
    return demangle(typeid(F).name());
  }
}

inline std::string describe_failure(const std::string& name, int source, int target, std::exception_ptr e) {
  std::string what = "unknown exception";
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
  }
  return "shoal: handler '" + name + "' sent by rank " + std::to_string(source) + " threw on rank " +
         std::to_string(target) + ": " + what;
}

// ---- writing messages --------------------------------------------------------------------------------------------

/// Wire types whose serialized size follows from the value without serializing it: trivially copyable ones (their
/// bytes) and strings and vectors of trivially copyable elements (a 64-bit length, then the elements' bytes).
template <class Wire>
struct all_sized;
template <class... W>
struct all_sized<type_list<W...>>
    : std::bool_constant<((trivially_serializable<W> || contiguous_serializable<W>) && ...)> {};

/// The value to serialize for a wire type W given an argument: the argument itself when it already is a W.
template <class W, class A>
decltype(auto) as_wire(A&& a) {
  if constexpr (std::is_same_v<std::remove_cvref_t<A>, W>) {
    return static_cast<const W&>(a);
  } else {
    return W(std::forward<A>(a));
  }
}

/// Writes an argument as wire type W (a span for a vector parameter: its elements, as the vector would be).
template <class W, class A>
void write_wire(byte_writer& w, A&& a) {
  if constexpr (span_for_vector<W, A>()) {
    w.write_contiguous(std::span<const typename W::value_type>(a));
  } else {
    w.write(as_wire<W>(std::forward<A>(a)));
  }
}

/// Scratch space for serializing messages that are not trivially copyable.
inline std::vector<std::byte> g_spare;

template <class T>
inline void put_raw(std::byte*& p, const T& v) {
  std::memcpy(p, &v, sizeof(T));
  p += sizeof(T);
}

/// An argument of a sized wire type W (all_sized) as what is written: the trivially copyable value, or the elements
/// of a string or vector as a span (of the argument itself when it is a W or a span for one, else of a W made from it).
template <class W, class A>
decltype(auto) sized_view(A&& a) {
  if constexpr (trivially_serializable<W>) {
    return W(std::forward<A>(a));
  } else {
    using T = typename W::value_type;
    if constexpr (span_for_vector<W, A>() || std::is_same_v<std::remove_cvref_t<A>, W>) {
      return std::span<const T>(a.data(), a.size());
    } else {
      return W(std::forward<A>(a));  // a conversion: the W itself (kept alive by the caller's tuple)
    }
  }
}

/// Bytes a sized argument (sized_view) takes in a message.
template <class V>
std::size_t sized_bytes(const V& v) {
  if constexpr (trivially_serializable<V>) {
    return sizeof(V);
  } else {
    return shoal::detail::contiguous_bytes<typename V::value_type>(v.size());
  }
}

/// Writes a sized argument as byte_writer would (the same bytes: a string or vector is its length, then its elements).
template <class V>
void put_sized(std::byte*& p, const V& v) {
  if constexpr (trivially_serializable<V>) {
    put_raw(p, v);
  } else {
    shoal::detail::put_contiguous(p, std::span<const typename V::value_type>(v.data(), v.size()));
  }
}

/// The inline path of a message of `Need` bytes of plain arguments: when `dest`'s open group holds messages of this
/// size for the same handler and team and has room, write(p) writes the message at the group's end (no header, no
/// count: the group's count follows from its size, outbox::unit) and this returns true; otherwise false, also for a
/// rank out of range or no engine running. Reads g_send, not the engine: one pointer fewer to follow per message.
template <std::size_t Need, class Write>
bool append_inline(int dest, std::uint64_t key, Write&& write) {
  const send_view& s = g_send;
  if (static_cast<std::uint32_t>(dest) >= s.ranks) [[unlikely]] return false;
  outbox& o = s.boxes[static_cast<std::uint32_t>(dest)];
  std::byte* p = o.cur;
  if (o.fixed_key == key && o.team == s.team && static_cast<std::size_t>(o.end - p) >= Need) [[likely]] {
    o.cur = p + Need;
    write(p);
    return true;
  }
  return false;
}

/// The bytes of a message of plain arguments: `prefix`, then the arguments as Wire's types.
template <class Wire, class... Prefix, class... Args>
void put_plain(std::byte* p, const std::tuple<Prefix...>& prefix, Args&&... args) {
  std::apply([&](const auto&... f) { (put_raw(p, f), ...); }, prefix);
  [&]<class... W>(type_list<W...>) { (put_raw(p, W(std::forward<Args>(args))), ...); }(Wire{});
}

/// The bytes of plain header fields Prefix... (a message's prefix: an rpc's reply slot, a reply's status).
template <class... Prefix>
constexpr std::size_t plain_bytes = (std::size_t{0} + ... + sizeof(Prefix));

/// Writes a message of group `key` (group_key: handler and function words) whose bytes are: `prefix` (trivially
/// copyable header fields), then the arguments. Everything trivially copyable goes straight into the destination
/// buffer (fast path: the open group is one of fixed-size messages for the same handler and has room — no header, no
/// count, only the cursor moves). Strings and vectors of plain elements are sized first and written in place too.
/// Anything else is serialized first into a scratch vector (reused, so no allocation once warm) and copied.
template <class Wire, class... Prefix, class... Args>
void write_message(engine& e, int dest, std::uint64_t key, const std::tuple<Prefix...>& prefix, Args&&... args) {
  using trivial = all_trivial<Wire>;
  if constexpr (trivial::value) {
    constexpr std::size_t need = plain_bytes<Prefix...> + trivial::bytes;
    const auto put = [&](std::byte* p) { put_plain<Wire>(p, prefix, std::forward<Args>(args)...); };
    if (!append_inline<need>(dest, key, put)) [[unlikely]] put(e.reserve(dest, key, need, /*fixed=*/true));
  } else if constexpr (all_sized<Wire>::value) {
    // Strings and vectors of plain elements: the message's size is known before it is written, so it is written
    // where it travels (no scratch copy); the open group of this handler takes it inline when it has room.
    [&]<class... W>(type_list<W...>) {
      // Values (spans, plain values or Ws), named types: CTAD would unwrap a single std::tuple argument.
      const std::tuple<decltype(sized_view<W>(std::forward<Args>(args)))...> views{
          sized_view<W>(std::forward<Args>(args))...};
      constexpr std::size_t prefix_bytes = (std::size_t{0} + ... + sizeof(Prefix));
      const std::size_t need =
          prefix_bytes + std::apply([](const auto&... v) { return (std::size_t{0} + ... + sized_bytes(v)); }, views);
      outbox& o = e.out(dest);
      std::byte* p = o.cur;
      if (o.key == key && o.unit == 0 && o.team == e.team() && static_cast<std::size_t>(o.end - p) >= need) {
        o.cur = p + need;
        ++o.count;
      } else {
        p = e.reserve(dest, key, need);
      }
      std::apply([&](const auto&... f) { (put_raw(p, f), ...); }, prefix);
      std::apply([&](const auto&... v) { (put_sized(p, v), ...); }, views);
    }(Wire{});
  } else {
    std::vector<std::byte> bytes = std::move(g_spare);  // nested sends (from handlers run below) get their own
    bytes.clear();
    byte_writer w(bytes);
    std::apply([&](const auto&... f) { (w.write(f), ...); }, prefix);
    [&]<class... W>(type_list<W...>) { (write_wire<W>(w, std::forward<Args>(args)), ...); }(Wire{});
    std::byte* p = e.reserve(dest, key, bytes.size());
    std::memcpy(p, bytes.data(), bytes.size());
    g_spare = std::move(bytes);
  }
}

/// post_each's hold on one destination: while the caller computes a value for `dest`, the engine refuses every
/// call that would write to that buffer, send it or run handlers (engine::hold).
class hold_scope {
 public:
  hold_scope(engine& e, int dest) : e_(e) { e_.hold(dest); }
  hold_scope(const hold_scope&) = delete;
  hold_scope& operator=(const hold_scope&) = delete;
  ~hold_scope() { e_.release(); }

 private:
  engine& e_;
};

/// A hold that also takes the destination's cursor, in its open group of messages of `unit` bytes each: `cur` and
/// `end` live here (in registers, as the object's address never escapes) and the outbox shows no room meanwhile; the
/// destructor puts the cursor back (a group of fixed-size messages is counted by its size; one that is counted
/// message by message gets the messages written here added in one division).
class outbox_hold {
 public:
  outbox_hold(engine& e, int dest, std::size_t unit)
      : scope_(e, dest), o_(e.out(dest)), start_(o_.cur), unit_(unit), cur(o_.cur), end(o_.end) {
    o_.end = o_.cur;
  }
  outbox_hold(const outbox_hold&) = delete;
  outbox_hold& operator=(const outbox_hold&) = delete;
  ~outbox_hold() {
    if (o_.unit == 0) o_.count += static_cast<std::uint32_t>(static_cast<std::size_t>(cur - start_) / unit_);
    o_.cur = cur;
    o_.end = end;
  }

 private:
  hold_scope scope_;
  outbox& o_;
  const std::byte* start_;
  std::size_t unit_;

 public:
  std::byte* cur;
  std::byte* end;
};

/// Writes one message of group `key` to `dest` per element of [it, last), each the single argument W of a
/// fire-and-forget handler (trivially copyable). Each buffer's first message takes the general path (which opens
/// the group, sends a full buffer, takes a new one); the rest of the buffer is filled under an outbox_hold, one
/// store and one cursor move per message, like a buffer packed by hand. Every element is computed under a hold.
template <class W, class It, class Sentinel>
void write_each(engine& e, int dest, std::uint64_t key, It it, Sentinel last) {
  static_assert(trivially_serializable<W>);
  constexpr std::size_t need = sizeof(W);
  while (it != last) {
    const W first = [&] {
      const hold_scope held(e, dest);
      return W(*it);
    }();
    std::byte* p = e.reserve(dest, key, need, /*fixed=*/true);
    put_raw(p, first);
    ++it;
    outbox_hold h(e, dest, need);
    for (; it != last && static_cast<std::size_t>(h.end - h.cur) >= need; ++it) {
      const W v(*it);
      put_raw(h.cur, v);
    }
  }
}

// ---- running messages --------------------------------------------------------------------------------------------

template <class Wire>
struct decoded;
template <class... W>
struct decoded<type_list<W...>> {
  static std::tuple<W...> read(byte_reader& in) { return std::tuple<W...>{in.read<W>()...}; }
};

/// Calls the handler with the decoded values, each passed as its parameter type asks (value/rvalue: moved).
template <class F, class Params, class Tuple>
decltype(auto) call(F fn, Tuple& values) {
  return [&]<class... P, std::size_t... I>(type_list<P...>, std::index_sequence<I...>) -> decltype(auto) {
    return fn(std::forward<P>(std::get<I>(values))...);
  }(Params{}, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

/// The stateless handler, or the function pointer named by the group's function word.
template <class F>
F handler_of(const rx_buffer& b) {
  if constexpr (std::is_pointer_v<F>) {
    return function_at<std::remove_pointer_t<F>>(b.function);
  } else {
    return F{};
  }
}

/// Receives a failure report of a fire-and-forget handler.
inline void run_failure_report(rx_buffer& b) {
  byte_reader in(b.pos, static_cast<std::size_t>(b.end - b.pos));
  auto text = in.read<std::string>();
  b.pos = in.position();
  g_engine->record_error(std::move(text));
}

inline void report_failure(engine& e, int dest, std::string text) {
  write_message<type_list<std::string>>(e, dest, group_key(word_of(&run_failure_report)), std::tuple<>{}, text);
}


/// A trivially copyable value stored (unaligned) at p.
template <class T>
T load(const std::byte* p) {
  std::array<std::byte, sizeof(T)> raw;
  std::memcpy(raw.data(), p, sizeof(T));
  return std::bit_cast<T>(raw);
}

[[noreturn]] inline void throw_truncated() { throw error("shoal::am: truncated message (corrupt stream)"); }

/// Whether handler class F offers a prefetch hint: `static void prefetch(const W&... args)`, called with the
/// arguments of a message of its group `prefetch_ahead` messages before that message runs (a lookup the handler
/// will make can start loading meanwhile). Arguments are read in place, so the hint sees the plain ones: all of them,
/// or, for messages with a string or vector, those before the first such argument (prefix_hinted below).
template <class F, class Wire>
struct prefetch_hinted : std::false_type {};
template <class F, class... W>
  requires requires(const W&... w) { F::prefetch(w...); }
struct prefetch_hinted<F, type_list<W...>> : std::true_type {};

/// Messages ahead of the one running whose prefetch hint is given (about as many lookups as a core overlaps).
inline constexpr std::uint32_t prefetch_ahead = 8;

/// Messages of plain arguments up to this size run in chunks of chunk_messages, read before the chunk runs (run_post).
inline constexpr std::size_t small_message_bytes = 32;
inline constexpr std::uint32_t chunk_messages = 8;

/// The leading arguments of a message that are plain bytes (read in place), up to the first that is not.
template <class Done, class Rest>
struct leading_trivial {
  using type = Done;
};
template <class... D, class W, class... R>
  requires trivially_serializable<W>
struct leading_trivial<type_list<D...>, type_list<W, R...>> : leading_trivial<type_list<D..., W>, type_list<R...>> {};
template <class Wire>
using leading_trivial_t = typename leading_trivial<type_list<>, Wire>::type;

/// Moves `p` past one argument of type W (plain bytes, or a length and plain elements); false if it does not fit
/// before `end`.
template <class W>
bool skip_argument(const std::byte*& p, const std::byte* end) {
  if constexpr (trivially_serializable<W>) {
    if (static_cast<std::size_t>(end - p) < sizeof(W)) return false;
    p += sizeof(W);
  } else {
    using E = typename W::value_type;
    if (static_cast<std::size_t>(end - p) < sizeof(std::uint64_t)) return false;
    const auto n = load<std::uint64_t>(p);
    p += sizeof(std::uint64_t);
    if (n > static_cast<std::size_t>(end - p) / sizeof(E)) return false;
    p += n * sizeof(E);
  }
  return true;
}

/// Messages whose length can be found without decoding them (every argument plain bytes, or a string or vector of
/// plain elements), and how.
template <class Wire>
struct skippable : std::false_type {};
template <class... W>
  requires((trivially_serializable<W> || contiguous_serializable<W>) && ...)
struct skippable<type_list<W...>> : std::true_type {
  static bool skip(const std::byte*& p, const std::byte* end) { return (skip_argument<W>(p, end) && ...); }
};

/// Whether handler class F gives a prefetch hint for messages decoded one by one: `F::prefetch` callable with the
/// message's leading plain arguments (e.g. a table id and a key before a vector of values), and messages that can be
/// skipped to reach the next one.
template <class F, class Wire>
struct prefix_hinted : std::false_type {};
template <class F, class Wire>
  requires(skippable<Wire>::value && !all_trivial<Wire>::value)
struct prefix_hinted<F, Wire> : prefetch_hinted<F, leading_trivial_t<Wire>> {};

/// The values of plain arguments `W...` read in place at `at`.
template <class... W>
std::tuple<W...> values_in_place(type_list<W...>, const std::byte* at) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple<W...>{load<W>(at + all_trivial<type_list<W...>>::offsets[I])...};
  }(std::index_sequence_for<W...>{});
}

/// Before the message at `b.pos` is decoded: gives the prefetch hint (prefix_hinted) of that message and of up to
/// prefetch_ahead more of its group, each message once, when it comes within reach.
template <class F, class Wire>
void hint_ahead(rx_buffer& b) {
  using prefix = leading_trivial_t<Wire>;
  const std::uint32_t from_here = b.left + 1;  // this message and the rest of its group
  // The group's first message: nothing read ahead in this buffer yet, or only in earlier groups (they lie before it).
  if (b.ahead == nullptr || b.ahead < b.pos) {
    b.ahead = b.pos;
    b.unhinted = from_here;
  }
  while (b.unhinted > 0 && from_here - b.unhinted <= prefetch_ahead) {
    const std::byte* p = b.ahead;
    if (static_cast<std::size_t>(b.end - p) < all_trivial<prefix>::bytes) break;
    std::apply([](const auto&... v) { F::prefetch(v...); }, values_in_place(prefix{}, p));
    if (!skippable<Wire>::skip(p, b.end)) break;
    b.ahead = p;
    --b.unhinted;
  }
  if (b.unhinted > 0 && from_here - b.unhinted <= prefetch_ahead) b.unhinted = 0;  // one did not fit: stop hinting
}

/// Runs a fire-and-forget message. A failure is reported to the sender (thrown by its next am::barrier).
/// Trivially copyable arguments: the rest of the message's group runs in the same loop (one indirect call per group,
/// one bounds check per group, values loaded straight from the buffer).
template <class F, class Params, class Wire>
void run_post(rx_buffer& b) {
  engine& e = *g_engine;
  if constexpr (all_trivial<Wire>::value) {
    constexpr std::size_t body = all_trivial<Wire>::bytes;
    if constexpr (body > 0) {
      if (static_cast<std::size_t>(b.end - b.pos) / body <= b.left) [[unlikely]] throw_truncated();
    }
    const std::uint32_t epoch = e.loop_epoch();
    const F fn = handler_of<F>(b);
    // The loop's position and count live in registers; b.pos and b.left are only stored (for a nested loop, should a
    // handler wait), never read back, and the messages run are counted once when the loop ends.
    const std::byte* p = b.pos;
    std::uint32_t left = b.left;
    std::uint64_t counted_later = 0;  // messages run by this loop before the current one
    auto values_at = [](const std::byte* at) {
      return [&]<class... W>(type_list<W...>) {
        return [&]<std::size_t... I>(std::index_sequence<I...>) {
          return std::tuple<W...>{load<W>(at + all_trivial<Wire>::offsets[I])...};
        }(std::index_sequence_for<W...>{});
      }(Wire{});
    };
    // Runs one message whose values were read (the loop's position is at its start); false when the loop ends: the
    // group ended, or a nested loop ran meanwhile (a handler that waited), which may have taken over or freed `b` —
    // the outer loop goes on from there. Dispatch counts the current message.
    auto run_one = [&](auto values) {
      p += body;
      b.pos = p;
      b.left = left;
      try {
        call<F, Params>(fn, values);
      } catch (...) {
        report_failure(e, b.source, describe_failure(handler_name(fn), b.source, e.rank(), std::current_exception()));
      }
      if (e.loop_epoch() != epoch || left == 0) [[unlikely]] {
        if (counted_later > 0) e.count_handled(counted_later);
        return false;
      }
      --left;
      ++counted_later;
      return true;
    };
    // A handler with a prefetch hint sees each message prefetch_ahead messages before it runs.
    constexpr bool hinted = prefetch_hinted<F, Wire>::value;
    if constexpr (hinted) {
      for (std::uint32_t j = 0; j < prefetch_ahead && j <= left; ++j) {
        std::apply([](const auto&... v) { F::prefetch(v...); }, values_at(p + j * body));
      }
    } else if constexpr (body > 0 && body <= small_message_bytes) {
      // Small messages run in chunks whose bytes are read before the chunk's first handler runs. A read through
      // std::byte may alias anything, b.pos and b.left included, so with reads between the handlers both were stored
      // for every message; read first, the stores of a chunk whose handlers make no calls are one per chunk (an 8-byte
      // message's loop: 9 instructions and 3 stores per message before, 2 instructions per message after).
      while (left >= chunk_messages - 1) {
        std::array<std::byte, chunk_messages * body> raw;
        std::memcpy(raw.data(), p, raw.size());
#pragma GCC unroll 8
        for (std::uint32_t j = 0; j < chunk_messages; ++j) {
          if (!run_one(values_at(raw.data() + j * body))) return;
        }
      }
    }
    for (;;) {
      if constexpr (hinted) {
        if (left >= prefetch_ahead) {
          std::apply([](const auto&... v) { F::prefetch(v...); }, values_at(p + prefetch_ahead * body));
        }
      }
      if (!run_one(values_at(p))) return;
    }
  } else {
    if constexpr (prefix_hinted<F, Wire>::value) hint_ahead<F, Wire>(b);
    byte_reader in(b.pos, static_cast<std::size_t>(b.end - b.pos));
    const F fn = handler_of<F>(b);
    auto values = decoded<Wire>::read(in);
    b.pos = in.position();
    try {
      call<F, Params>(fn, values);
    } catch (...) {
      report_failure(e, b.source, describe_failure(handler_name(fn), b.source, e.rank(), std::current_exception()));
    }
  }
}

/// A message in a format of the sender's own (a container's wire format): `tag` (e.g. which container) and a run of
/// bytes, which the handler sees where they arrived in the receive buffer, without a copy (valid during the call).
/// Wire: [uint32 size][uint32 tag][size bytes]; the handler is the group's function word.
using bytes_handler = void (*)(std::uint32_t tag, std::span<const std::byte> bytes);

/// Runs one byte message (dispatch runs the rest of its group: a byte message costs its handler far more than the
/// call through the engine).
inline void run_bytes(rx_buffer& b) {
  constexpr std::size_t header = 2 * sizeof(std::uint32_t);
  if (static_cast<std::size_t>(b.end - b.pos) < header) [[unlikely]] throw_truncated();
  const auto size = load<std::uint32_t>(b.pos);
  const auto tag = load<std::uint32_t>(b.pos + sizeof(std::uint32_t));
  const std::byte* at = b.pos + header;
  if (static_cast<std::size_t>(b.end - at) < size) [[unlikely]] throw_truncated();
  b.pos = at + size;
  const auto fn = handler_of<bytes_handler>(b);
  try {
    fn(tag, std::span<const std::byte>(at, size));
  } catch (...) {
    engine& e = *g_engine;
    report_failure(e, b.source, describe_failure(handler_name(fn), b.source, e.rank(), std::current_exception()));
  }
}

/// Room for a byte message of `size` bytes in the destination's buffer, its header written: the caller writes the
/// bytes at the returned address before any other shoal call (a buffer larger than the AM buffer size gets a block
/// of its own, so the address stays put).
inline std::byte* reserve_bytes(engine& e, int dest, bytes_handler fn, std::uint32_t tag, std::size_t size) {
  if (size > UINT32_MAX) [[unlikely]] {
    throw usage_error("shoal::am: a message of " + std::to_string(size) + " bytes is above the 4 GiB limit");
  }
  const auto size32 = static_cast<std::uint32_t>(size);
  std::byte* p = e.reserve(dest, group_key(word_of(&run_bytes), word_of(fn)), 2 * sizeof(std::uint32_t) + size);
  put_raw(p, size32);
  put_raw(p, tag);
  return p;
}

/// Writes a byte message: one copy of `bytes`, straight into the destination's buffer.
inline void write_bytes(engine& e, int dest, bytes_handler fn, std::uint32_t tag, std::span<const std::byte> bytes) {
  std::byte* p = reserve_bytes(e, dest, fn, tag, bytes.size());
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
}

/// The shared state of an rpc's future (R: the handler's result, void allowed); counts itself so finalize can report
/// results never taken.
template <class R>
struct rpc_state final : shoal::layer::future_state<R> {
  rpc_state() : run(g_engine->run()) { ++g_engine->live_rpcs(); }
  ~rpc_state() override {
    if (g_engine != nullptr && g_engine->run() == run) --g_engine->live_rpcs();  // not a later environment's
  }
  std::uint64_t run;
};

enum class reply_status : std::uint8_t { value = 0, failure = 1 };

/// Receives the reply of an rpc and completes its future.
template <class R>
void run_reply(rx_buffer& b) {
  byte_reader in(b.pos, static_cast<std::size_t>(b.end - b.pos));
  const auto slot = in.read<std::uint32_t>();
  const auto status = in.read<reply_status>();
  engine& e = *g_engine;
  auto state = shoal::detail::static_counted_cast<rpc_state<R>>(e.take_pending(slot));
  if (status == reply_status::value) {
    if constexpr (std::is_void_v<R>) {
      b.pos = in.position();
      state->set_value({});
    } else {
      R v = in.read<R>();
      b.pos = in.position();
      state->set_value(std::move(v));
    }
  } else {
    auto text = in.read<std::string>();
    b.pos = in.position();
    if (state->use_count() == 1) {  // nobody holds the future: report the failure like a fire-and-forget one
      e.record_error(std::move(text));
    } else {
      state->set_error(std::make_exception_ptr(remote_error(text)));
    }
  }
}

/// Runs an rpc message and sends its reply (the result, or the failure).
template <class F, class Params, class Wire, class R>
void run_rpc(rx_buffer& b) {
  byte_reader in(b.pos, static_cast<std::size_t>(b.end - b.pos));
  const F fn = handler_of<F>(b);
  const auto slot = in.read<std::uint32_t>();
  auto values = decoded<Wire>::read(in);
  b.pos = in.position();
  engine& e = *g_engine;
  const int source = b.source;
  const std::uint64_t reply_key = group_key(word_of(&run_reply<std::decay_t<R>>));
  std::exception_ptr failure;
  try {
    if constexpr (std::is_void_v<R>) {
      call<F, Params>(fn, values);
      write_message<type_list<>>(e, source, reply_key, std::tuple{slot, reply_status::value});
    } else {
      std::decay_t<R> result = call<F, Params>(fn, values);
      write_message<type_list<std::decay_t<R>>>(e, source, reply_key, std::tuple{slot, reply_status::value}, std::move(result));
    }
    return;
  } catch (...) {
    failure = std::current_exception();
  }
  write_message<type_list<std::string>>(e, source, reply_key, std::tuple{slot, reply_status::failure},
                                        describe_failure(handler_name(fn), source, e.rank(), failure));
}

}  // namespace shoal::am::detail
