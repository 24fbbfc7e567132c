// HTTP/2 conformance of rill's server, probed with raw frames written here from RFC 9113 (HTTP/2)
// and RFC 7541 (HPACK): stream states and identifiers, each frame type's rules, flow-control
// windows, CONTINUATION, HPACK, connection-specific and pseudo-header fields. Each test names
// the rule it checks. Requests that are not gRPC (GET /) get an HTTP answer with a short body
// and keep their stream half-closed until the client ends it, which is what lets a test reach
// each stream state.
//
// The flood tests send a million control frames on one connection: each ends in
// GOAWAY(ENHANCE_YOUR_CALM) with bounded memory, and a good call works right after.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "tests/http2/raw_frames.h"
#include "tests/http2/raw_h2_client.h"
#include "tests/testing/fixture.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using namespace h2;  // NOLINT(google-build-using-namespace): frame vocabulary

constexpr char kUnaryPath[] = "/grpc.testing.TestService/UnaryCall";
constexpr char kEmptyPath[] = "/grpc.testing.TestService/EmptyCall";

class Service final : public grpc::testing::TestService::Service {
 public:
  Status UnaryCall(ServerContext&, const SimpleRequest& request,
                   SimpleResponse& response) override {
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(request.response_size()), 'r');
    return Status();
  }
  Status EmptyCall(ServerContext&, const Empty&, Empty&) override { return Status(); }
};

size_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

class ConformanceTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(ServerOptions()); }
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
  }
  void Start(const ServerOptions& options) {
    if (server_ != nullptr) server_->Stop();
    TestServerSetup setup;
    setup.services.push_back(&service_);
    setup.options = options;
    server_ = TestServer::Start(Transport::kTcp, setup);
    ASSERT_NE(server_, nullptr);
  }
  std::unique_ptr<FrameConn> Connect(std::vector<Setting> settings = {}) {
    FrameConn::Options options;
    options.settings = std::move(settings);
    auto conn = FrameConn::Connect(server_->port(), options);
    EXPECT_NE(conn, nullptr);
    return conn;
  }
  // A stream the server answered completely and the client ended: closed on both sides.
  void CloseStream(FrameConn& conn, uint32_t id) {
    conn.Send(HeadersFrame(id, kEndHeaders | kEndStream, RequestBlock()));
    ASSERT_TRUE(conn.WaitFor([&](const ReadFrame& f) {
      return f.stream_id == id && (f.flags & kEndStream) != 0 &&
             (f.type == kData || f.type == kHeaders);
    })) << "no complete answer on stream "
        << id;
  }
  // A unary gRPC call on a fresh connection works.
  bool GoodCallWorks() {
    auto client = RawH2Client::Connect("127.0.0.1", server_->port());
    if (client == nullptr) return false;
    const int32_t id = client->OpenStream(GrpcRequestHeaders(kEmptyPath));
    client->SendData(id, GrpcMessage(""), /*end_stream=*/true);
    return client->WaitForClose(id) && client->stream(id).GrpcStatus() == 0;
  }

  Service service_;
  std::unique_ptr<TestServer> server_;
};

// --- §3.4 the connection preface -----------------------------------------------------------

TEST_F(ConformanceTest, InvalidPrefaceIsAConnectionError) {
  FrameConn::Options options;
  options.handshake = false;
  auto conn = FrameConn::Connect(server_->port(), options);
  ASSERT_NE(conn, nullptr);
  conn->Send("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + SettingsFrame({}));
  // A GOAWAY(PROTOCOL_ERROR) may come first; the connection must end.
  conn->WaitFor([](const ReadFrame&) { return false; });
  EXPECT_TRUE(conn->closed());
  if (auto g = conn->LastGoaway()) {
    EXPECT_EQ(g->error_code(), kProtocolError);
  }
}

TEST_F(ConformanceTest, ServerSettingsAndPingAreAnswered) {
  auto conn = Connect();
  ASSERT_NE(conn, nullptr);
  EXPECT_TRUE(conn->server_setting(kMaxConcurrentStreams).has_value());
  EXPECT_TRUE(conn->ExpectAlive());
}

// --- §4.1 frame format, §4.2 frame size, §4.3 header compression ------------------------------

TEST_F(ConformanceTest, UnknownFrameTypeIsIgnored) {  // §4.1, §5.5
  auto conn = Connect();
  conn->Send(Frame(0x16, 0xff, 0, "ignored"));
  EXPECT_TRUE(conn->ExpectAlive());
}

TEST_F(ConformanceTest, UndefinedFlagsAreIgnored) {  // §4.1
  auto conn = Connect();
  conn->Send(Frame(kPing, 0x16, 0, std::string(8, 'x')));
  EXPECT_TRUE(conn->WaitFor(
      [](const ReadFrame& f) { return f.type == kPing && f.flags == kAck && f.payload == "xxxxxxxx"; }));
}

TEST_F(ConformanceTest, ReservedBitIsIgnored) {  // §4.1: R is ignored on receipt
  auto conn = Connect();
  std::string frame = HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock());
  frame[5] = static_cast<char>(frame[5] | 0x80);
  conn->Send(frame);
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kHeaders && f.stream_id == 1; }));
}

