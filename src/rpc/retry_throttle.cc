#include "src/rpc/retry_throttle.h"

#include <algorithm>
#include <cmath>

#include "rill/detail/check.h"

namespace rill::internal {

RetryThrottle::RetryThrottle(const RetryThrottlingConfig& config)
    : max_milli_(int64_t{config.max_tokens} * kScale),
      ratio_milli_(std::llround(config.token_ratio * kScale)),
      milli_(max_milli_) {
  RILL_CHECK(config.max_tokens > 0);
  RILL_CHECK(ratio_milli_ > 0);
}

bool RetryThrottle::RecordFailure() noexcept {
  int64_t current = milli_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::max<int64_t>(current - kScale, 0);
  } while (!milli_.compare_exchange_weak(current, next, std::memory_order_relaxed));
  return next * 2 > max_milli_;
}

void RetryThrottle::RecordSuccess() noexcept {
  int64_t current = milli_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    next = std::min(current + ratio_milli_, max_milli_);
    if (next == current) return;  // full already
  } while (!milli_.compare_exchange_weak(current, next, std::memory_order_relaxed));
}

bool RetryThrottle::RetryAllowed() const noexcept {
  return milli_.load(std::memory_order_relaxed) * 2 > max_milli_;
}

double RetryThrottle::tokens() const noexcept {
  return static_cast<double>(milli_.load(std::memory_order_relaxed)) / kScale;
}

}  // namespace rill::internal
