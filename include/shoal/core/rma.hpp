// shoal/core/rma.hpp — one-sided reads, writes and atomics on global pointers.
//
// Each call takes the path to its target (shoal/core/paths.hpp): a rank on this host by loads, stores and CPU
// atomics; another host's data by MPI RMA or, where MPI cannot make a window across the job, by a message its owner
// applies; another host's atomics by a message its owner applies with CPU atomics (one round trip).
// Cost of each call (R remote read, W remote write, A remote atomic; "flush" = MPI_Win_flush on the MPI path, the
// owner's acknowledgement on the message path, a memory fence on the shared-memory path):
//   get(p) / get(p, dst, n)            R + flush_local  blocking; the value is here on return
//   put(p, v) / put(p, src, n)         W + flush        blocking; the write is complete at the target on return
//   get_many(ptrs, dst)                n R, overlapped  blocking; dst[i] = *ptrs[i], the n reads in flight together,
//                                                       then one flush_local
//   async_get / async_put              R or W           future ready when the local buffer is filled / reusable;
//                                                       an async_put is visible to others after flush / barrier
//   fetch_add, fetch_and, fetch_or,    A + flush        blocking; returns the old value
//   fetch_xor, exchange,
//   compare_exchange(p, expected, desired)  A + flush   returns the old value (success iff old == expected)
//   atomic_load / atomic_store         A + flush        never torn, ordered with the other atomics on the word
//   flush(rank) / flush_all()          completes every earlier async operation to that rank / to all ranks
//
// Memory-model rules (docs/core.md): every word that is accessed with atomics must only be accessed with shoal
// atomics (never with get/put or local() at the same time); all atomics on a word are CPU atomics at its owner's
// host, except under SHOAL_FORCE_MPI, where all of them are MPI atomics — the two never mix on a word. Plain
// get/put of data that another rank writes concurrently reads or writes bytes without atomicity; publish data with
// an atomic flag after a put.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/core/checks.hpp"
#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/detail/mpi_type.hpp"
#include "shoal/core/detail/prefetch.hpp"
#include "shoal/core/detail/remote_ops.hpp"
#include "shoal/core/detail/runtime.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/global_ptr.hpp"
#include "shoal/core/heap.hpp"