TEST_F(ConformanceTest, DataLargerThanMaxFrameSizeIsFrameSizeError) {  // §4.2
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  const uint32_t max = conn->server_setting(kMaxFrameSize).value_or(16384);
  conn->Send(DataFrame(1, 0, std::string(max + 1, 'x')));
  EXPECT_TRUE(conn->ExpectStreamError(1, kFrameSizeError));
}

TEST_F(ConformanceTest, HeadersLargerThanMaxFrameSizeIsFrameSizeError) {  // §4.2
  auto conn = Connect();
  const uint32_t max = conn->server_setting(kMaxFrameSize).value_or(16384);
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock("GET", "/", {{"x-big", std::string(max, 'x')}})));
  EXPECT_TRUE(conn->ExpectConnectionError(kFrameSizeError));
}

// --- §5.1 stream states --------------------------------------------------------------------

TEST_F(ConformanceTest, IdlePriorityIsAccepted) {
  auto conn = Connect();
  conn->Send(PriorityFrame(1, 0, 255));
  EXPECT_TRUE(conn->ExpectAlive());
}

// Half-closed (remote): the client sent END_STREAM; the server's answer waits for window
// credit (the client's initial window is 0).
TEST_F(ConformanceTest, HalfClosedRemoteDataIsStreamClosed) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(DataFrame(1, kEndStream, "x"));
  EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
}

TEST_F(ConformanceTest, HalfClosedRemoteHeadersIsStreamClosed) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, HeaderBlock({{"x-trailer", "1"}})));
  EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
}

TEST_F(ConformanceTest, HalfClosedRemoteWindowUpdateIsAccepted) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(WindowUpdateFrame(1, 1));
  // §6.9.1: the window allows exactly one byte.
  ASSERT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kData && f.stream_id == 1; }));
  EXPECT_EQ(conn->frames().back().payload.size(), 1u);
  EXPECT_TRUE(conn->ExpectAlive());
}

TEST_F(ConformanceTest, HalfClosedRemotePriorityIsAccepted) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(PriorityFrame(1, 0, 1));
  conn->Send(WindowUpdateFrame(1, 100));
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kData && f.stream_id == 1; }));
}

TEST_F(ConformanceTest, ClosedByRstThenDataIsStreamClosed) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(RstStreamFrame(1, kCancel));
  conn->Send(DataFrame(1, kEndStream, "test"));
  EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
}

TEST_F(ConformanceTest, ClosedByRstThenHeadersIsStreamClosed) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(RstStreamFrame(1, kCancel));
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, HeaderBlock({{"x-trailer", "1"}})));
  EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
}

TEST_F(ConformanceTest, ClosedThenDataIsStreamClosed) {
  auto conn = Connect();
  CloseStream(*conn, 1);
  conn->Send(DataFrame(1, kEndStream, "test"));
  EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
}

TEST_F(ConformanceTest, ClosedThenHeadersIsStreamClosed) {
  auto conn = Connect();
  CloseStream(*conn, 1);
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  EXPECT_TRUE(conn->ExpectConnectionError(kStreamClosed));
}

TEST_F(ConformanceTest, ClosedThenPriorityIsAccepted) {
  auto conn = Connect();
  CloseStream(*conn, 1);
  conn->Send(PriorityFrame(1, 0, 1));
  EXPECT_TRUE(conn->ExpectAlive());
}

// A gRPC call the server ended early while the client still sends: frames in flight after the
// server's RST_STREAM are ignored (§5.1 closed: "MUST ignore frames ... after sending RST_STREAM").
TEST_F(ConformanceTest, DataAfterOurResetIsIgnored) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock("/no.such.Service/Method")));
  ASSERT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kRstStream && f.stream_id == 1; }));
  conn->Send(DataFrame(1, 0, std::string(100, 'x')));
  conn->Send(DataFrame(1, kEndStream, ""));
  EXPECT_TRUE(conn->ExpectAlive());
}

// --- §5.1.1 stream identifiers, §5.1.2 concurrency -------------------------------------------

