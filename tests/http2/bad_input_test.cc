// DESIGN §6 "Behaviour on bad input", from the wire: a raw HTTP/2 client on real nghttp2 sends a
// rill server each kind of bad unary request and checks the exact answer (HTTP status, gRPC
// status, trailers-only or not, RST_STREAM), then makes a good call on the same connection to
// show the connection survived. The server runs on its own leak-checking pool, so every test
// also checks that nothing the bad input touched stays pinned.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/mem/leak_checking_pool.h"
#include "rill/server_context.h"
#include "tests/http2/raw_h2_client.h"
#include "tests/testing/codecs.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using ::testing::AnyOf;
using ::testing::Optional;

constexpr char kUnaryPath[] = "/grpc.testing.TestService/UnaryCall";
constexpr uint32_t kLimit = 4 * 1024 * 1024;

// UnaryCall answers with request.response_size() bytes of payload and records the "x-data-bin"
// value it saw.
class EchoService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    calls.fetch_add(1);
    {
      std::lock_guard lock(mu_);
      if (auto v = context.client_metadata().Get("x-data-bin")) last_bin_ = std::string(*v);
    }
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(request.response_size()), 'r');
    return Status();
  }
  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    return Status();
  }
  std::string last_bin() {
    std::lock_guard lock(mu_);
    return last_bin_;
  }
  std::atomic<int> calls{0};

 private:
  std::mutex mu_;
  std::string last_bin_;
};

std::string SerializedRequest(int32_t response_size = 10) {
  SimpleRequest request;
  request.set_response_size(response_size);
  return request.SerializeAsString();
}

// gzip (RFC 1952) by zlib itself, independent of rill's compressors.
std::string Gzip(std::string_view data) { return ZlibCompress(data, kGzipWindowBits); }

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(ServerOptions()); }

  void StartServer(const ServerOptions& options) {
    TestServerSetup setup;
    setup.services.push_back(&service_);
    setup.options = options;
    setup.pool = &server_pool_;
    setup.reactors = &reactors_;
    server_ = TestServer::Start(Transport::kTcp, setup);
    ASSERT_NE(server_, nullptr);
    client_ = RawH2Client::Connect("127.0.0.1", server_->port());
    ASSERT_NE(client_, nullptr);
  }

  void TearDown() override {
    client_.reset();
    server_.reset();
    EXPECT_EQ(server_pool_.Stats().blocks_out, 0u);
    EXPECT_EQ(server_pool_.CheckAndReset(), "");
  }

  // Sends `headers` (and `body` with END_STREAM when given) and waits for the stream to close.
  const RawStream& Exchange(const RawHeaderList& headers, std::optional<std::string> body) {
    const int32_t id = client_->OpenStream(headers, /*end_stream=*/!body.has_value());
    EXPECT_GT(id, 0);
    if (body) client_->SendData(id, *body, /*end_stream=*/true);
    EXPECT_TRUE(client_->WaitForClose(id)) << "no answer on stream " << id;
    return client_->stream(id);
  }

  // A well-formed unary call on the same connection succeeds.
  void ExpectGoodCall() {
    const int calls_before = service_.calls.load();
    const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath), GrpcMessage(SerializedRequest(7)));
    EXPECT_EQ(s.Header(":status"), "200");
    EXPECT_EQ(s.Header("content-type"), "application/grpc");
    EXPECT_EQ(s.GrpcStatus(), 0) << s.Trailer("grpc-message").value_or("");
    auto messages = s.Messages();
    ASSERT_TRUE(messages.has_value());
    ASSERT_EQ(messages->size(), 1u);
    SimpleResponse response;
    ASSERT_TRUE(response.ParseFromString((*messages)[0]));
    EXPECT_EQ(response.payload().body().size(), 7u);
    EXPECT_EQ(service_.calls.load(), calls_before + 1);
    EXPECT_FALSE(client_->disconnected());
    EXPECT_FALSE(client_->goaway_error().has_value());
  }

  // The server's reactor has finished what it was doing.
  void DrainServer() { DrainReactor(reactors_.reactor(0)); }

  LeakCheckingBufferPool server_pool_;
  ReactorPool reactors_{{.threads = 1, .cpus = {}}};
  EchoService service_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<RawH2Client> client_;
};

