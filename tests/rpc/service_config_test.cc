// ServiceConfig::Parse and RetryThrottle: what a channel gets from a service config's JSON
// (gRFC A2, A6): every field of a full config, the lookup order of method entries, status codes
// and durations in their JSON forms, the load-balancing choice, each invalid case with its
// reason, and the token bucket's arithmetic, also under concurrent use.
#include "src/rpc/service_config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "src/rpc/retry_throttle.h"

namespace rill::internal {
namespace {

using std::chrono::milliseconds;

ServiceConfig ParseOk(std::string_view json) {
  StatusOr<ServiceConfig> config = ServiceConfig::Parse(json);
  EXPECT_TRUE(config.ok()) << config.status() << "\n" << json;
  return config.ok() ? std::move(config).value() : ServiceConfig();
}

TEST(ServiceConfigTest, FullConfigGivesEveryField) {
  ServiceConfig config = ParseOk(R"({
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [
      {
        "name": [{"service": "echo.Echo", "method": "Say"}, {"service": "echo.Other"}],
        "waitForReady": true,
        "timeout": "2.5s",
        "maxRequestMessageBytes": 1024,
        "maxResponseMessageBytes": "4194304",
        "retryPolicy": {
          "maxAttempts": 4,
          "initialBackoff": "0.1s",
          "maxBackoff": "1s",
          "backoffMultiplier": 2.5,
          "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]
        }
      },
      {
        "name": [{"service": "echo.Echo", "method": "Stream"}],
        "waitForReady": false,
        "hedgingPolicy": {
          "maxAttempts": 3,
          "hedgingDelay": "0.05s",
          "nonFatalStatusCodes": ["UNAVAILABLE", 13]
        }
      }
    ],
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
    "healthCheckConfig": {"serviceName": "echo.Echo"}
  })");
  EXPECT_EQ(config.load_balancing_policy(), "round_robin");
  ASSERT_TRUE(config.retry_throttling().has_value());
  EXPECT_EQ(config.retry_throttling()->max_tokens, 10);
  EXPECT_DOUBLE_EQ(config.retry_throttling()->token_ratio, 0.1);
  ASSERT_EQ(config.method_configs().size(), 2u);

  const MethodConfig* say = config.Find("/echo.Echo/Say");
  ASSERT_NE(say, nullptr);
  EXPECT_EQ(say->wait_for_ready, true);
  EXPECT_EQ(say->timeout, milliseconds(2500));
  EXPECT_EQ(say->max_request_message_bytes, 1024u);
  EXPECT_EQ(say->max_response_message_bytes, 4194304u);
  EXPECT_FALSE(say->hedging_policy.has_value());
  ASSERT_TRUE(say->retry_policy.has_value());
  const RetryPolicy& retry = *say->retry_policy;
  EXPECT_EQ(retry.max_attempts, 4);
  EXPECT_EQ(retry.initial_backoff, milliseconds(100));
  EXPECT_EQ(retry.max_backoff, milliseconds(1000));
  EXPECT_DOUBLE_EQ(retry.backoff_multiplier, 2.5);
  EXPECT_EQ(retry.retryable_status_codes,
            (std::vector<StatusCode>{StatusCode::kUnavailable, StatusCode::kResourceExhausted}));
  // The entry's second name: the whole service.
  EXPECT_EQ(config.Find("/echo.Other/Anything"), say);

  const MethodConfig* stream = config.Find("/echo.Echo/Stream");
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->wait_for_ready, false);
  EXPECT_FALSE(stream->timeout.has_value());
  EXPECT_FALSE(stream->max_request_message_bytes.has_value());
  EXPECT_FALSE(stream->retry_policy.has_value());
  ASSERT_TRUE(stream->hedging_policy.has_value());
  EXPECT_EQ(stream->hedging_policy->max_attempts, 3);
  EXPECT_EQ(stream->hedging_policy->hedging_delay, milliseconds(50));
  EXPECT_EQ(stream->hedging_policy->non_fatal_status_codes,
            (std::vector<StatusCode>{StatusCode::kUnavailable, StatusCode::kInternal}));