TEST_F(ConformanceTest, LowerStreamIdIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(5, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(HeadersFrame(3, kEndHeaders | kEndStream, RequestBlock()));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
  // The stream below the last one processed is not announced as processed.
  EXPECT_EQ(conn->LastGoaway()->payload.substr(0, 4), std::string("\0\0\0\5", 4));
}

TEST_F(ConformanceTest, LowerStreamIdAfterClosedStreamsIsProtocolError) {
  auto conn = Connect();
  CloseStream(*conn, 1);
  CloseStream(*conn, 7);
  conn->Send(HeadersFrame(5, kEndHeaders | kEndStream, RequestBlock()));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

TEST_F(ConformanceTest, StreamsBeyondTheAdvertisedLimitAreRefused) {
  ServerOptions options;
  options.max_concurrent_streams = 5;
  Start(options);
  auto conn = Connect({{kInitialWindowSize, 0}});  // every answer stays pending
  ASSERT_EQ(conn->server_setting(kMaxConcurrentStreams), 5u);
  std::string frames;
  for (uint32_t id = 1; id <= 11; id += 2) frames += HeadersFrame(id, kEndHeaders | kEndStream, RequestBlock());
  conn->Send(frames);
  bool refused = false;
  conn->WaitFor([&](const ReadFrame& f) {
    if ((f.type == kRstStream || f.type == kGoaway) &&
        (f.error_code() == kRefusedStream || f.error_code() == kProtocolError)) {
      refused = true;
    }
    return refused;
  });
  EXPECT_TRUE(refused);
}

// --- §5.4.1 connection errors end with GOAWAY, then close ------------------------------------

TEST_F(ConformanceTest, ConnectionErrorSendsGoawayThenCloses) {
  auto conn = Connect();
  conn->Send(Frame(kPing, 0, 3, std::string(8, '\0')));  // PING on a stream
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
  EXPECT_TRUE(conn->closed_cleanly()) << "reset instead of a drained close";
}

// --- §5.5 extensions -------------------------------------------------------------------------

TEST_F(ConformanceTest, UnknownFrameInsideHeaderBlockIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndStream, RequestBlock()));
  conn->Send(Frame(0x16, 0, 0, "x"));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

// --- §6.1 DATA -------------------------------------------------------------------------------

TEST_F(ConformanceTest, DataPaddingAsLongAsThePayloadIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  conn->Send(Frame(kData, kPadded | kEndStream, 1, std::string("\x06") + "12345"));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

// --- §6.2 HEADERS ----------------------------------------------------------------------------

TEST_F(ConformanceTest, HeadersPaddingLongerThanThePayloadIsProtocolError) {
  auto conn = Connect();
  const std::string block = RequestBlock();
  conn->Send(Frame(kHeaders, kPadded | kEndHeaders | kEndStream, 1,
                   std::string(1, static_cast<char>(block.size() + 1)) + block));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

TEST_F(ConformanceTest, HeadersDependingOnItselfIsProtocolError) {  // §5.3.1
  auto conn = Connect();
  conn->Send(Frame(kHeaders, kPriorityFlag | kEndHeaders | kEndStream, 1,
                   PriorityPayload(1, 15) + RequestBlock()));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));
}

TEST_F(ConformanceTest, OtherFrameBeforeEndHeadersIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndStream, RequestBlock()));
  conn->Send(DataFrame(1, kEndStream, "x"));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

// --- §6.3 PRIORITY ---------------------------------------------------------------------------

TEST_F(ConformanceTest, PriorityWithWrongLengthIsFrameSizeError) {
  auto conn = Connect();
  conn->Send(Frame(kPriority, 0, 1, PriorityPayload(0, 1) + "x"));
  EXPECT_TRUE(conn->ExpectStreamError(1, kFrameSizeError));
}

TEST_F(ConformanceTest, PriorityDependingOnItselfIsProtocolError) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(PriorityFrame(1, 1));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));
}

// --- §6.4 RST_STREAM -------------------------------------------------------------------------

TEST_F(ConformanceTest, RstStreamWithWrongLengthIsFrameSizeError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(Frame(kRstStream, 0, 1, std::string(3, '\0')));
  EXPECT_TRUE(conn->ExpectConnectionError(kFrameSizeError));
}

// --- §6.5 SETTINGS ---------------------------------------------------------------------------

TEST_F(ConformanceTest, SettingsAreAcknowledged) {  // §6.5.3
  auto conn = Connect();
  conn->Send(SettingsFrame({{kMaxConcurrentStreams, 10}, {0x99, 1}}));  // unknown ids ignored
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kSettings && f.flags == kAck; }));
}