// A gRPC error answered in one HEADERS frame with END_STREAM.
void ExpectTrailersOnly(const RawStream& s, const std::string& http_status, StatusCode code) {
  EXPECT_TRUE(s.trailers_only()) << "header blocks: " << s.header_blocks.size()
                                 << ", data frames: " << s.data_frames;
  EXPECT_EQ(s.Header(":status"), http_status);
  EXPECT_EQ(s.GrpcStatus(), static_cast<int>(code))
      << "grpc-message: " << s.Trailer("grpc-message").value_or("(none)");
}

TEST_F(BadInputTest, WellFormedCallSucceeds) {
  ExpectGoodCall();
  ExpectGoodCall();
}

TEST_F(BadInputTest, OversizedMessageIsRejectedFromItsPrefixAlone) {
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(id, GrpcPrefix(0, kLimit + 1));  // no body, no END_STREAM
  ASSERT_TRUE(client_->WaitForClose(id)) << "the server waited for a body it will never accept";
  const RawStream& s = client_->stream(id);
  ExpectTrailersOnly(s, "200", StatusCode::kResourceExhausted);
  // The server ended the call while the client was still sending: RST_STREAM(NO_ERROR) tells
  // it to stop (PROTOCOL-HTTP2).
  EXPECT_THAT(s.rst_received, Optional(uint32_t{NGHTTP2_NO_ERROR}));
  EXPECT_EQ(service_.calls.load(), 0);
  ExpectGoodCall();
}

TEST_F(BadInputTest, OversizedMessageWithItsBodyIsRejected) {
  std::string body(kLimit + 1, 'x');
  const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath), GrpcMessage(body));
  ExpectTrailersOnly(s, "200", StatusCode::kResourceExhausted);
  ExpectGoodCall();
}

TEST_F(BadInputTest, ConfiguredLimitIsJudgedFromThePrefix) {
  client_.reset();
  server_.reset();
  ServerOptions options;
  options.max_receive_message_size = 1000;
  StartServer(options);
  {
    const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
    client_->SendData(id, GrpcPrefix(0, 1001));
    ASSERT_TRUE(client_->WaitForClose(id));
    ExpectTrailersOnly(client_->stream(id), "200", StatusCode::kResourceExhausted);
  }
  // Exactly the limit is fine.
  const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath),
                                GrpcMessage(RequestOfSize(1000).SerializeAsString()));
  EXPECT_EQ(s.GrpcStatus(), 0);
  ExpectGoodCall();
}

TEST_F(BadInputTest, UnknownEncodingOnACompressedMessageIsUnimplemented) {
  const RawStream& s =
      Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "rot13-unknown"}}),
               GrpcMessage("\x01\x02\x03", /*flag=*/1));
  EXPECT_EQ(s.Header(":status"), "200");
  EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kUnimplemented))
      << s.Trailer("grpc-message").value_or("");
  EXPECT_EQ(service_.calls.load(), 0);
  ExpectGoodCall();
}

// The gRPC spec wants the encodings the server does accept listed with the UNIMPLEMENTED answer.
TEST_F(BadInputTest, UnknownEncodingAnswerListsAcceptedEncodings) {
  const RawStream& s =
      Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "rot13-unknown"}}),
               GrpcMessage("\x01\x02\x03", /*flag=*/1));
  EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kUnimplemented));
  const std::optional<std::string> accepted = s.Trailer("grpc-accept-encoding");
  ASSERT_TRUE(accepted.has_value()) << "no grpc-accept-encoding in the UNIMPLEMENTED answer";
  EXPECT_THAT(*accepted, ::testing::HasSubstr("identity"));
}

TEST_F(BadInputTest, GzipCompressedRequestIsAccepted) {
  const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "gzip"}}),
                                GrpcMessage(Gzip(SerializedRequest(9)), /*flag=*/1));
  EXPECT_EQ(s.GrpcStatus(), 0) << s.Trailer("grpc-message").value_or("");
  EXPECT_EQ(service_.calls.load(), 1);
}

TEST_F(BadInputTest, MessageOverTheLimitAfterDecompressionIsResourceExhausted) {
  SimpleRequest request;
  request.mutable_payload()->mutable_body()->assign(kLimit + 1000, '\0');
  const std::string bomb = Gzip(request.SerializeAsString());
  ASSERT_LT(bomb.size(), 64u * 1024);  // small on the wire: the prefix check lets it through
  const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "gzip"}}),
                                GrpcMessage(bomb, /*flag=*/1));
  ExpectTrailersOnly(s, "200", StatusCode::kResourceExhausted);
  EXPECT_EQ(service_.calls.load(), 0);
  ExpectGoodCall();
}

