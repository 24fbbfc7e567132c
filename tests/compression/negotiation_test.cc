// rill ↔ rill compression negotiation over loopback TCP: every built-in encoding in both
// directions for unary and bidi calls, how the server picks its response encoding, and the knobs
// that turn compression off per message (min_compress_size, WriteOptions::no_compression).
//
// Which codec did the work is observed through counting wrappers of the built-ins registered on
// both sides; whether a message was compressed, through request_compressed() (reported back by
// the service in trailers) and ClientContext::response_compressed().
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tests/testing/compression_service.h"

namespace rill::test {
namespace {

constexpr size_t kSize = 20000;  // compresses well (zeros) and spans a few DATA frames

class EncodingTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { ASSERT_TRUE(fixture_.Start()); }
  void TearDown() override { fixture_.Stop(); }

  // A unary call of kSize zeros each way, the request compressed with `request_encoding` ("" for
  // none) and the handler asked for `response_encoding` ("" for the default): it must end OK with
  // the response's zeros intact and compressed.
  void ExpectUnaryAnsweredCompressed(ClientContext& context, std::string_view request_encoding,
                                     std::string_view response_encoding) {
    PrepareContext(context, request_encoding, response_encoding);
    SimpleResponse response;
    const rill::Status status =
        fixture_.stub().UnaryCall(context, ZerosRequest(kSize, kSize), &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(response.payload().body().size(), kSize);
    EXPECT_TRUE(AllZeros(response.payload().body()));
    EXPECT_TRUE(context.response_compressed());
  }

  CompressionFixture fixture_;
};

// The client compresses its request; the server, by default, answers in the same encoding.
TEST_P(EncodingTest, UnaryClientCompressedAnsweredInKind) {
  const std::string& encoding = GetParam();
  ClientContext context;
  ASSERT_NO_FATAL_FAILURE(ExpectUnaryAnsweredCompressed(context, encoding, ""));
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1");
  EXPECT_EQ(TrailerOf(context, kRequestEncodingKey), encoding);
  fixture_.ExpectCalls(encoding, {1, 1, 1, 1});
}

// An uncompressed request; the handler asks for `encoding` on the response.
TEST_P(EncodingTest, UnaryServerCompressed) {
  const std::string& encoding = GetParam();
  ClientContext context;
  ASSERT_NO_FATAL_FAILURE(ExpectUnaryAnsweredCompressed(context, "", encoding));
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0");
  EXPECT_EQ(TrailerOf(context, kRequestEncodingKey), "");
  fixture_.ExpectCalls(encoding, {0, kUnchecked, 1, 1});
}

// A bidi stream whose requests are compressed: every message arrives compressed and the
// responses come back in the same encoding.
TEST_P(EncodingTest, StreamingClientCompressedAnsweredInKind) {
  const std::string& encoding = GetParam();
  ClientContext context;
  PrepareContext(context, encoding);
  auto stream = fixture_.stub().FullDuplexCall(context);
  StreamingOutputCallResponse response;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        stream->BlockingWrite(StreamRequest(kSize + i, {{static_cast<int32_t>(kSize), {}}})));
    ASSERT_TRUE(stream->BlockingRead(&response)) << "response " << i;
    EXPECT_EQ(response.payload().body().size(), kSize);
    EXPECT_TRUE(context.response_compressed()) << "response " << i;
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_FALSE(stream->BlockingRead(&response));
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1,1,1");
  fixture_.ExpectCalls(encoding, {3, 3, 3, 3});
}

// A bidi stream with plain requests whose handler compresses the responses with `encoding`.
TEST_P(EncodingTest, StreamingServerCompressed) {
  const std::string& encoding = GetParam();
  ClientContext context;
  PrepareContext(context, "", encoding);
  auto stream = fixture_.stub().FullDuplexCall(context);
  StreamingOutputCallResponse response;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(stream->BlockingWrite(StreamRequest(100, {{static_cast<int32_t>(kSize), {}}})));
    ASSERT_TRUE(stream->BlockingRead(&response)) << "response " << i;
    EXPECT_EQ(response.payload().body().size(), kSize);
    EXPECT_TRUE(AllZeros(response.payload().body()));
    EXPECT_TRUE(context.response_compressed()) << "response " << i;
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0,0,0");
  fixture_.ExpectCalls(encoding, {kUnchecked, kUnchecked, 3, 3});
}

// Server streaming (one request, several responses), compressed both ways.
TEST_P(EncodingTest, ServerStreamingBothWays) {
  const std::string& encoding = GetParam();
  ClientContext context;
  PrepareContext(context, encoding);
  // The request must outlive the call: the stub sends it from the channel's reactor.
  const StreamingOutputCallRequest request =
      StreamRequest(kSize, {{1000, {}}, {30000, {}}, {5000, {}}});
  auto reader = fixture_.stub().StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  std::vector<size_t> sizes;
  while (reader->BlockingRead(&response)) {
    sizes.push_back(response.payload().body().size());
    EXPECT_TRUE(context.response_compressed()) << "response " << sizes.size();
  }
  const rill::Status status = reader->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(sizes, (std::vector<size_t>{1000, 30000, 5000}));
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1");
  fixture_.ExpectCalls(encoding, {kUnchecked, kUnchecked, 3, 3});
}

INSTANTIATE_TEST_SUITE_P(BuiltIns, EncodingTest, ::testing::Values("gzip", "deflate", "zstd"),
                         [](const auto& param_info) { return param_info.param; });

class NegotiationTest : public ::testing::Test {
 protected:
  void TearDown() override { fixture_.Stop(); }