TEST_F(ConformanceTest, MaxFrameSizeOutOfRangeIsProtocolError) {  // §6.5.2
  for (uint32_t value : {16383u, 16777216u}) {
    auto conn = Connect();
    conn->Send(SettingsFrame({{kMaxFrameSize, value}}));
    EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError)) << value;
  }
}

TEST_F(ConformanceTest, InitialWindowSizeChangeThatOverflowsAStreamIsFlowControlError) {  // §6.9.2
  auto conn = Connect({{kInitialWindowSize, 0}});
  // A gRPC call waiting for its request: the server sends nothing on it.
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  conn->Send(WindowUpdateFrame(1, 0x7fffffff));
  conn->Send(SettingsFrame({{kInitialWindowSize, 1}}));
  // §6.9.2 makes this a connection error; nghttp2 resets the stream that overflowed, which
  // keeps the other streams (a stricter answer than the RFC's would only cost them).
  EXPECT_TRUE(conn->ExpectStreamError(1, kFlowControlError));
}

// --- §6.7 PING -------------------------------------------------------------------------------

TEST_F(ConformanceTest, PingIsAnsweredWithTheSamePayload) {
  auto conn = Connect();
  conn->Send(PingFrame(0x0102030405060708));
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) {
    return f.type == kPing && f.flags == kAck && f.payload == PingFrame(0x0102030405060708).substr(9);
  }));
}

TEST_F(ConformanceTest, PingAckIsNotAnswered) {
  auto conn = Connect();
  conn->Send(PingFrame(42, /*ack=*/true));
  EXPECT_TRUE(conn->ExpectAlive());
  for (const ReadFrame& f : conn->frames()) {
    EXPECT_FALSE(f.type == kPing && f.payload == PingFrame(42).substr(9)) << "an ACK was answered";
  }
}

// --- §6.8 GOAWAY -----------------------------------------------------------------------------

// After the client's GOAWAY the server still completes the streams it has, then ends the
// connection with a FIN after draining, not with a reset that could destroy its last frames.
TEST_F(ConformanceTest, ClientGoawayLetsOpenStreamsFinishAndDrains) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(GoawayFrame(0, kNoError));
  conn->Send(WindowUpdateFrame(1, 1000));
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) {
    return f.stream_id == 1 && (f.flags & kEndStream) != 0;
  })) << "the open stream was not completed";
  conn->Send(PingFrame(7));  // still in flight when the server closes
  conn->WaitFor([](const ReadFrame&) { return false; });
  EXPECT_TRUE(conn->closed());
  EXPECT_TRUE(conn->closed_cleanly()) << "reset instead of a drained close";
}

// --- §6.9 WINDOW_UPDATE, §6.9.1 flow-control windows -----------------------------------------

TEST_F(ConformanceTest, ZeroWindowUpdateOnStreamIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(WindowUpdateFrame(1, 0));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));
}

TEST_F(ConformanceTest, ConnectionWindowAboveMaximumIsFlowControlError) {
  auto conn = Connect();
  conn->Send(WindowUpdateFrame(0, 0x7fffffff));
  conn->Send(WindowUpdateFrame(0, 0x7fffffff));
  EXPECT_TRUE(conn->ExpectConnectionError(kFlowControlError));
}

TEST_F(ConformanceTest, StreamWindowAboveMaximumIsFlowControlError) {
  auto conn = Connect({{kInitialWindowSize, 0}});
  // A gRPC call waiting for its request: the server sends nothing on it.
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  conn->Send(WindowUpdateFrame(1, 0x7fffffff));
  conn->Send(WindowUpdateFrame(1, 0x7fffffff));
  EXPECT_TRUE(conn->ExpectStreamError(1, kFlowControlError));
}

TEST_F(ConformanceTest, DataBeyondTheAdvertisedWindowIsFlowControlError) {
  auto conn = Connect();
  const uint32_t window = conn->server_setting(kInitialWindowSize).value_or(65535);
  ASSERT_LE(window, 1u << 20);
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  const std::string chunk(16384, 'x');
  std::string frames;
  for (uint32_t sent = 0; sent <= window + 65535; sent += 16384) frames += DataFrame(1, 0, chunk);
  conn->Send(frames);
  bool flow_error = false;
  conn->WaitFor([&](const ReadFrame& f) {
    flow_error = (f.type == kRstStream || f.type == kGoaway) && f.error_code() == kFlowControlError;
    return flow_error || f.type == kGoaway;
  });
  EXPECT_TRUE(flow_error);
}

