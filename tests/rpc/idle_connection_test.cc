// An idle connection holds no call objects: about a second after its last call ended, a
// server connection destroys the call objects it kept for reuse (each one is ~4 KiB, which
// multiplied by 10,000 idle connections is 40 MiB). Calls on the connection afterwards work as
// before, large messages included, and a call still open is never touched.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "src/rpc/server_call.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using internal::ServerCall;
using std::chrono::milliseconds;
using std::chrono::seconds;

class EchoService final : public grpc::testing::TestService::Service {
 public:
  Status UnaryCall(ServerContext& /*context*/, const SimpleRequest& request,
                   SimpleResponse& response) override {
    response.mutable_payload()->set_body(request.payload().body());
    return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& /*context*/,
                                   FullDuplexServerStream& stream) override {
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      StreamingOutputCallResponse response;
      response.mutable_payload()->set_body(request.payload().body());
      if (!co_await stream.Write(response)) break;
    }
    co_return Status();
  }
};

class IdleConnectionTest : public ServerTest<EchoService, ::testing::TestWithParam<Transport>> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(GetParam()));
    ASSERT_NO_FATAL_FAILURE(Connect());
  }

  // Echoes a request body of `size` bytes in one unary call.
  void ExpectEcho(size_t size) {
    ClientContext context;
    SimpleRequest request;
    request.mutable_payload()->set_body(std::string(size, 'r'));
    SimpleResponse response;
    const Status status = stub_->UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(response.payload().body(), request.payload().body());
  }

  // The server's call objects are all gone (the channel's connection is idle).
  static bool WaitForNoCallObjects() {
    return WaitUntil([] { return ServerCall::LiveObjects() == 0; }, seconds(30));
  }
};

TEST_P(IdleConnectionTest, GivesItsCallObjectsBackAndServesCallsAfterwards) {
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(10));
  EXPECT_TRUE(WaitForNoCallObjects()) << ServerCall::LiveObjects() << " call objects kept";

  // The same connection serves small and large calls after it went idle, and goes idle again.
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(1));
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(kSanitized ? (1 << 20) : (3 << 20)));
  EXPECT_TRUE(WaitForNoCallObjects()) << ServerCall::LiveObjects() << " call objects kept";
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(100 << 10));
}

TEST_P(IdleConnectionTest, AnOpenCallKeepsWorkingWhileTheConnectionIsQuiet) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body("first");
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingWrite(request));
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_EQ(response.payload().body(), "first");

  // Quiet for longer than the trim delay, with the call open: its object must stay.
  std::this_thread::sleep_for(milliseconds(2500));
  EXPECT_GE(ServerCall::LiveObjects(), 1u);
  request.mutable_payload()->set_body(std::string(kSanitized ? (256 << 10) : (3 << 20), 's'));
  ASSERT_TRUE(stream->BlockingWrite(request));
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_EQ(response.payload().body(), request.payload().body());
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_FALSE(stream->BlockingRead(&response));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  stream.reset();

  // Once it ended, the connection is idle and gives the object back.
  EXPECT_TRUE(WaitForNoCallObjects()) << ServerCall::LiveObjects() << " call objects kept";
  ASSERT_NO_FATAL_FAILURE(ExpectEcho(1));
}

TEST_P(IdleConnectionTest, CallsInAQuickSeriesReuseOneObject) {
  // One call at a time: the connection keeps reusing a single call object (the trim only
  // destroys objects of a connection that stayed without calls).
  for (int i = 0; i < 50; ++i) ASSERT_NO_FATAL_FAILURE(ExpectEcho(100));
  EXPECT_LE(ServerCall::LiveObjects(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Transports, IdleConnectionTest,
                         ::testing::Values(Transport::kTcp, Transport::kInProcess),
                         TransportParamName);

}  // namespace
}  // namespace rill::test
