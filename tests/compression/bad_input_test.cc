// Compressed input a receiver must refuse, sent by real rill peers whose compressors misbehave:
// an encoding the server does not have (UNIMPLEMENTED), corrupt and truncated streams (INTERNAL),
// in both directions, unary and streaming. After each refusal a good call goes over the same
// connection (the server sees the same client address).
//
// The headers of those answers are checked from the wire in wire_test.cc.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tests/testing/codecs.h"
#include "tests/testing/compression_service.h"

namespace rill::test {
namespace {

constexpr size_t kSize = 20000;

// Every call the server saw came from one client address: one connection.
void ExpectOneConnection(const CallRecorder& recorder, size_t expected_calls) {
  const std::vector<CallRecorder::Call> calls = recorder.calls();
  ASSERT_EQ(calls.size(), expected_calls);
  for (const auto& call : calls) {
    EXPECT_EQ(call.peer, calls.front().peer) << "a call arrived on another connection";
  }
}

// Waits (bounded) until the server has ended `count` calls.
bool WaitForCalls(const CallRecorder& recorder, size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (recorder.calls().size() < count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Unknown encoding.

class UnknownEncodingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto compressors = DefaultCompressors();
    compressors.push_back(std::make_shared<RenamedCompressor>("snappy-test", DeflateCompressor()));
    fixture_.setup().channel_compressors = std::move(compressors);
  }
  void TearDown() override { fixture_.Stop(); }

  CompressionFixture fixture_;
};

TEST_F(UnknownEncodingTest, UnaryIsUnimplementedThenAGoodCall) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "snappy-test");
  SimpleResponse response;
  const rill::Status status =
      fixture_.stub().UnaryCall(context, ZerosRequest(kSize, 10), &response);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status;
  EXPECT_EQ(fixture_.service().requests_seen(), 0);

  ExpectGoodUnaryCall(fixture_.stub(), "");
  ExpectGoodUnaryCall(fixture_.stub(), "gzip");
  ExpectOneConnection(fixture_.recorder(), 3);
}

TEST_F(UnknownEncodingTest, StreamingIsUnimplementedThenAGoodCall) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "snappy-test");
  auto stream = fixture_.stub().FullDuplexCall(context);
  // The write may or may not be accepted before the server's answer arrives.
  (void)stream->BlockingWrite(StreamRequest(kSize, {{10, {}}}));
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->BlockingRead(&response));
  const rill::Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status;
  EXPECT_EQ(fixture_.service().requests_seen(), 0);

  ExpectGoodUnaryCall(fixture_.stub(), "zstd");
  ExpectOneConnection(fixture_.recorder(), 2);
}

// Only a compressed message needs the encoding: a call under an unknown grpc-encoding whose
// messages all travel uncompressed (here: smaller than min_compress_size) succeeds.
TEST_F(UnknownEncodingTest, UncompressedMessagesUnderAnUnknownEncodingAreFine) {
  fixture_.setup().channel_options.min_compress_size = 1 << 20;
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "snappy-test");
  SimpleResponse response;
  const rill::Status status =
      fixture_.stub().UnaryCall(context, ZerosRequest(kSize, 100), &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestEncodingKey), "snappy-test");
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0");
  EXPECT_FALSE(context.response_compressed());
}

// ---------------------------------------------------------------------------------------------
// Corrupt and truncated streams.

using BadParam = std::tuple<std::string, BadOutput>;

std::string BadParamName(const ::testing::TestParamInfo<BadParam>& info) {
  return std::get<0>(info.param) +
         (std::get<1>(info.param) == BadOutput::kGarbage ? "_Garbage" : "_Truncated");
}

// Another built-in than `name`, for the good call after the bad one.
std::string OtherEncoding(const std::string& name) { return name == "gzip" ? "zstd" : "gzip"; }

class BadStreamTest : public ::testing::TestWithParam<BadParam> {
 protected:
  void TearDown() override { fixture_.Stop(); }
  const std::string& encoding() const { return std::get<0>(GetParam()); }
  BadOutput bad() const { return std::get<1>(GetParam()); }

