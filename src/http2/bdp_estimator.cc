#include "src/http2/bdp_estimator.h"

#include <algorithm>

namespace rill::internal {
namespace {

constexpr double kAlpha = 0.9;   // weight of a new RTT sample in the moving average
constexpr double kBeta = 0.66;   // a sample must fill this share of the window to count
constexpr double kGamma = 2.0;   // the window grows to this multiple of the sample
constexpr int kRttWarmupSamples = 10;

}  // namespace

bool BdpEstimator::OnData(size_t bytes, Clock::time_point now) {
  if (bdp_ >= kMaxWindow) return false;  // estimation stops at the cap
  sample_ += static_cast<double>(bytes);
  if (ping_outstanding_) return false;
  if (now < next_ping_) return false;
  ping_outstanding_ = true;
  ping_sent_ = now;
  sample_ = static_cast<double>(bytes);
  return true;
}

uint32_t BdpEstimator::OnPingAck(Clock::time_point now) {
  if (!ping_outstanding_) return 0;
  ping_outstanding_ = false;
  const double rtt = std::max(std::chrono::duration<double>(now - ping_sent_).count(), 1e-6);
  if (rtt_samples_ < kRttWarmupSamples) {
    ++rtt_samples_;
    rtt_seconds_ += (rtt - rtt_seconds_) / rtt_samples_;
  } else {
    rtt_seconds_ += (rtt - rtt_seconds_) * kAlpha;
  }
  const uint32_t window = Estimate();
  if (window != 0) {
    ping_interval_ = Clock::duration::zero();
  } else {
    ping_interval_ = ping_interval_ == Clock::duration::zero()
                         ? kFirstPingInterval
                         : std::min(2 * ping_interval_, kMaxPingInterval);
  }
  next_ping_ = now + ping_interval_;
  return window;
}

uint32_t BdpEstimator::Estimate() {
  const double bandwidth = sample_ / (rtt_seconds_ * 1.5);
  if (bandwidth <= bandwidth_max_) return 0;
  bandwidth_max_ = bandwidth;
  if (sample_ < kBeta * bdp_) return 0;
  const double grown = std::min<double>(kGamma * sample_, kMaxWindow);
  if (grown <= bdp_) return 0;
  bdp_ = static_cast<uint32_t>(grown);
  return bdp_;
}

}  // namespace rill::internal