  // No entry names this service, and there is no default.
  EXPECT_EQ(config.Find("/echo.Echo2/Say"), nullptr);
}

TEST(ServiceConfigTest, LookupPrefersMethodThenServiceThenDefault) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [
    {"name": [{}], "timeout": "1s"},
    {"name": [{"service": "pkg.S"}], "timeout": "2s"},
    {"name": [{"service": "pkg.S", "method": "M"}], "timeout": "3s"}
  ]})");
  auto timeout_of = [&](std::string_view path) {
    const MethodConfig* method = config.Find(path);
    return method != nullptr && method->timeout ? method->timeout->count() : -1;
  };
  EXPECT_EQ(timeout_of("/pkg.S/M"), 3000);
  EXPECT_EQ(timeout_of("/pkg.S/Other"), 2000);
  EXPECT_EQ(timeout_of("/pkg.T/M"), 1000);
  // A method of the same name in another service, a service whose name extends this one.
  EXPECT_EQ(timeout_of("/pkg.Sx/M"), 1000);
  EXPECT_EQ(timeout_of("/pkg/S/M"), 1000);
  // Not a :path of the form /service/method: only the default applies.
  EXPECT_EQ(timeout_of("pkg.S/M"), 1000);
  EXPECT_EQ(timeout_of("/pkg.S"), 1000);
  EXPECT_EQ(timeout_of(""), 1000);
}

TEST(ServiceConfigTest, EmptyAndNullMethodMeanTheServiceEntry) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [
    {"name": [{"service": "a.A", "method": ""}], "timeout": "1s"},
    {"name": [{"service": "b.B", "method": null}], "timeout": "2s"},
    {"name": [{"service": "", "method": null}], "timeout": "3s"}
  ]})");
  ASSERT_NE(config.Find("/a.A/X"), nullptr);
  EXPECT_EQ(config.Find("/a.A/X")->timeout, milliseconds(1000));
  EXPECT_EQ(config.Find("/b.B/X")->timeout, milliseconds(2000));
  EXPECT_EQ(config.Find("/c.C/X")->timeout, milliseconds(3000));
}

TEST(ServiceConfigTest, EntryWithoutNamesAppliesToNoCall) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [
    {"timeout": "1s"}, {"name": [], "timeout": "2s"}, {"name": [{"service": "a.A"}]}
  ]})");
  EXPECT_EQ(config.method_configs().size(), 1u);
  EXPECT_EQ(config.Find("/b.B/M"), nullptr);
  ASSERT_NE(config.Find("/a.A/M"), nullptr);
  EXPECT_FALSE(config.Find("/a.A/M")->timeout.has_value());
}

TEST(ServiceConfigTest, EmptyConfigHasNothing) {
  for (std::string_view json : {"{}", R"({"methodConfig": []})", R"({"methodConfig": null})"}) {
    ServiceConfig config = ParseOk(json);
    EXPECT_TRUE(config.method_configs().empty());
    EXPECT_EQ(config.Find("/a.A/M"), nullptr);
    EXPECT_EQ(config.load_balancing_policy(), "");
    EXPECT_FALSE(config.retry_throttling().has_value());
  }
}

TEST(ServiceConfigTest, StatusCodesByNameAndByNumber) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [{"name": [{}], "retryPolicy": {
    "maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 1,
    "retryableStatusCodes": ["CANCELLED", 14, "DEADLINE_EXCEEDED", 16, "OK", 0]}}]})");
  const MethodConfig* method = config.Find("/a.A/M");
  ASSERT_NE(method, nullptr);
  ASSERT_TRUE(method->retry_policy.has_value());
  EXPECT_EQ(method->retry_policy->retryable_status_codes,
            (std::vector<StatusCode>{StatusCode::kCancelled, StatusCode::kUnavailable,
                                     StatusCode::kDeadlineExceeded, StatusCode::kUnauthenticated,
                                     StatusCode::kOk, StatusCode::kOk}));
}

