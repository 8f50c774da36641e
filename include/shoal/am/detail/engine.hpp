// shoal/am/detail/engine.hpp — the per-run machinery of active messages: per-destination aggregation buffers, the
// cap on outstanding sends, the receive queue, the handler loop, and the glue to quiescence and the fault mode.
//
// Its parts, one job each: wire.hpp (the wire format and the buffers that carry it), sending.hpp (the block pool and
// the outstanding MPI sends), receiving.hpp (receives posted ahead, large buffers), node_rings.hpp (shared-memory rings
// to the ranks of this host), quiescence.hpp (message counts and Mattern's waves), rpc_slots.hpp (rpc futures waiting
// for replies). Buffers for ranks of this host go through their rings; the others travel as MPI messages with one tag
// on a communicator of their own; a destination's first buffer after a flush holds eager_buffer_size, and once a
// stream fills one the next are full size (docs/am.md, "Buffer sizes", "Receiving" and "Buffers within a host").
// Test-only fault mode (SHOAL_FAULTS, shoal::layer::fault_scheduler): received buffers are held back and released in a
// seeded random order across senders, in order from each sender.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "shoal/am/detail/code_ranges.hpp"
#include "shoal/am/detail/node_rings.hpp"
#include "shoal/am/detail/quiescence.hpp"
#include "shoal/am/detail/receiving.hpp"
#include "shoal/am/detail/rpc_slots.hpp"
#include "shoal/am/detail/sending.hpp"
#include "shoal/am/detail/wire.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

