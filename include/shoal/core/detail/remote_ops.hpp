// shoal/core/detail/remote_ops.hpp — one-sided operations carried as messages and applied by the owner's CPU.
//
// Used for every target that is neither on this rank's host (loads, stores and CPU atomics there) nor reachable by
// MPI RMA with coherent atomics:
//  * atomics on another host, always when any rank shares memory with another: the owner applies them with CPU
//    atomics, so every atomic on a word — from its host by shared memory, from other hosts by message — is a CPU
//    atomic on the same memory, and they are atomic with one another (what UPC++/GASNet-EX do without NIC atomics);
//  * gets and puts to another host when MPI cannot make a window across the job (Open MPI 4.1's default one-sided
//    component over TCP, for one).
//
// Protocol, on a communicator of its own: a request is one message with tag `request_tag` = a header, followed for a
// put by its bytes. The requester posts the receive of the reply (tag chosen by the requester, unique among its
// outstanding operations) before it sends the request. The owner answers a get with the bytes, an atomic with the
// old value (8 bytes), a put with an empty acknowledgement. Requests are served by whichever thread of the owner
// gets there first — its own wait loops (shoal::progress) or the progress thread (detail/progress_thread.hpp) —
// one thread at a time, so requests from one origin are applied in the order they were sent.
//
// Test-only fault mode (SHOAL_FAULTS, detail/faults.hpp): the owner holds received requests back and releases them in
// a seeded random order across origins, in order from each origin; it holds its replies back the same way (an
// operation has taken effect, its origin learns it some steps later). A step is one serve() call.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "shoal/core/detail/faults.hpp"
#include "shoal/core/detail/mpi_check.hpp"
#include "shoal/core/error.hpp"
#include "shoal/core/future.hpp"
#include "shoal/core/progress.hpp"

namespace shoal::detail {

/// Future state completed by an MPI request; owns the value for single-element operations.
template <class V>
struct request_state : future_state<V> {
  MPI_Request req = MPI_REQUEST_NULL;
  V buffer{};
  bool test() override {
    if (this->done) return true;
    int flag = 0;
    SHOAL_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    if (flag) this->set_value(std::move(buffer));
    return flag != 0;
  }
  ~request_state() override {
    if (req != MPI_REQUEST_NULL) SHOAL_MPI_CLEANUP(MPI_Wait(&req, MPI_STATUS_IGNORE));
  }
};

/// The operation an owner applies to one 4- or 8-byte word.
enum class word_op : std::uint8_t { add, bit_and, bit_or, bit_xor, exchange, load, compare_exchange };

class remote_ops {
 public:
  static constexpr int request_tag = 1;

  /// Collective over `comm` (duplicated). `base` is this rank's segment of `segment_size` bytes.
  remote_ops(MPI_Comm comm, std::byte* base, std::size_t segment_size) : base_(base), segment_size_(segment_size) {
    SHOAL_MPI(MPI_Comm_dup(comm, &comm_));
    SHOAL_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    void* attr = nullptr;
    int found = 0;
    SHOAL_MPI(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &attr, &found));
    const int ub = found ? *static_cast<int*>(attr) : 32767;
    max_tag_ = ub < (1 << 20) ? ub : (1 << 20);
    MPI_Comm_rank(comm_, &me_);
    if (const auto f = env_faults()) {
      int size = 1;
      SHOAL_MPI(MPI_Comm_size(comm_, &size));
      faults_.emplace(fault_mode{{*f, me_, size, fault_stream::requests}, {*f, me_, size, fault_stream::replies}});
    }
  }
  ~remote_ops() {
    complete_puts(-1);
    SHOAL_MPI_CLEANUP(MPI_Comm_free(&comm_));
  }
  remote_ops(const remote_ops&) = delete;
  remote_ops& operator=(const remote_ops&) = delete;

  // ---- requester side (the thread that calls shoal) ------------------------------------------------------------

