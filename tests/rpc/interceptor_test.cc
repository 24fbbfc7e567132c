// Server and client interceptors, rill ↔ rill: chain order, metadata changes, rejection before
// the handler, and replacing the final status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/interceptor.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// What happened, in order, across interceptors and handlers.
class EventLog {
 public:
  void Add(std::string event) {
    std::lock_guard lock(mu_);
    events_.push_back(std::move(event));
  }
  std::vector<std::string> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  void Clear() {
    std::lock_guard lock(mu_);
    events_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
};

// UnaryCall: logs, records the client metadata, answers with request.response_status() when set.
// UnaryCall's async sibling CacheableUnaryCall waits request.response_size() ms.
// FullDuplexCall: echoes each message's payload until the client half-closes.
class LoggingService final : public TestService::Service {
 public:
  explicit LoggingService(EventLog& log) : log_(log) {}

  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    log_.Add("handler");
    calls.fetch_add(1);
    {
      std::lock_guard lock(mu_);
      metadata_ = CopyEntries(context.client_metadata());
    }
    if (request.has_response_status()) {
      return Status(StatusCodeFromInt(request.response_status().code()),
                    request.response_status().message());
    }
    return Status();
  }

  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    log_.Add("handler");
    calls.fetch_add(1);
    asio::steady_timer timer(context.io_context(),
                             std::chrono::milliseconds(request.response_size()));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    log_.Add("handler");
    calls.fetch_add(1);
    {
      std::lock_guard lock(mu_);
      metadata_ = CopyEntries(context.client_metadata());
    }
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      StreamingOutputCallResponse response;
      *response.mutable_payload() = request.payload();
      if (!co_await stream.Write(response)) break;
    }
    co_return Status();
  }

  MetadataEntries metadata() {
    std::lock_guard lock(mu_);
    return metadata_;
  }

  std::atomic<int> calls{0};

 private:
  EventLog& log_;
  std::mutex mu_;
  MetadataEntries metadata_;
};

// A configurable server interceptor that logs "start <name>" and "end <name> <code>".
class TestServerInterceptor final : public ServerInterceptor {
 public:
  TestServerInterceptor(std::string name, EventLog& log) : name_(std::move(name)), log_(log) {}

  Status OnCallStart(ServerContext& context) override {
    log_.Add("start " + name_);
    for (const auto& [key, value] : set_client_metadata) {
      context.mutable_client_metadata().Set(key, value);
    }
    for (const std::string& key : remove_client_metadata) {
      context.mutable_client_metadata().Remove(key);
    }
    for (const auto& [key, value] : add_initial) context.AddInitialMetadata(key, value);
    for (const auto& [key, value] : add_trailing_on_start) {
      context.AddTrailingMetadata(key, value);
    }
    return reject.has_value() ? *reject : Status();
  }

  void OnCallEnd(ServerContext& context, Status& status) override {
    log_.Add("end " + name_ + " " + std::string(StatusCodeName(status.code())));
    for (const auto& [key, value] : add_trailing_on_end) context.AddTrailingMetadata(key, value);
    if (replace_status.has_value()) status = *replace_status;
  }

  std::vector<std::pair<std::string, std::string>> set_client_metadata;
  std::vector<std::string> remove_client_metadata;
  std::vector<std::pair<std::string, std::string>> add_initial;
  std::vector<std::pair<std::string, std::string>> add_trailing_on_start;
  std::vector<std::pair<std::string, std::string>> add_trailing_on_end;
  std::optional<Status> reject;
  std::optional<Status> replace_status;

 private:
  std::string name_;
  EventLog& log_;
};

class TestClientInterceptor final : public ClientInterceptor {
 public:
  TestClientInterceptor(std::string name, EventLog& log) : name_(std::move(name)), log_(log) {}

  Status OnCallStart(ClientContext& context, std::string_view method) override {
    log_.Add("client start " + name_ + " " + std::string(method));
    for (const auto& [key, value] : add_metadata) context.AddMetadata(key, value);
    if (timeout.has_value()) context.set_timeout(*timeout);
    return reject.has_value() ? *reject : Status();
  }

  void OnCallEnd(ClientContext& context, std::string_view method, Status& status) override {
    log_.Add("client end " + name_ + " " + std::string(StatusCodeName(status.code())));
    if (replace_status.has_value()) status = *replace_status;
  }