TEST(ServiceConfigTest, ProtoFieldNamesAreAcceptedToo) {
  ServiceConfig config = ParseOk(R"({"method_config": [{"name": [{"service": "a.A"}],
    "wait_for_ready": true, "retry_policy": {"max_attempts": 3, "initial_backoff": "1s",
    "max_backoff": "2s", "backoff_multiplier": 2, "retryable_status_codes": ["ABORTED"]}}],
    "retry_throttling": {"max_tokens": 5, "token_ratio": 1}})");
  const MethodConfig* method = config.Find("/a.A/M");
  ASSERT_NE(method, nullptr);
  EXPECT_EQ(method->wait_for_ready, true);
  ASSERT_TRUE(method->retry_policy.has_value());
  EXPECT_EQ(method->retry_policy->retryable_status_codes,
            std::vector<StatusCode>{StatusCode::kAborted});
  ASSERT_TRUE(config.retry_throttling().has_value());
  EXPECT_EQ(config.retry_throttling()->max_tokens, 5);
}

TEST(ServiceConfigTest, DurationsInTheirJsonForm) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [
    {"name": [{"service": "a.A"}], "timeout": "0.5s"},
    {"name": [{"service": "b.B"}], "timeout": "1.000340s"},
    {"name": [{"service": "c.C"}], "timeout": "0s"},
    {"name": [{"service": "d.D"}], "timeout": "3600s"},
    {"name": [{"service": "e.E"}], "retryPolicy": {"maxAttempts": 2,
       "initialBackoff": "0.000000001s", "maxBackoff": "0.25s", "backoffMultiplier": 1.5,
       "retryableStatusCodes": ["UNAVAILABLE"]}},
    {"name": [{"service": "f.F"}], "hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "0s"}},
    {"name": [{"service": "g.G"}], "hedgingPolicy": {"maxAttempts": 2}}
  ]})");
  EXPECT_EQ(config.Find("/a.A/M")->timeout, milliseconds(500));
  // Fractions of a millisecond round up.
  EXPECT_EQ(config.Find("/b.B/M")->timeout, milliseconds(1001));
  EXPECT_EQ(config.Find("/c.C/M")->timeout, milliseconds(0));
  EXPECT_EQ(config.Find("/d.D/M")->timeout, milliseconds(3'600'000));
  const RetryPolicy& retry = *config.Find("/e.E/M")->retry_policy;
  EXPECT_EQ(retry.initial_backoff, milliseconds(1));  // positive stays positive
  EXPECT_EQ(retry.max_backoff, milliseconds(250));
  EXPECT_EQ(config.Find("/f.F/M")->hedging_policy->hedging_delay, milliseconds(0));
  EXPECT_EQ(config.Find("/g.G/M")->hedging_policy->hedging_delay, milliseconds(0));
  EXPECT_TRUE(config.Find("/g.G/M")->hedging_policy->non_fatal_status_codes.empty());
}

TEST(ServiceConfigTest, MaxAttemptsAboveFiveAreLoweredToFive) {
  ServiceConfig config = ParseOk(R"({"methodConfig": [
    {"name": [{"service": "a.A"}], "retryPolicy": {"maxAttempts": 100, "initialBackoff": "1s",
     "maxBackoff": "1s", "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}},
    {"name": [{"service": "b.B"}], "hedgingPolicy": {"maxAttempts": 6}},
    {"name": [{"service": "c.C"}], "hedgingPolicy": {"maxAttempts": 5}}
  ]})");
  EXPECT_EQ(config.Find("/a.A/M")->retry_policy->max_attempts, 5);
  EXPECT_EQ(config.Find("/b.B/M")->hedging_policy->max_attempts, 5);
  EXPECT_EQ(config.Find("/c.C/M")->hedging_policy->max_attempts, 5);
}

TEST(ServiceConfigTest, UnknownFieldsAreIgnored) {
  ServiceConfig config = ParseOk(R"({"futureField": {"x": [1, 2]}, "methodConfig": [
    {"name": [{"service": "a.A", "extra": 1}], "timeout": "1s", "futureMethodField": true}]})");
  ASSERT_NE(config.Find("/a.A/M"), nullptr);
  EXPECT_EQ(config.Find("/a.A/M")->timeout, milliseconds(1000));
}

