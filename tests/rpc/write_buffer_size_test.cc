// ServerOptions::write_buffer_size and ChannelOptions::write_buffer_size: with small write
// batches on both sides (0: one HTTP/2 frame per write), unary and streaming calls still carry
// messages of 1 B, 20 KiB and 1 MiB intact, in order, on one stream and on several streams whose
// frames interleave on one connection.
//
// How many writes a connection makes is not observable through the API (and a reader cannot
// tell write boundaries on a stream socket); tests/http2/output_batch_test.cc and
// http2_session_test.cc (BatchLimitTest) check that each batch holds what its limit allows.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

constexpr size_t kMessageSizes[] = {1, 20 * 1024, 1024 * 1024};

// Bytes that differ from message to message and along each message, so a lost, repeated or
// reordered frame shows as a mismatch.
std::string Pattern(size_t size, int seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<char>((i * 131 + i / 251 + static_cast<size_t>(seed) * 77) & 0xff);
  }
  return bytes;
}

// Sends every payload body back as it came.
class EchoService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    *response.mutable_payload()->mutable_body() = request.payload().body();
    return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      StreamingOutputCallResponse response;
      *response.mutable_payload()->mutable_body() = request.payload().body();
      if (!co_await stream.Write(response)) co_return Status(StatusCode::kCancelled, "gone");
    }
    co_return Status();
  }
};

struct Param {
  Transport transport;
  size_t write_buffer_size;  // on both sides
};

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return TransportName(info.param.transport) + "_WriteBufferSize" +
         std::to_string(info.param.write_buffer_size);
}

class WriteBufferSizeTest : public ServerTest<EchoService, ::testing::TestWithParam<Param>> {
 protected:
  void SetUp() override {
    TestServerSetup setup;
    setup.options.write_buffer_size = GetParam().write_buffer_size;
    ASSERT_NO_FATAL_FAILURE(StartServer(GetParam().transport, setup));
    ChannelOptions options;
    options.write_buffer_size = GetParam().write_buffer_size;
    OpenChannel(options);
  }
};

TEST_P(WriteBufferSizeTest, UnaryCallsCarryEveryMessageIntact) {
  int seed = 0;
  for (size_t size : kMessageSizes) {
    ClientContext context;
    context.set_timeout(kMustComplete);  // a stalled connection fails instead of hanging
    SimpleRequest request;
    *request.mutable_payload()->mutable_body() = Pattern(size, ++seed);
    SimpleResponse response;
    const Status status = stub_->UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status << " for " << size << " bytes";
    EXPECT_TRUE(response.payload().body() == request.payload().body())
        << size << "-byte message came back changed";
  }
}

// One bidirectional stream echoing every size twice, in both orders; returns the first
// failure, or an empty string.
std::string EchoOverOneStream(TestService::Stub& stub, int seed) {
  ClientContext context;
  context.set_timeout(kMustComplete);
  auto stream = stub.FullDuplexCall(context);
  std::vector<size_t> sizes(std::begin(kMessageSizes), std::end(kMessageSizes));
  sizes.insert(sizes.end(), sizes.rbegin(), sizes.rend());
  for (size_t i = 0; i < sizes.size(); ++i) {
    StreamingOutputCallRequest request;
    *request.mutable_payload()->mutable_body() =
        Pattern(sizes[i], seed * 100 + static_cast<int>(i));
    if (!stream->BlockingWrite(request)) return "write " + std::to_string(i) + " failed";
    StreamingOutputCallResponse response;
    if (!stream->BlockingRead(&response)) return "read " + std::to_string(i) + " failed";
    if (response.payload().body() != request.payload().body()) {
      return "message " + std::to_string(i) + " (" + std::to_string(sizes[i]) +
             " bytes) came back changed";
    }
  }
  if (!stream->BlockingWritesDone()) return "half-close failed";
  StreamingOutputCallResponse extra;
  if (stream->BlockingRead(&extra)) return "an extra message arrived";
  const Status status = stream->BlockingFinish();
  if (!status.ok()) return "finished with " + status.ToString();
  return "";
}

TEST_P(WriteBufferSizeTest, StreamingCallCarriesEveryMessageIntact) {
  EXPECT_EQ(EchoOverOneStream(*stub_, 1), "");
}

// Frames of several streams share each connection's writes (one frame per write at size 0).
TEST_P(WriteBufferSizeTest, ConcurrentStreamsCarryEveryMessageIntact) {
  constexpr int kStreams = 4;
  std::vector<std::string> failures(kStreams);
  std::vector<std::thread> threads;
  for (int i = 0; i < kStreams; ++i) {
    threads.emplace_back([this, i, &failures] { failures[i] = EchoOverOneStream(*stub_, i + 2); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kStreams; ++i) EXPECT_EQ(failures[i], "") << "stream " << i;
}

INSTANTIATE_TEST_SUITE_P(Sizes, WriteBufferSizeTest,
                         ::testing::Values(Param{Transport::kTcp, 0}, Param{Transport::kTcp, 1},
                                           Param{Transport::kTcp, 100}, Param{Transport::kUnix, 0},
                                           Param{Transport::kUnix, 100}),
                         ParamName);

}  // namespace
}  // namespace rill::test
