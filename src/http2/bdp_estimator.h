// BdpEstimator: grows the receive window to the connection's bandwidth-delay product.
//
// The first DATA of a cycle triggers a PING carrying kPingPayload; bytes received until its ACK
// form the sample. The round-trip time is the mean of the first samples, then a moving average.
// When a sample fills most of the current window and the bandwidth it implies is the highest
// seen, the window becomes twice the sample (capped at kMaxWindow) — the constants are grpc-go's
// (alpha 0.9, beta 0.66, gamma 2, 16 MiB), which are known to behave well with gRPC traffic.
//
// Pings back off while the estimate holds: after a sample that did not grow the window, the next
// cycle may start only kFirstPingInterval later, and each further such sample doubles the wait up
// to kMaxPingInterval; a sample that grows the window makes pinging immediate again. Without it,
// every RPC of a lightly loaded connection (one call in flight) drew a PING and its ACK in each
// direction: two extra frames per RPC, and two extra system calls when the next request went to
// another connection (round robin). The cost is a slower start for a connection that turns from
// small messages to bulk transfer: its window begins growing at most kMaxPingInterval late.
//
// Pure logic: time comes in as arguments, so it is tested deterministically.
//
// Thread safety: thread-compatible.
#ifndef RILL_SRC_HTTP2_BDP_ESTIMATOR_H_
#define RILL_SRC_HTTP2_BDP_ESTIMATOR_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace rill::internal {

class BdpEstimator {
 public:
  using Clock = std::chrono::steady_clock;
  // Identifies BDP pings among the connection's PING ACKs.
  static constexpr uint64_t kPingPayload = 0x0204101009'0e0707;
  static constexpr uint32_t kMaxWindow = 16 * 1024 * 1024;
  static constexpr Clock::duration kFirstPingInterval = std::chrono::milliseconds(1);
  static constexpr Clock::duration kMaxPingInterval = std::chrono::milliseconds(256);

  explicit BdpEstimator(uint32_t initial_window) : bdp_(initial_window) {}

  // DATA payload arrived. Returns true when a BDP ping should be sent now.
  bool OnData(size_t bytes, Clock::time_point now);
  // The BDP ping was acknowledged. Returns the new window to apply, or 0 to keep the current one.
  uint32_t OnPingAck(Clock::time_point now);

  [[nodiscard]] uint32_t window() const noexcept { return bdp_; }
  [[nodiscard]] bool ping_outstanding() const noexcept { return ping_outstanding_; }
  // How long after an acknowledged ping the next may be sent (0: at the next DATA).
  [[nodiscard]] Clock::duration ping_interval() const noexcept { return ping_interval_; }

 private:
  // Judges the sample of the cycle just ended: the new window, or 0.
  uint32_t Estimate();

  uint32_t bdp_;
  double sample_ = 0;
  double bandwidth_max_ = 0;
  double rtt_seconds_ = 0;
  int rtt_samples_ = 0;
  Clock::time_point ping_sent_{};
  Clock::time_point next_ping_{};  // no cycle starts before this
  Clock::duration ping_interval_{0};
  bool ping_outstanding_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_BDP_ESTIMATOR_H_