namespace shoal::am::detail {

class engine;
inline engine* g_engine = nullptr;

/// What a message's inline path reads (append_inline in handler.hpp), in one place reached without following the
/// engine pointer: the outboxes, their count (0 while no engine runs, so every rank falls through to the general
/// path, which says why) and the team of what is sent now (engine::team). Set by the engine that runs.
struct send_view {
  outbox* boxes = nullptr;
  std::uint32_t ranks = 0;
  std::uint32_t team = 0;
};
inline send_view g_send;

class engine {
 public:
  engine() : run_(shoal::layer::current_run()), comm_(duplicate_world()), pool_(start_pool()), sends_(pool_),
             receives_(comm_.get(), pool_), rings_(comm_.get(), me_, size_, pool_.slot_bytes()) {
    if (const auto f = shoal::layer::fault_mode()) {
      faults_.emplace(*f, me_, size_, shoal::layer::fault_stream::am_buffers);
    }
    g_send = {.boxes = out_.data(), .ranks = static_cast<std::uint32_t>(out_.size()), .team = 0};
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  // Then the members: the posted receives are cancelled, then the communicator freed (comm_owner).
  ~engine() { g_send = {}; }

  int rank() const { return me_; }
  /// Which environment of this process the engine belongs to (1, 2, ...).
  std::uint64_t run() const { return run_; }
  int size() const { return size_; }

  // ---- sending ---------------------------------------------------------------------------------------------------

  /// Room for the `body` bytes of one message of group `key` (group_key) to `dest`; the caller writes them at the
  /// returned address at once (before any other shoal call). The fast path (same group as the open one, room left)
  /// is inline (append_inline in handler.hpp); this is the general one, kept out of line so that the caller's loop
  /// around the fast path keeps its own values in registers (inlined, it made GCC spill a benchmark's loop counter).
  /// `fixed`: every message of group `key` has `body` bytes (trivially copyable arguments), so the group is counted
  /// by its size when it closes (outbox::unit), not message by message.
  [[gnu::noinline]] std::byte* reserve(int dest, std::uint64_t key, std::size_t body, bool fixed = false) {
    if (dest == held_) [[unlikely]] throw_held();
    outbox& o = out_[static_cast<std::size_t>(dest)];
    for (;;) {
      const auto room = static_cast<std::size_t>(o.end - o.cur);
      if (o.key == key && o.team == g_send.team && room >= body) {
        if (o.unit != 0 && (!fixed || body != o.unit)) {  // a message of another size joins: count from here on
          o.count = o.open_count();
          o.unit = 0;
          o.fixed_key = 0;
        }
        break;
      }
      if (room >= group_header_bytes + body) {
        close_group(o);
        const std::uint32_t words[2] = {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
        std::memcpy(o.cur, words, sizeof words);  // the handler word, then the function word
        o.count_at = o.cur + sizeof words;
        std::memcpy(o.count_at + 4, &g_send.team, sizeof g_send.team);
        o.cur += group_header_bytes;
        o.key = key;
        o.team = g_send.team;
        o.unit = fixed && body > 0 ? static_cast<std::uint32_t>(body) : 0;
        o.fixed_key = o.unit != 0 ? key : 0;
        break;
      }
      if (o.cur != o.begin) {
        send(dest, /*full=*/true);  // may run handlers (which may append to o); the loop re-checks
      } else {
        allocate(dest, o, group_header_bytes + body);
        if (!o.listed) {
          o.listed = true;
          dirty_.push_back(dest);
        }
      }
    }
    std::byte* p = o.cur;
    o.cur += body;
    if (o.unit == 0) ++o.count;
    return p;
  }

  outbox& out(int dest) { return out_[static_cast<std::size_t>(dest)]; }

  /// shoal::post_each fills `dest`'s buffer from a cursor of its own (outbox_hold in handler.hpp). Meanwhile the
  /// buffer shows no room, writing to it or sending it is a usage_error, and so is every call that runs handlers
  /// (poll) or sends every buffer (flush); sends to other ranks go on, without running handlers while they wait.
  void hold(int dest) { held_ = dest; }
  void release() { held_ = -1; }
  void check_not_held() const {
    if (held_ >= 0) [[unlikely]] throw_held();
  }

  /// Sends every non-empty buffer (self-addressed ones go straight to the receive queue).
  void flush() {
    check_not_held();
    while (!dirty_.empty()) {
      const int dest = dirty_.back();
      dirty_.pop_back();
      out_[static_cast<std::size_t>(dest)].listed = false;
      send(dest, /*full=*/false);
    }
  }

  // ---- receiving and running ---------------------------------------------------------------------------------------

  /// One progress step: sends what was written since the last one (before any MPI bookkeeping: an rpc's request
  /// leaves at once), completes sends, receives and runs everything available, flushing after every step that may
  /// have produced messages, so a reply leaves as soon as it is written. A step that completed an rpc's future ends
  /// there: the wait that called it tests its future before more is received.
  void poll() {
    check_not_held();
    flush();
    receives_.repost();
    sends_.test();
    if (!rxq_.empty()) {
      run_queue();
      flush();
    }
    const std::uint64_t replies = replies_;
    while (receive_one()) {
      run_queue();
      flush();
      if (replies_ != replies) break;
    }
  }

  /// Lets MPI move what it already has — the outstanding sends and the receives posted ahead — and takes in the
  /// buffers that arrived (take_arrivals); nothing else: no handler runs, no buffer is sent. For long local loops (a
  /// batch's own part): on transports where a large message moves in pieces only while both ranks call MPI (Open
  /// MPI's shared memory without CMA, TCP and most networks across hosts), a rank that computes for milliseconds would
  /// otherwise hold its peer's transfer.
  void progress_transfers() {
    take_arrivals();
    if (sends_.size() > 0) {
      sends_.test();
    } else {
      int flag = 0;  // a probe is MPI's cheapest call that runs its progress engine; what it finds stays where it is
      SHOAL_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, MPI_STATUS_IGNORE));
    }
  }

  /// The part of poll() that starts no handler: completes sends and sends what handlers wrote.
  void poll_sends() {
    sends_.test();
    flush();
  }

  /// The rank that sent the message being handled (-1 outside handlers).
  int current_source() const { return source_; }
  bool in_handler() const { return depth_ > 0; }