  /// Applies `op` to the `width`-byte word at `offset` of `target`'s segment; returns the old value. Blocking.
  std::uint64_t word(int target, std::size_t offset, int width, word_op op, std::uint64_t operand,
                     std::uint64_t compare = 0) {
    header h{offset, static_cast<std::uint64_t>(width), operand, compare, next_tag(), kind::word, op};
    std::uint64_t old = 0;
    MPI_Request req;
    SHOAL_MPI(MPI_Irecv(&old, 8, MPI_BYTE, target, h.reply_tag, comm_, &req));
    send_and_wait(target, h, req);
    return old;
  }

  /// Starts reading `bytes` at `offset` of `target`'s segment into dst. A read of this rank's own segment is done
  /// at once (*req is then MPI_REQUEST_NULL, which tests complete).
  void start_get(int target, void* dst, std::size_t offset, std::size_t bytes, MPI_Request* req) {
    if (target == me_) {
      get(target, dst, offset, bytes);
      *req = MPI_REQUEST_NULL;
      return;
    }
    header h{offset, bytes, 0, 0, next_tag(), kind::get, word_op::load};
    SHOAL_MPI(MPI_Irecv(dst, static_cast<int>(bytes), MPI_BYTE, target, h.reply_tag, comm_, req));
    SHOAL_MPI(MPI_Send(&h, sizeof h, MPI_BYTE, target, request_tag, comm_));
  }

  void get(int target, void* dst, std::size_t offset, std::size_t bytes) {
    header h{offset, bytes, 0, 0, next_tag(), kind::get, word_op::load};
    MPI_Request req;
    SHOAL_MPI(MPI_Irecv(dst, static_cast<int>(bytes), MPI_BYTE, target, h.reply_tag, comm_, &req));
    send_and_wait(target, h, req);
  }

  /// Sends `bytes` from src to `offset` of `target`'s segment; src is reusable on return. Complete at the target
  /// after complete_puts(target).
  void start_put(int target, const void* src, std::size_t offset, std::size_t bytes) {
    auto p = std::make_unique<pending_put>();
    p->target = target;
    header h{offset, bytes, 0, 0, next_tag(), kind::put, word_op::load};
    p->message.resize(sizeof h + bytes);
    std::memcpy(p->message.data(), &h, sizeof h);
    if (bytes) std::memcpy(p->message.data() + sizeof h, src, bytes);
    SHOAL_MPI(MPI_Irecv(nullptr, 0, MPI_BYTE, target, h.reply_tag, comm_, &p->reqs[0]));
    SHOAL_MPI(MPI_Isend(p->message.data(), static_cast<int>(p->message.size()), MPI_BYTE, target, request_tag, comm_,
                        &p->reqs[1]));
    puts_.push_back(std::move(p));
  }

  void put(int target, const void* src, std::size_t offset, std::size_t bytes) {
    start_put(target, src, offset, bytes);
    complete_puts(target);
  }

  /// Waits until every put to `target` (every target for -1) is applied at its owner.
  void complete_puts(int target) {
    if (puts_.empty()) return;
    one_sided_wait scope;
    spin_waiter pause;
    for (;;) {
      bool left = false;
      for (auto& p : puts_) {
        if (!p || (target >= 0 && p->target != target)) continue;
        int done = 0;
        SHOAL_MPI(MPI_Testall(2, p->reqs, &done, MPI_STATUSES_IGNORE));
        if (done) p.reset();
        else left = true;
      }
      std::erase(puts_, nullptr);
      if (!left) return;
      if (!g_runtime) {  // finalizing: nothing to serve with, just wait
        for (auto& p : puts_) SHOAL_MPI_CLEANUP(MPI_Waitall(2, p->reqs, MPI_STATUSES_IGNORE));
        puts_.clear();
        return;
      }
      pause();
    }
  }

  // ---- owner side (any thread, one at a time) ------------------------------------------------------------------

