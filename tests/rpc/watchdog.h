// FinishesWithin: runs a step that must return (a destructor, a shutdown) on a thread of its
// own and reports whether it did before `limit`. A step that hangs cannot be abandoned safely
// (it holds the objects under test), so a hang ends the test binary with a message instead of
// hanging ctest until its timeout.
//
//   EXPECT_TRUE(FinishesWithin(std::chrono::seconds(10), [&] { channel.reset(); }));
//
// Thread safety: thread-compatible; called from the test thread.
#ifndef RILL_TESTS_RPC_WATCHDOG_H_
#define RILL_TESTS_RPC_WATCHDOG_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>
#include <utility>

namespace rill::test {

template <typename Fn>
bool FinishesWithin(std::chrono::seconds limit, Fn&& fn) {
  std::packaged_task<void()> task(std::forward<Fn>(fn));
  std::future<void> done = task.get_future();
  std::thread thread(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "%s: a step that must return did not within %lld s (hang)\n",
                 ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  thread.join();
  done.get();
  return true;
}

}  // namespace rill::test

#endif  // RILL_TESTS_RPC_WATCHDOG_H_
