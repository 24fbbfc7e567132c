// Server shutdown and client reconnection, rill ↔ rill: a graceful shutdown lets in-flight calls
// finish while new calls fail UNAVAILABLE; an immediate one cancels them; a channel reconnects to
// a server restarted on the same address.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/use_future.hpp>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/calls.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// UnaryCallAsync waits request.response_size() ms, then answers (WaitingHandler); EmptyCall
// answers at once.
class WaitingService final : public TestService::Service, public WaitingHandler {
 public:
  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response) override {
    return WaitThenAnswer(context, request, response);
  }

  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    return Status();
  }

  Awaitable<Status> StreamingInputCall(ServerContext&,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    return SumRequestPayloads(&reader, &response);
  }
};

// Starts an EmptyCall that completes into the returned future.
struct AsyncEmptyCall {
  ClientContext context;
  Empty request;
  Empty response;
  std::promise<Status> done;

  std::future<Status> Start(TestService::Stub& stub) {
    context.set_timeout(kMustComplete);
    stub.EmptyCall(context, request, &response,
                   [this](Status status) { done.set_value(std::move(status)); });
    return done.get_future();
  }
};

// Starts a client stream of one 100-byte message that completes into the returned future (OK
// only when the server saw the whole stream).
struct AsyncClientStream {
  ClientContext context;
  StreamingInputCallRequest request;
  StreamingInputCallResponse response;
  std::unique_ptr<ClientWriter<StreamingInputCallRequest>> writer;
  std::future<bool> wrote;

  std::future<Status> Start(TestService::Stub& stub) {
    context.set_timeout(kMustComplete);
    request.mutable_payload()->mutable_body()->assign(100, 'r');
    writer = stub.StreamingInputCall(context, &response);
    wrote = writer->Write(request, {}, asio::use_future);
    return writer->Finish(asio::use_future);
  }
};

// Options for a wait-for-ready channel that retries quickly.
ChannelOptions WaitForReadyOptions(ReactorPool* reactors = nullptr) {
  ChannelOptions options;
  options.reactors = reactors;
  options.wait_for_ready = true;
  options.initial_backoff = milliseconds(20);
  options.max_backoff = milliseconds(100);
  return options;
}

// Adds a failure unless `result` completes OK within kMustComplete.
void ExpectCompletesOk(std::future<Status>& result) {
  ASSERT_EQ(result.wait_for(kMustComplete), std::future_status::ready);
  const Status status = result.get();
  EXPECT_TRUE(status.ok()) << status;
}

class ShutdownTest : public ServiceTest<WaitingService> {
 protected:
  // A call dispatched on a connection whose server just sent GOAWAY (the client's reactor is
  // held so that the call goes out before the client reads it) is refused, never seen by the
  // server's application, and goes again on the restarted server; `start` starts it. The client
  // runs on `client_reactors`, which the caller declares before what `start` makes, so that
  // those go first.
  void ExpectRetriedTransparently(
      ReactorPool& client_reactors,
      const std::function<std::future<Status>(TestService::Stub&)>& start) {
    StartServer();
    auto channel = ConnectedChannel(WaitForReadyOptions(&client_reactors));
    TestService::Stub stub(channel);
    const TestServerSetup setup = SameAddress();
    std::promise<void> release;
    std::promise<void> held;
    asio::post(client_reactors.reactor(0), [&release, &held] {
      held.set_value();
      release.get_future().wait();
    });
    held.get_future().wait();
    server_->Stop(milliseconds(1000));
    std::future<Status> result = start(stub);
    release.set_value();
    server_ = TestServer::Start(GetParam(), setup);
    ASSERT_NE(server_, nullptr);
    ExpectCompletesOk(result);
  }

  // What restarts the server at the same address.
  TestServerSetup SameAddress() {
    TestServerSetup setup;
    setup.services.push_back(&service_);
    setup.port = server_->port();
    setup.unix_path = server_->unix_path();
    return setup;
  }
  // A channel on `reactors` with one call made over it (so it is connected).
  std::shared_ptr<Channel> ConnectedChannel(ChannelOptions options) {
    auto channel = server_->NewChannel(std::move(options));
    TestService::Stub stub(channel);
    EXPECT_TRUE(EmptyCall(stub).ok());
    return channel;
  }
};

