// BdpEstimator: the window follows a bulk transfer, and a lightly loaded connection is not
// pinged on every message. Time is simulated.
#include "src/http2/bdp_estimator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

namespace rill::internal {
namespace {

using Clock = BdpEstimator::Clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr uint32_t kInitialWindow = 64 * 1024;

// A sender that keeps the window full: each round trip of `rtt` delivers the window's worth of
// DATA in kSteps pieces, and a ping is acknowledged one round trip after it left.
struct BulkTransfer {
  static constexpr int kSteps = 16;
  BdpEstimator& estimator;
  Clock::time_point now;
  Clock::duration rtt = milliseconds(1);
  Clock::time_point ping_sent{};
  int pings = 0;

  // One round trip of DATA.
  void Round() {
    for (int step = 0; step < kSteps; ++step) {
      if (estimator.ping_outstanding() && now - ping_sent >= rtt) estimator.OnPingAck(now);
      if (estimator.OnData(estimator.window() / kSteps, now)) {
        ++pings;
        ping_sent = now;
      }
      now += rtt / kSteps;
    }
  }
};

TEST(BdpEstimator, BulkTransferGrowsTheWindowToItsCap) {
  BdpEstimator estimator(kInitialWindow);
  BulkTransfer transfer{estimator, Clock::time_point{}};
  int rounds = 0;
  while (estimator.window() < BdpEstimator::kMaxWindow && rounds < 100) {
    transfer.Round();
    ++rounds;
  }
  EXPECT_EQ(estimator.window(), BdpEstimator::kMaxWindow);
  // 64 KiB doubles to 16 MiB in 8 growths; a round may pass without growth only while the
  // round-trip time settles.
  EXPECT_LE(rounds, 20);
  // At the cap, estimation (and pinging) stops.
  EXPECT_FALSE(estimator.OnData(1024, transfer.now + milliseconds(1)));
}

TEST(BdpEstimator, OneSmallCallAtATimeIsPingedRarely) {
  BdpEstimator estimator(kInitialWindow);
  Clock::time_point now{};
  int pings = 0;
  // 10,000 RPCs in one second, one in flight: a 20-byte response every 100 µs, and any ping
  // acknowledged 50 µs after it left.
  for (int rpc = 0; rpc < 10'000; ++rpc) {
    if (estimator.OnData(20, now)) ++pings;
    now += microseconds(50);
    if (estimator.ping_outstanding()) {
      EXPECT_EQ(estimator.OnPingAck(now), 0u);
    }
    now += microseconds(50);
  }
  // Without the back-off every RPC drew a ping (10,000). With it: the waits double from 1 ms
  // to 256 ms (9 pings in ~0.5 s), then one ping per 256 ms.
  EXPECT_LE(pings, 14);
  EXPECT_GE(pings, 9);
  EXPECT_EQ(estimator.ping_interval(), BdpEstimator::kMaxPingInterval);
}

TEST(BdpEstimator, ABulkTransferAfterQuietTrafficGrowsTheWindowWithinTheLongestWait) {
  BdpEstimator estimator(kInitialWindow);
  Clock::time_point now{};
  for (int rpc = 0; rpc < 10'000; ++rpc) {  // as above: the waits are at their longest
    estimator.OnData(20, now);
    now += microseconds(50);
    if (estimator.ping_outstanding()) estimator.OnPingAck(now);
    now += microseconds(50);
  }
  ASSERT_EQ(estimator.ping_interval(), BdpEstimator::kMaxPingInterval);
  BulkTransfer transfer{estimator, now};
  const Clock::time_point start = now;
  while (estimator.window() == kInitialWindow &&
         transfer.now - start < 2 * BdpEstimator::kMaxPingInterval) {
    transfer.Round();
  }
  EXPECT_GT(estimator.window(), kInitialWindow);
  EXPECT_LE(transfer.now - start, BdpEstimator::kMaxPingInterval + 3 * transfer.rtt);
  // Growing makes pinging immediate again: one ping per round trip while the window grows.
  EXPECT_EQ(estimator.ping_interval(), Clock::duration::zero());
  const int pings = transfer.pings;
  for (int round = 0; round < 4; ++round) transfer.Round();
  EXPECT_GE(transfer.pings, pings + 2);
}

}  // namespace
}  // namespace rill::internal
