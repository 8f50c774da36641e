// shoal/am/detail/engine.hpp — the per-run machinery of active messages: per-destination aggregation buffers, the
// cap on outstanding sends, the receive queue, the handler loop and the quiescence algorithm.
//
// Wire format. A buffer sent to a rank is a concatenation of groups of consecutive messages for the same handler
// and team:
//     [int32 handler word][int32 function word, 0 for lambdas][uint32 count][uint32 team] count × [handler bytes]
// (the sender keeps a group open while the next message to that destination has the same handler and team, so a
// stream of small messages costs its payload bytes plus 16 bytes per group, and the receiver runs a group in one
// loop). The team word is the id of the team the messages belong to (0: world()); quiescence is counted per team. The
// handler word is the offset of the receiving trampoline (a function template instantiated per handler type)
// from `anchor`, a function of this header: both live in the same executable image, whose layout is identical on
// every rank of the same binary, so the offset is the same everywhere even though ASLR moves the image. The
// trampoline knows how many bytes its message occupies (it decodes the arguments with shoal::byte_reader), so no
// length is stored. Buffers travel as MPI messages with one tag on a communicator of their own, into receives posted
// ahead (slots of the largest starting buffer size, completed in posting order); a buffer larger than a slot goes on a
// second tag, announced in the stream. A destination's buffers start at eager_buffer_size and double while a stream
// fills them (docs/am.md, "Buffer sizes" and "Receiving").
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
#include <string>
#include <utility>
#include <vector>

#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/layer.hpp"
#include "shoal/core/progress.hpp"
#include "shoal/core/team.hpp"

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
/// progress. Each buffer that fills doubles the next one, up to buffer_size(): a stream travels in full buffers.
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

struct rx_buffer;

/// Decodes one message at `b.pos`, advances `b.pos` past it, then runs the handler. Trampolines of trivially copyable
/// messages go on with the rest of the group (`b.left` more messages), see run_post.
using trampoline = void (*)(rx_buffer& b);

/// A received buffer being executed; `pos`, `left` and `run` are shared by nested handler loops (a handler that
/// waits runs others, possibly the rest of its own group).
struct rx_buffer {
  block bytes{};
  const std::byte* pos = nullptr;
  const std::byte* end = nullptr;
  int source = 0;
  std::uint32_t left = 0;    // messages of the current group after the one being run
  std::int32_t function = 0;  // the current group's function word (function-pointer handlers)
  std::uint32_t team = 0;     // the current group's team id
  trampoline run = nullptr;  // the current group's trampoline
};

/// The header of a group of messages for one handler and team: [int32 handler word][int32 function word][uint32 count]
/// [uint32 team].
inline constexpr std::size_t group_header_bytes = 16;

/// What identifies a group: the trampoline's word and, for function-pointer handlers, the function's word.
inline std::uint64_t group_key(std::int32_t word, std::int32_t function = 0) {
  return static_cast<std::uint32_t>(word) | std::uint64_t{static_cast<std::uint32_t>(function)} << 32;
}

/// A destination's buffer being filled, and its open group (the last handler word written and how many messages
/// of it follow; the count is stored at `count_at` when the group closes).
struct outbox {
  std::byte* begin = nullptr;
  std::byte* cur = nullptr;
  std::byte* end = nullptr;
  std::uint64_t key = 0;  // of the open group (group_key); 0: none (word 0 is the anchor, never a trampoline)
  std::uint32_t team = 0;  // of the open group
  std::uint32_t count = 0;
  std::byte* count_at = nullptr;
  block bytes{};
  std::size_t limit = 0;  // bytes the next buffer holds (0: eager_buffer_size); see eager_buffer_size
  bool listed = false;  // in engine::dirty
};

class engine;
inline engine* g_engine = nullptr;

class engine {
 public:
  static constexpr int tag = 0x5a4d;  // one tag: MPI keeps per-pair order only within a (source, tag, comm)
  static constexpr int large_tag = 0x5a4e;  // a buffer larger than the receive slots, announced on `tag`
  static constexpr std::size_t posted_receives = 8;  // receives posted ahead, completed in posting order