TEST_F(BadInputTest, CorruptCompressedDataIsInternal) {
  const std::string good = Gzip(SerializedRequest());
  for (const std::string& body :
       {std::string("this is not gzip data"), good.substr(0, good.size() / 2),
        good.substr(0, 10) + std::string(good.size() - 10, '\x55')}) {
    const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "gzip"}}),
                                  GrpcMessage(body, /*flag=*/1));
    ExpectTrailersOnly(s, "200", StatusCode::kInternal);
    ExpectGoodCall();
  }
  EXPECT_EQ(service_.calls.load(), 3);  // the good calls only
}

TEST_F(BadInputTest, CompressedFlagWithoutAnEncodingIsInternal) {
  for (const RawHeaderList& headers :
       {GrpcRequestHeaders(kUnaryPath),
        GrpcRequestHeaders(kUnaryPath, {{"grpc-encoding", "identity"}})}) {
    const RawStream& s = Exchange(headers, GrpcMessage(SerializedRequest(), /*flag=*/1));
    EXPECT_EQ(s.Header(":status"), "200");
    EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kInternal))
        << s.Trailer("grpc-message").value_or("");
    ExpectGoodCall();
  }
  EXPECT_EQ(service_.calls.load(), 2);  // the good calls only
}

TEST_F(BadInputTest, FlagByteOtherThanZeroOrOneIsInternal) {
  for (uint8_t flag : {uint8_t{2}, uint8_t{0x80}, uint8_t{0xff}}) {
    const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath),
                                  GrpcMessage(SerializedRequest(), flag));
    ExpectTrailersOnly(s, "200", StatusCode::kInternal);
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, FlagByteIsJudgedBeforeTheBodyArrives) {
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(id, GrpcPrefix(2, 100));
  ASSERT_TRUE(client_->WaitForClose(id));
  ExpectTrailersOnly(client_->stream(id), "200", StatusCode::kInternal);
  ExpectGoodCall();
}

TEST_F(BadInputTest, TruncatedMessageAtEndOfStreamIsInternal) {
  const std::string message = GrpcMessage(std::string(100, 'z'));
  const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath), message.substr(0, 55));
  ExpectTrailersOnly(s, "200", StatusCode::kInternal);
  ExpectGoodCall();
}

TEST_F(BadInputTest, TruncatedPrefixAtEndOfStreamIsInternal) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{4}}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath), GrpcPrefix(0, 10).substr(0, n));
    ExpectTrailersOnly(s, "200", StatusCode::kInternal);
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, UnaryWithoutARequestIsUnimplemented) {
  // END_STREAM on the HEADERS frame.
  ExpectTrailersOnly(Exchange(GrpcRequestHeaders(kUnaryPath), std::nullopt), "200",
                     StatusCode::kUnimplemented);
  ExpectGoodCall();
  // An empty DATA frame with END_STREAM.
  ExpectTrailersOnly(Exchange(GrpcRequestHeaders(kUnaryPath), std::string()), "200",
                     StatusCode::kUnimplemented);
  ExpectGoodCall();
  EXPECT_EQ(service_.calls.load(), 2);
}

TEST_F(BadInputTest, UnaryWithTwoRequestsIsUnimplemented) {
  const std::string two = GrpcMessage(SerializedRequest()) + GrpcMessage(SerializedRequest());
  // Both in one DATA frame.
  ExpectTrailersOnly(Exchange(GrpcRequestHeaders(kUnaryPath), two), "200",
                     StatusCode::kUnimplemented);
  ExpectGoodCall();
  // In separate frames, the second without END_STREAM: the answer comes at the second message.
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(id, GrpcMessage(SerializedRequest()));
  client_->SendData(id, GrpcMessage(SerializedRequest()));
  ASSERT_TRUE(client_->WaitForClose(id));
  ExpectTrailersOnly(client_->stream(id), "200", StatusCode::kUnimplemented);
  ExpectGoodCall();
  EXPECT_EQ(service_.calls.load(), 2);
}