  /// Runs queued messages (also from inside a handler that waits: the handlers it lets run start in order).
  void run_queue() {
    ++loop_epoch_;
    while (!rxq_.empty()) {
      rx_buffer& b = rxq_.front();
      if (b.left == 0 && b.pos == b.end) {
        pool_.recycle(std::move(b.bytes));
        rxq_.pop_front();
        continue;
      }
      dispatch(b);
    }
  }

  // ---- quiescence and errors ---------------------------------------------------------------------------------------

  /// Collective quiescence (quiescence.hpp, docs/am.md): returns when no message is buffered, in flight, queued or
  /// running on any rank. With a team (its ranks in team order, this rank's place among them, and its id, not 0): the
  /// same over the team's ranks and the messages of that team only (a team's messages travel between its ranks, and
  /// its handlers send only messages of the team).
  void quiesce() { quiesce({}, me_, size_, 0); }
  void quiesce(std::span<const int> ranks, int me, int size, std::uint32_t team) {
    if (depth_ > 0) throw usage_error("shoal::am::barrier: called from inside a handler (it is collective)");
    wait_for_quiescence(
        comm_.get(), ranks, me, size, [this] { poll(); },
        [this, team]() -> std::pair<std::uint64_t, std::uint64_t> {
          if (team == 0) return {sent(), counts_.handled()};
          return {sent(team), counts_.of(team).handled};
        });
  }

  /// Throws the failures of fire-and-forget handlers reported to this rank, if any (then forgets them).
  void throw_reported_errors() {
    if (errors_.empty()) return;
    std::string text = errors_.front();
    if (errors_.size() > 1) text += " (and " + std::to_string(errors_.size() - 1) + " more handler failures)";
    errors_.clear();
    throw remote_error(text);
  }
  void record_error(std::string text) { errors_.push_back(std::move(text)); }

  /// Messages appended to a buffer: those of closed groups plus the open ones.
  std::uint64_t sent() const {
    std::uint64_t n = counts_.sent();
    for (const int dest : dirty_) n += out_[static_cast<std::size_t>(dest)].open_count();
    return n;
  }
  /// The same for the messages of one team (id not 0).
  std::uint64_t sent(std::uint32_t team) {
    std::uint64_t n = counts_.of(team).sent;
    for (const int dest : dirty_) {
      const outbox& o = out_[static_cast<std::size_t>(dest)];
      if (o.key != 0 && o.team == team) n += o.open_count();
    }
    return n;
  }
  std::uint64_t handled() const { return counts_.handled(); }
  /// Trampolines that run several messages in one call count all but the last (dispatch counts that one), in one
  /// addition when their loop ends.
  void count_handled(std::uint64_t n = 1) { counts_.add_handled(g_send.team, n); }

  // ---- rpc bookkeeping ---------------------------------------------------------------------------------------------

  std::uint32_t add_pending(shoal::layer::state_ptr<shoal::layer::counted> state) {
    return rpcs_.add(std::move(state));
  }
  shoal::layer::state_ptr<shoal::layer::counted> take_pending(std::uint32_t slot) {
    ++replies_;
    return rpcs_.take(slot);
  }
  std::size_t& live_rpcs() { return rpcs_.live(); }

  // ---- settings and state --------------------------------------------------------------------------------------------

  std::size_t buffer_size() const { return pool_.buffer_size(); }
  void set_buffer_size(std::size_t bytes) {
    if (bytes < min_buffer_size) {
      throw usage_error("shoal::am::set_buffer_size: " + std::to_string(bytes) + " bytes is below the minimum of " +
                        std::to_string(min_buffer_size));
    }
    flush();
    pool_.set_buffer_size(bytes);
  }
  std::size_t max_sends() const { return max_sends_; }
  void set_max_sends(std::size_t n) {
    if (n == 0) throw usage_error("shoal::am::set_max_sends: the cap must be at least 1");
    max_sends_ = n;
    pool_.set_keep_buffers(kept_buffers(n));
  }

