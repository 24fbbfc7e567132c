// Waiter on a real io_context: a wake resumes the parked coroutine from a handler of its own,
// never inside the waker; wakes fold; the one wake slot is reused round after round; a reactor
// destroyed with a wake queued takes the parked coroutine with it.
#include "src/rpc/waiter.h"

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <exception>
#include <memory>
#include <vector>

namespace rill::internal {
namespace {

// Parks `rounds` times, counting each resumption.
asio::awaitable<void> ParkAndCount(Waiter* waiter, int* resumes, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    co_await waiter->Wait();
    ++*resumes;
  }
}

// Parks once while holding `token`, so the test sees when the coroutine's frame is gone.
asio::awaitable<void> ParkHolding(Waiter* waiter, std::shared_ptr<int> token, bool* resumed) {
  co_await waiter->Wait();
  *resumed = true;
}

struct Finished {
  bool* done;
  void operator()(const std::exception_ptr& error) const {
    EXPECT_FALSE(error);
    *done = true;
  }
};

TEST(WaiterTest, WakeResumesTheCoroutineFromAHandlerOfItsOwn) {
  asio::io_context io(1);
  Waiter waiter(io);
  int resumes = 0;
  bool done = false;
  asio::co_spawn(io, ParkAndCount(&waiter, &resumes, 1), Finished{&done});
  io.poll();
  ASSERT_TRUE(waiter.waiting());

  // Woken from a handler running on the reactor, where Asio could run work inline.
  int resumes_inside_waker = -1;
  asio::post(io, [&] {
    waiter.Wake();
    resumes_inside_waker = resumes;
  });
  io.poll();
  EXPECT_EQ(resumes_inside_waker, 0);
  EXPECT_EQ(resumes, 1);
  EXPECT_TRUE(done);
  EXPECT_FALSE(waiter.waiting());
}

TEST(WaiterTest, WakeWithNobodyParkedDoesNothing) {
  asio::io_context io(1);
  Waiter waiter(io);
  waiter.Wake();
  EXPECT_EQ(io.poll(), 0u);
  io.restart();  // the poll ran out of work, which stops the context

  // A coroutine that parks afterwards waits for the next wake.
  int resumes = 0;
  bool done = false;
  asio::co_spawn(io, ParkAndCount(&waiter, &resumes, 1), Finished{&done});
  io.poll();
  EXPECT_TRUE(waiter.waiting());
  EXPECT_EQ(resumes, 0);
  waiter.Wake();
  io.poll();
  EXPECT_EQ(resumes, 1);
  EXPECT_TRUE(done);
}

TEST(WaiterTest, WakesBeforeTheResumptionFoldIntoOne) {
  asio::io_context io(1);
  Waiter waiter(io);
  int resumes = 0;
  bool done = false;
  asio::co_spawn(io, ParkAndCount(&waiter, &resumes, 2), Finished{&done});
  io.poll();
  waiter.Wake();
  EXPECT_FALSE(waiter.waiting());
  waiter.Wake();
  waiter.Wake();
  io.poll();
  EXPECT_EQ(resumes, 1);
  EXPECT_TRUE(waiter.waiting());  // parked for its second round
  EXPECT_FALSE(done);
  waiter.Wake();
  io.poll();
  EXPECT_EQ(resumes, 2);
  EXPECT_TRUE(done);
}

// Wakes the waiter `rounds` times, each from a handler of its own queued behind the previous
// wake, so that each wake finds the coroutine parked again.
struct WakeRepeatedly {
  Waiter* waiter;
  int rounds;
  asio::io_context* io;
  void operator()() const {
    if (rounds == 0) return;
    waiter->Wake();
    asio::post(*io, WakeRepeatedly{waiter, rounds - 1, io});
  }
};

TEST(WaiterTest, TheWakeSlotIsReusedRoundAfterRound) {
  asio::io_context io(1);
  Waiter waiter(io);
  constexpr int kRounds = 1000;
  int resumes = 0;
  bool done = false;
  asio::co_spawn(io, ParkAndCount(&waiter, &resumes, kRounds), Finished{&done});
  io.poll();
  asio::post(io, WakeRepeatedly{&waiter, kRounds, &io});
  io.poll();
  EXPECT_EQ(resumes, kRounds);
  EXPECT_TRUE(done);
}

TEST(WaiterTest, ManyWaitersWokenInOneTurn) {
  asio::io_context io(1);
  constexpr int kWaiters = 100;
  constexpr int kRounds = 20;
  std::vector<std::unique_ptr<Waiter>> waiters;
  int resumes = 0;
  int done = 0;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Waiter>(io));
    asio::co_spawn(io, ParkAndCount(waiters.back().get(), &resumes, kRounds),
                   [&done](const std::exception_ptr& error) {
                     EXPECT_FALSE(error);
                     ++done;
                   });
  }
  io.poll();
  for (int round = 1; round <= kRounds; ++round) {
    for (auto& waiter : waiters) waiter->Wake();
    io.poll();
    EXPECT_EQ(resumes, round * kWaiters);
  }
  EXPECT_EQ(done, kWaiters);
}

TEST(WaiterTest, ReactorDestroyedWithAWakeQueuedDestroysTheParkedCoroutine) {
  auto io = std::make_unique<asio::io_context>(1);
  Waiter waiter(*io);
  auto token = std::make_shared<int>(0);
  bool resumed = false;
  bool done = false;
  asio::co_spawn(*io, ParkHolding(&waiter, token, &resumed), Finished{&done});
  io->poll();
  ASSERT_TRUE(waiter.waiting());
  EXPECT_EQ(token.use_count(), 2);

  waiter.Wake();
  io.reset();
  EXPECT_FALSE(resumed);
  EXPECT_FALSE(done);
  EXPECT_EQ(token.use_count(), 1);  // the coroutine's frame is gone
  EXPECT_FALSE(waiter.waiting());
}

}  // namespace
}  // namespace rill::internal
