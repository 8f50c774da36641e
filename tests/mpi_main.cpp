// The main of every MPI test binary: every rank runs every test; rank 0 prints the usual GoogleTest report, other
// ranks print their failures prefixed with their rank; the process exits non-zero on every rank if any rank failed.
// After a failure, a rank that makes no progress for a few seconds ends the whole job (shoal::testing::abort_on_stall)
// rather than letting the others wait in a collective until the test's timeout.
#include <gtest/gtest.h>

#include <cstdio>

#include "shoal/core.hpp"
#include "shoal_test.hpp"

namespace {

class rank_failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit rank_failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  shoal::environment env(argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (shoal::rank() != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new rank_failure_printer(shoal::rank()));
  }
  auto* stall = new shoal::testing::abort_on_stall(shoal::rank());
  listeners.Append(stall);  // owned by GoogleTest
  const int local_failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  const int any_failed = shoal::allreduce(local_failed, shoal::op::max{});
  stall->stop();
  if (shoal::rank() == 0 && any_failed && !local_failed) std::fprintf(stderr, "a test failed on another rank\n");
  env.finalize();
  return any_failed;
}