TEST_P(ShutdownTest, GracefulShutdownLetsAnInFlightCallFinish) {
  StartServer();
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ASSERT_TRUE(EmptyCall(stub).ok());

  PendingCall call;
  call.Start(stub, 200);
  ASSERT_TRUE(service_.started.WaitForNotification());

  std::thread shutdown([this] { server_->server().Shutdown(std::chrono::seconds(20)); });
  // New calls on the same channel fail once the shutdown is under way. A call may still slip
  // in before the server's GOAWAY; the first failure must be UNAVAILABLE, and so must every
  // call after it.
  Status failed;
  for (int i = 0; i < 100000 && failed.ok(); ++i) failed = EmptyCall(stub);
  EXPECT_EQ(failed.code(), StatusCode::kUnavailable) << failed;
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);

  ASSERT_EQ(call.result.wait_for(kMustComplete), std::future_status::ready);
  const Status status = call.result.get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(call.response.username(), "finished");
  EXPECT_FALSE(service_.wait_aborted.load());
  EXPECT_FALSE(service_.saw_cancelled.load());
  shutdown.join();
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
}

// Starts a call whose handler would wait a minute and, once it runs, shuts the server down with
// `shut_down`: the call must end UNAVAILABLE or CANCELLED, and the handler must have seen the
// cancellation and finished before `shut_down` returned.
void ExpectShutdownCancelsASlowCall(TestService::Stub& stub, WaitingService& service,
                                    const std::function<void()>& shut_down) {
  PendingCall call;
  call.Start(stub, 60'000);
  ASSERT_TRUE(service.started.WaitForNotification());
  shut_down();
  ASSERT_EQ(call.result.wait_for(kMustComplete), std::future_status::ready);
  const Status status = call.result.get();
  EXPECT_THAT(status.code(), ::testing::AnyOf(StatusCode::kUnavailable, StatusCode::kCancelled))
      << status;
  // Shutdown returns once every handler finished.
  ASSERT_TRUE(service.finished.HasBeenNotified()) << "the shutdown returned before the handler";
  EXPECT_TRUE(service.wait_aborted.load());
  EXPECT_TRUE(service.saw_cancelled.load());
}

TEST_P(ShutdownTest, GraceRunsOutAndCancelsTheCall) {
  StartServer();
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ExpectShutdownCancelsASlowCall(stub, service_,
                                 [this] { server_->server().Shutdown(milliseconds(100)); });
}

TEST_P(ShutdownTest, ShutdownNowCancelsAnInFlightCall) {
  StartServer();
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ExpectShutdownCancelsASlowCall(stub, service_, [this] { server_->server().ShutdownNow(); });
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
}

TEST_P(ShutdownTest, ShutdownIsIdempotentAndWaitReturns) {
  StartServer();
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ASSERT_TRUE(EmptyCall(stub).ok());
  std::thread waiter([this] { server_->server().Wait(); });
  server_->server().Shutdown(milliseconds(1000));
  server_->server().Shutdown(milliseconds(1000));
  server_->server().ShutdownNow();
  waiter.join();
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
}

TEST_P(ShutdownTest, DestroyingTheServerWithAConnectedChannel) {
  StartServer();
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ASSERT_TRUE(EmptyCall(stub).ok());
  server_.reset();  // runs Shutdown() with the configured grace
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
}

TEST_P(ShutdownTest, ClientsThatLeaveAtOnceDoNotHoldUpShutdown) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  // Peers that connect and close before the server has written its SETTINGS: on a Unix socket
  // that first write fails at once (EPIPE), and nothing may be left waiting on the dead
  // connection (a keepalive timer armed after the close once held shutdown for two hours).
  StartServer();
  asio::io_context io;
  for (int i = 0; i < 50; ++i) {
    if (GetParam() == Transport::kTcp) {
      asio::ip::tcp::socket socket(io);
      socket.connect(
          {asio::ip::make_address("127.0.0.1"), static_cast<asio::ip::port_type>(server_->port())});
    } else {
      asio::local::stream_protocol::socket socket(io);
      socket.connect(asio::local::stream_protocol::endpoint(server_->unix_path()));
    }
  }
  // A channel still gets served after them.
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  EXPECT_TRUE(EmptyCall(stub).ok());
  channel.reset();
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(60), [&] { server_.reset(); }));
}

TEST_P(ShutdownTest, NoServerMeansUnavailable) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  const std::string target = GetParam() == Transport::kTcp
                                 ? [] {
                                     // A port that was free a moment ago.
                                     TestServerSetup setup;
                                     auto probe = TestServer::Start(Transport::kTcp, setup);
                                     return probe ? probe->target() : std::string();
                                   }()
                                 : "unix:" + NewUnixSocketPath();
  ASSERT_FALSE(target.empty());
  auto channel = Channel::Create(target);
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
  // Fail-fast calls during the backoff fail at once too.
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
}