// Nesting that protobuf's parser takes (in a field the config does not know) is fine, and a
// bracket inside a string does not count toward the bound.
TEST(ServiceConfigTest, NestingWithinTheBoundIsAccepted) {
  ParseOk(R"({"x": )" + std::string(30, '[') + std::string(30, ']') + "}");
  ParseOk(R"({"x": ")" + std::string(1000, '[') + R"(\"", "methodConfig": []})");
}

TEST(ServiceConfigTest, LoadBalancingChoice) {
  struct Case {
    const char* json;
    const char* policy;
  };
  const Case cases[] = {
      {R"({})", ""},
      {R"({"loadBalancingConfig": [{"pick_first": {}}]})", "pick_first"},
      // The first supported policy wins; unsupported and unknown ones before it are passed over.
      {R"({"loadBalancingConfig": [{"grpclb": {}}, {"some_future_policy": {"a": 1}},
                                   {"round_robin": {}}, {"pick_first": {}}]})",
       "round_robin"},
      {R"({"loadBalancingConfig": [{"weighted_round_robin": {}}, {"pick_first": {}}]})",
       "pick_first"},
      // The deprecated field, lower-cased.
      {R"({"loadBalancingPolicy": "round_robin"})", "round_robin"},
      {R"({"loadBalancingPolicy": "ROUND_ROBIN"})", "round_robin"},
      {R"({"loadBalancingPolicy": "Pick_First"})", "pick_first"},
      {R"({"loadBalancingPolicy": ""})", ""},
      {R"({"loadBalancingPolicy": 1})", "round_robin"},
      {R"({"loadBalancingPolicy": 0})", ""},
      // loadBalancingConfig, when present, overrides it.
      {R"({"loadBalancingPolicy": "round_robin", "loadBalancingConfig": [{"pick_first": {}}]})",
       "pick_first"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_EQ(ParseOk(c.json).load_balancing_policy(), c.policy);
  }
}

// The channel's own policies (rill/load_balancing.h) are chosen by name, from either field;
// the first one the channel knows wins.
TEST(ServiceConfigTest, PoliciesOfTheChannelsOwnAreKnownByName) {
  const std::vector<std::string> own = {"my_policy", "other"};
  auto parse = [&](std::string_view json) {
    StatusOr<ServiceConfig> config = ServiceConfig::Parse(json, own);
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? config->load_balancing_policy() : std::string("(failed)");
  };
  EXPECT_EQ(parse(R"({"loadBalancingConfig": [{"grpclb": {}}, {"my_policy": {"k": 1}}]})"),
            "my_policy");
  EXPECT_EQ(parse(R"({"loadBalancingConfig": [{"other": {}}, {"round_robin": {}}]})"), "other");
  EXPECT_EQ(parse(R"({"loadBalancingConfig": [{"round_robin": {}}, {"other": {}}]})"),
            "round_robin");
  EXPECT_EQ(parse(R"({"loadBalancingPolicy": "my_policy"})"), "my_policy");
  // Without them the same names are refused.
  EXPECT_FALSE(ServiceConfig::Parse(R"({"loadBalancingConfig": [{"my_policy": {}}]})").ok());
  EXPECT_FALSE(ServiceConfig::Parse(R"({"loadBalancingPolicy": "my_policy"})").ok());
}

TEST(ServiceConfigTest, RetryThrottlingKeepsThreeDecimals) {
  ServiceConfig config =
      ParseOk(R"({"retryThrottling": {"maxTokens": 1000, "tokenRatio": 0.1234}})");
  ASSERT_TRUE(config.retry_throttling().has_value());
  EXPECT_EQ(config.retry_throttling()->max_tokens, 1000);
  EXPECT_DOUBLE_EQ(config.retry_throttling()->token_ratio, 0.123);
  config = ParseOk(R"({"retryThrottling": {"maxTokens": 1, "tokenRatio": 0.7}})");
  EXPECT_DOUBLE_EQ(config.retry_throttling()->token_ratio, 0.7);
}

// Every invalid case: kInvalidArgument, and the reason names what is wrong.
struct InvalidCase {
  const char* what;
  std::string json;
  const char* reason;  // a part of the message
};