  /// The team of the messages sent now: the running handler's, else the one a team_scope set (0: world()).
  std::uint32_t team() const { return g_send.team; }  // kept in g_send, where the inline path reads it
  void set_team(std::uint32_t team) { g_send.team = team; }
  /// Changes whenever a handler loop starts (trampolines use it to notice that a nested loop ran). 32 bits on purpose:
  /// a handler's stores to 64-bit data (a sum, a table) cannot alias it, so a group's loop reads it without reloading
  /// what the handler wrote (equal again only after 2^32 nested loops inside one handler call).
  std::uint32_t loop_epoch() const { return loop_epoch_; }
  std::uint64_t buffers_sent() const { return buffers_sent_; }
  /// Of those, the buffers that went through a shared-memory ring to a rank of this host (node_rings.hpp).
  std::uint64_t buffers_within_host() const { return buffers_within_host_; }
  /// Bytes of each shared-memory ring (0: every buffer travels by MPI).
  std::size_t ring_bytes() const { return rings_.ring_bytes(); }
  /// Arrived buffers take_arrivals moved into the queue, and the longest it left the queue (at most arrivals_ahead(),
  /// plus what the fault mode releases at once: it takes nothing into a queue that long).
  std::uint64_t buffers_taken_ahead() const { return taken_ahead_; }
  std::uint64_t longest_queue_ahead() const { return longest_ahead_; }
  /// Received buffers the fault mode held back for at least one step (0 without SHOAL_FAULTS).
  std::uint64_t buffers_delayed() const { return faults_ ? faults_->delayed() : 0; }

  /// The finalize hook: drain, report what the program left behind, release MPI resources.
  void shutdown() {
    try {
      quiesce();
      throw_reported_errors();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shoal::am (rank %d) at finalize: %s\n", me_, e.what());
    }
    if (rpcs_.live() > 0) {
      std::fprintf(stderr,
                   "shoal::am (rank %d) at finalize: %zu rpc result(s) were never taken with future::get(); "
                   "get() every rpc future (or use shoal::post when no result is needed)\n",
                   me_, rpcs_.live());
    }
    sends_.wait_all();
  }

 private:
  /// The engine's own communicator (a duplicate of world()'s), freed last.
  class comm_owner {
   public:
    explicit comm_owner(MPI_Comm c) : comm_(c) {}
    comm_owner(const comm_owner&) = delete;
    comm_owner& operator=(const comm_owner&) = delete;
    ~comm_owner() {
      if (comm_ != MPI_COMM_NULL) SHOAL_MPI_CLEANUP(MPI_Comm_free(&comm_));
    }
    MPI_Comm get() const { return comm_; }

   private:
    MPI_Comm comm_;
  };

  MPI_Comm duplicate_world() {
    const shoal::team& world = shoal::world();
    MPI_Comm c = MPI_COMM_NULL;
    SHOAL_MPI(MPI_Comm_dup(world.comm(), &c));
    SHOAL_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    me_ = world.rank();
    size_ = world.size();
    out_.resize(static_cast<std::size_t>(size_));
    return c;
  }

  /// Reads the settings; receive slots hold the largest buffer any rank starts with (collective). A larger buffer
  /// (set_buffer_size later, or one message larger than a buffer) is announced in the stream and travels apart.
  block_pool start_pool() {
    std::size_t buffer_size = shoal::layer::size_setting("SHOAL_AM_BUFFER").value_or(default_buffer_size);
    if (buffer_size < min_buffer_size) buffer_size = min_buffer_size;
    max_sends_ = shoal::layer::size_setting("SHOAL_AM_MAX_SENDS").value_or(default_max_sends);
    if (max_sends_ == 0) max_sends_ = 1;
    const std::uint64_t mine = buffer_size;
    std::uint64_t largest = 0;
    SHOAL_MPI(MPI_Allreduce(&mine, &largest, 1, MPI_UINT64_T, MPI_MAX, comm_.get()));
    return block_pool(buffer_size, static_cast<std::size_t>(largest), kept_buffers(max_sends_),
                      receive_slots::posted);
  }