 private:
  // The fault mode's held messages, and where it releases them to (before serve(), which uses them).
  struct held_request {
    int source;
    std::vector<std::byte> message;
  };
  struct held_reply {
    int dest;
    int tag;
    std::vector<std::byte> bytes;  // taken when the request was applied
    const char* what;
  };
  struct fault_mode {
    fault_scheduler<held_request> requests;  // one lane per origin
    fault_scheduler<held_reply> replies;     // one lane per origin
  };

  /// Where the fault mode releases held requests to: applied, and counted in `served`.
  auto apply_held(int& served) {
    return [this, &served](held_request&& r) {
      apply(r.source, r.message.data(), r.message.size());
      ++served;
    };
  }
  auto send_held() {
    return [this](held_reply&& r) {
      mpi_check(MPI_Send(r.bytes.data(), static_cast<int>(r.bytes.size()), MPI_BYTE, r.dest, r.tag, comm_), r.what);
    };
  }

 public:
  /// Applies every request that has arrived. Returns how many arrived or were applied (0 also when another thread is
  /// serving). Under the fault mode each call is one step of the held requests' and replies' delays.
  int serve() {
    if (serving_.test_and_set(std::memory_order_acquire)) return 0;
    int served = 0;
    if (faults_) {
      faults_->requests.step();
      faults_->replies.step();
      faults_->requests.release(apply_held(served));
      faults_->replies.release(send_held());
    }
    for (int received = 0; received < 256; ++received) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status status;
      if (const int rc = MPI_Improbe(MPI_ANY_SOURCE, request_tag, comm_, &flag, &msg, &status); rc != MPI_SUCCESS) {
        serving_.clear(std::memory_order_release);
        mpi_check(rc, "MPI_Improbe (remote operations)");
      }
      if (!flag) break;
      int count = 0;
      SHOAL_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
      inbox_.resize(static_cast<std::size_t>(count));
      SHOAL_MPI(MPI_Mrecv(inbox_.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
      ++served;
      if (faults_) {
        faults_->requests.hold(status.MPI_SOURCE, held_request{status.MPI_SOURCE, inbox_}, apply_held(served));
      } else {
        apply(status.MPI_SOURCE, inbox_.data(), inbox_.size());
      }
    }
    if (faults_) {
      holding_.store(faults_->requests.held_count() + faults_->replies.held_count() > 0, std::memory_order_relaxed);
    }
    serving_.clear(std::memory_order_release);
    return served;
  }

  /// Whether the fault mode holds requests or replies back (each is due within a few serve() calls).
  bool holding() const { return holding_.load(std::memory_order_relaxed); }

  /// The fault mode's counts (all 0 without SHOAL_FAULTS), for the tests that check it really delays and reorders.
  struct fault_counts {
    std::uint64_t requests_delayed = 0;     // requests held for at least one step
    std::uint64_t requests_overtaking = 0;  // requests applied before an earlier-arrived one of another origin
    std::uint64_t replies_delayed = 0;
    std::uint64_t replies_overtaking = 0;
  };
  fault_counts faults() {
    while (serving_.test_and_set(std::memory_order_acquire)) std::this_thread::yield();  // a serve() call ends first
    fault_counts c;
    if (faults_) {
      c = {faults_->requests.delayed(), faults_->requests.overtaking(), faults_->replies.delayed(),
           faults_->replies.overtaking()};
    }
    serving_.clear(std::memory_order_release);
    return c;
  }

 private:
  enum class kind : std::uint8_t { get, put, word };
  struct header {
    std::uint64_t offset;
    std::uint64_t bytes;  // get / put: length; word: width (4 or 8)
    std::uint64_t operand;
    std::uint64_t compare;
    std::int32_t reply_tag;
    kind what;
    word_op op;
  };
  struct pending_put {
    int target = 0;
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::vector<std::byte> message;
  };
  /// Answers a request: at once, or under the fault mode a few steps later.
  void reply(int dest, int tag, const void* data, std::size_t bytes, const char* what) {
    if (faults_) {
      const auto* p = static_cast<const std::byte*>(data);
      faults_->replies.hold(dest, held_reply{dest, tag, std::vector<std::byte>(p, p + bytes), what}, send_held());
      return;
    }
    mpi_check(MPI_Send(data, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm_), what);
  }

  /// Sends request h and waits for its reply `reply`, serving requests meanwhile. The send is non-blocking: a
  /// blocking send to this rank itself could wait for a receive that only this thread's serve() would post.
  void send_and_wait(int target, const header& h, MPI_Request& reply) {
    MPI_Request send;
    SHOAL_MPI(MPI_Isend(&h, sizeof h, MPI_BYTE, target, request_tag, comm_, &send));
    one_sided_wait scope;
    wait_request(send);
    wait_request(reply);
  }

  int next_tag() {
    tag_ = tag_ >= max_tag_ ? 2 : tag_ + 1;
    return tag_;
  }

  [[noreturn]] void bad_request(int source, const header& h) {
    std::fprintf(stderr,
                 "shoal: rank %d received a remote operation from rank %d on bytes [%llu, %llu) outside its segment "
                 "of %zu bytes; aborting\n",
                 my_rank(), source, static_cast<unsigned long long>(h.offset),
                 static_cast<unsigned long long>(h.offset + h.bytes), segment_size_);
    MPI_Abort(comm_, 3);
    std::abort();
  }

  int my_rank() const {
    int r = 0;
    SHOAL_MPI_CLEANUP(MPI_Comm_rank(comm_, &r));
    return r;
  }

  void apply(int source, const std::byte* message, std::size_t count) {
    header h{};
    if (count < sizeof h) bad_request(source, h);
    std::memcpy(&h, message, sizeof h);
    if (h.offset > segment_size_ || h.bytes > segment_size_ - h.offset) bad_request(source, h);
    if (h.what == kind::put && count != sizeof h + h.bytes) bad_request(source, h);
    std::byte* at = base_ + h.offset;
    switch (h.what) {
      case kind::get:
        reply(source, h.reply_tag, at, h.bytes, "remote get reply");
        return;
      case kind::put:
        std::atomic_thread_fence(std::memory_order_release);
        std::memcpy(at, message + sizeof h, h.bytes);
        std::atomic_thread_fence(std::memory_order_release);
        reply(source, h.reply_tag, nullptr, 0, "remote put acknowledgement");
        return;
      case kind::word: {
        std::uint64_t old = h.bytes == 8 ? apply_word<std::uint64_t>(at, h) : apply_word<std::uint32_t>(at, h);
        reply(source, h.reply_tag, &old, 8, "remote atomic reply");
        return;
      }
    }
  }

  template <class U>
  static std::uint64_t apply_word(std::byte* at, const header& h) {
    std::atomic_ref<U> a(*reinterpret_cast<U*>(at));
    const U x = static_cast<U>(h.operand);
    switch (h.op) {
      case word_op::add: return a.fetch_add(x);
      case word_op::bit_and: return a.fetch_and(x);
      case word_op::bit_or: return a.fetch_or(x);
      case word_op::bit_xor: return a.fetch_xor(x);
      case word_op::exchange: return a.exchange(x);
      case word_op::load: return a.load();
      case word_op::compare_exchange: {
        U expected = static_cast<U>(h.compare);
        a.compare_exchange_strong(expected, x);
        return expected;
      }
    }
    return 0;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  std::byte* base_;
  std::size_t segment_size_;
  int max_tag_ = 32767;
  int me_ = 0;  // this rank in comm_
  int tag_ = 1;
  std::vector<std::unique_ptr<pending_put>> puts_;
  std::atomic_flag serving_ = ATOMIC_FLAG_INIT;
  std::vector<std::byte> inbox_;  // used only by the serving thread
  std::optional<fault_mode> faults_;  // SHOAL_FAULTS; used only by the serving thread
  std::atomic<bool> holding_{false};
};

}  // namespace shoal::detail