std::string Retry(std::string_view fields) {
  return R"({"methodConfig": [{"name": [{"service": "a.A"}], "retryPolicy": {)" +
         std::string(fields) + "}}]}";
}
constexpr const char* kGoodBackoff =
    R"("initialBackoff": "1s", "maxBackoff": "2s", "backoffMultiplier": 2)";

std::vector<InvalidCase> InvalidCases() {
  const std::string backoff = kGoodBackoff;
  const std::string codes = R"("retryableStatusCodes": ["UNAVAILABLE"])";
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  std::string deep_object;
  for (int i = 0; i < 20000; ++i) deep_object += R"({"a":)";
  deep_object += "1" + std::string(20000, '}');
  auto nested_objects = [](int depth) {
    std::string json;
    for (int i = 0; i < depth; ++i) json += R"({"a":)";
    return json + "1" + std::string(depth, '}');
  };
  return {
      {"empty text", "", "not JSON"},
      {"truncated object", "{", "not JSON"},
      {"trailing garbage", "{} x", "not JSON"},
      {"array", "[]", "not a JSON object"},
      {"null", "null", "not a JSON object"},
      {"number", "42", "not a JSON object"},
      {"deeply nested array", deep, "nests arrays and objects deeper than 64 levels"},
      {"deeply nested object", deep_object, "deeper than 64 levels"},
      {"65 levels", R"({"x": )" + std::string(64, '[') + std::string(64, ']') + "}",
       "deeper than 64 levels"},
      // Within the bound, but deeper than protobuf nests messages.
      {"objects nested 40 deep", nested_objects(40), "invalid service config"},
      {"timeout of the wrong type", R"({"methodConfig": [{"timeout": 5}]})", "timeout"},
      {"waitForReady of the wrong type", R"({"methodConfig": [{"waitForReady": 1}]})",
       "wait_for_ready"},
      {"name not a list of objects", R"({"methodConfig": [{"name": "a.A"}]})", "name"},
      {"negative message size", R"({"methodConfig": [{"maxRequestMessageBytes": -1}]})",
       "max_request_message_bytes"},
      {"method without service",
       R"({"methodConfig": [{"name": [{"method": "M"}]}]})", "has a method but no service"},
      {"same name in two entries",
       R"({"methodConfig": [{"name": [{"service": "a.A", "method": "M"}]},
                            {"name": [{"service": "a.A", "method": "M"}]}]})",
       "methodConfig[1].name[0] (\"a.A/M\") names a method or service named before"},
      {"same service in two entries",
       R"({"methodConfig": [{"name": [{"service": "a.A"}]},
                            {"name": [{"service": "a.A", "method": ""}]}]})",
       "named before"},
      {"same name twice in one entry",
       R"({"methodConfig": [{"name": [{"service": "a.A"}, {"service": "a.A"}]}]})",
       "named before"},
      {"two default entries",
       R"({"methodConfig": [{"name": [{}]}, {"name": [{"service": ""}]}]})",
       "second default entry"},
      {"retry and hedging together",
       R"({"methodConfig": [{"name": [{}], "retryPolicy": {}, "hedgingPolicy": {}}]})",
       "already set"},
      {"duration without unit", R"({"methodConfig": [{"timeout": "1"}]})", "timeout"},
      {"duration not a number", R"({"methodConfig": [{"timeout": "abcs"}]})", "timeout"},
      // protobuf's JSON form of a Duration wants digits before the point (grpc-go takes ".5s").
      {"duration without an integer part", R"({"methodConfig": [{"timeout": ".5s"}]})",
       "timeout"},
      {"duration too precise", R"({"methodConfig": [{"timeout": "1.0000000001s"}]})", "timeout"},
      {"negative timeout", R"({"methodConfig": [{"name": [{}], "timeout": "-1s"}]})",
       "methodConfig[0].timeout is negative"},
      {"negative hedging delay",
       R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2,
          "hedgingDelay": "-0.5s"}}]})",
       "hedgingDelay is negative"},
      {"maxAttempts missing", Retry(backoff + "," + codes), "maxAttempts is required"},
      {"maxAttempts 1", Retry(R"("maxAttempts": 1,)" + backoff + "," + codes),
       "retryPolicy.maxAttempts is required and must be greater than 1"},
      {"initialBackoff missing",
       Retry(R"("maxAttempts": 2, "maxBackoff": "1s", "backoffMultiplier": 2,)" + codes),
       "initialBackoff is required and must be greater than zero"},
      {"initialBackoff zero",
       Retry(R"("maxAttempts": 2, "initialBackoff": "0s", "maxBackoff": "1s",
                "backoffMultiplier": 2,)" + codes),
       "initialBackoff"},
      {"maxBackoff negative",
       Retry(R"("maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "-1s",
                "backoffMultiplier": 2,)" + codes),
       "maxBackoff"},
      {"backoffMultiplier missing",
       Retry(R"("maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",)" + codes),
       "backoffMultiplier is required and must be greater than zero"},
      {"backoffMultiplier negative",
       Retry(R"("maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
                "backoffMultiplier": -1,)" + codes),
       "backoffMultiplier"},
      {"backoffMultiplier infinite",
       Retry(R"("maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
                "backoffMultiplier": "Infinity",)" + codes),
       "backoffMultiplier"},
      {"retryableStatusCodes missing", Retry(R"("maxAttempts": 2,)" + backoff),
       "retryableStatusCodes is required and must not be empty"},
      {"retryableStatusCodes empty",
       Retry(R"("maxAttempts": 2,)" + backoff + R"(, "retryableStatusCodes": [])"),
       "retryableStatusCodes is required"},
      {"unknown code name",
       Retry(R"("maxAttempts": 2,)" + backoff +
             R"(, "retryableStatusCodes": ["UNAVAILABLE", "FOO"])"),
       "retryableStatusCodes names an unknown status code \"FOO\""},
      {"code name in lower case",
       Retry(R"("maxAttempts": 2,)" + backoff + R"(, "retryableStatusCodes": ["unavailable"])"),
       "unknown status code \"unavailable\""},
      {"code number out of range",
       Retry(R"("maxAttempts": 2,)" + backoff + R"(, "retryableStatusCodes": [17])"),
       "unknown status code 17"},
      {"unknown code by the proto field name",
       Retry(R"("maxAttempts": 2,)" + backoff + R"(, "retryable_status_codes": ["FOO"])"),
       "unknown status code \"FOO\""},
      {"hedging maxAttempts 1",
       R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 1}}]})",
       "hedgingPolicy.maxAttempts is required and must be greater than 1"},
      {"hedging unknown code",
       R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 2,
          "nonFatalStatusCodes": ["NOPE"]}}]})",
       "nonFatalStatusCodes names an unknown status code \"NOPE\""},
      {"only unsupported policies",
       R"({"loadBalancingConfig": [{"grpclb": {}}, {"weighted_round_robin": {}}]})",
       "loadBalancingConfig lists no policy rill supports"},
      {"only unknown policies", R"({"loadBalancingConfig": [{"my_policy": {}}]})",
       "loadBalancingConfig lists no policy rill supports"},
      {"two policies in one entry",
       R"({"loadBalancingConfig": [{"pick_first": {}, "round_robin": {}}]})", "already set"},
      {"unsupported deprecated policy", R"({"loadBalancingPolicy": "grpclb"})",
       "loadBalancingPolicy names a policy rill does not support"},
      {"unknown deprecated policy number", R"({"loadBalancingPolicy": 7})",
       "loadBalancingPolicy names a policy rill does not support"},
      {"throttling maxTokens missing", R"({"retryThrottling": {"tokenRatio": 1}})",
       "retryThrottling.maxTokens"},
      {"throttling maxTokens above 1000",
       R"({"retryThrottling": {"maxTokens": 1001, "tokenRatio": 1}})",
       "retryThrottling.maxTokens is required and must be in (0, 1000]"},
      {"throttling maxTokens negative",
       R"({"retryThrottling": {"maxTokens": -1, "tokenRatio": 1}})", "max_tokens"},
      {"throttling tokenRatio missing", R"({"retryThrottling": {"maxTokens": 10}})",
       "retryThrottling.tokenRatio is required and must be greater than zero"},
      {"throttling tokenRatio negative",
       R"({"retryThrottling": {"maxTokens": 10, "tokenRatio": -0.5}})", "tokenRatio"},
      {"throttling tokenRatio below a thousandth",
       R"({"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.0004}})", "tokenRatio"},
  };
}

