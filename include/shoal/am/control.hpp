// shoal/am/control.hpp — progress, flushing, quiescence and settings of active messages.
//
// Who: collective = every rank (of the team), in the same order; any rank = one rank's call.
//   shoal::am::flush()           any rank: hands every buffered message to MPI now (no waiting).
//   shoal::am::barrier()         collective: returns when no message is buffered, in flight, queued or running on any
//                                rank, including messages that handlers send while the barrier runs. Then throws, on
//                                the ranks concerned, the failures of fire-and-forget handlers reported to them.
//   shoal::am::barrier(team)     collective over the team: the same for the messages of that team (those sent inside
//                                a team_scope of it and by its handlers), among its ranks only.
//   shoal::am::current_source()  any rank, inside a handler: the rank that sent the message being handled.
//   shoal::progress()            any rank (core): receives and runs arrived messages, then flushes what they sent;
//                                every blocking shoal call (future::wait, shoal::barrier, collectives) calls it.
//   shoal::am::progress_transfers()  any rank, also inside a handler: lets MPI move the messages it already has
//                                (sends under way, receives posted ahead) and takes arrived buffers into the queue
//                                (bounded; they run at the next progress); runs no handler and sends nothing new. For
//                                long local loops: a large message moves only while both ranks call MPI on many
//                                transports. shoal's own batch loops call it every transfer_stride operations.
//
// Settings (a call wins over the environment variable; both are per rank):
//   set_buffer_size(bytes)  SHOAL_AM_BUFFER     bytes per destination buffer, default 64 KiB (sizes like "16K")
//   set_max_sends(n)        SHOAL_AM_MAX_SENDS  outstanding send buffers per rank before the sender drains, default 16
//
// Cost: flush M = one MPI message per non-empty buffer; barrier B = at least two waves (one more per wave during
// which messages were still moving), each a sum over the ranks in log2 p message exchanges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/am/detail/engine.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/team.hpp"

namespace shoal::am {

/// Sends every buffered message now. Any rank (not collective); does not wait for delivery.
inline void flush() { detail::get().flush(); }

/// Lets MPI move the messages it already has and takes arrived buffers in (they run at the next progress); runs no
/// handler, sends nothing new (see the header comment). Any rank.
inline void progress_transfers() { detail::get().progress_transfers(); }

/// How many operations a long local loop of shoal's (a batch's part at its owner) runs between two
/// progress_transfers(): each costs one MPI call (about 0.1-0.3 µs), a few hundred nanoseconds per thousand operations.
inline constexpr std::size_t transfer_stride = 1024;

/// Collective quiescence barrier (see the header comment and docs/am.md). Not callable from a handler.
inline void barrier() {
  auto& e = detail::get();
  e.quiesce();
  e.throw_reported_errors();
}

/// Collective over `t`: quiescence of the messages of team t among t's ranks (world(): the same as barrier()).
inline void barrier(const team& t) {
  auto& e = detail::get();
  if (t.id() == 0) {
    e.quiesce();
  } else {
    std::vector<int> ranks(static_cast<std::size_t>(t.size()));
    for (int i = 0; i < t.size(); ++i) ranks[static_cast<std::size_t>(i)] = t.to_world(i);
    e.quiesce(ranks, t.rank(), t.size(), t.id());
  }
  e.throw_reported_errors();
}

/// Inside a handler: the rank that sent the message being handled. Outside: usage_error.
inline int current_source() {
  const int source = detail::get().current_source();
  if (source < 0) throw usage_error("shoal::am::current_source: called outside a handler");
  return source;
}

/// True while a handler runs on this rank.
inline bool in_handler() { return detail::get().in_handler(); }

/// Bytes per destination buffer on this rank (flushes first when changed). Messages larger than a buffer still
/// travel, each in a buffer of its own.
inline std::size_t buffer_size() { return detail::get().buffer_size(); }
inline void set_buffer_size(std::size_t bytes) { detail::get().set_buffer_size(bytes); }

/// Bytes of each shared-memory ring that carries this rank's buffers to another rank of its host (docs/am.md,
/// "Buffers within a host"; SHOAL_AM_SHM_RING); 0 when every buffer travels by MPI (the setting is 0, or no other
/// rank shares this host). Fixed at start.
inline std::size_t host_ring_bytes() { return detail::get().ring_bytes(); }

/// Outstanding send buffers on this rank before a sender starts draining its receives.
inline std::size_t max_sends() { return detail::get().max_sends(); }
inline void set_max_sends(std::size_t n) { detail::get().set_max_sends(n); }

/// Counters of this rank since the start.
struct statistics {
  std::uint64_t messages_sent = 0;     ///< messages appended to a buffer (rpc replies included)
  std::uint64_t messages_handled = 0;  ///< handlers run to completion here
  std::uint64_t buffers_sent = 0;      ///< aggregated buffers sent to other ranks
  /// Of those, the buffers that went through shared memory to a rank of this host, not by MPI (docs/am.md, "Buffers
  /// within a host"; SHOAL_AM_SHM_RING=0 sends them by MPI too).
  std::uint64_t buffers_within_host = 0;
  /// Received buffers taken into the queue ahead of running them, by a rank sending full buffers or calling
  /// progress_transfers (docs/am.md, "Arrivals taken in while sending"), and the longest such a take left that queue
  /// (at most 2 × max_sends() at the time, plus what the test-only fault mode releases at once).
  std::uint64_t buffers_taken_ahead = 0;
  std::uint64_t longest_queue_ahead = 0;
};
inline statistics stats() {
  auto& e = detail::get();
  return {e.sent(), e.handled(), e.buffers_sent(), e.buffers_within_host(), e.buffers_taken_ahead(),
          e.longest_queue_ahead()};
}

}  // namespace shoal::am