  /// Send buffers kept for reuse: every buffer the send cap lets be in flight, the receive slots (which share the
  /// pool when the sizes agree) and a few being filled, so a stream at the cap allocates nothing.
  static std::size_t kept_buffers(std::size_t max_sends) { return max_sends + receive_slots::posted + 8; }

  /// Stores the open group's count in the buffer.
  void close_group(outbox& o) {
    if (o.key == 0) return;
    const std::uint32_t count = o.open_count();
    std::memcpy(o.count_at, &count, sizeof count);
    counts_.add_sent(o.team, count);
    o.key = 0;
    o.count = 0;
    o.unit = 0;
    o.fixed_key = 0;
  }

  /// A buffer for `dest` with room for `need` bytes: its limit (see eager_buffer_size; messages to oneself never touch
  /// MPI and fill whole buffers), or a buffer of the exact size for a message larger than buffer_size().
  void allocate(int dest, outbox& o, std::size_t need) {
    const std::size_t buffer_size = pool_.buffer_size();
    std::size_t bytes = need;
    if (need <= buffer_size) {
      o.bytes = pool_.take(buffer_size);
      const std::size_t limit = dest == me_ ? buffer_size : o.limit == 0 ? eager_buffer_size : o.limit;
      bytes = std::min(buffer_size, std::max(need, limit));
    } else {  // a message larger than a buffer travels alone in a buffer of its exact size
      o.bytes = new_block(need);
    }
    o.begin = o.cur = o.bytes.data.get();
    o.end = o.begin + bytes;
  }

  /// Hands `dest`'s buffer to MPI (or to the local queue), waiting for room under the send cap first. `full`: it was
  /// sent because the next message did not fit (the next buffer may be larger), not by a flush.
  void send(int dest, bool full) {
    if (dest == held_) [[unlikely]] throw_held();
    outbox& o = out_[static_cast<std::size_t>(dest)];
    if (o.cur == o.begin) return;
    if (dest == me_) {
      close_group(o);
      const std::byte* begin = o.begin;
      const std::byte* end = o.cur;
      rxq_.emplace_back(std::move(o.bytes), begin, end, me_);  // in place: see receive_one
      o = outbox{.listed = o.listed};
      return;
    }
    make_room(dest, o);  // may run handlers that append to o (or send it); whatever is here when it returns goes now
    if (o.cur == o.begin) return;
    close_group(o);
    const auto bytes = static_cast<std::size_t>(o.cur - o.begin);
    const std::size_t next = full ? pool_.buffer_size() : 0;  // a stream: full buffers (no ramp of doublings)
    if (!rings_.reaches(dest)) {
      if (bytes <= pool_.slot_bytes()) {
        sends_.isend(comm_.get(), dest, stream_tag, std::move(o.bytes), bytes);
      } else {
        send_large(sends_, comm_.get(), dest, std::move(o.bytes), bytes);
      }
    } else if (rings_.carries(bytes)) {  // make_room left the ring the room, and nothing ran since
      if (!rings_.try_write(dest, o.begin, bytes)) [[unlikely]] throw_ring_full(dest);
      pool_.recycle(std::move(o.bytes));
      ++buffers_within_host_;
    } else {  // by MPI, announced in the ring
      sends_.isend(comm_.get(), dest, large_tag, std::move(o.bytes), bytes);
      const announcement note = announce(bytes);
      if (!rings_.try_write(dest, reinterpret_cast<const std::byte*>(note.data()), sizeof note)) [[unlikely]] {
        throw_ring_full(dest);
      }
    }
    o = outbox{.limit = next, .listed = o.listed};
    ++buffers_sent_;
    if (full) take_arrivals(/*may_run=*/depth_ == 0 && held_ < 0);
  }

