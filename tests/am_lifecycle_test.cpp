// Active messages across the life of an environment: misuse after finalize, rpc results never taken, a second
// environment in the same process. MPI is initialised by the test's main (core_adopt_main.cpp), so each test can
// start and end shoal itself.
#include <gtest/gtest.h>

#include <string>

#include "shoal/am.hpp"

namespace {

TEST(AmLifecycle, CallsAfterFinalizeAreUsageErrors) {
  {
    shoal::environment env;
    shoal::post(shoal::rank(), [] {});
    shoal::am::barrier();
  }
  EXPECT_THROW(shoal::post(0, [] {}), shoal::usage_error);
  EXPECT_THROW(shoal::rpc(0, [] { return 1; }), shoal::usage_error);
  EXPECT_THROW(shoal::am::flush(), shoal::usage_error);
  EXPECT_THROW(shoal::am::barrier(), shoal::usage_error);
  try {
    shoal::am::flush();
  } catch (const shoal::usage_error& e) {
    EXPECT_NE(std::string(e.what()).find("finalized"), std::string::npos) << e.what();
  }
}

TEST(AmLifecycle, FinalizeDrainsAndReportsRpcResultsNeverTaken) {
  shoal::environment env;
  const int right = (shoal::rank() + 1) % shoal::size();
  static int delivered = 0;
  delivered = 0;
  auto kept = shoal::rpc(right, [](int x) { return x; }, 1);  // never get()
  shoal::post(right, [] { ++delivered; });                    // never flushed by the program
  ::testing::internal::CaptureStderr();
  env.finalize();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(delivered, 1);  // finalize drained the buffered message
  EXPECT_NE(err.find("1 rpc result(s) were never taken"), std::string::npos) << err;
}

TEST(AmLifecycle, FinalizeReportsUnhandledHandlerFailures) {
  shoal::environment env;
  shoal::post((shoal::rank() + 1) % shoal::size(), [] { throw std::runtime_error("nobody asked"); });
  ::testing::internal::CaptureStderr();
  env.finalize();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("nobody asked"), std::string::npos) << err;
}

TEST(AmLifecycle, SecondEnvironmentWorks) {
  shoal::environment env;
  const int right = (shoal::rank() + 1) % shoal::size();
  EXPECT_EQ(shoal::rpc(right, [] { return shoal::rank(); }).get(), right);
  shoal::am::barrier();
}

}  // namespace
