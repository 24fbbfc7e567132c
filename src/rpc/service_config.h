// ServiceConfig: a channel's gRPC service config (the JSON form of
// grpc.service_config.ServiceConfig, gRFC A2; retry and hedging policies and retry throttling,
// gRFC A6), parsed once and validated, then looked up per call.
//
//   StatusOr<ServiceConfig> config = ServiceConfig::Parse(R"({
//     "methodConfig": [{
//       "name": [{"service": "echo.Echo"}],
//       "timeout": "2.5s",
//       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
//                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
//     }],
//     "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
//   })");
//   if (!config.ok()) return config.status();      // kInvalidArgument, with the reason
//   const MethodConfig* method = config->Find("/echo.Echo/Say");  // the entry above
//
// The JSON is read with protobuf's JSON support into the generated message (unknown fields are
// ignored, as gRFC A2 asks); only this header's plain structs leave service_config.cc, so the
// generated code stays out of every other translation unit.
//
// Thread safety: a ServiceConfig is immutable after Parse(); it may be read from any thread.
#ifndef RILL_SRC_RPC_SERVICE_CONFIG_H_
#define RILL_SRC_RPC_SERVICE_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rill/status.h"
#include "rill/status_or.h"

namespace rill::internal {

// Durations are whole milliseconds: a positive duration with a fraction of a millisecond is
// rounded up, so that one the specs require to be positive stays positive.

// gRFC A6 retry policy. Invariants (Parse() rejects a config that breaks one):
// 2 <= max_attempts <= 5, both backoffs > 0, backoff_multiplier > 0 and finite,
// retryable_status_codes non-empty.
struct RetryPolicy {
  int max_attempts = 0;  // the original attempt included; values above 5 are lowered to 5
  std::chrono::milliseconds initial_backoff{0};
  std::chrono::milliseconds max_backoff{0};
  double backoff_multiplier = 0;
  std::vector<StatusCode> retryable_status_codes;
};

// gRFC A6 hedging policy: 2 <= max_attempts <= 5 (capped like RetryPolicy's),
// hedging_delay >= 0 (0 sends every attempt at once), non_fatal_status_codes may be empty.
struct HedgingPolicy {
  int max_attempts = 0;
  std::chrono::milliseconds hedging_delay{0};
  std::vector<StatusCode> non_fatal_status_codes;
};

// The settings of one methodConfig entry; a field the entry does not set is empty.
struct MethodConfig {
  std::optional<std::chrono::milliseconds> timeout;  // >= 0
  std::optional<bool> wait_for_ready;
  std::optional<size_t> max_request_message_bytes;
  std::optional<size_t> max_response_message_bytes;
  // At most one of the two is set.
  std::optional<RetryPolicy> retry_policy;
  std::optional<HedgingPolicy> hedging_policy;
};

// gRFC A6 retry throttling: 0 < max_tokens <= 1000, token_ratio > 0 with at most three decimal
// places (more are rounded to the nearest thousandth, which must not be 0).
struct RetryThrottlingConfig {
  int max_tokens = 0;
  double token_ratio = 0;
};

class ServiceConfig {
 public:
  // Parses and validates `json`. Fails with kInvalidArgument and a message naming the offending
  // field when the text is not JSON, is not an object, has a field of the wrong type, or breaks
  // a rule of the specs: a name with a method but no service; one name in two entries; a retry
  // and a hedging policy in one entry; a missing or out-of-range retry, hedging or throttling
  // parameter; an unknown status code; a negative duration; a loadBalancingConfig that lists
  // only policies rill does not support. `more_policies` names the policies the channel knows
  // besides pick_first and round_robin (the user's, rill/load_balancing.h).
  static StatusOr<ServiceConfig> Parse(std::string_view json,
                                       std::span<const std::string> more_policies = {});

  ServiceConfig() = default;
  ServiceConfig(const ServiceConfig&) = default;
  ServiceConfig& operator=(const ServiceConfig&) = default;
  ServiceConfig(ServiceConfig&&) noexcept = default;
  ServiceConfig& operator=(ServiceConfig&&) noexcept = default;
  ~ServiceConfig() = default;

  // The entry for a call's ":path" ("/pkg.Service/Method"): the one naming that method, else
  // the one naming only its service, else the default entry (a name with neither); null when
  // none applies. A path not of that form gets the default entry. The pointer lives as long as
  // this ServiceConfig.
  [[nodiscard]] const MethodConfig* Find(std::string_view path) const;

  // "pick_first", "round_robin" or one of Parse's `more_policies`: the first policy in
  // loadBalancingConfig that the channel knows, else the deprecated loadBalancingPolicy
  // (lower-cased); empty when the config names none.
  [[nodiscard]] const std::string& load_balancing_policy() const noexcept {
    return load_balancing_policy_;
  }
  [[nodiscard]] const std::optional<RetryThrottlingConfig>& retry_throttling() const noexcept {
    return retry_throttling_;
  }
  // Every entry that has at least one name, in the order of the config.
  [[nodiscard]] const std::vector<MethodConfig>& method_configs() const noexcept {
    return method_configs_;
  }

 private:
  friend class ServiceConfigParser;

  // Transparent hashing, so that Find() looks a path's pieces up without building strings.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const noexcept {
      return std::hash<std::string_view>()(key);
    }
  };

  std::vector<MethodConfig> method_configs_;
  // "pkg.Service/Method" and "pkg.Service/" (a service's entry) -> index in method_configs_.
  std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> by_name_;
  std::optional<size_t> default_index_;
  std::string load_balancing_policy_;
  std::optional<RetryThrottlingConfig> retry_throttling_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_SERVICE_CONFIG_H_
