// shoal/core/detail/progress_thread.hpp — serves remote operations while the owner's own thread is busy elsewhere.
//
// A rank on another host reaches this rank's memory by messages (detail/remote_ops.hpp) or by MPI RMA that, over a
// network without RDMA, needs this rank's MPI library to make progress. Without help, both wait until this rank
// calls into shoal or MPI again: a remote atomic from another host could take as long as this rank computes. The
// progress thread polls for requests, applies them and, by calling MPI, drives MPI's own progress. It needs
// MPI_THREAD_MULTIPLE. It polls eagerly while requests arrive and backs off (sleeps up to max_sleep) when none do,
// so an idle thread costs almost nothing; the owner's own wait loops serve requests as well, without delay.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "shoal/core/detail/remote_ops.hpp"

namespace shoal::detail {

class progress_thread {
 public:
  static constexpr int eager_polls = 64;
  static constexpr std::chrono::microseconds max_sleep{200};

  explicit progress_thread(remote_ops& ops) : thread_([this, &ops] { loop(ops); }) {}
  ~progress_thread() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }
  progress_thread(const progress_thread&) = delete;
  progress_thread& operator=(const progress_thread&) = delete;

 private:
  void loop(remote_ops& ops) {
    int idle = 0;
    while (!stop_.load(std::memory_order_relaxed)) {
      if (ops.serve() > 0) {
        idle = 0;
        continue;
      }
      if (ops.holding()) idle = 0;  // the fault mode's held requests and replies are due within a few calls
      if (++idle < eager_polls) {
        std::this_thread::yield();
      } else {
        const auto step = std::chrono::microseconds(5) * (1 << std::min(idle - eager_polls, 6));
        std::this_thread::sleep_for(std::min(step, std::chrono::duration_cast<std::chrono::microseconds>(max_sleep)));
      }
    }
  }

  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace shoal::detail
