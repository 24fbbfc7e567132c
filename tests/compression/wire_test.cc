// Compression headers as they appear on the wire, read with a raw nghttp2 client
// (tests/http2/raw_h2_client.h): rill's client does not expose reserved headers such as
// grpc-accept-encoding and grpc-encoding.
//
//   - an encoding the server does not have: UNIMPLEMENTED, and grpc-accept-encoding lists exactly
//     the server's encodings; a good call follows on the same connection;
//   - a client whose grpc-accept-encoding leaves out the request's encoding gets its response
//     uncompressed (no grpc-encoding, flag 0).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/http2/raw_h2_client.h"
#include "tests/testing/codecs.h"
#include "tests/testing/compression_service.h"

namespace rill::test {
namespace {

constexpr char kUnaryPath[] = "/grpc.testing.TestService/UnaryCall";
constexpr size_t kSize = 20000;

// gzip (RFC 1952) by zlib itself, independent of rill's compressors.
std::string Gzip(std::string_view data) { return ZlibCompress(data, kGzipWindowBits); }

// The answer lists the server's own encodings, whatever it registered; a good call follows on
// the same HTTP/2 connection.
TEST(UnknownEncodingWireTest, AnswerListsTheServersEncodings) {
  struct Case {
    std::optional<std::vector<std::shared_ptr<Compressor>>> server_compressors;
    std::string expected;
  };
  std::vector<Case> cases;
  cases.push_back({std::nullopt, "identity,gzip,deflate,zstd"});
  cases.push_back({std::vector<std::shared_ptr<Compressor>>{GzipCompressor()}, "identity,gzip"});
  cases.push_back(
      {std::vector<std::shared_ptr<Compressor>>{
           ZstdCompressor(), std::make_shared<RenamedCompressor>("x-custom", DeflateCompressor())},
       "identity,zstd,x-custom"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    CompressionFixture fixture;
    fixture.setup().server_compressors = c.server_compressors;
    ASSERT_TRUE(fixture.Start());
    auto client = RawH2Client::Connect("127.0.0.1", fixture.port());
    ASSERT_NE(client, nullptr);
    const std::string body = Gzip(ZerosRequest(kSize, 10).SerializeAsString());
    const int32_t bad = client->OpenStream(GrpcRequestHeaders(
        kUnaryPath, {{"grpc-encoding", "snappy-test"}, {"grpc-accept-encoding", "identity"}}));
    ASSERT_GT(bad, 0);
    client->SendData(bad, GrpcMessage(body, 1), /*end_stream=*/true);
    ASSERT_TRUE(client->WaitForClose(bad));
    const RawStream& refused = client->stream(bad);
    EXPECT_EQ(refused.GrpcStatus(), 12);
    EXPECT_EQ(refused.Trailer("grpc-accept-encoding"), c.expected);

    // The same connection, a request the server can read.
    const bool has_gzip = c.expected.find("gzip") != std::string::npos;
    const int32_t good = client->OpenStream(GrpcRequestHeaders(
        kUnaryPath, has_gzip ? RawHeaderList{{"grpc-encoding", "gzip"}} : RawHeaderList{}));
    client->SendData(
        good,
        has_gzip ? GrpcMessage(body, 1) : GrpcMessage(ZerosRequest(kSize, 10).SerializeAsString()),
        /*end_stream=*/true);
    ASSERT_TRUE(client->WaitForClose(good));
    EXPECT_EQ(client->stream(good).GrpcStatus(), 0);
    EXPECT_FALSE(client->disconnected());
    client.reset();
    fixture.Stop();
  }
}

// A gzip request from a client whose grpc-accept-encoding leaves gzip out: the server must not
// answer in kind.
TEST(AcceptEncodingWireTest, ResponseStaysUncompressedWhenTheClientDoesNotAcceptIt) {
  CompressionFixture fixture;
  ASSERT_TRUE(fixture.Start());
  auto client = RawH2Client::Connect("127.0.0.1", fixture.port());
  ASSERT_NE(client, nullptr);
  const std::string body = Gzip(ZerosRequest(100, kSize).SerializeAsString());
  for (const char* accept : {"identity", "identity,deflate", "", "identity, gzip"}) {
    SCOPED_TRACE(std::string("grpc-accept-encoding: ") + accept);
    RawHeaderList extra = {{"grpc-encoding", "gzip"}};
    if (*accept != '\0') extra.push_back({"grpc-accept-encoding", accept});
    const int32_t id = client->OpenStream(GrpcRequestHeaders(kUnaryPath, extra));
    client->SendData(id, GrpcMessage(body, 1), /*end_stream=*/true);
    ASSERT_TRUE(client->WaitForClose(id));
    const RawStream& s = client->stream(id);
    EXPECT_EQ(s.GrpcStatus(), 0);
    ASSERT_GE(s.data.size(), 5u);
    const bool accepts_gzip = std::string_view(accept).find("gzip") != std::string_view::npos;
    EXPECT_EQ(s.data[0], accepts_gzip ? '\1' : '\0');
    EXPECT_EQ(s.Header("grpc-encoding"),
              accepts_gzip ? std::optional<std::string>("gzip") : std::nullopt);
  }
  client.reset();
  fixture.Stop();
}

}  // namespace
}  // namespace rill::test
