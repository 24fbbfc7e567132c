// Retries per the service config (gRFC A6), rill ↔ rill on loopback: how many attempts the
// server sees, when the client stops (non-retryable codes, response headers, pushback,
// throttling, attempts), streams replayed from the messages they keep, and the config's other
// per-method settings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <charconv>
#include <map>
#include <mutex>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

int IntOf(std::optional<std::string_view> text, int fallback) {
  if (!text) return fallback;
  int value = fallback;
  std::from_chars(text->data(), text->data() + text->size(), value);
  return value;
}

// EmptyCall fails the first "x-fail" attempts of each "x-call-id" with status "x-code"
// (UNAVAILABLE by default), optionally after sending its response headers ("x-headers-first")
// or with a "grpc-retry-pushback-ms" trailer ("x-pushback"); later attempts succeed.
// UnaryCall waits response_size ms and answers.
class FlakyService final : public TestService::Service {
 public:
  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    const Metadata& md = context.client_metadata();
    const std::string id(md.Get("x-call-id").value_or(""));
    int attempt;
    {
      std::lock_guard lock(mu_);
      attempt = ++attempts_[id];
    }
    if (attempt > IntOf(md.Get("x-fail"), 0)) return Status();
    if (md.Get("x-headers-first")) context.SendInitialMetadata();
    if (auto pushback = md.Get("x-pushback")) {
      context.AddTrailingMetadata("grpc-retry-pushback-ms", *pushback);
    }
    return Status(static_cast<StatusCode>(IntOf(md.Get("x-code"), int(StatusCode::kUnavailable))),
                  "attempt " + std::to_string(attempt) + " failed");
  }

  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response) override {
    asio::steady_timer timer(context.io_context(), milliseconds(request.response_size()));
    co_await timer.async_wait(asio::use_awaitable);
    co_return Status();
  }

  // Reads the whole client stream, records how many payload bytes this attempt carried, then
  // fails like EmptyCall; "x-fail-early" fails before reading anything.
  Awaitable<Status> StreamingInputCall(ServerContext& context,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    const Metadata& md = context.client_metadata();
    const std::string id(md.Get("x-call-id").value_or(""));
    const int attempt = NextAttempt(id);
    const bool fail = attempt <= IntOf(md.Get("x-fail"), 0);
    if (fail && md.Get("x-fail-early")) {
      co_return Status(StatusCode::kUnavailable, "early failure");
    }
    StreamingInputCallRequest request;
    int32_t total = 0;
    while (co_await reader.Read(&request)) total += static_cast<int32_t>(request.payload().body().size());
    {
      std::lock_guard lock(mu_);
      received_[id].push_back(total);
    }
    if (fail) co_return Status(StatusCode::kUnavailable, "attempt failed");
    response.set_aggregated_payload_size(total);
    co_return Status();
  }

  // Sends its response headers, then fails the first "x-fail" attempts.
  Awaitable<Status> FullDuplexCall(ServerContext& context, FullDuplexServerStream& stream) override {
    const Metadata& md = context.client_metadata();
    const int attempt = NextAttempt(std::string(md.Get("x-call-id").value_or("")));
    context.SendInitialMetadata();
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
    }
    if (attempt <= IntOf(md.Get("x-fail"), 0)) co_return Status(StatusCode::kUnavailable, "no");
    co_return Status();
  }

  int attempts(const std::string& id) {
    std::lock_guard lock(mu_);
    return attempts_[id];
  }
  // The payload bytes each attempt of a client stream carried.
  std::vector<int32_t> received(const std::string& id) {
    std::lock_guard lock(mu_);
    return received_[id];
  }

 private:
  int NextAttempt(const std::string& id) {
    std::lock_guard lock(mu_);
    return ++attempts_[id];
  }

  std::mutex mu_;
  std::map<std::string, int> attempts_;
  std::map<std::string, std::vector<int32_t>> received_;
};

constexpr const char* kRetryConfig = R"({
  "methodConfig": [{
    "name": [{"service": "grpc.testing.TestService", "method": "EmptyCall"},
             {"service": "grpc.testing.TestService", "method": "StreamingInputCall"},
             {"service": "grpc.testing.TestService", "method": "FullDuplexCall"}],
    "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", 10]}
  }]})";