  /// Moves the buffers that have arrived into the queue (they run at the next progress step, not here) and posts
  /// their receive slots again, up to a queue of arrivals_ahead() buffers. Called by a rank busy sending a stream or
  /// computing (send of a full buffer, progress_transfers). A rendezvous send (a buffer above the transport's eager
  /// limit: Open MPI's shared memory sends 4 KiB at once) completes only once its receive is posted; a rank that
  /// takes nothing in while it streams its own parts leaves at most `posted` receives for its peers, whose sends then
  /// stall at their cap until it next polls — milliseconds in an owner-computes exchange where every rank also works
  /// on its own part (docs/am.md, "Arrivals taken in while sending").
  /// `may_run` (a full buffer sent outside handlers, post_each holding none): a queue that reached its limit runs
  /// once, and the taking goes on — a rank streaming its own buffers then also serves its peers' streams, whose
  /// senders would otherwise wait at their cap (or at a full shared-memory ring) until this rank's stream ends.
  void take_arrivals(bool may_run = false) {
    const std::uint64_t before = taken_ahead_;
    for (bool ran = false;;) {
      if (rxq_.size() >= arrivals_ahead()) {
        if (!may_run || ran) break;
        run_queue();
        ran = true;
      }
      if (!receive_one()) break;
      ++taken_ahead_;
    }
    if (taken_ahead_ != before) longest_ahead_ = std::max<std::uint64_t>(longest_ahead_, rxq_.size());
  }
  /// Buffers the send path takes in ahead of running them: twice the send cap (bounded memory, 2 × max_sends ×
  /// buffer_size; about what a peer streaming at its own cap sends while this rank works on a batch's own part).
  std::size_t arrivals_ahead() const { return 2 * max_sends_; }

  /// Before `dest`'s buffer `o` is sent: keeps receiving until it can leave at once — below the send cap when it goes
  /// by MPI, with room in `dest`'s ring when it goes through one (and both for a large buffer announced in the ring).
  /// Outside handlers the received messages also run (so memory stays bounded); inside a handler, or while post_each
  /// holds a buffer, they are only queued, never run from a send path. The wait backs off like every wait in shoal
  /// (layer::backoff): with more ranks than cores, a sender spinning here would hold the core the receiver needs to
  /// take its buffers.
  /// A handler run here may wait for a reply to what it wrote into `dest`'s buffer, the one waiting to be sent: a
  /// flush it makes (in its wait) must send that buffer, so the buffer is listed for flushes meanwhile (flush()
  /// unlisted it before calling send).
  void make_room(int dest, outbox& o) {
    if (can_leave(dest, o)) return;
    sends_.test();  // below the cap, poll() completes sends
    if (can_leave(dest, o)) return;
    if (!o.listed) {
      o.listed = true;
      dirty_.push_back(dest);
    }
    shoal::layer::backoff pause;
    while (o.cur != o.begin && !can_leave(dest, o)) {
      const bool got = receive_one();
      if (!rxq_.empty() && depth_ == 0 && held_ < 0) run_queue();  // also what take_arrivals queued earlier
      const std::size_t before = sends_.size();
      sends_.test();
      pause(got || sends_.size() < before);
    }
  }
  /// True when `dest`'s buffer `o` can be sent now (see make_room).
  bool can_leave(int dest, const outbox& o) {
    const auto bytes = static_cast<std::size_t>(o.cur - o.begin);
    if (!rings_.reaches(dest)) return sends_.size() < max_sends_;
    if (rings_.carries(bytes)) return rings_.has_room(dest, bytes);
    return sends_.size() < max_sends_ && rings_.has_room(dest, announcement_bytes);
  }