// Not an RFC rule but what keeps large messages fast: the connection window is large (it is
// credited as bytes arrive, so it bounds no memory), and once a request's prefix announces a
// message larger than the stream window, the server opens the window for all of it, so the
// client sends 1 MiB without waiting for a WINDOW_UPDATE every 64 KiB.
TEST_F(ConformanceTest, AnnouncedLargeMessageGetsWindowForAllOfIt) {
  auto conn = Connect();
  ASSERT_NE(conn, nullptr);
  const auto increment = [](const ReadFrame& f) -> uint64_t {
    if (f.payload.size() != 4) return 0;
    const auto byte = [&](size_t i) { return uint64_t{static_cast<uint8_t>(f.payload[i])}; };
    return ((byte(0) & 0x7f) << 24) | (byte(1) << 16) | (byte(2) << 8) | byte(3);
  };
  EXPECT_TRUE(conn->ExpectAlive());  // the server's opening frames have been read
  uint64_t connection_window = 65535;
  for (const ReadFrame& f : conn->frames()) {
    if (f.type == kWindowUpdate && f.stream_id == 0) connection_window += increment(f);
  }
  EXPECT_GE(connection_window, 4u << 20);
  uint64_t stream_window = conn->server_setting(kInitialWindowSize).value_or(65535);
  conn->set_frame_observer([&](const ReadFrame& f) {
    if (f.type == kWindowUpdate && f.stream_id == 1) stream_window += increment(f);
  });

  const std::string message =
      GrpcMessage(ZerosRequest(1 << 20, /*response_size=*/1).SerializeAsString());
  ASSERT_GT(message.size(), stream_window);
  conn->Send(HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)));
  constexpr size_t kFrame = 16384;
  conn->Send(DataFrame(1, 0, std::string_view(message).substr(0, kFrame)));
  ASSERT_TRUE(conn->WaitFor([&](const ReadFrame&) { return stream_window >= message.size(); }))
      << "stream window " << stream_window << " for a message of " << message.size();

  // All the rest at once: within the windows announced, so no error, and the call is answered.
  std::string rest;
  for (size_t at = kFrame; at < message.size(); at += kFrame) {
    const bool last = at + kFrame >= message.size();
    rest += DataFrame(1, last ? kEndStream : 0, std::string_view(message).substr(at, kFrame));
  }
  ASSERT_TRUE(conn->Send(rest));
  bool error = false;
  EXPECT_TRUE(conn->WaitFor([&](const ReadFrame& f) {
    error = f.type == kRstStream || f.type == kGoaway;
    return error || (f.stream_id == 1 && f.type == kData);
  }));
  EXPECT_FALSE(error);
}

// --- §6.10 CONTINUATION ----------------------------------------------------------------------

TEST_F(ConformanceTest, HeaderBlockInSeveralContinuationsIsAccepted) {
  auto conn = Connect();
  const std::string block = RequestBlock("GET", "/", {{"x-a", "1"}, {"x-b", "2"}});
  conn->Send(HeadersFrame(1, kEndStream, block.substr(0, 10)));
  conn->Send(ContinuationFrame(1, 0, block.substr(10, 10)));
  conn->Send(ContinuationFrame(1, kEndHeaders, block.substr(20)));
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kHeaders && f.stream_id == 1; }));
}

TEST_F(ConformanceTest, ContinuationAfterEndHeadersIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock()));
  conn->Send(ContinuationFrame(1, kEndHeaders, HeaderBlock({{"x-a", "1"}})));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

TEST_F(ConformanceTest, ContinuationOnAnotherStreamIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndStream, RequestBlock()));
  conn->Send(ContinuationFrame(3, kEndHeaders, HeaderBlock({{"x-a", "1"}})));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

TEST_F(ConformanceTest, ContinuationOnStreamZeroIsProtocolError) {
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndStream, RequestBlock()));
  conn->Send(ContinuationFrame(0, kEndHeaders, HeaderBlock({{"x-a", "1"}})));
  EXPECT_TRUE(conn->ExpectConnectionError(kProtocolError));
}

// --- §8.1 request exchange, §8.2 fields, §8.3 pseudo-header fields ---------------------------

TEST_F(ConformanceTest, SecondHeadersWithoutEndStreamIsProtocolError) {  // §8.1
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(HeadersFrame(1, kEndHeaders, HeaderBlock({{"x-trailer", "1"}})));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));
}

TEST_F(ConformanceTest, PseudoHeaderInTrailersIsProtocolError) {  // §8.1
  auto conn = Connect();
  conn->Send(HeadersFrame(1, kEndHeaders, RequestBlock()));
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, HeaderBlock({{":method", "GET"}})));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));
}

struct MalformedCase {
  const char* name;
  std::vector<std::pair<std::string, std::string>> fields;
};