  std::vector<std::pair<std::string, std::string>> add_metadata;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<Status> reject;
  std::optional<Status> replace_status;

 private:
  std::string name_;
  EventLog& log_;
};

class InterceptorTest : public ::testing::Test {
 protected:
  // Server interceptors a, b, c (in that order).
  void StartServer() {
    a_ = std::make_shared<TestServerInterceptor>("a", log_);
    b_ = std::make_shared<TestServerInterceptor>("b", log_);
    c_ = std::make_shared<TestServerInterceptor>("c", log_);
    TestServerSetup setup;
    setup.services.push_back(&service_);
    setup.interceptors = {a_, b_, c_};
    server_ = TestServer::Start(Transport::kTcp, setup);
    ASSERT_NE(server_, nullptr);
  }

  Status Call(TestService::Stub& stub, ClientContext& context, SimpleRequest request = {}) {
    SimpleResponse response;
    return stub.UnaryCall(context, request, &response);
  }

  // CacheableUnaryCall: LoggingService's coroutine handler, which answers after `wait_ms`.
  Status CallCoroutine(TestService::Stub& stub, ClientContext& context, int32_t wait_ms) {
    SimpleRequest request;
    request.set_response_size(wait_ms);
    SimpleResponse response;
    return stub.CacheableUnaryCall(context, request, &response);
  }

  // A channel to the server (with the client interceptors of the test, if any).
  virtual std::shared_ptr<Channel> NewChannel() { return server_->NewChannel(); }

  // A stub over a new channel (channel_) to the server.
  TestService::Stub& Connect() {
    channel_ = NewChannel();
    stub_ = std::make_unique<TestService::Stub>(channel_);
    return *stub_;
  }

  void TearDown() override {
    stub_.reset();
    channel_.reset();
    server_.reset();
  }

  EventLog log_;
  LoggingService service_{log_};
  std::shared_ptr<TestServerInterceptor> a_, b_, c_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(InterceptorTest, ServerChainRunsInOrderAroundTheHandler) {
  StartServer();
  TestService::Stub& stub = Connect();
  ClientContext context;
  ASSERT_TRUE(Call(stub, context).ok());
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "start c", "handler", "end c OK",
                                         "end b OK", "end a OK"));
}

TEST_F(InterceptorTest, ServerChainRunsAroundCoroutineHandlers) {
  StartServer();
  TestService::Stub& stub = Connect();
  ClientContext context;
  ASSERT_TRUE(CallCoroutine(stub, context, 5).ok());
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "start c", "handler", "end c OK",
                                         "end b OK", "end a OK"));
}

TEST_F(InterceptorTest, ServerChainRunsAroundStreams) {
  StartServer();
  TestService::Stub& stub = Connect();
  ClientContext context;
  auto stream = stub.FullDuplexCall(context);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("ping");
  ASSERT_TRUE(stream->BlockingWrite(request));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_EQ(response.payload().body(), "ping");
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_FALSE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingFinish().ok());
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "start c", "handler", "end c OK",
                                         "end b OK", "end a OK"));
}

TEST_F(InterceptorTest, ServerInterceptorChangesWhatTheHandlerSees) {
  StartServer();
  a_->set_client_metadata = {{"x-tenant", "rewritten"}};
  a_->remove_client_metadata = {"x-secret"};
  b_->set_client_metadata = {{"x-added", "by b"}};
  TestService::Stub& stub = Connect();
  ClientContext context;
  context.AddMetadata("x-tenant", "original");
  context.AddMetadata("x-secret", "hunter2");
  context.AddMetadata("x-kept", "yes");
  ASSERT_TRUE(Call(stub, context).ok());
  const MetadataEntries seen = service_.metadata();
  EXPECT_THAT(ValuesOf(seen, "x-tenant"), ElementsAre("rewritten"));
  EXPECT_THAT(ValuesOf(seen, "x-secret"), IsEmpty());
  EXPECT_THAT(ValuesOf(seen, "x-added"), ElementsAre("by b"));
  EXPECT_THAT(ValuesOf(seen, "x-kept"), ElementsAre("yes"));
}