TEST(ServiceConfigTest, InvalidConfigsAreRejectedWithTheirReason) {
  for (const InvalidCase& c : InvalidCases()) {
    SCOPED_TRACE(c.what);
    StatusOr<ServiceConfig> config = ServiceConfig::Parse(c.json);
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(c.reason), std::string_view::npos)
        << config.status().message();
  }
}

// gRFC A6's example: maxTokens 10, tokenRatio 0.1. Retries stop once the count is at or below 5
// and resume once successes lift it above 5.
TEST(RetryThrottleTest, SpecExample) {
  RetryThrottle throttle(RetryThrottlingConfig{10, 0.1});
  EXPECT_TRUE(throttle.RetryAllowed());
  EXPECT_EQ(throttle.tokens(), 10);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(throttle.RecordFailure());
  EXPECT_EQ(throttle.tokens(), 6);
  EXPECT_FALSE(throttle.RecordFailure());  // 5 is not more than 10 / 2
  EXPECT_EQ(throttle.tokens(), 5);
  EXPECT_FALSE(throttle.RetryAllowed());
  throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 5.1);
  EXPECT_TRUE(throttle.RetryAllowed());
  EXPECT_FALSE(throttle.RecordFailure());
  EXPECT_EQ(throttle.tokens(), 4.1);
  // Ten successes of 0.1 are exactly one token.
  for (int i = 0; i < 10; ++i) throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 5.1);
  EXPECT_TRUE(throttle.RetryAllowed());
}