  /// The next buffer that arrived, from a ring or from the MPI stream; the two are asked first in turn when both are
  /// used, so a stream on one never hides the other.
  std::optional<rx_buffer> next_arrival() {
    if (!rings_.has_remote()) return rings_.next(pool_, comm_.get());
    mpi_first_ = !mpi_first_;
    if (mpi_first_) {
      if (std::optional<rx_buffer> b = receives_.next()) return b;
      return rings_.next(pool_, comm_.get());
    }
    if (std::optional<rx_buffer> b = rings_.next(pool_, comm_.get())) return b;
    return receives_.next();
  }

  [[noreturn]] void throw_ring_full(int dest) const {
    throw error("shoal::am: the shared-memory ring to rank " + std::to_string(dest) +
                " had no room after the wait for it (internal error)");
  }

  /// Where the fault mode releases held buffers to: the receive queue.
  auto queue() {
    return [this](rx_buffer&& b) { rxq_.push_back(std::move(b)); };
  }

  /// Receives one buffer into the queue, if one has arrived (under SHOAL_FAULTS: into the held buffers, and each
  /// call is one step of their delays; true also when a held buffer was released). The queue's entry is made in place
  /// from the received buffer's fields: a move of a whole rx_buffer just written reads some of its fields in wider
  /// loads than they were stored with, which the store buffer cannot forward (a stall of a dozen cycles or more on
  /// every buffer; measured on the same move in send()'s self-addressed path: about 12% of an rpc to this rank
  /// itself, docs/am.md session 34).
  bool receive_one() {
    const bool released = faults_ && (faults_->step(), faults_->release(queue()));
    std::optional<rx_buffer> got = next_arrival();
    if (!got) return released;
    shoal::layer::note_arrival();
    if (faults_) faults_->hold(got->source, std::move(*got), queue());  // hold() takes a reference: source read first
    else rxq_.emplace_back(std::move(got->bytes), got->pos, got->end, got->source);
    return true;
  }

  void dispatch(rx_buffer& b) {
    if (b.left == 0) {  // a new group
      std::int32_t word;
      std::uint32_t count;
      if (static_cast<std::size_t>(b.end - b.pos) < group_header_bytes) throw_corrupt(b, "a header cut short");
      std::memcpy(&word, b.pos, sizeof word);
      std::memcpy(&b.function, b.pos + 4, sizeof b.function);
      std::memcpy(&count, b.pos + 8, sizeof count);
      std::memcpy(&b.team, b.pos + 12, sizeof b.team);
      if (count == 0) throw_corrupt(b, "a group of no messages");
      // The words are offsets from the anchor: one outside the program's code would jump into data or unmapped memory.
      const std::intptr_t run = anchor_address() + word;
      if (!code_.contains(static_cast<std::uintptr_t>(run))) [[unlikely]] {
        throw_corrupt(b, "a handler word that names no code of this program");
      }
      if (b.function != 0 && !code_.contains(static_cast<std::uintptr_t>(anchor_address() + b.function)))
          [[unlikely]] {
        throw_corrupt(b, "a function word that names no code of this program");
      }
      b.pos += group_header_bytes;
      b.run = reinterpret_cast<trampoline>(run);
      b.left = count;
    }
    --b.left;
    const trampoline run = b.run;
    struct scope {
      engine& e;
      int saved;
      std::uint32_t saved_team;
      ~scope() {
        e.count_handled();  // for the message's team, before the sender's team is restored
        e.source_ = saved;
        g_send.team = saved_team;
        --e.depth_;
      }
    } guard{*this, source_, g_send.team};
    source_ = b.source;
    g_send.team = b.team;  // what the handler sends belongs to its message's team
    ++depth_;
    run(b);
  }

  [[noreturn]] void throw_held() const {
    throw usage_error("shoal::post_each: the values for rank " + std::to_string(held_) +
                      " are computed while its buffer is being filled; computing them must not post or rpc to rank " +
                      std::to_string(held_) + ", flush or make progress (compute the values first, e.g. into a "
                      "vector, and pass that)");
  }