TEST_F(InterceptorTest, ServerInterceptorAddsResponseMetadata) {
  StartServer();
  a_->add_initial = {{"x-initial-a", "1"}};
  b_->add_trailing_on_start = {{"x-trailing-b", "2"}};
  c_->add_trailing_on_end = {{"x-trailing-c", "3"}};
  TestService::Stub& stub = Connect();
  ClientContext context;
  ASSERT_TRUE(Call(stub, context).ok());
  const MetadataEntries initial = CopyEntries(context.initial_metadata());
  const MetadataEntries trailing = CopyEntries(context.trailing_metadata());
  EXPECT_THAT(ValuesOf(initial, "x-initial-a"), ElementsAre("1"));
  EXPECT_THAT(ValuesOf(trailing, "x-trailing-b"), ElementsAre("2"));
  EXPECT_THAT(ValuesOf(trailing, "x-trailing-c"), ElementsAre("3"));
}

TEST_F(InterceptorTest, RejectionSkipsTheHandlerAndLaterInterceptors) {
  StartServer();
  a_->add_trailing_on_start = {{"x-why", "policy"}};
  b_->reject = Status(StatusCode::kPermissionDenied, "not for you");
  TestService::Stub& stub = Connect();
  ClientContext context;
  const Status status = Call(stub, context);
  EXPECT_EQ(status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(status.message(), "not for you");
  EXPECT_EQ(service_.calls.load(), 0);
  // b's OnCallStart ran (and rejected), so its OnCallEnd runs too; c never started.
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "end b PERMISSION_DENIED",
                                         "end a PERMISSION_DENIED"));
  EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-why"), ElementsAre("policy"));
}

TEST_F(InterceptorTest, RejectionOfAStreamSkipsItsHandler) {
  StartServer();
  a_->reject = Status(StatusCode::kUnauthenticated, "log in first");
  TestService::Stub& stub = Connect();
  ClientContext context;
  context.set_timeout(kMustComplete);  // a handler that ran anyway fails, not hangs
  auto stream = stub.FullDuplexCall(context);
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->BlockingRead(&response));
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(status.message(), "log in first");
  EXPECT_EQ(service_.calls.load(), 0);
  EXPECT_THAT(log_.events(), ElementsAre("start a", "end a UNAUTHENTICATED"));
}

TEST_F(InterceptorTest, OnCallEndObservesAndReplacesTheStatus) {
  StartServer();
  a_->replace_status = Status(StatusCode::kUnavailable, "try again later");
  TestService::Stub& stub = Connect();
  ClientContext context;
  const SimpleRequest request = RequestForStatus(StatusCode::kInternal, "boom");
  const Status status = Call(stub, context, request);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "try again later");
  // Inner interceptors saw the handler's status; the outermost replaced it last.
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "start c", "handler",
                                         "end c INTERNAL", "end b INTERNAL", "end a INTERNAL"));
}

TEST_F(InterceptorTest, OnCallEndCanTurnAnErrorIntoSuccess) {
  StartServer();
  c_->replace_status = Status();
  TestService::Stub& stub = Connect();
  ClientContext context;
  const SimpleRequest request = RequestForStatus(StatusCode::kNotFound);
  const Status status = Call(stub, context, request);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(log_.events(), ElementsAre("start a", "start b", "start c", "handler",
                                         "end c NOT_FOUND", "end b OK", "end a OK"));
}