  engine() : run_(shoal::layer::current_run()) {
    const shoal::team& world = shoal::world();
    SHOAL_MPI(MPI_Comm_dup(world.comm(), &comm_));
    SHOAL_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    me_ = world.rank();
    size_ = world.size();
    out_.resize(static_cast<std::size_t>(size_));
    buffer_size_ = shoal::layer::size_setting("SHOAL_AM_BUFFER").value_or(default_buffer_size);
    if (buffer_size_ < min_buffer_size) buffer_size_ = min_buffer_size;
    max_sends_ = shoal::layer::size_setting("SHOAL_AM_MAX_SENDS").value_or(default_max_sends);
    if (max_sends_ == 0) max_sends_ = 1;
    if (const auto f = shoal::layer::fault_mode()) {
      faults_.emplace(*f, me_, size_, shoal::layer::fault_stream::am_buffers);
    }
    // Receive slots hold the largest buffer any rank starts with; a larger buffer (set_buffer_size later, or one
    // message larger than a buffer) is announced in the stream and travels apart (send_large).
    const std::uint64_t mine = buffer_size_;
    std::uint64_t largest = 0;
    SHOAL_MPI(MPI_Allreduce(&mine, &largest, 1, MPI_UINT64_T, MPI_MAX, comm_));
    slot_bytes_ = static_cast<std::size_t>(largest);
    rx_blocks_.resize(posted_receives);
    rx_requests_.assign(posted_receives, MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < posted_receives; ++i) post_receive(i);
  }
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  ~engine() {
    for (auto& req : requests_) SHOAL_MPI_CLEANUP(MPI_Request_free(&req));  // only reached after a failed drain
    for (auto& req : rx_requests_) {  // nothing is in flight after the drain: the posted receives are unmatched
      if (req == MPI_REQUEST_NULL) continue;
      SHOAL_MPI_CLEANUP(MPI_Cancel(&req));
      SHOAL_MPI_CLEANUP(MPI_Wait(&req, MPI_STATUS_IGNORE));
    }
    if (comm_ != MPI_COMM_NULL) SHOAL_MPI_CLEANUP(MPI_Comm_free(&comm_));
  }

  int rank() const { return me_; }
  /// Which environment of this process the engine belongs to (1, 2, ...).
  std::uint64_t run() const { return run_; }
  int size() const { return size_; }

  // ---- sending ---------------------------------------------------------------------------------------------------