TEST_F(BadInputTest, UnparsableProtobufIsInternal) {
  for (const std::string& body :
       {std::string("\x08", 1),                   // one byte: a tag without its value
        std::string("\xff\xff\xff\xff", 4),       // an invalid tag
        std::string("\x1a\x10\x12", 3),           // a length running past the end
        std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12)}) {  // bad varint
    const RawStream& s = Exchange(GrpcRequestHeaders(kUnaryPath), GrpcMessage(body));
    ExpectTrailersOnly(s, "200", StatusCode::kInternal);
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, UnknownServiceOrMethodIsUnimplementedTrailersOnly) {
  for (const char* path : {"/grpc.testing.NoSuchService/UnaryCall",
                           "/grpc.testing.TestService/NoSuchMethod",
                           "/grpc.testing.TestService/unarycall"}) {
    // With and without a request body.
    ExpectTrailersOnly(Exchange(GrpcRequestHeaders(path), std::nullopt), "200",
                       StatusCode::kUnimplemented);
    ExpectTrailersOnly(Exchange(GrpcRequestHeaders(path), GrpcMessage(SerializedRequest())),
                       "200", StatusCode::kUnimplemented);
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, MalformedPathIsUnimplementedTrailersOnly) {
  for (const char* path : {"/grpc.testing.TestService", "/grpc.testing.TestService/",
                           "//UnaryCall", "/a/b/c", "/"}) {
    ExpectTrailersOnly(Exchange(GrpcRequestHeaders(path), GrpcMessage(SerializedRequest())),
                       "200", StatusCode::kUnimplemented);
    ExpectGoodCall();
  }
}

// nghttp2 itself refuses a request whose :path does not start with '/' (RFC 9113 §8.3.1) and
// resets the stream before rill sees it; the connection lives on.
TEST_F(BadInputTest, PathWithoutLeadingSlashIsResetByHttp2) {
  const RawStream& s = Exchange(GrpcRequestHeaders("grpc.testing.TestService/UnaryCall"),
                                GrpcMessage(SerializedRequest()));
  if (s.header_blocks.empty()) {
    EXPECT_THAT(s.rst_received, Optional(uint32_t{NGHTTP2_PROTOCOL_ERROR}));
  } else {
    ExpectTrailersOnly(s, "200", StatusCode::kUnimplemented);
  }
  ExpectGoodCall();
}

TEST_F(BadInputTest, ContentTypeThatIsNotGrpcIs415) {
  const RawHeaderList base = GrpcRequestHeaders(kUnaryPath);
  for (const RawHeaderList& headers :
       {WithHeader(base, "content-type", "application/json"),
        WithHeader(base, "content-type", "application/grpc-web"),
        WithHeader(base, "content-type", "text/plain"), WithoutHeader(base, "content-type")}) {
    const RawStream& s = Exchange(headers, GrpcMessage(SerializedRequest()));
    // Not a gRPC request: an HTTP answer with the reason as text, the gRPC status in trailers.
    EXPECT_EQ(s.Header(":status"), "415");
    EXPECT_EQ(s.Header("content-type"), "text/plain; charset=utf-8");
    EXPECT_NE(s.data.find("content-type"), std::string::npos) << s.data;
    EXPECT_GE(s.GrpcStatus(), 1) << "415 without a grpc-status";
    ExpectGoodCall();
  }
  EXPECT_EQ(service_.calls.load(), 4);
}

TEST_F(BadInputTest, GrpcContentTypeVariantsAreAccepted) {
  const RawHeaderList base = GrpcRequestHeaders(kUnaryPath);
  for (const char* type : {"application/grpc+proto", "application/grpc; charset=utf-8",
                           "Application/GRPC"}) {
    const RawStream& s =
        Exchange(WithHeader(base, "content-type", type), GrpcMessage(SerializedRequest()));
    EXPECT_EQ(s.GrpcStatus(), 0) << type;
  }
}

// A body in another codec ("+json") would be misread as protobuf: refused before any handler
// runs, with a status that names the subtype.
TEST_F(BadInputTest, ContentSubtypeOtherThanProtoIsRefused) {
  const RawHeaderList base = GrpcRequestHeaders(kUnaryPath);
  for (const char* type : {"application/grpc+json", "application/grpc+JSON; charset=utf-8",
                           "application/grpc+flatbuffers"}) {
    const RawStream& s =
        Exchange(WithHeader(base, "content-type", type), GrpcMessage(R"({"response_size":1})"));
    EXPECT_TRUE(s.trailers_only()) << type;
    EXPECT_EQ(s.Header(":status"), "415") << type;
    EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kUnimplemented)) << type;
    EXPECT_NE(s.Header("grpc-message").value_or("").find("content-subtype"), std::string::npos) << type;
  }
  EXPECT_EQ(service_.calls.load(), 0);
  ExpectGoodCall();
}