TEST_P(ShutdownTest, ChannelReconnectsToARestartedServer) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  StartServer();
  ReactorPool client_reactors({.threads = 1, .cpus = {}});
  ChannelOptions options;
  options.reactors = &client_reactors;
  auto channel = ConnectedChannel(options);
  TestService::Stub stub(channel);

  const TestServerSetup setup = SameAddress();
  server_->Stop(milliseconds(1000));
  // The client has seen the connection go (GOAWAY and close) before the next call.
  DrainReactor(client_reactors.reactor(0));

  server_ = TestServer::Start(GetParam(), setup);
  ASSERT_NE(server_, nullptr);
  const Status status = EmptyCall(stub);
  EXPECT_TRUE(status.ok()) << status;
  channel.reset();
}

TEST_P(ShutdownTest, WaitForReadyCallRidesOutARestart) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  StartServer();
  ReactorPool client_reactors({.threads = 1, .cpus = {}});
  auto channel = ConnectedChannel(WaitForReadyOptions(&client_reactors));
  TestService::Stub stub(channel);

  const TestServerSetup setup = SameAddress();
  server_->Stop(milliseconds(1000));
  DrainReactor(client_reactors.reactor(0));  // the client saw the connection go

  AsyncEmptyCall call;
  std::future<Status> result = call.Start(stub);
  server_ = TestServer::Start(GetParam(), setup);
  ASSERT_NE(server_, nullptr);
  ExpectCompletesOk(result);
  channel.reset();
}

// A reserved address nobody listens on yet.
TestServerSetup ReservedAddress(Transport transport) {
  TestServerSetup setup;
  if (transport == Transport::kTcp) {
    auto probe = TestServer::Start(Transport::kTcp, setup);
    if (probe) setup.port = probe->port();
  } else {
    setup.unix_path = NewUnixSocketPath();
  }
  return setup;
}

std::string TargetOf(Transport transport, const TestServerSetup& setup) {
  return transport == Transport::kTcp ? "127.0.0.1:" + std::to_string(setup.port)
                                      : "unix:" + setup.unix_path;
}

TEST_P(ShutdownTest, WaitForReadyCallWaitsWhileNoServerListens) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  TestServerSetup setup = ReservedAddress(GetParam());
  auto channel = Channel::Create(TargetOf(GetParam(), setup), WaitForReadyOptions());
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  // It waits (until its deadline) instead of failing UNAVAILABLE.
  EXPECT_EQ(EmptyCall(stub, milliseconds(100)).code(), StatusCode::kDeadlineExceeded);
}

// A queued wait-for-ready call whose deadline passes must leave the channel's queue: its call
// object is reused by the next call.
TEST_P(ShutdownTest, ExpiredQueuedCallDoesNotDisturbTheNextCall) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "needs a socket address (in_process_test covers the in-process case)";
  }
  TestServerSetup setup = ReservedAddress(GetParam());
  setup.services.push_back(&service_);
  auto channel = Channel::Create(TargetOf(GetParam(), setup), WaitForReadyOptions());
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  EXPECT_EQ(EmptyCall(stub, milliseconds(100)).code(), StatusCode::kDeadlineExceeded);

  AsyncEmptyCall call;
  std::future<Status> result = call.Start(stub);
  server_ = TestServer::Start(GetParam(), setup);
  ASSERT_NE(server_, nullptr);
  ExpectCompletesOk(result);
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kOk);
}

// A wait-for-ready call started while the client has not yet noticed that the server went away
// lands on the dying connection. The server never saw the stream (its GOAWAY names a lower
// stream id), so the channel retries it transparently on a new connection.
// A call dispatched on a connection whose server just sent GOAWAY (the client's reactor is held
// so that the call goes out before the client reads it) is refused, never seen by the server's
// application, and goes again on the restarted server: `start` starts it.
TEST_P(ShutdownTest, CallOnADyingConnectionIsRetriedTransparently) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "an in-process channel cannot reach a restarted server";
  }
  ReactorPool client_reactors({.threads = 1, .cpus = {}});
  AsyncEmptyCall call;
  ExpectRetriedTransparently(client_reactors,
                             [&](TestService::Stub& stub) { return call.Start(stub); });
}

TEST_P(ShutdownTest, StreamOnADyingConnectionIsRetriedTransparently) {
  if (GetParam() == Transport::kInProcess) {
    GTEST_SKIP() << "an in-process channel cannot reach a restarted server";
  }
  ReactorPool client_reactors({.threads = 1, .cpus = {}});
  AsyncClientStream stream;  // destroyed before the reactors it runs on
  ExpectRetriedTransparently(client_reactors,
                             [&](TestService::Stub& stub) { return stream.Start(stub); });
  ASSERT_EQ(stream.wrote.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(stream.wrote.get());
  EXPECT_EQ(stream.response.aggregated_payload_size(), 100);
}

INSTANTIATE_TEST_SUITE_P(Transports, ShutdownTest, kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, ShutdownTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
