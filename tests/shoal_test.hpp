// Helpers shared by shoal's MPI tests.
#pragma once

#include <gtest/gtest.h>

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "shoal/core.hpp"

namespace shoal::testing {

/// True on every rank iff `ok` is true on every rank (collective).
inline bool all_ranks(bool ok) { return shoal::allreduce(ok ? 1 : 0, shoal::op::min{}) == 1; }

/// True when more ranks share this machine's cores than it has. Emulated hosts (scripts/multihost.sh sets
/// SHOAL_TEST_HOSTS for the tests it spreads over them) are namespaces of one machine: every rank shares its cores.
/// SHOAL_TEST_JOBS (scripts/test.sh sets it to ctest's -j) counts the tests that run at once, each taken to be as
/// large as this one: two 2-rank tests on 2 cores are oversubscribed, as one 4-rank test is. (Without it, a 2-rank
/// test of 10,000 remote round trips beside another test took 98 s and more instead of 1-3 s under load: every round
/// trip waited for a time slice.) The same on every rank: it depends on the environment and the job's size only.
inline bool oversubscribed() {
  const int sharing = std::getenv("SHOAL_TEST_HOSTS") != nullptr ? shoal::size() : shoal::node_team().size();
  const char* jobs_setting = std::getenv("SHOAL_TEST_JOBS");
  const int jobs = jobs_setting != nullptr ? std::max(1, std::atoi(jobs_setting)) : 1;
  return static_cast<unsigned>(sharing) * static_cast<unsigned>(jobs) > std::thread::hardware_concurrency();
}

/// `n` iterations, or a twentieth of them when ranks are oversubscribed and some target is off the shared-memory
/// path: a remote atomic then needs the target's CPU (MPICH's ch4 atomics, or the owner applying a message), and
/// with more ranks than cores each one waits for a scheduler time slice (milliseconds). Full counts still run on the
/// shared-memory path, at 1 rank, and at 2 ranks when no other test runs beside (ctest without SHOAL_TEST_JOBS).
inline int scaled(int n) {
  return (oversubscribed() && shoal::current_rma_path() != shoal::rma_path::shared_memory) ? std::max(1, n / 20) : n;
}

/// A GoogleTest listener that turns a hang after a failure into a quick end of the whole job. A failed assertion on
/// one rank (an ASSERT that leaves the test early) can leave the other ranks waiting in a collective this rank never
/// calls. Once a failure has been seen on this rank, a watcher thread aborts the job (MPI_Abort on MPI_COMM_WORLD)
/// when no test has ended on this rank for `grace`, after printing why; the failure itself is already on stderr. A
/// run without failures never starts the watcher. stop() ends it (before MPI is finalized).
class abort_on_stall : public ::testing::EmptyTestEventListener {
 public:
  explicit abort_on_stall(int rank, std::chrono::seconds grace = std::chrono::seconds(10))
      : rank_(rank), grace_(grace) {}
  ~abort_on_stall() override { stop(); }

  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed() || watcher_.joinable()) return;
    watcher_ = std::thread([this] { watch(); });
  }
  void OnTestEnd(const ::testing::TestInfo&) override { ended_.fetch_add(1, std::memory_order_relaxed); }

  /// Stops the watcher (the tests are over and every rank agreed on the outcome).
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (watcher_.joinable()) watcher_.join();
  }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    auto seen = ended_.load(std::memory_order_relaxed);
    auto since = std::chrono::steady_clock::now();
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      const auto now = std::chrono::steady_clock::now();
      if (const auto e = ended_.load(std::memory_order_relaxed); e != seen) {
        seen = e;
        since = now;
      } else if (!stopping_ && now - since > grace_) {
        std::fprintf(stderr,
                     "[rank %d] a test failed on this rank and no test has ended for %lld s since: another rank is "
                     "probably waiting (in a collective, or for data) on what this rank skipped; aborting the job\n",
                     rank_, static_cast<long long>(grace_.count()));
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }

  int rank_;
  std::chrono::seconds grace_;
  std::atomic<long> ended_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace shoal::testing