namespace shoal {

namespace detail {

/// The error of a failed check_access (kept out of line, so that the check itself stays two compares).
[[noreturn, gnu::cold, gnu::noinline]] inline void bad_access(const runtime& r, std::uint64_t raw, std::size_t bytes,
                                                              const char* call) {
  auto p = global_ptr<std::byte>::from_raw(raw);
  if (p.is_null()) throw usage_error(std::string("shoal::") + call + ": null global pointer");
  if (p.rank() < 0 || p.rank() >= r.size) {
    throw usage_error(std::string("shoal::") + call + ": rank " + std::to_string(p.rank()) + " is outside [0, " +
                      std::to_string(r.size) + ")");
  }
  throw usage_error(std::string("shoal::") + call + ": bytes [" + std::to_string(p.offset()) + ", " +
                    std::to_string(p.offset() + bytes) + ") lie outside the segment of " +
                    std::to_string(r.segment_size) + " bytes (SHOAL_HEAP_SIZE)");
}

/// Range checks on ranks and segment bounds: cheap checks, compiled in at SHOAL_CHECKS >= 1 (shoal/core/checks.hpp).
/// One unsigned compare rejects null (rank field 0) and ranks past the job, one more bytes outside the segment.
inline void check_access([[maybe_unused]] const runtime& r, [[maybe_unused]] std::uint64_t raw,
                         [[maybe_unused]] std::size_t bytes, [[maybe_unused]] const char* call) {
#if SHOAL_CHECKS >= 1
  constexpr int shift = global_ptr<std::byte>::offset_bits;
  const std::uint64_t rank = (raw >> shift) - 1;  // wraps to the maximum for null
  const std::uint64_t offset = raw & global_ptr<std::byte>::offset_mask;
  if (rank >= static_cast<std::uint64_t>(r.size) || offset > r.segment_size || bytes > r.segment_size - offset)
      [[unlikely]] {
    bad_access(r, raw, bytes, call);
  }
#endif
}

/// The address of `offset` in `rank`'s segment when that segment is mapped here (same host), else null.
inline std::byte* mapped(const runtime& r, int rank, std::size_t offset) {
  std::byte* b = r.peer_base[static_cast<std::size_t>(rank)];
  return b != nullptr ? b + offset : nullptr;
}

inline constexpr std::size_t max_chunk = std::size_t{1} << 30;  // MPI counts are int

inline void mpi_get_bytes(const runtime& r, void* dst, int rank, std::size_t offset, std::size_t bytes) {
  auto* d = static_cast<char*>(dst);
  for (std::size_t done = 0; done < bytes; done += max_chunk) {
    const int n = static_cast<int>(std::min(max_chunk, bytes - done));
    SHOAL_MPI(MPI_Get(d + done, n, MPI_BYTE, rank, static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, r.win));
  }
}

inline void mpi_put_bytes(const runtime& r, const void* src, int rank, std::size_t offset, std::size_t bytes) {
  const auto* s = static_cast<const char*>(src);
  for (std::size_t done = 0; done < bytes; done += max_chunk) {
    const int n = static_cast<int>(std::min(max_chunk, bytes - done));
    SHOAL_MPI(MPI_Put(s + done, n, MPI_BYTE, rank, static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, r.win));
  }
}

/// A blocking MPI RMA read. In a job on one host MPI_Get + MPI_Win_flush_local; across hosts each chunk is an
/// MPI_Rget waited for by shoal's own wait loop: RMA over a network without RDMA completes only when the target's
/// MPI makes progress, and MPI's flush spins without giving the CPU away, so with more ranks than cores it would
/// keep the very rank it waits for from running; shoal's wait serves requests, then yields, then sleeps.
inline void mpi_get_blocking(const runtime& r, void* dst, int rank, std::size_t offset, std::size_t bytes) {
  if (r.hosts == 1) {
    mpi_get_bytes(r, dst, rank, offset, bytes);
    SHOAL_MPI(MPI_Win_flush_local(rank, r.win));
    return;
  }
  auto* d = static_cast<char*>(dst);
  one_sided_wait scope;
  for (std::size_t done = 0; done < bytes; done += max_chunk) {
    const int n = static_cast<int>(std::min(max_chunk, bytes - done));
    MPI_Request req;
    SHOAL_MPI(MPI_Rget(d + done, n, MPI_BYTE, rank, static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, r.win, &req));
    wait_request(req);
  }
}

inline void message_get_bytes(const runtime& r, void* dst, int rank, std::size_t offset, std::size_t bytes) {
  auto* d = static_cast<char*>(dst);
  for (std::size_t done = 0; done < bytes; done += max_chunk) {
    r.messages->get(rank, d + done, offset + done, std::min(max_chunk, bytes - done));
  }
}

inline void message_put_bytes(const runtime& r, const void* src, int rank, std::size_t offset, std::size_t bytes) {
  const auto* s = static_cast<const char*>(src);
  for (std::size_t done = 0; done < bytes; done += max_chunk) {
    r.messages->start_put(rank, s + done, offset + done, std::min(max_chunk, bytes - done));
  }
}

// The blocking reads and writes of a target that is not mapped here. The common case of each — MPI RMA, one call's
// worth of bytes, and for a read a job on one host, where MPI's own flush completes it — is inline: the MPI calls
// and one compare per check, nothing else. Every other case (across hosts, by messages, more than 1 GiB) is out of
// line, so that it adds neither code nor saved registers to the common one.

[[gnu::noinline]] inline void remote_get_other(const runtime& r, void* dst, int rank, std::size_t offset,
                                               std::size_t bytes) {
  if (r.win != MPI_WIN_NULL) mpi_get_blocking(r, dst, rank, offset, bytes);
  else message_get_bytes(r, dst, rank, offset, bytes);
}

inline void remote_get(const runtime& r, void* dst, int rank, std::size_t offset, std::size_t bytes) {
  if (r.win != MPI_WIN_NULL && r.hosts == 1 && bytes <= max_chunk) [[likely]] {
    const int n = static_cast<int>(bytes);
    SHOAL_MPI(MPI_Get(dst, n, MPI_BYTE, rank, static_cast<MPI_Aint>(offset), n, MPI_BYTE, r.win));
    SHOAL_MPI(MPI_Win_flush_local(rank, r.win));
    return;
  }
  remote_get_other(r, dst, rank, offset, bytes);
}

[[gnu::noinline]] inline void remote_put_other(const runtime& r, const void* src, int rank, std::size_t offset,
                                               std::size_t bytes) {
  if (r.win != MPI_WIN_NULL) {
    mpi_put_bytes(r, src, rank, offset, bytes);
    SHOAL_MPI(MPI_Win_flush(rank, r.win));
  } else {
    message_put_bytes(r, src, rank, offset, bytes);
    r.messages->complete_puts(rank);
  }
}

inline void remote_put(const runtime& r, const void* src, int rank, std::size_t offset, std::size_t bytes) {
  if (r.win != MPI_WIN_NULL && bytes <= max_chunk) [[likely]] {
    const int n = static_cast<int>(bytes);
    SHOAL_MPI(MPI_Put(src, n, MPI_BYTE, rank, static_cast<MPI_Aint>(offset), n, MPI_BYTE, r.win));
    SHOAL_MPI(MPI_Win_flush(rank, r.win));
    return;
  }
  remote_put_other(r, src, rank, offset, bytes);
}

/// An atomic on another host's word, applied by its owner (one round trip; out of line: see above).
[[gnu::noinline]] inline std::uint64_t message_word(const runtime& r, int rank, std::size_t offset, int width,
                                                   word_op op, std::uint64_t operand, std::uint64_t compare = 0) {
  return r.messages->word(rank, offset, width, op, operand, compare);
}

/// An atomic on the word at p: a CPU atomic where p's segment is mapped here, an MPI atomic when every atomic of
/// the run is one, else applied by p's owner (detail/remote_ops.hpp).
template <class T, class Fn>
[[gnu::always_inline]] inline T atomic_op(global_ptr<T> p, const char* name, Fn&& cpu, MPI_Op mop, word_op wop,
                                          T operand) {
  auto& r = rt();
  check_access(r, p.raw(), sizeof(T), name);
  if (std::byte* at = mapped(r, p.rank(), p.offset())) {
    std::atomic_ref<T> ref(*reinterpret_cast<T*>(at));
    return cpu(ref, operand);
  }
  if (r.mpi_atomics) {
    T result;
    SHOAL_MPI(MPI_Fetch_and_op(&operand, &result, mpi_type<T>(), p.rank(), static_cast<MPI_Aint>(p.offset()), mop,
                               r.win));
    SHOAL_MPI(MPI_Win_flush(p.rank(), r.win));
    return result;
  }
  using U = std::make_unsigned_t<T>;
  const std::uint64_t old = message_word(r, p.rank(), p.offset(), sizeof(T), wop, static_cast<U>(operand));
  return static_cast<T>(static_cast<U>(old));
}

}  // namespace detail

// ---- reads -----------------------------------------------------------------------------------------------------

/// A cache hint before reading p (no communication, any rank): where p's memory is mapped in this process (this
/// rank's segment, or a same-host rank's on the shared-memory path) starts loading the `n` elements at p into the
/// cache; elsewhere does nothing. Lets a caller with many independent reads in flight overlap their cache misses.
template <class T>
inline void prefetch(global_ptr<T> p, std::size_t n = 1) {
  const std::byte* at = detail::mapped(detail::rt(), p.rank(), p.offset());
  if (at != nullptr) detail::prefetch_bytes(at, n * sizeof(T));
}

/// Reads n elements at p into dst. Blocking.
template <class T>
  requires remote_storable<std::remove_const_t<T>>
[[gnu::always_inline]] inline void get(global_ptr<T> p, std::remove_const_t<T>* dst, std::size_t n) {
  auto& r = detail::rt();
  const std::size_t bytes = n * sizeof(T);
  detail::check_access(r, p.raw(), bytes, "get");
  if (const std::byte* at = detail::mapped(r, p.rank(), p.offset())) {
    std::memcpy(dst, at, bytes);
    std::atomic_thread_fence(std::memory_order_acquire);
  } else {
    detail::remote_get(r, dst, p.rank(), p.offset(), bytes);
  }
}

/// Reads the element at p. Blocking.
template <class T>
  requires remote_storable<std::remove_const_t<T>>
std::remove_const_t<T> get(global_ptr<T> p) {
  std::remove_const_t<T> v;
  get(p, &v, 1);
  return v;
}

/// Starts reading n elements at p into dst; dst must stay alive until the future is ready.
template <class T>
  requires remote_storable<std::remove_const_t<T>>
future<void> async_get(global_ptr<T> p, std::remove_const_t<T>* dst, std::size_t n) {
  auto& r = detail::rt();
  const std::size_t bytes = n * sizeof(T);
  detail::check_access(r, p.raw(), bytes, "async_get");
  if (detail::mapped(r, p.rank(), p.offset()) != nullptr || bytes > INT_MAX) {
    get(p, dst, n);
    return make_ready_future();
  }
  auto s = detail::make_counted<detail::request_state<detail::empty_value>>();
  if (r.win != MPI_WIN_NULL) {
    SHOAL_MPI(MPI_Rget(dst, static_cast<int>(bytes), MPI_BYTE, p.rank(), static_cast<MPI_Aint>(p.offset()),
                       static_cast<int>(bytes), MPI_BYTE, r.win, &s->req));
  } else {
    r.messages->start_get(p.rank(), dst, p.offset(), bytes, &s->req);
  }
  return future<void>(std::move(s));
}

/// Starts reading the element at p.
template <class T>
  requires remote_storable<std::remove_const_t<T>>
future<std::remove_const_t<T>> async_get(global_ptr<T> p) {
  using U = std::remove_const_t<T>;
  auto& r = detail::rt();
  if (detail::mapped(r, p.rank(), p.offset()) != nullptr) return make_ready_future(get(p));
  detail::check_access(r, p.raw(), sizeof(U), "async_get");
  auto s = detail::make_counted<detail::request_state<U>>();
  if (r.win != MPI_WIN_NULL) {
    SHOAL_MPI(MPI_Rget(&s->buffer, static_cast<int>(sizeof(U)), MPI_BYTE, p.rank(),
                       static_cast<MPI_Aint>(p.offset()), static_cast<int>(sizeof(U)), MPI_BYTE, r.win, &s->req));
  } else {
    r.messages->start_get(p.rank(), &s->buffer, p.offset(), sizeof(U), &s->req);
  }
  return future<U>(std::move(s));
}

/// Reads the element at from[i] into dst[i] for every i, the n reads in flight together (blocking; the values are
/// here on return). Where an element's memory is mapped here (this rank's, or a same-host rank's on the
/// shared-memory path) all of them are prefetched before any is copied; on the MPI path every read is started (as a
/// request) before one MPI_Waitall completes them all; by messages every request is sent before the first reply is
/// waited for. For callers with many independent reads (e.g. the home buckets of many keys): n R, overlapped.
/// (Requests, not MPI_Get and one flush: with MPICH 4.0.2 at 4 ranks, MPI_Win_flush_local_all and MPI_Win_flush_all
/// both returned, about once in 25 runs of hash_map's find_many test, before the last of ~60 gets had written its
/// buffer: the value read at once was zero and the same buffer held the data a moment later; 0 in 120 runs with
/// MPI_Rget and MPI_Waitall.)
template <class T>
  requires remote_storable<std::remove_const_t<T>>
void get_many(std::span<const global_ptr<T>> from, std::remove_const_t<T>* dst) {
  auto& r = detail::rt();
  const bool one_wait = r.win != MPI_WIN_NULL && r.hosts == 1;
  std::vector<MPI_Request> started;
  std::vector<future<void>> pending;
  for (std::size_t i = 0; i < from.size(); ++i) {
    const auto p = from[i];
    detail::check_access(r, p.raw(), sizeof(T), "get_many");
    if (detail::mapped(r, p.rank(), p.offset()) != nullptr) {
      prefetch(p);
    } else if (one_wait) {
      started.push_back(MPI_REQUEST_NULL);
      SHOAL_MPI(MPI_Rget(dst + i, static_cast<int>(sizeof(T)), MPI_BYTE, p.rank(), static_cast<MPI_Aint>(p.offset()),
                         static_cast<int>(sizeof(T)), MPI_BYTE, r.win, &started.back()));
    } else {
      pending.push_back(async_get(p, dst + i, 1));
    }
  }
  if (!started.empty()) SHOAL_MPI(MPI_Waitall(static_cast<int>(started.size()), started.data(), MPI_STATUSES_IGNORE));
  for (auto& f : pending) f.get();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (const std::byte* at = detail::mapped(r, from[i].rank(), from[i].offset())) std::memcpy(dst + i, at, sizeof(T));
  }
  std::atomic_thread_fence(std::memory_order_acquire);
}

