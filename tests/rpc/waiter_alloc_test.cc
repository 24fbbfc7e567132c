// A wake costs no heap allocation, also when a reactor wakes many parked coroutines in one turn
// (a streaming server with a message for each of its calls). Counted with the malloc hook
// (bench/alloc_hook), which sees every allocation in the process.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "src/rpc/waiter.h"

namespace rill::internal {
namespace {

constexpr int kWaiters = 100;
constexpr int kWarmup = 10;
constexpr int kMeasured = 100;

asio::awaitable<void> ParkForever(Waiter* waiter, int* resumes) {
  for (;;) {
    co_await waiter->Wait();
    ++*resumes;
  }
}

// One reactor turn: wakes every waiter, then queues the next turn behind the resumptions. The
// rounds run inside one io_context::run(), as on a reactor thread (Asio's per-thread handler
// memory lives as long as the run).
struct Round {
  asio::io_context* io;
  std::vector<std::unique_ptr<Waiter>>* waiters;
  int* round;
  uint64_t* before;
  uint64_t* after;

  void operator()() const {
    if (*round == kWarmup) *before = bench::AllocationCounts().allocs;
    if (*round == kWarmup + kMeasured) {
      *after = bench::AllocationCounts().allocs;
      io->stop();
      return;
    }
    ++*round;
    for (auto& waiter : *waiters) waiter->Wake();
    asio::post(*io, *this);
  }
};

TEST(WaiterAllocationTest, NoHeapAllocationPerWake) {
  if (!bench::AllocationCountingEnabled()) GTEST_SKIP() << "the sanitizer owns malloc";
  asio::io_context io(1);
  std::vector<std::unique_ptr<Waiter>> waiters;
  int resumes = 0;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Waiter>(io));
    asio::co_spawn(io, ParkForever(waiters.back().get(), &resumes),
                   [](const std::exception_ptr&) {});
  }
  int round = 0;
  uint64_t before = 0;
  uint64_t after = 0;
  asio::post(io, Round{&io, &waiters, &round, &before, &after});
  io.run();
  EXPECT_EQ(round, kWarmup + kMeasured);
  EXPECT_EQ(resumes, (kWarmup + kMeasured) * kWaiters);
  const uint64_t allocs = after - before;
  EXPECT_EQ(allocs, 0u) << static_cast<double>(allocs) / (kMeasured * kWaiters) << " per wake";
}

}  // namespace
}  // namespace rill::internal