// §8.2, §8.3: each block is a malformed request, a stream error of type PROTOCOL_ERROR.
TEST_F(ConformanceTest, MalformedRequestsAreStreamErrors) {
  const std::vector<MalformedCase> cases = {
      {"uppercase name", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"X-Upper", "1"}}},
      {"unknown pseudo-header", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":foo", "1"}}},
      {"response pseudo-header", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":status", "200"}}},
      {"pseudo-header after a regular one", {{":method", "GET"}, {":scheme", "http"}, {"x-a", "1"}, {":path", "/"}}},
      {"duplicated pseudo-header", {{":method", "GET"}, {":method", "GET"}, {":scheme", "http"}, {":path", "/"}}},
      {"no :method", {{":scheme", "http"}, {":path", "/"}}},
      {"no :scheme", {{":method", "GET"}, {":path", "/"}}},
      {"no :path", {{":method", "GET"}, {":scheme", "http"}}},
      {"empty :path", {{":method", "GET"}, {":scheme", "http"}, {":path", ""}}},
      {"connection-specific field", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"connection", "keep-alive"}}},
      {"te other than trailers", {{":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {"te", "gzip"}}},
  };
  auto conn = Connect();
  uint32_t id = 1;
  for (const MalformedCase& c : cases) {
    conn->Send(HeadersFrame(id, kEndHeaders | kEndStream, HeaderBlock(c.fields)));
    EXPECT_TRUE(conn->ExpectStreamError(id, kProtocolError)) << c.name;
    id += 2;
  }
  EXPECT_TRUE(conn->ExpectAlive()) << "a malformed request must not cost the connection";
}

TEST_F(ConformanceTest, ContentLengthOtherThanTheDataIsProtocolError) {  // §8.1.1
  for (bool several_frames : {false, true}) {
    auto conn = Connect();
    conn->Send(HeadersFrame(1, kEndHeaders,
                            RequestBlock("POST", "/", {{"content-length", "1"}})));
    if (several_frames) conn->Send(DataFrame(1, 0, "test"));
    conn->Send(DataFrame(1, kEndStream, "test"));
    EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError)) << several_frames;
  }
}

// --- RFC 7541 HPACK ---------------------------------------------------------------------------

TEST_F(ConformanceTest, HpackTableSizeUpdateAboveTheSettingIsCompressionError) {  // §6.3
  auto conn = Connect();
  const uint32_t limit = conn->server_setting(kHeaderTableSize).value_or(4096);
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream, HpackTableSizeUpdate(limit + 1) + RequestBlock()));
  EXPECT_TRUE(conn->ExpectConnectionError(kCompressionError));
}

TEST_F(ConformanceTest, HpackHuffmanPaddingErrorsAreCompressionErrors) {  // RFC 7541 §5.2
  // A Huffman-coded name ("x-a" is not needed: the bytes decide) whose padding is either longer
  // than 7 bits, not the EOS prefix (zeros), or contains the EOS symbol.
  const std::vector<std::string> bad_strings = {
      std::string("\x82\xff\xff", 3),              // 16 bits of padding
      std::string("\x81\x00", 2),                  // padding of zeros
      std::string("\x84\xff\xff\xff\xff", 5),      // the EOS symbol (30 ones) inside
  };
  for (const std::string& s : bad_strings) {
    auto conn = Connect();
    conn->Send(HeadersFrame(1, kEndHeaders | kEndStream,
                            RequestBlock() + std::string(1, '\0') + s + HpackString("v")));
    EXPECT_TRUE(conn->ExpectConnectionError(kCompressionError));
  }
}

TEST_F(ConformanceTest, HpackStateSurvivesARefusedStream) {
  // A field added to the dynamic table in a block the server refuses (a malformed request) is
  // still there for the next block.
  auto conn = Connect();
  const std::string indexed_literal = std::string(1, '\x40') + HpackString("x-kept") + HpackString("v");
  conn->Send(HeadersFrame(1, kEndHeaders | kEndStream,
                          HeaderBlock({{":method", "GET"}, {":scheme", "http"}}) + indexed_literal));
  EXPECT_TRUE(conn->ExpectStreamError(1, kProtocolError));  // no :path
  conn->Send(HeadersFrame(3, kEndHeaders | kEndStream, RequestBlock() + HpackIndexed(62)));
  EXPECT_TRUE(conn->WaitFor([](const ReadFrame& f) { return f.type == kHeaders && f.stream_id == 3; }));
}

// One frame that breaks a rule of the connection, sent first on a fresh connection, and the
// connection error it must draw (GOAWAY with that code, then the connection closes).
struct BadFrameCase {
  const char* name;
  std::string (*frame)();
  uint32_t error;
};