TEST_F(InterceptorTest, OnCallEndRunsForCancelledCalls) {
  StartServer();
  TestService::Stub& stub = Connect();
  // The connection is ready before the deadline starts running: the call reaches its handler.
  {
    ClientContext warm_up;
    ASSERT_TRUE(Call(stub, warm_up).ok());
    log_.Clear();
  }
  ClientContext context;
  context.set_timeout(std::chrono::milliseconds(300));
  EXPECT_EQ(CallCoroutine(stub, context, 60'000).code(), StatusCode::kDeadlineExceeded);
  // The server is shut down (which waits for handlers) before looking at the log.
  stub_.reset();
  channel_.reset();
  server_.reset();
  const std::vector<std::string> events = log_.events();
  ASSERT_EQ(events.size(), 7u) << ::testing::PrintToString(events);
  EXPECT_EQ(events[4].substr(0, 5), "end c");
  EXPECT_EQ(events[6].substr(0, 5), "end a");
}

class ClientInterceptorTest : public InterceptorTest {
 protected:
  std::shared_ptr<Channel> NewChannel() override {
    ChannelOptions options;
    options.interceptors = {x_, y_};
    return server_->NewChannel(options);
  }

  std::shared_ptr<TestClientInterceptor> x_ = std::make_shared<TestClientInterceptor>("x", log_);
  std::shared_ptr<TestClientInterceptor> y_ = std::make_shared<TestClientInterceptor>("y", log_);
};

TEST_F(ClientInterceptorTest, ClientChainRunsInOrderAroundTheCall) {
  StartServer();
  TestService::Stub& stub = Connect();
  ClientContext context;
  ASSERT_TRUE(Call(stub, context).ok());
  const std::string method = "/grpc.testing.TestService/UnaryCall";
  EXPECT_THAT(log_.events(),
              ElementsAre("client start x " + method, "client start y " + method, "start a",
                          "start b", "start c", "handler", "end c OK", "end b OK", "end a OK",
                          "client end y OK", "client end x OK"));
}

TEST_F(ClientInterceptorTest, ClientInterceptorAddsMetadataTheServerSees) {
  StartServer();
  x_->add_metadata = {{"x-from-x", "1"}, {"x-bin", std::string("\x00\x01", 2)}};
  y_->add_metadata = {{"x-from-y", "2"}};
  TestService::Stub& stub = Connect();
  ClientContext context;
  ASSERT_TRUE(Call(stub, context).ok());
  const MetadataEntries seen = service_.metadata();
  EXPECT_THAT(ValuesOf(seen, "x-from-x"), ElementsAre("1"));
  EXPECT_THAT(ValuesOf(seen, "x-bin"), ElementsAre(std::string("\x00\x01", 2)));
  EXPECT_THAT(ValuesOf(seen, "x-from-y"), ElementsAre("2"));
}

TEST_F(ClientInterceptorTest, ClientInterceptorSetsTheDeadline) {
  StartServer();
  y_->timeout = std::chrono::milliseconds(50);
  TestService::Stub& stub = Connect();
  ClientContext context;
  EXPECT_EQ(CallCoroutine(stub, context, 60'000).code(), StatusCode::kDeadlineExceeded);
}

TEST_F(ClientInterceptorTest, ClientRejectionSendsNothing) {
  StartServer();
  x_->reject = Status(StatusCode::kFailedPrecondition, "not configured");
  TestService::Stub& stub = Connect();
  ClientContext context;
  const Status status = Call(stub, context);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "not configured");
  EXPECT_EQ(service_.calls.load(), 0);
  const std::string method = "/grpc.testing.TestService/UnaryCall";
  EXPECT_THAT(log_.events(),
              ElementsAre("client start x " + method, "client end x FAILED_PRECONDITION"));
}

TEST_F(ClientInterceptorTest, ClientOnCallEndReplacesTheStatus) {
  StartServer();
  y_->replace_status = Status(StatusCode::kAborted, "replaced by y");
  TestService::Stub& stub = Connect();
  ClientContext context;
  const SimpleRequest request = RequestForStatus(StatusCode::kUnavailable);
  const Status status = Call(stub, context, request);
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_EQ(status.message(), "replaced by y");
  const std::vector<std::string> events = log_.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2], "client end y UNAVAILABLE");
  EXPECT_EQ(events[events.size() - 1], "client end x ABORTED");
}

TEST_F(ClientInterceptorTest, ClientChainRunsAroundStreams) {
  StartServer();
  x_->add_metadata = {{"x-stream", "yes"}};
  TestService::Stub& stub = Connect();
  ClientContext context;
  auto stream = stub.FullDuplexCall(context);
  ASSERT_TRUE(stream->BlockingWritesDone());
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingFinish().ok());
  EXPECT_THAT(ValuesOf(service_.metadata(), "x-stream"), ElementsAre("yes"));
  const std::vector<std::string> events = log_.events();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.front(), "client start x /grpc.testing.TestService/FullDuplexCall");
  EXPECT_EQ(events.back(), "client end x OK");
}

}  // namespace
}  // namespace rill::test