// ---- writes ----------------------------------------------------------------------------------------------------

/// Writes n elements from src to p. Blocking: complete at the target on return.
template <remote_storable T>
[[gnu::always_inline]] inline void put(global_ptr<T> p, const T* src, std::size_t n) {
  auto& r = detail::rt();
  const std::size_t bytes = n * sizeof(T);
  detail::check_access(r, p.raw(), bytes, "put");
  if (std::byte* at = detail::mapped(r, p.rank(), p.offset())) {
    std::atomic_thread_fence(std::memory_order_release);
    std::memcpy(at, src, bytes);
    std::atomic_thread_fence(std::memory_order_release);
  } else {
    detail::remote_put(r, src, p.rank(), p.offset(), bytes);
  }
}

/// Writes value to p. Blocking.
template <remote_storable T>
void put(global_ptr<T> p, const T& value) {
  put(p, &value, 1);
}

/// Starts writing n elements from src to p; src must stay alive until the future is ready. Visible to other ranks
/// after flush(p.rank()), flush_all() or a barrier.
template <remote_storable T>
future<void> async_put(global_ptr<T> p, const T* src, std::size_t n) {
  auto& r = detail::rt();
  const std::size_t bytes = n * sizeof(T);
  detail::check_access(r, p.raw(), bytes, "async_put");
  if (detail::mapped(r, p.rank(), p.offset()) != nullptr || bytes > INT_MAX) {
    put(p, src, n);
    return make_ready_future();
  }
  if (r.win == MPI_WIN_NULL) {  // the bytes travel in the request: src is free at once
    detail::message_put_bytes(r, src, p.rank(), p.offset(), bytes);
    return make_ready_future();
  }
  auto s = detail::make_counted<detail::request_state<detail::empty_value>>();
  SHOAL_MPI(MPI_Rput(src, static_cast<int>(bytes), MPI_BYTE, p.rank(), static_cast<MPI_Aint>(p.offset()),
                     static_cast<int>(bytes), MPI_BYTE, r.win, &s->req));
  return future<void>(std::move(s));
}