const BadFrameCase kBadFrames[] = {
    // §4.3
    // A literal whose name is announced as 10 bytes long, followed by one.
    {"UndecodableHeaderBlockIsCompressionError",
     [] { return HeadersFrame(1, kEndHeaders | kEndStream, std::string("\x00\x0a\x6e", 3)); },
     kCompressionError},
    {"IdleDataIsProtocolError", [] { return DataFrame(1, kEndStream, "x"); }, kProtocolError},
    {"IdleRstStreamIsProtocolError", [] { return RstStreamFrame(1, kCancel); }, kProtocolError},
    {"IdleWindowUpdateIsProtocolError", [] { return WindowUpdateFrame(1, 100); }, kProtocolError},
    {"IdleContinuationIsProtocolError",
     [] { return ContinuationFrame(1, kEndHeaders, RequestBlock()); }, kProtocolError},
    {"EvenStreamIdIsProtocolError",
     [] { return HeadersFrame(2, kEndHeaders | kEndStream, RequestBlock()); }, kProtocolError},
    {"DataOnStreamZeroIsProtocolError", [] { return DataFrame(0, kEndStream, "x"); },
     kProtocolError},
    {"HeadersOnStreamZeroIsProtocolError",
     [] { return HeadersFrame(0, kEndHeaders | kEndStream, RequestBlock()); }, kProtocolError},
    {"PriorityOnStreamZeroIsProtocolError", [] { return PriorityFrame(0, 1); }, kProtocolError},
    {"RstStreamOnStreamZeroIsProtocolError", [] { return RstStreamFrame(0, kCancel); },
     kProtocolError},
    {"SettingsAckWithPayloadIsFrameSizeError",
     [] { return Frame(kSettings, kAck, 0, std::string(6, '\0')); }, kFrameSizeError},
    {"SettingsOnAStreamIsProtocolError",
     [] {
       return Frame(kSettings, 0, 1, SettingsFrame({{kEnablePush, 0}}).substr(9));
     },
     kProtocolError},
    {"SettingsLengthNotAMultipleOfSixIsFrameSizeError",
     [] {
       return Frame(kSettings, 0, 0, SettingsFrame({{kEnablePush, 0}}).substr(9, 5));
     },
     kFrameSizeError},
    // §6.5.2
    {"EnablePushOtherThanZeroOrOneIsProtocolError",
     [] {
       return SettingsFrame({{kEnablePush, 2}});
     },
     kProtocolError},
    // §6.5.2
    {"InitialWindowSizeAboveMaximumIsFlowControlError",
     [] {
       return SettingsFrame({{kInitialWindowSize, 0x80000000u}});
     },
     kFlowControlError},
    {"PingOnAStreamIsProtocolError", [] { return Frame(kPing, 0, 1, std::string(8, '\0')); },
     kProtocolError},
    {"PingWithWrongLengthIsFrameSizeError", [] { return Frame(kPing, 0, 0, std::string(6, '\0')); },
     kFrameSizeError},
    {"GoawayOnAStreamIsProtocolError",
     [] { return Frame(kGoaway, 0, 1, GoawayFrame(0, kNoError).substr(9)); }, kProtocolError},
    {"ZeroWindowUpdateOnConnectionIsProtocolError", [] { return WindowUpdateFrame(0, 0); },
     kProtocolError},
    {"WindowUpdateWithWrongLengthIsFrameSizeError",
     [] { return Frame(kWindowUpdate, 0, 0, std::string(3, '\1')); }, kFrameSizeError},
    // RFC 7541 §6.1
    {"HpackIndexZeroIsCompressionError",
     [] { return HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock() + HpackIndexed(0)); },
     kCompressionError},
    // RFC 7541 §2.3.3
    {"HpackIndexBeyondTheTablesIsCompressionError",
     [] { return HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock() + HpackIndexed(70)); },
     kCompressionError},
    // RFC 7541 §4.2
    {"HpackTableSizeUpdateAfterAFieldIsCompressionError",
     [] {
       return HeadersFrame(1, kEndHeaders | kEndStream, RequestBlock() + HpackTableSizeUpdate(0));
     },
     kCompressionError},
};

class BadFrameTest : public ConformanceTest, public ::testing::WithParamInterface<BadFrameCase> {};