  // A unary call of kSize each way with the given request encoding and x-response-encoding.
  rill::Status Call(ClientContext& context, std::string_view request_encoding,
                    std::string_view response_encoding, SimpleResponse* response) {
    context.set_timeout(std::chrono::seconds(30));
    context.set_compression(request_encoding);
    if (!response_encoding.empty()) context.AddMetadata(kResponseEncodingKey, response_encoding);
    return fixture_.stub().UnaryCall(context, ZerosRequest(kSize, kSize), response);
  }

  CompressionFixture fixture_;
};

// The handler picks another encoding the client accepts: the response uses it.
TEST_F(NegotiationTest, HandlerPicksAnotherAcceptedEncoding) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  SimpleResponse response;
  const rill::Status status = Call(context, "gzip", "zstd", &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1");
  EXPECT_TRUE(context.response_compressed());
  fixture_.ExpectCalls("gzip", {kUnchecked, 1, 0, 0});
  fixture_.ExpectCalls("zstd", {kUnchecked, kUnchecked, 1, 1});
}

// "identity" from the handler turns the default (answer in kind) off.
TEST_F(NegotiationTest, HandlerPicksIdentity) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  SimpleResponse response;
  const rill::Status status = Call(context, "deflate", "identity", &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1");
  EXPECT_FALSE(context.response_compressed());
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_EQ(fixture_.server_counter("deflate")->compress_calls(), 0);
}

// A client that accepts only gzip (its channel has only gzip) gets the response uncompressed
// when the handler asks for zstd, deflate or an encoding nobody has.
TEST_F(NegotiationTest, ClientThatDoesNotAcceptTheChoiceGetsUncompressed) {
  CounterMap gzip_only;
  gzip_only.emplace("gzip", std::make_shared<CountingCompressor>(GzipCompressor()));
  fixture_.setup().channel_compressors = AsCompressors(gzip_only);
  ASSERT_TRUE(fixture_.Start());
  for (std::string_view choice : {"zstd", "deflate", "brotli"}) {
    SCOPED_TRACE(choice);
    for (std::string_view request_encoding : {"", "gzip"}) {
      SCOPED_TRACE("request encoding \"" + std::string(request_encoding) + "\"");
      ClientContext context;
      SimpleResponse response;
      const rill::Status status = Call(context, request_encoding, choice, &response);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_FALSE(context.response_compressed());
      EXPECT_EQ(response.payload().body().size(), kSize);
      EXPECT_TRUE(AllZeros(response.payload().body()));
    }
  }
  EXPECT_EQ(fixture_.server_counter("zstd")->compress_calls(), 0);
  EXPECT_EQ(fixture_.server_counter("deflate")->compress_calls(), 0);
  // The accepted choice still works on the same channel.
  ClientContext context;
  SimpleResponse response;
  ASSERT_TRUE(Call(context, "", "gzip", &response).ok());
  EXPECT_TRUE(context.response_compressed());
  EXPECT_EQ(gzip_only["gzip"]->decompress_calls(), 1);
}

// The handler picks an encoding the client accepts but the server does not have: uncompressed.
TEST_F(NegotiationTest, HandlerPicksEncodingTheServerLacks) {
  CounterMap server_gzip_only;
  server_gzip_only.emplace("gzip", std::make_shared<CountingCompressor>(GzipCompressor()));
  fixture_.setup().server_compressors = AsCompressors(server_gzip_only);
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  SimpleResponse response;
  const rill::Status status = Call(context, "", "zstd", &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_FALSE(context.response_compressed());
  EXPECT_EQ(response.payload().body().size(), kSize);
}

// ServerBuilder::ClearCompressors(): compressed requests are refused (UNIMPLEMENTED), responses
// go uncompressed whatever the handler asks for, and plain calls work.
TEST_F(NegotiationTest, ServerWithoutCompressors) {
  fixture_.setup().server_compressors.emplace();  // ClearCompressors()
  ASSERT_TRUE(fixture_.Start());
  {
    ClientContext context;
    SimpleResponse response;
    const rill::Status status = Call(context, "gzip", "", &response);
    EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status;
  }
  {
    ClientContext context;
    SimpleResponse response;
    const rill::Status status = Call(context, "", "gzip", &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_FALSE(context.response_compressed());
  }
  ExpectGoodUnaryCall(fixture_.stub(), "");
}

// ServerOptions::min_compress_size: responses of fewer serialized bytes go uncompressed, the
// rest compressed. ChannelOptions::min_compress_size does the same for requests.
TEST_F(NegotiationTest, MinCompressSizeBothSides) {
  constexpr size_t kMin = 1000;
  fixture_.setup().server_options.min_compress_size = kMin;
  fixture_.setup().channel_options.min_compress_size = kMin;
  ASSERT_TRUE(fixture_.Start());
  for (size_t serialized : {kMin - 1, kMin, kMin + 1, size_t{200}, size_t{50000}}) {
    SCOPED_TRACE("serialized size " + std::to_string(serialized));
    const bool compressed = serialized >= kMin;
    SimpleRequest request = ZerosRequest(0, 0);
    request.set_response_size(static_cast<int32_t>(BodySizeForSerializedResponse(serialized)));
    // The request's own size must match `serialized` with response_size set.
    for (size_t overhead = 0; overhead < 20; ++overhead) {
      request.mutable_payload()->set_body(std::string(serialized - overhead, '\0'));
      if (request.ByteSizeLong() == serialized) break;
    }
    ASSERT_EQ(request.ByteSizeLong(), serialized);
    ClientContext context;
    PrepareContext(context, "gzip");
    SimpleResponse response;
    const rill::Status status = fixture_.stub().UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_EQ(response.ByteSizeLong(), serialized);
    EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), compressed ? "1" : "0");
    EXPECT_EQ(context.response_compressed(), compressed);
  }
}

// WriteOptions::no_compression on both sides of a compressed bidi stream: exactly the marked
// messages go uncompressed.
TEST_F(NegotiationTest, NoCompressionPerMessage) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "gzip");
  auto stream = fixture_.stub().FullDuplexCall(context);
  const std::vector<bool> request_compressed = {true, false, true, false};
  const std::vector<std::optional<bool>> response_compressed = {true, false, std::nullopt, false};
  StreamingOutputCallResponse response;
  for (size_t i = 0; i < request_compressed.size(); ++i) {
    WriteOptions options;
    options.no_compression = !request_compressed[i];
    ASSERT_TRUE(
        stream->BlockingWrite(StreamRequest(kSize, {{5000, response_compressed[i]}}), options));
    ASSERT_TRUE(stream->BlockingRead(&response));
    // Unmarked responses follow the call: compressed (gzip, answered in kind).
    EXPECT_EQ(context.response_compressed(), response_compressed[i].value_or(true))
        << "response " << i;
    EXPECT_EQ(response.payload().body().size(), 5000u);
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1,0,1,0");
  fixture_.ExpectCalls("gzip", {2, 2, 2, 2});
}