  CompressionFixture fixture_;
};

// The client's compressor spoils a request: INTERNAL from the server, then good calls.
TEST_P(BadStreamTest, FromClientUnary) {
  fixture_.setup().channel_compressors =
      BuiltInsWith(std::make_shared<BadCompressor>(BuiltinCompressor(encoding()), bad()));
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, encoding());
  SimpleResponse response;
  const rill::Status status =
      fixture_.stub().UnaryCall(context, ZerosRequest(kSize, 10), &response);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
  EXPECT_EQ(fixture_.service().requests_seen(), 0);

  ExpectGoodUnaryCall(fixture_.stub(), "");
  ExpectGoodUnaryCall(fixture_.stub(), OtherEncoding(encoding()));
  ExpectOneConnection(fixture_.recorder(), 3);
}

// The same in the second message of a bidi stream (the first is compressed properly).
TEST_P(BadStreamTest, FromClientStreaming) {
  fixture_.setup().channel_compressors = BuiltInsWith(
      std::make_shared<BadCompressor>(BuiltinCompressor(encoding()), bad(), /*min_size=*/kSize));
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, encoding());
  auto stream = fixture_.stub().FullDuplexCall(context);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingWrite(StreamRequest(1000, {{100, {}}})));
  ASSERT_TRUE(stream->BlockingRead(&response));
  (void)stream->BlockingWrite(StreamRequest(kSize, {{100, {}}}));
  EXPECT_FALSE(stream->BlockingRead(&response));
  const rill::Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
  EXPECT_EQ(fixture_.service().requests_seen(), 1);

  ExpectGoodUnaryCall(fixture_.stub(), "");
  ExpectOneConnection(fixture_.recorder(), 2);
}

// The server's compressor spoils a response: INTERNAL on the client, then good calls.
TEST_P(BadStreamTest, FromServerUnary) {
  fixture_.setup().server_compressors =
      BuiltInsWith(std::make_shared<BadCompressor>(BuiltinCompressor(encoding()), bad()));
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "", encoding());
  SimpleResponse response;
  const rill::Status status =
      fixture_.stub().UnaryCall(context, ZerosRequest(100, kSize), &response);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;

  ExpectGoodUnaryCall(fixture_.stub(), "");
  ExpectGoodUnaryCall(fixture_.stub(), OtherEncoding(encoding()));
  ExpectOneConnection(fixture_.recorder(), 3);
}

// The same in the second response of a bidi stream.
TEST_P(BadStreamTest, FromServerStreaming) {
  fixture_.setup().server_compressors = BuiltInsWith(
      std::make_shared<BadCompressor>(BuiltinCompressor(encoding()), bad(), /*min_size=*/kSize));
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "", encoding());
  auto stream = fixture_.stub().FullDuplexCall(context);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingWrite(StreamRequest(100, {{1000, {}}})));
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_TRUE(context.response_compressed());
  (void)stream->BlockingWrite(StreamRequest(100, {{static_cast<int32_t>(kSize), {}}}));
  EXPECT_FALSE(stream->BlockingRead(&response));
  const rill::Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;

  ExpectGoodUnaryCall(fixture_.stub(), "");
  ExpectGoodUnaryCall(fixture_.stub(), OtherEncoding(encoding()));
  // The client's reset of the stream may reach the server after the good calls.
  ASSERT_TRUE(WaitForCalls(fixture_.recorder(), 3));
  ExpectOneConnection(fixture_.recorder(), 3);
}

INSTANTIATE_TEST_SUITE_P(AllEncodings, BadStreamTest,
                         ::testing::Combine(::testing::Values("gzip", "deflate", "zstd"),
                                            ::testing::Values(BadOutput::kGarbage,
                                                              BadOutput::kTruncated)),
                         BadParamName);

}  // namespace
}  // namespace rill::test