TEST_P(BadFrameTest, IsAConnectionError) {
  auto conn = Connect();
  conn->Send(GetParam().frame());
  EXPECT_TRUE(conn->ExpectConnectionError(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(Frames, BadFrameTest, ::testing::ValuesIn(kBadFrames),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// --- Floods: a million control frames on one connection ------------------------------------

struct FloodCase {
  const char* name;
  // Frames to open the flood with (a stream for empty DATA), then one frame repeated.
  std::string prologue;
  std::string frame;
};

class FloodTest : public ConformanceTest, public ::testing::WithParamInterface<int> {};

std::vector<FloodCase> FloodCases() {
  return {
      {"ping", "", PingFrame(1)},
      {"settings", "", SettingsFrame({{kMaxConcurrentStreams, 100}})},
      {"window_update", "", WindowUpdateFrame(0, 1)},
      {"priority", "", PriorityFrame(3, 0, 1)},
      {"empty_data", HeadersFrame(1, kEndHeaders, GrpcRequestBlock(kUnaryPath)), DataFrame(1, 0, "")},
  };
}

TEST_P(FloodTest, MillionFramesEndInEnhanceYourCalmWithBoundedMemory) {
  constexpr int kFrames = 1'000'000;
  const FloodCase flood = FloodCases()[static_cast<size_t>(GetParam())];
  const size_t rss_before = ResidentBytes();
  LogCapture logs;
  auto conn = Connect();
  ASSERT_NE(conn, nullptr);
  conn->set_keep_frames(false);
  ASSERT_TRUE(conn->Send(flood.prologue));
  std::string chunk;
  constexpr int kPerChunk = 4096;
  for (int i = 0; i < kPerChunk; ++i) chunk += flood.frame;
  int sent = 0;
  size_t offset = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (sent < kFrames && !conn->closed() && !conn->LastGoaway() &&
         std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = conn->TrySend(std::string_view(chunk).substr(offset));
    if (n < 0) break;
    offset += static_cast<size_t>(n);
    if (offset == chunk.size()) {
      offset = 0;
      sent += kPerChunk;
    }
    conn->Poll();  // read the server's replies, as a real peer would
    if (n == 0) usleep(100);
  }
  conn->WaitFor([](const ReadFrame& f) { return f.type == kGoaway; }, std::chrono::seconds(10));
  const auto goaway = conn->LastGoaway();
  ASSERT_TRUE(goaway.has_value()) << flood.name << ": no GOAWAY after " << sent << " frames";
  EXPECT_EQ(goaway->error_code(), kEnhanceYourCalm) << flood.name;
  EXPECT_GT(goaway->payload.size(), 8u) << flood.name << ": a GOAWAY without a debug string";
  // The operator learns why the peer was cut off, in the words the GOAWAY carried.
  EXPECT_TRUE(LogCapture::Contains("closing the HTTP/2 connection with ipv4:127.0.0.1:"))
      << flood.name;
  if (goaway->payload.size() > 8) {
    EXPECT_TRUE(LogCapture::Contains(goaway->payload.substr(8))) << flood.name;
  }
  EXPECT_LT(sent, kFrames) << flood.name << ": the whole flood was accepted";
  conn->WaitFor([](const ReadFrame&) { return false; }, std::chrono::seconds(10));
  EXPECT_TRUE(conn->closed()) << flood.name;
  std::printf("%s flood: GOAWAY(%u) after %d of %d frames were sent\n", flood.name,
              goaway->error_code(), sent, kFrames);
  const size_t rss_after = ResidentBytes();
  EXPECT_LE(rss_after, rss_before + (size_t{20} << 20))
      << flood.name << ": RSS grew by " << ((rss_after - rss_before) >> 20) << " MiB";
  EXPECT_TRUE(GoodCallWorks()) << flood.name;
}

INSTANTIATE_TEST_SUITE_P(Frames, FloodTest, ::testing::Range(0, 5),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(
                               FloodCases()[static_cast<size_t>(param_info.param)].name);
                         });

// Ordinary traffic is not noise: a streaming download's WINDOW_UPDATEs and the keepalive
// PINGs that follow it never come near the budget.
TEST_F(ConformanceTest, WindowUpdatesAfterDataAreNotNoise) {
  auto conn = Connect({{kInitialWindowSize, 16}});
  std::string frames;
  for (uint32_t id = 1; id < 600; id += 2) {
    frames += HeadersFrame(id, kEndHeaders | kEndStream, RequestBlock());
  }
  conn->Send(frames);
  // Each answer body comes 16 bytes at a time, each piece credited by two WINDOW_UPDATEs.
  int ends = 0;
  conn->WaitFor([&](const ReadFrame& f) {
    if (f.type == kData) {
      conn->Send(WindowUpdateFrame(f.stream_id, 16) + WindowUpdateFrame(0, 16));
    }
    if ((f.flags & kEndStream) != 0 && (f.type == kHeaders || f.type == kData)) ++ends;
    return ends == 300 || f.type == kGoaway;
  }, std::chrono::seconds(30));
  EXPECT_EQ(ends, 300);
  EXPECT_FALSE(conn->LastGoaway().has_value());
}

}  // namespace
}  // namespace rill::test