class RetryTest : public ServerTest<FlakyService> {
 protected:
  // The server, and `retry_` over a channel with kRetryConfig.
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
    retry_channel_ = ChannelWith(kRetryConfig);
    ASSERT_NE(retry_channel_, nullptr);
    retry_ = std::make_unique<TestService::Stub>(retry_channel_);
  }
  void TearDown() override {
    retry_.reset();
    retry_channel_.reset();
    ServerTest<FlakyService>::TearDown();
  }

  std::shared_ptr<Channel> ChannelWith(std::string config) {
    ChannelOptions options;
    options.service_config = std::move(config);
    return NewChannel(std::move(options));
  }

  // One EmptyCall with the given control metadata; `id` names it on the server.
  static Status Call(TestService::Stub& stub, const std::string& id,
                     std::vector<std::pair<std::string, std::string>> metadata = {}) {
    ClientContext context;
    context.set_timeout(kMustComplete);
    context.AddMetadata("x-call-id", id);
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    Empty request;
    Empty response;
    return stub.EmptyCall(context, request, &response);
  }

  // Calls and checks the status code and how many attempts the server saw.
  void ExpectCall(TestService::Stub& stub, const std::string& id,
                  std::vector<std::pair<std::string, std::string>> metadata, StatusCode code,
                  int attempts) {
    EXPECT_EQ(Call(stub, id, std::move(metadata)).code(), code) << id;
    EXPECT_EQ(service_.attempts(id), attempts) << id;
  }

  std::shared_ptr<Channel> retry_channel_;
  std::unique_ptr<TestService::Stub> retry_;
};

TEST_F(RetryTest, SucceedsAfterNFailuresWithExactlyNPlusOneAttempts) {
  TestService::Stub& stub = *retry_;
  for (int failures = 0; failures <= 3; ++failures) {
    const std::string id = "n" + std::to_string(failures);
    EXPECT_TRUE(Call(stub, id, {{"x-fail", std::to_string(failures)}}).ok()) << failures;
    EXPECT_EQ(service_.attempts(id), failures + 1);
  }
  // Status codes by number work as by name (10 is ABORTED).
  EXPECT_TRUE(Call(stub, "aborted", {{"x-fail", "2"}, {"x-code", "10"}}).ok());
  EXPECT_EQ(service_.attempts("aborted"), 3);
}

TEST_F(RetryTest, StopsAtMaxAttemptsWithTheLastStatus) {
  TestService::Stub& stub = *retry_;
  const Status status = Call(stub, "always", {{"x-fail", "100"}});
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "attempt 4 failed");
  EXPECT_EQ(service_.attempts("always"), 4);
}

TEST_F(RetryTest, OtherCodesAndOtherMethodsAreNotRetried) {
  ExpectCall(*retry_, "invalid", {{"x-fail", "1"}, {"x-code", "3"}},
             StatusCode::kInvalidArgument, 1);
  // Without a service config nothing is retried.
  auto plain = NewChannel();
  TestService::Stub plain_stub(plain);
  ExpectCall(plain_stub, "plain", {{"x-fail", "1"}}, StatusCode::kUnavailable, 1);
}

TEST_F(RetryTest, NeverRetriesOnceResponseHeadersArrived) {
  ExpectCall(*retry_, "headers", {{"x-fail", "1"}, {"x-headers-first", "1"}},
             StatusCode::kUnavailable, 1);
}

// A client stream keeps references to the messages it wrote until its response begins: a failed
// attempt is replayed whole on the next one, whether it failed after the half-close or while the
// client was still writing.
void WriteSizes(ClientWriter<StreamingInputCallRequest>& writer, const std::vector<int>& sizes) {
  for (int size : sizes) {
    StreamingInputCallRequest request;
    request.mutable_payload()->mutable_body()->assign(static_cast<size_t>(size), 's');
    ASSERT_TRUE(writer.BlockingWrite(request)) << size;
  }
}

TEST_F(RetryTest, ClientStreamsAreReplayedOnEachAttempt) {
  const std::vector<int> sizes = {1, 1000, 70 * 1024, 5};
  const int total = 1 + 1000 + 70 * 1024 + 5;
  for (const bool early : {false, true}) {
    const std::string id = early ? "cs-early" : "cs";
    ClientContext context;
    context.set_timeout(kMustComplete);
    context.AddMetadata("x-call-id", id);
    context.AddMetadata("x-fail", "2");
    if (early) context.AddMetadata("x-fail-early", "1");
    StreamingInputCallResponse response;
    auto writer = retry_->StreamingInputCall(context, &response);
    ASSERT_NO_FATAL_FAILURE(WriteSizes(*writer, sizes));
    const Status status = writer->BlockingFinish();
    ASSERT_TRUE(status.ok()) << id << ": " << status;
    EXPECT_EQ(response.aggregated_payload_size(), total) << id;
    EXPECT_EQ(service_.attempts(id), 3) << id;
    // Every attempt that read its stream saw all of it.
    for (int32_t seen : service_.received(id)) EXPECT_EQ(seen, total) << id;
    EXPECT_EQ(service_.received(id).size(), early ? 1u : 3u) << id;
  }
}