// Client streaming: the aggregate arrives whatever the per-message flags were.
TEST_F(NegotiationTest, ClientStreamingMixedFlags) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "zstd");
  grpc::testing::StreamingInputCallResponse response;
  auto writer = fixture_.stub().StreamingInputCall(context, &response);
  size_t total = 0;
  for (size_t i = 0; i < 4; ++i) {
    grpc::testing::StreamingInputCallRequest request;
    request.mutable_payload()->set_body(std::string(10000 * (i + 1), '\0'));
    total += request.payload().body().size();
    request.mutable_expect_compressed()->set_value(i % 2 == 0);
    WriteOptions options;
    options.no_compression = i % 2 != 0;
    ASSERT_TRUE(writer->BlockingWrite(request, options));
  }
  const rill::Status status = writer->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(static_cast<size_t>(response.aggregated_payload_size()), total);
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1,0,1,0");
}

// A message that does not shrink is sent uncompressed even though the call compresses (random
// bytes do not compress).
TEST_F(NegotiationTest, IncompressibleMessageTravelsUncompressed) {
  ASSERT_TRUE(fixture_.Start());
  SimpleRequest request;
  std::string noise(5000, '\0');
  uint32_t state = 12345;
  for (char& c : noise) {
    state = state * 1103515245u + 12345u;
    c = static_cast<char>(state >> 16);
  }
  request.mutable_payload()->set_body(noise);
  request.set_response_size(100);
  ClientContext context;
  PrepareContext(context, "gzip");
  SimpleResponse response;
  const rill::Status status = fixture_.stub().UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0");
  EXPECT_EQ(TrailerOf(context, kRequestEncodingKey), "gzip");
}