  /// A group that cannot be read: the rest of its buffer is dropped (nothing after it can be found) and the error
  /// goes to the caller of the progress step that met it. Its messages are never counted as handled, so a later
  /// am::barrier would not see quiescence: a corrupt stream ends the program's use of shoal.
  [[noreturn]] static void throw_corrupt(rx_buffer& b, const char* what) {
    b.pos = b.end;
    b.left = 0;
    throw error("shoal::am: malformed message group from rank " + std::to_string(b.source) + ": " + what +
                " (corrupt stream)");
  }

  friend struct engine_test_access;  // tests/am_malformed_test.cpp: delivers buffers no sender wrote

  // Declaration order is construction order: the communicator first, the receives (cancelled at destruction) after
  // the pool and the sends they use.
  std::uint64_t run_;
  int me_ = 0;
  int size_ = 1;
  std::size_t max_sends_ = default_max_sends;
  std::vector<outbox> out_;
  int held_ = -1;  // the destination whose buffer post_each is filling (hold), else -1
  comm_owner comm_;
  block_pool pool_;
  send_queue sends_;
  receive_slots receives_;
  node_rings rings_;  // buffers for the ranks of this host (freed before the communicator: declared after it)
  bool mpi_first_ = false;  // next_arrival's turn

  std::vector<int> dirty_;
  std::deque<rx_buffer> rxq_;

  int source_ = -1;
  int depth_ = 0;
  message_counts counts_;   // for quiescence (see sent())
  std::uint64_t buffers_sent_ = 0;
  std::uint64_t buffers_within_host_ = 0;
  std::uint64_t taken_ahead_ = 0;
  std::uint64_t longest_ahead_ = 0;
  std::uint64_t replies_ = 0;  // rpc replies taken: a step that completed one returns to the waits
  std::uint32_t loop_epoch_ = 0;

  // The fault mode (SHOAL_FAULTS): received buffers held back, one lane per sender.
  std::optional<shoal::layer::fault_scheduler<rx_buffer>> faults_;

  std::vector<std::string> errors_;
  rpc_slots rpcs_;
  code_ranges code_{static_cast<std::uintptr_t>(anchor_address())};  // where received handler words may point
};

/// Sends made while it lives belong to team `id` (messages of a container on that team); restores the previous team.
class team_scope {
 public:
  team_scope(engine& e, std::uint32_t id) : e_(e), saved_(e.team()) { e.set_team(id); }
  ~team_scope() { e_.set_team(saved_); }
  team_scope(const team_scope&) = delete;
  team_scope& operator=(const team_scope&) = delete;

 private:
  engine& e_;
  std::uint32_t saved_;
};

/// The engine of this run, or a usage_error (before the environment, after finalize).
inline engine& get() {
  if (g_engine == nullptr) [[unlikely]] {
    shoal::layer::require_running();  // throws the precise "not initialized" / "finalized" error
    throw usage_error("shoal::am: the active-message layer is not running (was shoal/am.hpp included by the "
                      "translation unit that created the shoal::environment's program?)");
  }
  return *g_engine;
}

/// Started by every environment (shoal::layer::on_every_start), stopped by its finalize hook.
inline void start() {
  g_engine = new engine;
  shoal::layer::add_progress_hook([] {
    if (g_engine == nullptr) return;
    // A one-sided wait inside a handler needs no handler here to complete (docs/core.md, "Handlers that wait").
    if (g_engine->in_handler() && shoal::layer::in_one_sided_wait()) g_engine->poll_sends();
    else g_engine->poll();
  });
  shoal::layer::add_finalize_hook([] {
    if (g_engine == nullptr) return;
    g_engine->shutdown();
    delete g_engine;
    g_engine = nullptr;
  });
}

inline const bool registered = (shoal::layer::on_every_start(&start), true);

}  // namespace shoal::am::detail
