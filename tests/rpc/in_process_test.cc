// Server::InProcessChannel(): every kind of call through memory instead of a socket, with what
// a user of it relies on: metadata, status details, large messages, deadlines, cancellation,
// and the lifetime rules (a server shutting down under its in-process channels, a channel that
// outlives its server). The generic suites (unary, streaming, deadline_cancel, shutdown,
// user_code, request_buffers) also run over the in-process channel; this file holds what is
// specific to it and the whole list in one place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/calls.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;
using ::testing::AnyOf;
using ::testing::ElementsAre;

constexpr size_t kLarge = 4 * 1024 * 1024;  // a 4 MiB payload body
const std::string kDetails("\x08\x03\x12\x00\xff\x00", 6);

// UnaryCall echoes metadata ("x-echo-*"), answers response_size bytes, or response_status (with
// details from "x-details-bin"). CacheableUnaryCall is the WaitingHandler: it waits response_size
// ms on a timer first. The streaming methods follow the grpc.testing interop semantics.
class InProcessService final : public TestService::Service, public WaitingHandler {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    for (const auto& [key, value] : context.client_metadata()) {
      if (key.starts_with("x-echo-initial-")) context.AddInitialMetadata(key, value);
      if (key.starts_with("x-echo-trailing-")) context.AddTrailingMetadata(key, value);
    }
    {
      std::lock_guard lock(mu_);
      peer_seen_ = std::string(context.peer());
    }
    request_body_size.store(request.payload().body().size());
    if (request.has_response_status()) {
      std::string details;
      if (auto d = context.client_metadata().Get("x-details-bin")) details = std::string(*d);
      return Status(StatusCodeFromInt(request.response_status().code()),
                    request.response_status().message(), std::move(details));
    }
    response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(request.response_size()),
                                                       'r');
    return Status();
  }

  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    return WaitThenAnswer(context, request, response);
  }

  Status EmptyCall(ServerContext&, const Empty&, Empty&) override { return Status(); }

  Awaitable<Status> StreamingInputCall(ServerContext&,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    return SumRequestPayloads(&reader, &response);
  }

  Awaitable<Status> StreamingOutputCall(
      ServerContext&, const StreamingOutputCallRequest& request,
      ServerWriter<StreamingOutputCallResponse>& writer) override {
    return WriteRequestedResponses(&request, &writer, 'o');
  }

  Awaitable<Status> FullDuplexCall(ServerContext&, FullDuplexServerStream& stream) override {
    return AnswerEachRequest(&stream, 'd');
  }

  std::atomic<size_t> request_body_size{0};
  std::string peer_seen() {
    std::lock_guard lock(mu_);
    return peer_seen_;
  }

 private:
  std::mutex mu_;
  std::string peer_seen_;
};

class InProcessTest : public ServerTest<InProcessService> {
 protected:
  void SetUp() override {
    TestServerSetup setup;
    setup.reactor_count = 2;
    setup.options.max_receive_message_size = 2 * kLarge;
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kInProcess, setup));
    ChannelOptions options;
    options.max_receive_message_size = 2 * kLarge;
    ASSERT_NO_FATAL_FAILURE(Connect(options));
  }

  // Starts `call` on CacheableUnaryCall, whose handler waits `wait_ms`, and waits until that
  // handler runs.
  void StartCallThatWaits(PendingCall& call, int wait_ms) {
    call.StartCacheable(*stub_, wait_ms);
    ASSERT_TRUE(service_.started.WaitForNotification());
  }

  // The handler of a call that ended early saw it end (its wait aborted, the call cancelled),
  // and the channel still serves.
  void ExpectTheHandlerSawTheEnd() {
    ASSERT_TRUE(service_.finished.WaitForNotification());
    EXPECT_TRUE(service_.wait_aborted.load());
    EXPECT_TRUE(service_.saw_cancelled.load());
    EXPECT_TRUE(EmptyCall(*stub_).ok());
  }
};

