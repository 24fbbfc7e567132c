// User code — handlers, interceptors, completions — runs outside the HTTP/2 session's callbacks
// and inside an exception boundary: an exception fails that call (UNKNOWN on the server, an
// error status on the client), never the connection or the process.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/interceptor.h"
#include "rill/server_context.h"
#include "src/http2/http2_session.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

// Counts user code that found itself inside the HTTP/2 session's receive or send step.
std::atomic<int> g_inside_session{0};
std::atomic<int> g_user_code_runs{0};
void NoteUserCode() {
  g_user_code_runs.fetch_add(1);
  if (internal::InsideHttp2Session()) g_inside_session.fetch_add(1);
}

bool ShouldThrow(const ServerContext& context, std::string_view key) {
  return context.client_metadata().Contains(key);
}

class ThrowingService final : public TestService::Service {
 public:
  // Inline handler.
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    NoteUserCode();
    if (ShouldThrow(context, "x-throw-handler")) throw std::runtime_error("inline handler threw");
    response.mutable_payload()->set_body(request.payload().body());
    return Status();
  }

  // Coroutine handler.
  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    NoteUserCode();
    asio::steady_timer timer(context.io_context(), std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::use_awaitable);
    if (ShouldThrow(context, "x-throw-handler")) throw std::logic_error("coroutine handler threw");
    co_return Status();
  }

  // Streaming handler: echoes, and throws on a message whose body is "throw".
  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    NoteUserCode();
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      if (request.payload().body() == "throw") throw 42;  // not even a std::exception
      StreamingOutputCallResponse response;
      response.mutable_payload()->set_body(request.payload().body());
      if (!co_await stream.Write(response)) break;
    }
    co_return Status();
  }
};

class ThrowingServerInterceptor final : public ServerInterceptor {
 public:
  Status OnCallStart(ServerContext& context) override {
    NoteUserCode();
    if (ShouldThrow(context, "x-throw-start")) throw std::runtime_error("OnCallStart threw");
    return Status();
  }
  void OnCallEnd(ServerContext& context, Status& status) override {
    NoteUserCode();
    if (ShouldThrow(context, "x-throw-end")) throw std::runtime_error("OnCallEnd threw");
  }
};

class ThrowingClientInterceptor final : public ClientInterceptor {
 public:
  Status OnCallStart(ClientContext& context, std::string_view method) override {
    NoteUserCode();
    if (context.metadata().Contains("x-client-throw-start")) {
      throw std::runtime_error("client OnCallStart threw");
    }
    return Status();
  }
  void OnCallEnd(ClientContext& context, std::string_view method, Status& status) override {
    NoteUserCode();
    if (context.metadata().Contains("x-client-throw-end")) {
      throw std::runtime_error("client OnCallEnd threw");
    }
  }
};

class UserCodeTest : public ServiceTest<ThrowingService> {
 protected:
  void SetUp() override {
    g_inside_session = 0;
    g_user_code_runs = 0;
    TestServerSetup setup;
    setup.interceptors.push_back(std::make_shared<ThrowingServerInterceptor>());
    ASSERT_NO_FATAL_FAILURE(StartServer(setup));
    ChannelOptions options;
    options.interceptors.push_back(std::make_shared<ThrowingClientInterceptor>());
    OpenChannel(options);
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    if (server_ != nullptr) server_->Stop();
    EXPECT_GT(g_user_code_runs.load(), 0);
    EXPECT_EQ(g_inside_session.load(), 0)
        << "user code ran inside the HTTP/2 session's callbacks";
  }

  Status Unary(std::string_view metadata_key, bool coroutine = false) {
    ClientContext ctx;
    ctx.set_timeout(kMustComplete);
    if (!metadata_key.empty()) ctx.AddMetadata(metadata_key, "1");
    SimpleRequest request;
    request.mutable_payload()->set_body("hello");
    SimpleResponse response;
    return coroutine ? stub_->CacheableUnaryCall(ctx, request, &response)
                     : stub_->UnaryCall(ctx, request, &response);
  }

  // A call that works proves the server and the connection survived.
  void ExpectHealthy() {
    EXPECT_TRUE(Unary("").ok());
    EXPECT_TRUE(Unary("", /*coroutine=*/true).ok());
  }
};

TEST_P(UserCodeTest, InlineHandlerThrows) {
  const Status status = Unary("x-throw-handler");
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  ExpectHealthy();
}

TEST_P(UserCodeTest, CoroutineHandlerThrows) {
  const Status status = Unary("x-throw-handler", /*coroutine=*/true);
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  ExpectHealthy();
}

TEST_P(UserCodeTest, StreamingHandlerThrowsSomethingThatIsNotAnException) {
  ClientContext ctx;
  auto stream = stub_->FullDuplexCall(ctx);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  request.mutable_payload()->set_body("fine");
  ASSERT_TRUE(stream->BlockingWrite(request));
  ASSERT_TRUE(stream->BlockingRead(&response));
  request.mutable_payload()->set_body("throw");
  stream->BlockingWrite(request);
  EXPECT_FALSE(stream->BlockingRead(&response));
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  stream.reset();
  ExpectHealthy();
}

TEST_P(UserCodeTest, ServerInterceptorOnCallStartThrows) {
  const Status status = Unary("x-throw-start");
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  const Status coroutine = Unary("x-throw-start", /*coroutine=*/true);
  EXPECT_EQ(coroutine.code(), StatusCode::kUnknown) << coroutine;
  ExpectHealthy();
}

TEST_P(UserCodeTest, ServerInterceptorOnCallEndThrows) {
  const Status status = Unary("x-throw-end");
  EXPECT_EQ(status.code(), StatusCode::kUnknown) << status;
  ExpectHealthy();
}

TEST_P(UserCodeTest, ClientInterceptorThrows) {
  const Status start = Unary("x-client-throw-start");
  EXPECT_EQ(start.code(), StatusCode::kUnknown) << start;
  const Status end = Unary("x-client-throw-end");
  EXPECT_EQ(end.code(), StatusCode::kUnknown) << end;
  ExpectHealthy();
}

TEST_P(UserCodeTest, CompletionCallbackThrows) {
  ClientContext ctx;
  SimpleRequest request;
  SimpleResponse response;
  std::promise<void> ran;
  stub_->UnaryCall(ctx, request, &response, [&ran](Status status) {
    NoteUserCode();
    ran.set_value();
    throw std::runtime_error("completion threw");
  });
  ran.get_future().wait();
  ExpectHealthy();
}

INSTANTIATE_TEST_SUITE_P(Transports, UserCodeTest, kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, UserCodeTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
