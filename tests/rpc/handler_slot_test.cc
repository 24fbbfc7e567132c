// HandlerSlot on a real io_context: an operation queued through it holds the slot until its
// handler starts, so the handler can queue its successor there; a second operation queued while
// the slot is taken still runs, in order; a reactor destroyed with the operation queued frees
// the slot.
#include "src/rpc/handler_slot.h"

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <vector>

namespace rill::internal {
namespace {

using Slot = HandlerSlot<128>;

TEST(HandlerSlotTest, HeldFromQueueingUntilTheHandlerStarts) {
  asio::io_context io(1);
  Slot slot;
  bool ran = false;
  asio::post(io, slot.Bind([&] {
    EXPECT_FALSE(slot.in_use());
    ran = true;
  }));
  EXPECT_TRUE(slot.in_use());
  io.run();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(slot.in_use());
}

// Queues its successor in the same slot from inside the handler, `left` more times.
struct Chain {
  asio::io_context* io;
  Slot* slot;
  int* runs;
  int left;

  void operator()() const {
    ++*runs;
    if (left == 0) return;
    asio::post(*io, slot->Bind(Chain{io, slot, runs, left - 1}));
    EXPECT_TRUE(slot->in_use());
  }
};

TEST(HandlerSlotTest, HandlerQueuesItsSuccessorInTheSlot) {
  asio::io_context io(1);
  Slot slot;
  int runs = 0;
  asio::post(io, slot.Bind(Chain{&io, &slot, &runs, 9}));
  io.run();
  EXPECT_EQ(runs, 10);
  EXPECT_FALSE(slot.in_use());
}

TEST(HandlerSlotTest, OperationQueuedWhileTheSlotIsTakenStillRuns) {
  asio::io_context io(1);
  Slot slot;
  std::vector<int> order;
  asio::post(io, slot.Bind([&] { order.push_back(1); }));
  asio::post(io, slot.Bind([&] { order.push_back(2); }));
  asio::post(io, slot.Bind([&] { order.push_back(3); }));
  io.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_FALSE(slot.in_use());
}

TEST(HandlerSlotTest, ReactorDestroyedWithTheOperationQueuedFreesTheSlot) {
  Slot slot;  // outlives the reactor
  bool ran = false;
  {
    asio::io_context io(1);
    asio::post(io, slot.Bind([&] { ran = true; }));
    EXPECT_TRUE(slot.in_use());
  }
  EXPECT_FALSE(ran);
  EXPECT_FALSE(slot.in_use());
}

}  // namespace
}  // namespace rill::internal