TEST_F(InProcessTest, UnaryCallCarriesMetadataBothWays) {
  ClientContext context;
  context.AddMetadata("x-echo-initial-a", "alpha");
  context.AddMetadata("x-echo-trailing-bin", std::string("\x00\xff", 2));
  SimpleRequest request;
  request.set_response_size(1);
  request.mutable_payload()->set_body("q");
  SimpleResponse response;
  const Status status = stub_->UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.payload().body(), "r");
  EXPECT_THAT(ValuesOf(CopyEntries(context.initial_metadata()), "x-echo-initial-a"),
              ElementsAre("alpha"));
  EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-echo-trailing-bin"),
              ElementsAre(std::string("\x00\xff", 2)));
  EXPECT_EQ(std::string(context.peer()), "inprocess");
  EXPECT_EQ(service_.peer_seen(), "inprocess");
}

TEST_F(InProcessTest, ErrorStatusKeepsMessageAndDetails) {
  ClientContext context;
  context.AddMetadata("x-details-bin", kDetails);
  const SimpleRequest request = RequestForStatus(StatusCode::kFailedPrecondition, "not yet: 100%");
  SimpleResponse response;
  const Status status = stub_->UnaryCall(context, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "not yet: 100%");
  EXPECT_EQ(status.details(), kDetails);
  EXPECT_TRUE(EmptyCall(*stub_).ok());
}

TEST_F(InProcessTest, FourMebibyteMessagesBothWays) {
  for (int i = 0; i < 3; ++i) {
    ClientContext context;
    SimpleRequest request;
    request.mutable_payload()->mutable_body()->assign(kLarge, 'q');
    request.set_response_size(static_cast<int32_t>(kLarge));
    SimpleResponse response;
    const Status status = stub_->UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(service_.request_body_size.load(), kLarge);
    ASSERT_EQ(response.payload().body().size(), kLarge);
    EXPECT_EQ(response.payload().body().find_first_not_of('r'), std::string::npos);
  }
}

TEST_F(InProcessTest, ClientStreaming) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub_->StreamingInputCall(context, &response);
  ExpectClientStreamAggregates(*writer, response, {0, 1, 1023, 1024, 70 * 1024, 1 << 20, 5});
}

TEST_F(InProcessTest, ServerStreaming) {
  ExpectServerStreamOfSizes(*stub_, {0, 10, 1024, 1025, 300 * 1024, 7});
}