TEST_F(BadInputTest, MethodOtherThanPostIs405) {
  for (const char* method : {"GET", "PUT"}) {
    const RawStream& s = Exchange(WithHeader(GrpcRequestHeaders(kUnaryPath), ":method", method),
                                  method == std::string("GET")
                                      ? std::nullopt
                                      : std::optional<std::string>(GrpcMessage(SerializedRequest())));
    EXPECT_EQ(s.Header(":status"), "405") << method;
    EXPECT_EQ(s.Header("content-type"), "text/plain; charset=utf-8") << method;
    EXPECT_NE(s.data.find("POST"), std::string::npos) << s.data;
    EXPECT_GE(s.GrpcStatus(), 1) << "405 without a grpc-status";
    ExpectGoodCall();
  }
  EXPECT_EQ(service_.calls.load(), 2);
}

TEST_F(BadInputTest, MalformedGrpcTimeoutIs400Internal) {
  for (const char* timeout :
       {"abc", "123456789S", "10x", "", "-1S", "+1S", "1.5S", "1 S", "S", "10", "1s", "1SS"}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-timeout", timeout}}),
                 GrpcMessage(SerializedRequest()));
    EXPECT_TRUE(s.trailers_only()) << "\"" << timeout << "\"";
    EXPECT_EQ(s.Header(":status"), "400") << "\"" << timeout << "\"";
    EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kInternal)) << "\"" << timeout << "\"";
    ExpectGoodCall();
  }
}

// nghttp2 refuses field values with leading or trailing whitespace (RFC 9113 §8.2.1) and resets
// the stream before rill sees the header; the connection lives on.
TEST_F(BadInputTest, GrpcTimeoutWithSurroundingWhitespaceIsResetByHttp2) {
  for (const char* timeout : {" 1S", "1S "}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-timeout", timeout}}),
                 GrpcMessage(SerializedRequest()));
    EXPECT_TRUE(s.header_blocks.empty()) << "\"" << timeout << "\"";
    EXPECT_THAT(s.rst_received, Optional(uint32_t{NGHTTP2_PROTOCOL_ERROR}));
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, WellFormedGrpcTimeoutsAreAccepted) {
  for (const char* timeout : {"99999999S", "1H", "100M", "20000m", "3000000u", "90000000n"}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, {{"grpc-timeout", timeout}}),
                 GrpcMessage(SerializedRequest()));
    EXPECT_EQ(s.GrpcStatus(), 0) << timeout;
  }
}

TEST_F(BadInputTest, ServerEnforcesGrpcTimeoutOnItsOwn) {
  // The request never completes; the server answers DEADLINE_EXCEEDED by itself.
  const int32_t id =
      client_->OpenStream(GrpcRequestHeaders(kUnaryPath, {{"grpc-timeout", "100m"}}));
  client_->SendData(id, GrpcPrefix(0, 50));
  ASSERT_TRUE(client_->WaitForClose(id));
  const RawStream& s = client_->stream(id);
  EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kDeadlineExceeded));
  EXPECT_THAT(s.rst_received, Optional(uint32_t{NGHTTP2_NO_ERROR}));
  ExpectGoodCall();
}

TEST_F(BadInputTest, MetadataOverTheHeaderListLimitFailsOnlyThatStream) {
  // One large value, then many small fields: both exceed the 16 KiB default.
  RawHeaderList many;
  for (int i = 0; i < 400; ++i) many.push_back({"x-field-" + std::to_string(i), "0123456789"});
  for (const RawHeaderList& extra :
       {RawHeaderList{{"x-big", std::string(20 * 1024, 'b')}}, many}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, extra), GrpcMessage(SerializedRequest()));
    ExpectTrailersOnly(s, "200", StatusCode::kResourceExhausted);
    ExpectGoodCall();
  }
  // Just under the limit is fine.
  const RawStream& s = Exchange(
      GrpcRequestHeaders(kUnaryPath, {{"x-big", std::string(12 * 1024, 'b')}}),
      GrpcMessage(SerializedRequest()));
  EXPECT_EQ(s.GrpcStatus(), 0);
  EXPECT_EQ(service_.calls.load(), 3);
}