TEST_F(RetryTest, StreamsAreNotRetriedOnceResponseHeadersArrived) {
  ClientContext context;
  context.set_timeout(kMustComplete);
  context.AddMetadata("x-call-id", "bidi");
  context.AddMetadata("x-fail", "1");
  auto stream = retry_->FullDuplexCall(context);
  StreamingOutputCallRequest request;
  ASSERT_TRUE(stream->BlockingWrite(request));
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_EQ(stream->BlockingFinish().code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("bidi"), 1);
}

TEST_F(RetryTest, AStreamPastTheBufferLimitCommits) {
  // 300 KiB written before the server answers: more than a call may keep for retries (256 KiB).
  ClientContext context;
  context.set_timeout(kMustComplete);
  context.AddMetadata("x-call-id", "big");
  context.AddMetadata("x-fail", "1");
  StreamingInputCallResponse response;
  auto writer = retry_->StreamingInputCall(context, &response);
  ASSERT_NO_FATAL_FAILURE(WriteSizes(*writer, {100 * 1024, 100 * 1024, 100 * 1024}));
  EXPECT_EQ(writer->BlockingFinish().code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_.attempts("big"), 1);
}

TEST_F(RetryTest, ServerPushbackSetsTheDelayOrStopsRetries) {
  TestService::Stub& stub = *retry_;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(Call(stub, "pushback", {{"x-fail", "2"}, {"x-pushback", "150"}}).ok());
  // Two retries, each no sooner than the server asked.
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(300));
  EXPECT_EQ(service_.attempts("pushback"), 3);

  ExpectCall(stub, "stop", {{"x-fail", "2"}, {"x-pushback", "-1"}}, StatusCode::kUnavailable, 1);
}

TEST_F(RetryTest, ThrottlingStopsRetriesWhileCallsKeepFailing) {
  // Tokens start at 4; a failed attempt takes one, and retries need more than 2 left.
  auto channel = ChannelWith(R"({
    "methodConfig": [{
      "name": [{"service": "grpc.testing.TestService"}],
      "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
                      "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}],
    "retryThrottling": {"maxTokens": 4, "tokenRatio": 1}})");
  TestService::Stub stub(channel);
  ExpectCall(stub, "t1", {{"x-fail", "100"}}, StatusCode::kUnavailable, 2);  // 4 → 3 → 2
  ExpectCall(stub, "t2", {{"x-fail", "100"}}, StatusCode::kUnavailable, 1);  // 2 → 1
  // Successes give tokens back (1 each): 1 → 4, and retries resume.
  EXPECT_TRUE(Call(stub, "ok1").ok());
  EXPECT_TRUE(Call(stub, "ok2").ok());
  EXPECT_TRUE(Call(stub, "ok3").ok());
  ExpectCall(stub, "t3", {{"x-fail", "1"}}, StatusCode::kOk, 2);
}

TEST_F(RetryTest, MethodTimeoutComesFromTheConfig) {
  auto channel = ChannelWith(R"({
    "methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
                      "timeout": "0.1s"}]})");
  TestService::Stub stub(channel);
  ClientContext context;
  SimpleRequest request;
  request.set_response_size(5000);  // the handler waits 5 s
  SimpleResponse response;
  EXPECT_EQ(stub.UnaryCall(context, request, &response).code(), StatusCode::kDeadlineExceeded);
}

TEST_F(RetryTest, MalformedConfigFailsChannelCreation) {
  ChannelOptions options;
  options.service_config = R"({"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
                                                   "retryPolicy": {"maxAttempts": 1}}]})";
  const auto channel = Channel::Create(server_->target(), options);
  ASSERT_FALSE(channel.ok());
  EXPECT_EQ(channel.status().code(), StatusCode::kInvalidArgument);
  options.service_config = "{not json";
  EXPECT_EQ(Channel::Create(server_->target(), options).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rill::test