// An encoding the handler picks once the response headers are out cannot apply any more (the
// headers carried no grpc-encoding): later responses stay uncompressed.
TEST_F(NegotiationTest, EncodingChosenAfterTheHeadersIsIgnored) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  context.set_timeout(std::chrono::seconds(30));
  auto stream = fixture_.stub().FullDuplexCall(context);
  StreamingOutputCallResponse response;
  // The first response goes out uncompressed, and with it the headers.
  ASSERT_TRUE(stream->BlockingWrite(StreamRequest(100, {{5000, {}}})));
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_FALSE(context.response_compressed());
  // Now the handler asks for gzip (ResponseParameters.compressed = true).
  ASSERT_TRUE(stream->BlockingWrite(StreamRequest(100, {{5000, true}, {5000, {}}})));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(stream->BlockingRead(&response));
    EXPECT_FALSE(context.response_compressed()) << "response " << i;
    EXPECT_EQ(response.payload().body().size(), 5000u);
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(fixture_.server_counter("gzip")->compress_calls(), 0);
}

// A call asking for an encoding its channel does not have fails before anything is sent.
TEST_F(NegotiationTest, UnknownEncodingOnTheClientFailsLocally) {
  ASSERT_TRUE(fixture_.Start());
  ClientContext context;
  PrepareContext(context, "br");
  SimpleResponse response;
  const rill::Status status =
      fixture_.stub().UnaryCall(context, ZerosRequest(kSize, 10), &response);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
  EXPECT_TRUE(fixture_.recorder().calls().empty());
  ExpectGoodUnaryCall(fixture_.stub(), "gzip");
}

// Several client threads on two channels, two server reactors, every encoding at once: the
// per-thread codec contexts must not mix messages.
TEST_F(NegotiationTest, ConcurrentCallsWithMixedEncodings) {
  fixture_.setup().server_reactors = 2;
  ASSERT_TRUE(fixture_.Start());
  auto second = fixture_.NewChannel(ChannelOptions{});
  ASSERT_NE(second, nullptr);
  grpc::testing::TestService::Stub second_stub(second);
  const std::vector<std::string> encodings = {"gzip", "deflate", "zstd", ""};
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto& stub = t % 2 == 0 ? fixture_.stub() : second_stub;
      for (int i = 0; i < 40; ++i) {
        ClientContext context;
        PrepareContext(context, encodings[(t + i) % encodings.size()]);
        context.AddMetadata(kResponseEncodingKey, encodings[(t + 2 * i + 1) % encodings.size()]);
        const size_t size = 1000 + 1237 * ((t * 40 + i) % 17);
        SimpleResponse response;
        const rill::Status status =
            stub.UnaryCall(context, ZerosRequest(size, static_cast<int32_t>(size + 7)), &response);
        if (!status.ok() || response.payload().body().size() != size + 7 ||
            !AllZeros(response.payload().body())) {
          ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

// Many calls with alternating encodings on one channel: contexts are reused per thread and must
// not leak state from one message to the next.
TEST_F(NegotiationTest, AlternatingEncodingsOnOneChannel) {
  ASSERT_TRUE(fixture_.Start());
  const std::vector<std::string> encodings = {"gzip", "", "deflate", "zstd", "identity"};
  for (int round = 0; round < 20; ++round) {
    const std::string& encoding = encodings[round % encodings.size()];
    ExpectGoodUnaryCall(fixture_.stub(), encoding, 1000 + 997 * round);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace rill::test