  /// Room for the `body` bytes of one message of group `key` (group_key) to `dest`; the caller writes them at the
  /// returned address at once (before any other shoal call). The fast path (same group as the open one, room left)
  /// is inline in write_message; this is the general one.
  std::byte* reserve(int dest, std::uint64_t key, std::size_t body) {
    outbox& o = out_[static_cast<std::size_t>(dest)];
    for (;;) {
      const auto room = static_cast<std::size_t>(o.end - o.cur);
      if (o.key == key && o.team == team_ && room >= body) break;
      if (room >= group_header_bytes + body) {
        close_group(o);
        const std::uint32_t words[2] = {static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32)};
        std::memcpy(o.cur, words, sizeof words);  // the handler word, then the function word
        o.count_at = o.cur + sizeof words;
        std::memcpy(o.count_at + 4, &team_, sizeof team_);
        o.cur += group_header_bytes;
        o.key = key;
        o.team = team_;
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
    ++o.count;
    return p;
  }

  outbox& out(int dest) { return out_[static_cast<std::size_t>(dest)]; }

  /// Sends every non-empty buffer (self-addressed ones go straight to the receive queue).
  void flush() {
    while (!dirty_.empty()) {
      const int dest = dirty_.back();
      dirty_.pop_back();
      out_[static_cast<std::size_t>(dest)].listed = false;
      send(dest, /*full=*/false);
    }
  }

  // ---- receiving and running ---------------------------------------------------------------------------------------

  /// One progress step: completes sends, receives and runs everything available, then flushes what handlers sent.
  /// Flushes after every step that may have produced messages, so a reply leaves as soon as it is written.
  void poll() {
    test_sends();
    run_queue();
    flush();
    while (receive_one()) {
      run_queue();
      flush();
    }
  }

  /// The part of poll() that starts no handler: completes sends and sends what handlers wrote.
  void poll_sends() {
    test_sends();
    flush();
  }

  /// The rank that sent the message being handled (-1 outside handlers).
  int current_source() const { return source_; }
  bool in_handler() const { return depth_ > 0; }

  /// Collective quiescence (see docs/am.md): returns when no message is buffered, in flight, queued or running on
  /// any rank. Mattern's four-counter method over waves of MPI_Iallreduce: wave k sums (sent, handled) over all
  /// ranks; when the `handled` sum of wave k-1 equals the `sent` sum of wave k, the system was quiescent at the end
  /// of wave k-1 and, since only handlers send while every rank is in here, it still is.
  /// With a team (its communicator and id, not 0): the same over the team's ranks and the messages of that team only
  /// (a team's messages travel between its ranks, and its handlers send only messages of the team).
  void quiesce(MPI_Comm team_comm = MPI_COMM_NULL, std::uint32_t team = 0) {
    if (depth_ > 0) throw usage_error("shoal::am::barrier: called from inside a handler (it is collective)");
    std::uint64_t previous_handled = ~std::uint64_t{0};
    for (;;) {
      poll();
      std::uint64_t local[2] = {team == 0 ? sent() : sent(team), team == 0 ? handled_ : counts(team).handled};
      std::uint64_t global[2] = {0, 0};
      MPI_Request req;
      SHOAL_MPI(MPI_Iallreduce(local, global, 2, MPI_UINT64_T, MPI_SUM, team == 0 ? comm_ : team_comm, &req));
      shoal::layer::wait(req);  // runs shoal::progress(), hence poll()
      if (global[0] == previous_handled) break;
      previous_handled = global[1];
    }
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

  // ---- rpc bookkeeping ---------------------------------------------------------------------------------------------

  std::uint32_t add_pending(std::shared_ptr<void> state) {
    if (!free_slots_.empty()) {
      const std::uint32_t slot = free_slots_.back();
      free_slots_.pop_back();
      pending_[slot] = std::move(state);
      return slot;
    }
    pending_.push_back(std::move(state));
    return static_cast<std::uint32_t>(pending_.size() - 1);
  }
  std::shared_ptr<void> take_pending(std::uint32_t slot) {
    if (slot >= pending_.size() || !pending_[slot]) throw error("shoal::am: reply for an unknown rpc (corrupt stream)");
    auto state = std::move(pending_[slot]);
    free_slots_.push_back(slot);
    return state;
  }
  std::size_t& live_rpcs() { return live_rpcs_; }

  // ---- settings ----------------------------------------------------------------------------------------------------

  std::size_t buffer_size() const { return buffer_size_; }
  void set_buffer_size(std::size_t bytes) {
    if (bytes < min_buffer_size) {
      throw usage_error("shoal::am::set_buffer_size: " + std::to_string(bytes) + " bytes is below the minimum of " +
                        std::to_string(min_buffer_size));
    }
    flush();
    buffer_size_ = bytes;
    pool_.clear();
  }
  std::size_t max_sends() const { return max_sends_; }
  void set_max_sends(std::size_t n) {
    if (n == 0) throw usage_error("shoal::am::set_max_sends: the cap must be at least 1");
    max_sends_ = n;
  }

  /// Messages appended to a buffer: those of closed groups plus the open ones.
  std::uint64_t sent() const {
    std::uint64_t n = sent_;
    for (const int dest : dirty_) n += out_[static_cast<std::size_t>(dest)].count;
    return n;
  }
  /// The same for the messages of one team (id not 0).
  std::uint64_t sent(std::uint32_t team) {
    std::uint64_t n = counts(team).sent;
    for (const int dest : dirty_) {
      const outbox& o = out_[static_cast<std::size_t>(dest)];
      if (o.key != 0 && o.team == team) n += o.count;
    }
    return n;
  }
  std::uint64_t handled() const { return handled_; }
  /// Trampolines that run several messages in one call count all but the last (dispatch counts that one).
  void count_handled() {
    ++handled_;
    if (team_ != 0) ++counts(team_).handled;
  }

  /// The team of the messages sent now: the running handler's, else the one a team_scope set (0: world()).
  std::uint32_t team() const { return team_; }
  void set_team(std::uint32_t team) { team_ = team; }
  /// Changes whenever a handler loop starts (trampolines use it to notice that a nested loop ran).
  std::uint64_t loop_epoch() const { return loop_epoch_; }
  std::uint64_t buffers_sent() const { return buffers_sent_; }
  /// Received buffers the fault mode held back for at least one step (0 without SHOAL_FAULTS).
  std::uint64_t buffers_delayed() const { return faults_ ? faults_->delayed() : 0; }

  /// Runs queued messages (also from inside a handler that waits: the handlers it lets run start in order).
  void run_queue() {
    ++loop_epoch_;
    while (!rxq_.empty()) {
      rx_buffer& b = rxq_.front();
      if (b.left == 0 && b.pos == b.end) {
        recycle(std::move(b.bytes));
        rxq_.pop_front();
        continue;
      }
      dispatch(b);
    }
  }

  /// The finalize hook: drain, report what the program left behind, release MPI resources.
  void shutdown() {
    try {
      quiesce();
      throw_reported_errors();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "shoal::am (rank %d) at finalize: %s\n", me_, e.what());
    }
    if (live_rpcs_ > 0) {
      std::fprintf(stderr,
                   "shoal::am (rank %d) at finalize: %zu rpc result(s) were never taken with future::get(); "
                   "get() every rpc future (or use shoal::post when no result is needed)\n",
                   me_, live_rpcs_);
    }
    if (!requests_.empty()) {
      SHOAL_MPI_CLEANUP(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
      requests_.clear();
    }
  }

 private:
  /// Stores the open group's count in the buffer.
  void close_group(outbox& o) {
    if (o.key == 0) return;
    std::memcpy(o.count_at, &o.count, sizeof o.count);
    sent_ += o.count;
    if (o.team != 0) counts(o.team).sent += o.count;
    o.key = 0;
    o.count = 0;
  }

  /// A buffer for `dest` with room for `need` bytes: its limit (see eager_buffer_size; messages to oneself never touch
  /// MPI and fill whole buffers), or a buffer of the exact size for a message larger than buffer_size().
  void allocate(int dest, outbox& o, std::size_t need) {
    std::size_t bytes = need;
    if (need <= buffer_size_) {
      o.bytes = take_block(buffer_size_);
      const std::size_t limit = dest == me_ ? buffer_size_ : o.limit == 0 ? eager_buffer_size : o.limit;
      bytes = std::min(buffer_size_, std::max(need, limit));
    } else {  // a message larger than a buffer travels alone in a buffer of its exact size
      o.bytes = block{std::unique_ptr<std::byte[]>(new std::byte[need]), need};
    }
    o.begin = o.cur = o.bytes.data.get();
    o.end = o.begin + bytes;
  }

  /// A block of `capacity` bytes: recycled when one of that size is pooled (send buffers, receive slots).
  block take_block(std::size_t capacity) {
    auto& pool = capacity == buffer_size_ ? pool_ : slot_pool_;
    if (!pool.empty() && pool.back().capacity == capacity) {
      block b = std::move(pool.back());
      pool.pop_back();
      return b;
    }
    return block{std::unique_ptr<std::byte[]>(new std::byte[capacity]), capacity};
  }

  void recycle(block b) {
    if (b.capacity == buffer_size_) {
      if (pool_.size() < max_sends_ + 8) pool_.push_back(std::move(b));
    } else if (b.capacity == slot_bytes_ && slot_pool_.size() < posted_receives) {
      slot_pool_.push_back(std::move(b));
    }
  }

  /// Hands `dest`'s buffer to MPI (or to the local queue), waiting for room under the send cap first. `full`: it was
  /// sent because the next message did not fit (the next buffer may be larger), not by a flush.
  void send(int dest, bool full) {
    outbox& o = out_[static_cast<std::size_t>(dest)];
    if (o.cur == o.begin) return;
    if (dest == me_) {
      close_group(o);
      const std::byte* begin = o.begin;
      const std::byte* end = o.cur;
      rxq_.push_back(rx_buffer{std::move(o.bytes), begin, end, me_});
      o = outbox{.listed = o.listed};
      return;
    }
    make_room();  // may run handlers that append to o; whatever is there when it returns goes now
    if (o.cur == o.begin) return;
    close_group(o);
    const auto bytes = static_cast<std::size_t>(o.cur - o.begin);
    const std::size_t next = full ? std::min(buffer_size_, 2 * static_cast<std::size_t>(o.end - o.begin)) : 0;
    if (bytes <= slot_bytes_) {
      isend(dest, tag, std::move(o.bytes), bytes);
    } else {
      send_large(dest, std::move(o.bytes), bytes);
    }
    o = outbox{.limit = next, .listed = o.listed};
    ++buffers_sent_;
  }

  void isend(int dest, int t, block b, std::size_t bytes) {
    MPI_Request req;
    SHOAL_MPI(MPI_Isend(b.data.get(), static_cast<int>(bytes), MPI_BYTE, dest, t, comm_, &req));
    requests_.push_back(req);
    in_flight_.push_back(std::move(b));
  }

  /// A buffer larger than the receivers' slots: sent on large_tag, and announced in the stream on `tag` by 16 bytes
  /// [int32 0][int32 0][uint64 size] (no group starts with handler word 0), where the receiver takes it in order.
  void send_large(int dest, block b, std::size_t bytes) {
    isend(dest, large_tag, std::move(b), bytes);
    block note{std::unique_ptr<std::byte[]>(new std::byte[announcement_bytes]), announcement_bytes};
    const std::uint64_t words[2] = {0, bytes};
    std::memcpy(note.data.get(), words, sizeof words);
    isend(dest, tag, std::move(note), announcement_bytes);
  }

  /// Keeps receiving while the send cap is reached. Outside handlers the received messages also run (so memory stays
  /// bounded); inside a handler they are only queued, never run from its send path.
  /// The wait backs off like every wait in shoal (layer::backoff): with more ranks than cores, a sender spinning here
  /// would hold the core the receiver needs to take its buffers.
  void make_room() {
    if (requests_.size() >= max_sends_) test_sends();  // below the cap, poll() completes sends
    shoal::layer::backoff pause;
    while (requests_.size() >= max_sends_) {
      const bool got = receive_one();
      if (got && depth_ == 0) run_queue();
      const std::size_t before = requests_.size();
      test_sends();
      pause(got || requests_.size() < before);
    }
  }

  void test_sends() {
    if (requests_.empty()) return;
    int count = 0;
    completed_.resize(requests_.size());
    SHOAL_MPI(MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, completed_.data(),
                           MPI_STATUSES_IGNORE));
    if (count <= 0) return;  // MPI_UNDEFINED when none is active
    // Compact: keep the requests that are still active, recycle the blocks of finished ones.
    std::size_t w = 0;
    for (std::size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i] == MPI_REQUEST_NULL) {
        recycle(std::move(in_flight_[i]));
      } else {
        requests_[w] = requests_[i];
        in_flight_[w] = std::move(in_flight_[i]);
        ++w;
      }
    }
    requests_.resize(w);
    in_flight_.resize(w);
  }

  /// Where the fault mode releases held buffers to: the receive queue.
  auto queue() {
    return [this](rx_buffer&& b) { rxq_.push_back(std::move(b)); };
  }

  static constexpr std::size_t announcement_bytes = 16;

  /// Posts receive slot `i`: a receive from any rank of up to slot_bytes_ on `tag`, so a buffer is matched (and a
  /// rendezvous answered) by whatever MPI call this rank makes next, and lands in place.
  void post_receive(std::size_t i) {
    rx_blocks_[i] = take_block(slot_bytes_);
    SHOAL_MPI(MPI_Irecv(rx_blocks_[i].data.get(), static_cast<int>(slot_bytes_), MPI_BYTE, MPI_ANY_SOURCE, tag, comm_,
                        &rx_requests_[i]));
  }

  /// Receives one buffer into the queue, if one has arrived (under SHOAL_FAULTS: into the held buffers, and each
  /// call is one step of their delays; true also when a held buffer was released). The slots complete in the order
  /// they were posted, which is the order MPI matched them: per sender, the order of sending.
  bool receive_one() {
    const bool released = faults_ && (faults_->step(), faults_->release(queue()));
    int flag = 0;
    MPI_Status status;
    SHOAL_MPI(MPI_Test(&rx_requests_[rx_head_], &flag, &status));
    if (!flag) return released;
    int count = 0;
    SHOAL_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
    block b = std::move(rx_blocks_[rx_head_]);
    post_receive(rx_head_);
    rx_head_ = rx_head_ + 1 == posted_receives ? 0 : rx_head_ + 1;
    auto bytes = static_cast<std::size_t>(count);
    std::uint64_t note[2];
    if (bytes == announcement_bytes && (std::memcpy(note, b.data.get(), sizeof note), note[0] == 0)) {
      recycle(std::move(b));  // the announcement of a large buffer: take it now, in its place in the stream
      bytes = static_cast<std::size_t>(note[1]);
      b = block{std::unique_ptr<std::byte[]>(new std::byte[bytes]), bytes};
      SHOAL_MPI(MPI_Recv(b.data.get(), static_cast<int>(bytes), MPI_BYTE, status.MPI_SOURCE, large_tag, comm_,
                         MPI_STATUS_IGNORE));
    }
    shoal::layer::note_arrival();
    const std::byte* begin = b.data.get();
    rx_buffer got{std::move(b), begin, begin + bytes, status.MPI_SOURCE};
    if (faults_) faults_->hold(got.source, std::move(got), queue());  // hold() takes a reference: source is read first
    else rxq_.push_back(std::move(got));
    return true;
  }

  void dispatch(rx_buffer& b) {
    if (b.left == 0) {  // a new group
      std::int32_t word;
      std::uint32_t count;
      if (static_cast<std::size_t>(b.end - b.pos) < group_header_bytes) throw_corrupt();
      std::memcpy(&word, b.pos, sizeof word);
      std::memcpy(&b.function, b.pos + 4, sizeof b.function);
      std::memcpy(&count, b.pos + 8, sizeof count);
      std::memcpy(&b.team, b.pos + 12, sizeof b.team);
      if (count == 0) throw_corrupt();
      b.pos += group_header_bytes;
      b.run = reinterpret_cast<trampoline>(anchor_address() + word);
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
        e.team_ = saved_team;
        --e.depth_;
      }
    } guard{*this, source_, team_};
    source_ = b.source;
    team_ = b.team;  // what the handler sends belongs to its message's team
    ++depth_;
    run(b);
  }

  [[noreturn]] static void throw_corrupt() { throw error("shoal::am: malformed message group (corrupt stream)"); }

  struct team_counts {
    std::uint64_t sent = 0;     // messages of the team's closed groups
    std::uint64_t handled = 0;  // messages of the team whose handler finished here
  };
  team_counts& counts(std::uint32_t team) {
    if (team >= teams_.size()) teams_.resize(team + 1);
    return teams_[team];
  }

  std::uint64_t run_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int me_ = 0;
  int size_ = 1;
  std::size_t buffer_size_ = default_buffer_size;
  std::size_t max_sends_ = default_max_sends;

  std::vector<outbox> out_;
  std::vector<int> dirty_;
  std::vector<MPI_Request> requests_;
  std::vector<block> in_flight_;  // parallel to requests_
  std::vector<int> completed_;
  std::vector<block> pool_;       // send buffers of buffer_size_ bytes
  std::vector<block> slot_pool_;  // receive slots, when slot_bytes_ differs from buffer_size_
  std::deque<rx_buffer> rxq_;
  std::size_t slot_bytes_ = 0;    // the largest buffer_size of any rank at the start
  std::vector<block> rx_blocks_;  // posted receive slots, a ring of posted_receives
  std::vector<MPI_Request> rx_requests_;
  std::size_t rx_head_ = 0;       // the oldest posted slot

  int source_ = -1;
  int depth_ = 0;
  std::uint32_t team_ = 0;          // see team()
  std::vector<team_counts> teams_;  // per team id (world()'s messages count in sent_ / handled_ only)
  std::uint64_t sent_ = 0;     // messages of closed groups (for quiescence; see sent())
  std::uint64_t handled_ = 0;  // messages whose handler finished (for quiescence)
  std::uint64_t buffers_sent_ = 0;
  std::uint64_t loop_epoch_ = 0;

  // The fault mode (SHOAL_FAULTS): received buffers held back, one lane per sender.
  std::optional<shoal::layer::fault_scheduler<rx_buffer>> faults_;

  std::vector<std::string> errors_;
  std::vector<std::shared_ptr<void>> pending_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t live_rpcs_ = 0;
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