/// Starts writing value to p (the value is copied; nothing must stay alive).
template <remote_storable T>
future<void> async_put(global_ptr<T> p, const T& value) {
  auto& r = detail::rt();
  if (detail::mapped(r, p.rank(), p.offset()) != nullptr || r.win == MPI_WIN_NULL) return async_put(p, &value, 1);
  detail::check_access(r, p.raw(), sizeof(T), "async_put");
  // The value travels inside the state, whose buffer outlives the request.
  struct put_state : detail::request_state<detail::empty_value> {
    T value;
  };
  auto s = detail::make_counted<put_state>();
  s->value = value;
  SHOAL_MPI(MPI_Rput(&s->value, static_cast<int>(sizeof(T)), MPI_BYTE, p.rank(), static_cast<MPI_Aint>(p.offset()),
                     static_cast<int>(sizeof(T)), MPI_BYTE, r.win, &s->req));
  return future<void>(std::move(s));
}

// ---- completion ------------------------------------------------------------------------------------------------

/// Completes every earlier operation of this rank to `target` (remotely).
inline void flush(int target) {
  auto& r = detail::rt();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (r.peer_base[static_cast<std::size_t>(target)] != nullptr) return;
  if (r.win != MPI_WIN_NULL) SHOAL_MPI(MPI_Win_flush(target, r.win));
  else r.messages->complete_puts(target);
}

