// RetryThrottle: gRFC A6's per-channel token bucket, which stops retries and hedged attempts
// while a channel's calls keep failing.
//
// The bucket starts full, at max_tokens. An attempt that fails with a status the call's policy
// would retry (or a hedging policy counts as non-fatal) takes one token; a call that succeeds
// gives back token_ratio, never past max_tokens; the count never goes below zero. Retries and
// hedges are allowed only while more than max_tokens / 2 tokens are left.
//
//   RetryThrottle throttle(*config.retry_throttling());   // {max_tokens 10, token_ratio 0.1}
//   if (status.ok()) {
//     throttle.RecordSuccess();
//   } else if (retryable && throttle.RecordFailure()) {
//     ...schedule the next attempt...
//   }
//
// Counts are kept in thousandths of a token (token_ratio has three decimal places), so the
// arithmetic is exact.
//
// Thread safety: thread-safe; every call of a channel shares one, from any reactor. Lock-free.
#ifndef RILL_SRC_RPC_RETRY_THROTTLE_H_
#define RILL_SRC_RPC_RETRY_THROTTLE_H_

#include <atomic>
#include <cstdint>

#include "src/rpc/service_config.h"

namespace rill::internal {

class RetryThrottle {
 public:
  // `config` satisfies RetryThrottlingConfig's invariants (ServiceConfig::Parse() checked them).
  explicit RetryThrottle(const RetryThrottlingConfig& config);

  RetryThrottle(const RetryThrottle&) = delete;
  RetryThrottle& operator=(const RetryThrottle&) = delete;

  // One failed attempt: takes a token. Returns whether a retry (or hedge) may follow it, that is
  // RetryAllowed() after the token is taken.
  bool RecordFailure() noexcept;
  // One successful call: gives back token_ratio, capped at max_tokens.
  void RecordSuccess() noexcept;
  // True while more than max_tokens / 2 tokens are left.
  [[nodiscard]] bool RetryAllowed() const noexcept;

  // The current count, in tokens (for tests and channelz).
  [[nodiscard]] double tokens() const noexcept;

 private:
  static constexpr int64_t kScale = 1000;  // thousandths of a token

  const int64_t max_milli_;
  const int64_t ratio_milli_;
  std::atomic<int64_t> milli_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_RETRY_THROTTLE_H_
