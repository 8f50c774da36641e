// shoal/am/detail/wire.hpp — the wire format of active messages, and the buffers that carry it.
//
// A buffer sent to a rank is a concatenation of groups of consecutive messages for the same handler and team:
//     [int32 handler word][int32 function word, 0 for lambdas][uint32 count][uint32 team] count × [handler bytes]
// (the sender keeps a group open while the next message to that destination has the same handler and team, so a
// stream of small messages costs its payload bytes plus 16 bytes per group, and the receiver runs a group in one
// loop). The team word is the id of the team the messages belong to (0: world()); quiescence is counted per team. The
// handler word is the offset of the receiving trampoline (a function template instantiated per handler type)
// from `anchor`, a function of this header: both live in the same executable image, whose layout is identical on
// every rank of the same binary, so the offset is the same everywhere even though ASLR moves the image. The
// trampoline knows how many bytes its message occupies (it decodes the arguments with shoal::byte_reader), so no
// length is stored. A buffer larger than the receivers' slots is announced in the stream by 16 bytes
// [int32 0][int32 0][uint64 size] (no group starts with handler word 0) and travels apart (receiving.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace shoal::am {

/// Default bytes per destination buffer (SHOAL_AM_BUFFER).
inline constexpr std::size_t default_buffer_size = std::size_t{64} << 10;
/// Default cap on outstanding send buffers per rank (SHOAL_AM_MAX_SENDS).
inline constexpr std::size_t default_max_sends = 16;
/// Smallest buffer size accepted (a message larger than the buffer still travels, alone).
inline constexpr std::size_t min_buffer_size = 16;
/// Bytes of a destination's first buffer, and of the next one after a buffer left before it was full (a flush, a
/// wait): below the eager limit of the MPI transports (Open MPI's shared-memory one sends up to 4 KiB at once), so a
/// latency-bound exchange travels as single eager MPI messages, with no rendezvous handshake that needs both ranks'
/// progress. A buffer that fills makes the next one buffer_size(): after its first eager message a stream travels in
/// full buffers (docs/am.md, "Buffer sizes").
inline constexpr std::size_t eager_buffer_size = 4000;

}  // namespace shoal::am

namespace shoal::am::detail {

/// The reference point of handler words; never called.
[[gnu::noinline, gnu::used]] inline void anchor() { asm volatile(""); }

inline std::intptr_t anchor_address() { return reinterpret_cast<std::intptr_t>(&anchor); }

/// A block of raw bytes (no zero-initialisation, unlike std::vector).
struct block {
  std::unique_ptr<std::byte[]> data;
  std::size_t capacity = 0;
};

inline block new_block(std::size_t capacity) {
  return block{std::unique_ptr<std::byte[]>(new std::byte[capacity]), capacity};
}

struct rx_buffer;

/// Decodes one message at `b.pos`, advances `b.pos` past it, then runs the handler. Trampolines of trivially copyable
/// messages go on with the rest of the group (`b.left` more messages), see run_post.
using trampoline = void (*)(rx_buffer& b);

/// A received buffer being executed; `pos`, `left` and `run` are shared by nested handler loops (a handler that
/// waits runs others, possibly the rest of its own group).
struct rx_buffer {
  rx_buffer() = default;
  /// A received buffer's bytes, where its unread part starts and ends, and its sender (a constructor, not aggregate
  /// initialization: emplace_back from these fields needs one before clang 16).
  rx_buffer(block b, const std::byte* first, const std::byte* last, int from) noexcept
      : bytes(std::move(b)), pos(first), end(last), source(from) {}

  block bytes{};
  const std::byte* pos = nullptr;
  const std::byte* end = nullptr;
  int source = 0;
  std::uint32_t left = 0;    // messages of the current group after the one being run
  std::int32_t function = 0;  // the current group's function word (function-pointer handlers)
  std::uint32_t team = 0;     // the current group's team id
  trampoline run = nullptr;  // the current group's trampoline
  // Messages decoded one by one (run_post, arguments not all plain bytes) whose handler gives a prefetch hint: the
  // first message of the group not hinted yet, and how many of the group are left from it on. A hint only: read
  // within [pos, end) and checked, never trusted.
  const std::byte* ahead = nullptr;
  std::uint32_t unhinted = 0;
};

/// The header of a group of messages for one handler and team: [int32 handler word][int32 function word][uint32 count]
/// [uint32 team].
inline constexpr std::size_t group_header_bytes = 16;

/// The announcement of a large buffer: [int32 0][int32 0][uint64 size].
inline constexpr std::size_t announcement_bytes = 16;

/// What identifies a group: the trampoline's word and, for function-pointer handlers, the function's word.
inline std::uint64_t group_key(std::int32_t word, std::int32_t function = 0) {
  return static_cast<std::uint32_t>(word) | std::uint64_t{static_cast<std::uint32_t>(function)} << 32;
}

/// A destination's buffer being filled, and its open group (the last handler word written and how many messages
/// of it follow; the count is stored at `count_at` when the group closes). A group of messages of one fixed size
/// (trivially copyable arguments) is not counted as it fills: its count is its bytes divided by `unit`, so appending
/// a message moves the cursor and nothing else.
struct outbox {
  std::byte* begin = nullptr;
  std::byte* cur = nullptr;
  std::byte* end = nullptr;
  std::uint64_t key = 0;  // of the open group (group_key); 0: none (word 0 is the anchor, never a trampoline)
  std::uint32_t team = 0;  // of the open group
  std::uint32_t count = 0;  // messages of the open group, when unit == 0
  std::uint32_t unit = 0;  // bytes per message of the open group when they are all the same size, else 0
  std::uint64_t fixed_key = 0;  // key when unit != 0, else 0: what write_message's inline path appends to
  std::byte* count_at = nullptr;  // the group's count word; its first message starts 8 bytes after it
  block bytes{};
  std::size_t limit = 0;  // bytes the next buffer holds (0: eager_buffer_size); see eager_buffer_size
  bool listed = false;  // in engine::dirty

  /// Messages in the open group.
  std::uint32_t open_count() const {
    if (unit == 0 || key == 0) return count;
    return static_cast<std::uint32_t>(static_cast<std::size_t>(cur - (count_at + 8)) / unit);
  }
};

}  // namespace shoal::am::detail