TEST_F(InProcessTest, BidiStreaming) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  for (int32_t size : {1, 2000, 100 * 1024, 0}) {
    StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(size);
    ASSERT_TRUE(stream->BlockingWrite(request));
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingRead(&response)) << size;
    EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(size));
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->BlockingRead(&response));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(InProcessTest, DeadlineExceededReachesTheHandler) {
  PendingCall call;
  call.context.set_timeout(milliseconds(200));
  call.StartCacheable(*stub_, 60'000);
  EXPECT_EQ(call.Get().code(), StatusCode::kDeadlineExceeded);
  ExpectTheHandlerSawTheEnd();
}

TEST_F(InProcessTest, CancelReachesTheHandler) {
  PendingCall call;
  ASSERT_NO_FATAL_FAILURE(StartCallThatWaits(call, 60'000));
  std::thread canceller([&call] { call.context.TryCancel(); });
  canceller.join();
  EXPECT_EQ(call.Get().code(), StatusCode::kCancelled);
  ExpectTheHandlerSawTheEnd();
}

TEST_F(InProcessTest, DestroyingTheChannelCancelsItsCalls) {
  PendingCall call;
  ASSERT_NO_FATAL_FAILURE(StartCallThatWaits(call, 60'000));
  stub_.reset();
  channel_.reset();
  EXPECT_EQ(call.Get().code(), StatusCode::kCancelled);
  ASSERT_TRUE(service_.finished.WaitForNotification());
  EXPECT_TRUE(service_.saw_cancelled.load());
}

TEST_F(InProcessTest, GracefulShutdownFinishesRunningCallsAndRefusesNewOnes) {
  PendingCall call;
  ASSERT_NO_FATAL_FAILURE(StartCallThatWaits(call, 300));
  std::thread shutdown([this] { server_->server().Shutdown(std::chrono::seconds(20)); });
  Status failed;
  for (int i = 0; i < 100000 && failed.ok(); ++i) failed = EmptyCall(*stub_);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed;
  const Status status = call.Get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(call.response.username(), "finished");
  EXPECT_FALSE(service_.saw_cancelled.load());
  shutdown.join();
  EXPECT_EQ(EmptyCall(*stub_).code(), StatusCode::kUnavailable);
}

TEST_F(InProcessTest, ShutdownNowCancelsRunningCalls) {
  PendingCall call;
  ASSERT_NO_FATAL_FAILURE(StartCallThatWaits(call, 60'000));
  server_->server().ShutdownNow();
  EXPECT_THAT(call.Get().code(), AnyOf(StatusCode::kUnavailable, StatusCode::kCancelled));
  ASSERT_TRUE(service_.finished.HasBeenNotified()) << "the shutdown returned before the handler";
  EXPECT_TRUE(service_.saw_cancelled.load());
}

TEST_F(InProcessTest, ChannelOutlivesItsServer) {
  ASSERT_TRUE(EmptyCall(*stub_).ok());
  // A second channel that never connected, and one that waits for ready.
  auto unconnected = server_->NewChannel();
  ChannelOptions wait_options;
  wait_options.wait_for_ready = true;
  wait_options.initial_backoff = milliseconds(20);
  wait_options.max_backoff = milliseconds(100);
  auto waiting = server_->NewChannel(wait_options);
  server_.reset();  // shuts down and destroys the server

  EXPECT_EQ(EmptyCall(*stub_).code(), StatusCode::kUnavailable);
  EXPECT_EQ(EmptyCall(*stub_).code(), StatusCode::kUnavailable);  // during the backoff too
  TestService::Stub unconnected_stub(unconnected);
  const Status status = EmptyCall(unconnected_stub);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("shut down"));
  TestService::Stub waiting_stub(waiting);
  EXPECT_EQ(EmptyCall(waiting_stub, milliseconds(200)).code(), StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(waiting->WaitForConnected(Channel::Clock::now() + milliseconds(50)));
}

TEST_F(InProcessTest, ChannelOnTheServersReactors) {
  ReactorPool reactors({.threads = 1, .cpus = {}});
  TestServerSetup setup;
  setup.reactors = &reactors;
  InProcessService service;
  setup.services.push_back(&service);
  auto server = TestServer::Start(Transport::kInProcess, setup);
  ASSERT_NE(server, nullptr);
  ChannelOptions options;
  options.reactors = &reactors;
  auto channel = server->NewChannel(options);
  TestService::Stub stub(channel);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  ClientContext context;
  SimpleRequest request;
  request.mutable_payload()->mutable_body()->assign(kLarge / 2, 'q');
  request.set_response_size(static_cast<int32_t>(kLarge / 2));
  SimpleResponse response;
  const Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.payload().body().size(), kLarge / 2);
  channel.reset();
  server.reset();
}

TEST_F(InProcessTest, ManyChannelsAndThreadsAtOnce) {
  constexpr int kThreads = 4;
  const int calls = kSanitized ? 50 : 300;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    // Half the threads share the fixture's channel, the others have one of their own.
    std::shared_ptr<Channel> channel = t % 2 == 0 ? channel_ : server_->NewChannel();
    threads.emplace_back([channel, calls, &failures] {
      TestService::Stub stub(channel);
      for (int i = 0; i < calls; ++i) {
        ClientContext context;
        SimpleRequest request;
        request.mutable_payload()->mutable_body()->assign(static_cast<size_t>(i * 37 % 5000), 'x');
        request.set_response_size(i % 3000);
        SimpleResponse response;
        const Status status = stub.UnaryCall(context, request, &response);
        if (!status.ok() || response.payload().body().size() != static_cast<size_t>(i % 3000)) {
          failures.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace rill::test