TEST_F(BadInputTest, InvalidBase64InABinaryHeaderIs400Internal) {
  for (const char* value : {"!!!!", "AAE===", "A", "AA=E", "AAE=AAE=", "AA E", "AAE,AAE"}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, {{"x-data-bin", value}}),
                 GrpcMessage(SerializedRequest()));
    EXPECT_TRUE(s.trailers_only()) << value;
    EXPECT_EQ(s.Header(":status"), "400") << value;
    EXPECT_EQ(s.GrpcStatus(), static_cast<int>(StatusCode::kInternal)) << value;
    ExpectGoodCall();
  }
}

TEST_F(BadInputTest, PaddedAndUnpaddedBase64AreBothAccepted) {
  for (const char* value : {"AAE=", "AAE", "AP8A/w==", "AP8A/w"}) {
    const RawStream& s =
        Exchange(GrpcRequestHeaders(kUnaryPath, {{"x-data-bin", value}}),
                 GrpcMessage(SerializedRequest()));
    EXPECT_EQ(s.GrpcStatus(), 0) << value;
    const std::string expected = std::string(value).starts_with("AAE")
                                     ? std::string("\x00\x01", 2)
                                     : std::string("\x00\xff\x00\xff", 4);
    EXPECT_EQ(service_.last_bin(), expected) << value;
  }
}

TEST_F(BadInputTest, MessageSplitIntoTinyFramesIsReassembled) {
  const std::string message = GrpcMessage(SerializedRequest(3000));
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  for (size_t i = 0; i < message.size(); ++i) {
    client_->SendData(id, message.substr(i, 1), i + 1 == message.size());
  }
  ASSERT_TRUE(client_->WaitForClose(id));
  const RawStream& s = client_->stream(id);
  EXPECT_EQ(s.GrpcStatus(), 0);
  ASSERT_TRUE(s.Messages().has_value());
  ExpectGoodCall();
}

TEST_F(BadInputTest, RequestTrailersEndTheRequest) {
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(id, GrpcMessage(SerializedRequest()));
  client_->SendTrailers(id, {{"x-trailer", "t"}});
  ASSERT_TRUE(client_->WaitForClose(id));
  EXPECT_EQ(client_->stream(id).GrpcStatus(), 0);
  ExpectGoodCall();
}

TEST_F(BadInputTest, ResetMidRequestFreesEverything) {
  const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(id, GrpcPrefix(0, 1024 * 1024));
  client_->SendData(id, std::string(300 * 1024, 'p'));
  // The body is on its way; make sure the server holds some of it before the reset.
  client_->Ping();
  ASSERT_TRUE(client_->RunUntil([this] { return client_->pings_acked() >= 1; }));
  DrainServer();
  EXPECT_GT(server_pool_.Stats().blocks_out, 0u) << "nothing buffered: the test proves nothing";
  client_->Reset(id, NGHTTP2_CANCEL);
  ASSERT_TRUE(client_->WaitForClose(id));
  ExpectGoodCall();
  DrainServer();
  EXPECT_EQ(server_pool_.Stats().blocks_out, 0u) << "a reset stream left buffers pinned";
  EXPECT_EQ(service_.calls.load(), 1);
}

TEST_F(BadInputTest, ManyStreamsResetRightAwayLeaveTheConnectionUsable) {
  // 1000 is nghttp2's reset burst allowance (rill sets 1000, then 33/s).
  constexpr int kStreams = 1000;
  for (int i = 0; i < kStreams; ++i) {
    const int32_t id = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
    ASSERT_GT(id, 0);
    if (i % 2 == 0) client_->SendData(id, GrpcPrefix(0, 100));
    client_->Reset(id, NGHTTP2_CANCEL);
  }
  client_->Ping();
  ASSERT_TRUE(client_->RunUntil([this] { return client_->pings_acked() >= 1; }));
  EXPECT_FALSE(client_->disconnected());
  EXPECT_FALSE(client_->goaway_error().has_value())
      << "GOAWAY code " << client_->goaway_error().value_or(0);
  ExpectGoodCall();
  EXPECT_EQ(service_.calls.load(), 1);
  DrainServer();
  EXPECT_EQ(server_pool_.Stats().blocks_out, 0u);
}