/// Completes every earlier operation of this rank to every rank.
inline void flush_all() {
  auto& r = detail::rt();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (r.path == rma_path::shared_memory) return;
  if (r.win != MPI_WIN_NULL) SHOAL_MPI(MPI_Win_flush_all(r.win));
  if (r.messages) r.messages->complete_puts(-1);
}

// ---- atomics on 32- and 64-bit integers ----------------------------------------------------------------------

template <atomic_integer T>
T fetch_add(global_ptr<T> p, T v) {
  return detail::atomic_op(p, "fetch_add", [](std::atomic_ref<T>& a, T x) { return a.fetch_add(x); }, MPI_SUM,
                           detail::word_op::add, v);
}
template <atomic_integer T>
T fetch_and(global_ptr<T> p, T v) {
  return detail::atomic_op(p, "fetch_and", [](std::atomic_ref<T>& a, T x) { return a.fetch_and(x); }, MPI_BAND,
                           detail::word_op::bit_and, v);
}
template <atomic_integer T>
T fetch_or(global_ptr<T> p, T v) {
  return detail::atomic_op(p, "fetch_or", [](std::atomic_ref<T>& a, T x) { return a.fetch_or(x); }, MPI_BOR,
                           detail::word_op::bit_or, v);
}
template <atomic_integer T>
T fetch_xor(global_ptr<T> p, T v) {
  return detail::atomic_op(p, "fetch_xor", [](std::atomic_ref<T>& a, T x) { return a.fetch_xor(x); }, MPI_BXOR,
                           detail::word_op::bit_xor, v);
}
template <atomic_integer T>
T exchange(global_ptr<T> p, T v) {
  return detail::atomic_op(p, "exchange", [](std::atomic_ref<T>& a, T x) { return a.exchange(x); }, MPI_REPLACE,
                           detail::word_op::exchange, v);
}
template <atomic_integer T>
T atomic_load(global_ptr<T> p) {
  return detail::atomic_op(p, "atomic_load", [](std::atomic_ref<T>& a, T) { return a.load(); }, MPI_NO_OP,
                           detail::word_op::load, T{});
}
template <atomic_integer T>
void atomic_store(global_ptr<T> p, T v) {
  detail::atomic_op(p, "atomic_store", [](std::atomic_ref<T>& a, T x) { a.store(x); return x; }, MPI_REPLACE,
                    detail::word_op::exchange, v);
}

/// If *p == expected, stores desired. Returns the value *p held before (the swap happened iff it equals expected).
template <atomic_integer T>
[[gnu::always_inline]] inline T compare_exchange(global_ptr<T> p, T expected, T desired) {
  auto& r = detail::rt();
  detail::check_access(r, p.raw(), sizeof(T), "compare_exchange");
  if (std::byte* at = detail::mapped(r, p.rank(), p.offset())) {
    std::atomic_ref<T> ref(*reinterpret_cast<T*>(at));
    ref.compare_exchange_strong(expected, desired);
    return expected;
  }
  if (r.mpi_atomics) {
    T result;
    SHOAL_MPI(MPI_Compare_and_swap(&desired, &expected, &result, detail::mpi_type<T>(), p.rank(),
                                   static_cast<MPI_Aint>(p.offset()), r.win));
    SHOAL_MPI(MPI_Win_flush(p.rank(), r.win));
    return result;
  }
  using U = std::make_unsigned_t<T>;
  const std::uint64_t old = detail::message_word(r, p.rank(), p.offset(), sizeof(T), detail::word_op::compare_exchange,
                                                 static_cast<U>(desired), static_cast<U>(expected));
  return static_cast<T>(static_cast<U>(old));
}

}  // namespace shoal