TEST(RetryThrottleTest, NeverBelowZeroNorAboveMax) {
  RetryThrottle throttle(RetryThrottlingConfig{10, 0.1});
  for (int i = 0; i < 25; ++i) {
    const bool allowed = throttle.RecordFailure();
    EXPECT_EQ(allowed, i < 4) << i;  // 9, 8, 7, 6 allow; 5 and below do not
  }
  EXPECT_EQ(throttle.tokens(), 0);
  throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 0.1);
  for (int i = 0; i < 1000; ++i) throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 10);
  EXPECT_TRUE(throttle.RetryAllowed());
}

TEST(RetryThrottleTest, OddMaxAndThreeDecimalRatio) {
  // Threshold 1.5: 2 allows, 1.5 does not.
  RetryThrottle throttle(RetryThrottlingConfig{3, 0.25});
  EXPECT_TRUE(throttle.RecordFailure());   // 2
  EXPECT_FALSE(throttle.RecordFailure());  // 1
  throttle.RecordSuccess();
  throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 1.5);
  EXPECT_FALSE(throttle.RetryAllowed());
  throttle.RecordSuccess();
  EXPECT_EQ(throttle.tokens(), 1.75);
  EXPECT_TRUE(throttle.RetryAllowed());

  // A parsed ratio of 0.001 adds one thousandth per success, exactly.
  RetryThrottle fine(RetryThrottlingConfig{1, 0.001});
  EXPECT_FALSE(fine.RecordFailure());
  for (int i = 0; i < 501; ++i) fine.RecordSuccess();
  EXPECT_EQ(fine.tokens(), 0.501);
  EXPECT_TRUE(fine.RetryAllowed());
}

// Calls on several reactors share one bucket: no update is lost.
TEST(RetryThrottleTest, ConcurrentUpdatesAreNotLost) {
  RetryThrottle throttle(RetryThrottlingConfig{1000, 0.5});
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(throttle.RecordFailure());  // 992: below the cap
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&throttle] {
      // Each thread fails before it succeeds, so the count stays within [192, 992]: neither the
      // floor nor the cap hides a lost update.
      for (int i = 0; i < kRounds; ++i) {
        (void)throttle.RecordFailure();
        throttle.RecordSuccess();
        (void)throttle.RetryAllowed();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(throttle.tokens(), 992 - kThreads * kRounds * 0.5);
  EXPECT_TRUE(throttle.RetryAllowed());
}

}  // namespace
}  // namespace rill::internal
