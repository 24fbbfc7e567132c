// BdpEstimator: the window follows a bulk transfer up to its cap. Time is simulated.
#include "src/http2/bdp_estimator.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

namespace rill::internal {
namespace {

using Clock = BdpEstimator::Clock;
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

}  // namespace
}  // namespace rill::internal