TEST_F(BadInputTest, ServerAdvertisesItsLimits) {
  ASSERT_TRUE(client_->RunUntil([this] { return !client_->server_settings().empty(); }));
  const auto& settings = client_->server_settings();
  EXPECT_EQ(settings.at(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), 1000u);
  EXPECT_EQ(settings.at(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE), 16u * 1024);
}

TEST_F(BadInputTest, StreamsBeyondMaxConcurrentStreamsAreRefused) {
  client_.reset();
  server_.reset();
  ServerOptions options;
  options.max_concurrent_streams = 2;
  StartServer(options);
  // All three streams leave before the client has read the server's SETTINGS (nghttp2 would
  // otherwise hold the third back itself).
  // Two calls held open (a prefix announcing a body that has not come yet).
  const std::string message = GrpcMessage(SerializedRequest());
  const int32_t a = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  const int32_t b = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(a, message.substr(0, 5));
  client_->SendData(b, message.substr(0, 5));
  const int32_t c = client_->OpenStream(GrpcRequestHeaders(kUnaryPath));
  client_->SendData(c, message, true);
  ASSERT_TRUE(client_->WaitForClose(c));
  EXPECT_TRUE(client_->stream(c).header_blocks.empty());
  EXPECT_THAT(client_->stream(c).rst_received, Optional(uint32_t{NGHTTP2_REFUSED_STREAM}));
  // The held calls complete; then there is room again.
  client_->SendData(a, message.substr(5), true);
  client_->SendData(b, message.substr(5), true);
  ASSERT_TRUE(client_->WaitForClose(a));
  ASSERT_TRUE(client_->WaitForClose(b));
  EXPECT_EQ(client_->stream(a).GrpcStatus(), 0);
  EXPECT_EQ(client_->stream(b).GrpcStatus(), 0);
  ExpectGoodCall();
}

// A peer that never sends the HTTP/2 preface is disconnected at the handshake timeout; one that
// did is not.
TEST(HandshakeTimeoutTest, SilentPeerIsClosed) {
  LeakCheckingBufferPool pool;
  EchoService service;
  TestServerSetup setup;
  setup.services.push_back(&service);
  setup.options.handshake_timeout = std::chrono::milliseconds(200);
  setup.pool = &pool;
  auto server = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server, nullptr);

  auto good = RawH2Client::Connect("127.0.0.1", server->port());
  ASSERT_NE(good, nullptr);
  RawH2Client::Options silent_options;
  silent_options.send_preface = false;
  auto silent = RawH2Client::Connect("127.0.0.1", server->port(), silent_options);
  ASSERT_NE(silent, nullptr);
  ASSERT_TRUE(silent->WaitForDisconnect()) << "the silent peer was never closed";

  // The good connection, older than the silent one, outlived the timeout.
  const int32_t id = good->OpenStream(GrpcRequestHeaders(kUnaryPath));
  good->SendData(id, GrpcMessage(SerializedRequest()), true);
  ASSERT_TRUE(good->WaitForClose(id));
  EXPECT_EQ(good->stream(id).GrpcStatus(), 0);
  EXPECT_FALSE(good->disconnected());

  good.reset();
  silent.reset();
  server.reset();
  EXPECT_EQ(pool.CheckAndReset(), "");
}

TEST(HandshakeTimeoutTest, PartialPrefaceIsClosedToo) {
  EchoService service;
  TestServerSetup setup;
  setup.services.push_back(&service);
  setup.options.handshake_timeout = std::chrono::milliseconds(200);
  auto server = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server, nullptr);
  RawH2Client::Options options;
  options.send_preface = false;
  auto client = RawH2Client::Connect("127.0.0.1", server->port(), options);
  ASSERT_NE(client, nullptr);
  client->SendRawBytes("PRI * HTTP/2.0\r\n");  // 16 of the preface's 24 bytes
  ASSERT_TRUE(client->WaitForDisconnect());
}

}  // namespace
}  // namespace rill::test
