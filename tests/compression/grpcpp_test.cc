// Compression between rill and libgrpc++ 1.51 in one process, both ways, gzip and deflate, unary
// and bidi streaming: the four standard cases (client-compressed and server-compressed, unary
// and streaming) in each direction, per-message opt-outs, and a rill server choosing an
// encoding libgrpc++ does not accept (zstd).
//
// libgrpc++ has no public way to tell whether a received message was compressed; libgrpc 1.51
// exports test-only functions that report a call's last message flags and its incoming
// encoding (declared in its internal call_test_only.h, with C++ linkage). They are declared
// here, as tests/peers/cpp/message_flags.h does for the interop peers.
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpc/testing/test.grpc.pb.h"
#include "tests/testing/compression_service.h"

uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(grpc_call* call);
uint32_t grpc_call_test_only_get_encodings_accepted_by_peer(grpc_call* call);

namespace rill::test {
namespace {

using GrpcppTestService = grpc::testing::grpcpp::TestService;

constexpr size_t kSize = 20000;
constexpr char kPeerAcceptsKey[] = "x-peer-accepts";

// libgrpc's internal message flags: set on a message that arrived with the compressed flag
// (before / after its decompression filter inflated it).
constexpr uint32_t kInternalCompress = 0x80000000u;
constexpr uint32_t kInternalWasCompressed = 0x40000000u;

bool LastMessageWasCompressed(grpc_call* call) {
  return (grpc_call_test_only_get_message_flags(call) &
          (kInternalCompress | kInternalWasCompressed)) != 0;
}

grpc_compression_algorithm AlgorithmOf(std::string_view encoding) {
  grpc_compression_algorithm algorithm = GRPC_COMPRESS_NONE;
  const grpc_slice name = grpc_slice_from_copied_buffer(encoding.data(), encoding.size());
  if (grpc_compression_algorithm_parse(name, &algorithm) == 0) algorithm = GRPC_COMPRESS_NONE;
  grpc_slice_unref(name);
  return algorithm;
}

std::string IncomingEncoding(grpc_call* call) {
  const char* name = nullptr;
  grpc_compression_algorithm_name(grpc_call_test_only_get_compression_algorithm(call), &name);
  return name == nullptr ? "" : name;
}

std::string MetadataValue(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                          std::string_view key) {
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return "<absent>";
  return std::string(it->second.data(), it->second.size());
}

// ---------------------------------------------------------------------------------------------
// libgrpc++'s side: the same reporting as CompressionTestService, from libgrpc's call flags.

class GrpcppService final : public GrpcppTestService::Service {
 public:
  grpc::Status UnaryCall(grpc::ServerContext* context, const SimpleRequest* request,
                         SimpleResponse* response) override {
    grpc_call* call = context->c_call();
    context->AddTrailingMetadata(std::string(kRequestCompressedKey),
                                 LastMessageWasCompressed(call) ? "1" : "0");
    context->AddTrailingMetadata(std::string(kRequestEncodingKey), IncomingEncoding(call));
    context->AddTrailingMetadata(
        kPeerAcceptsKey, std::to_string(grpc_call_test_only_get_encodings_accepted_by_peer(call)));
    ApplyResponseEncoding(context);
    response->mutable_payload()->set_body(std::string(request->response_size(), '\0'));
    return grpc::Status::OK;
  }

  grpc::Status FullDuplexCall(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream)
      override {
    ApplyResponseEncoding(context);
    std::string flags;
    StreamingOutputCallRequest request;
    StreamingOutputCallResponse response;
    while (stream->Read(&request)) {
      if (!flags.empty()) flags += ',';
      flags += LastMessageWasCompressed(context->c_call()) ? '1' : '0';
      for (const auto& parameters : request.response_parameters()) {
        response.mutable_payload()->set_body(std::string(parameters.size(), '\0'));
        grpc::WriteOptions options;
        if (parameters.has_compressed() && !parameters.compressed().value()) {
          options.set_no_compression();
        }
        if (!stream->Write(response, options)) return grpc::Status::CANCELLED;
      }
    }
    context->AddTrailingMetadata(std::string(kRequestCompressedKey), flags);
    return grpc::Status::OK;
  }

 private:
  static void ApplyResponseEncoding(grpc::ServerContext* context) {
    const std::string encoding = MetadataValue(context->client_metadata(), kResponseEncodingKey);
    if (encoding != "<absent>") context->set_compression_algorithm(AlgorithmOf(encoding));
  }
};

class GrpcppServer {
 public:
  bool Start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    return server_ != nullptr && port_ != 0;
  }
  ~GrpcppServer() {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
      server_->Wait();
    }
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  GrpcppService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

std::chrono::system_clock::time_point GrpcppDeadline() {
  return std::chrono::system_clock::now() + std::chrono::seconds(30);
}

// ---------------------------------------------------------------------------------------------
// rill client → libgrpc++ server.

class RillToGrpcppTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.Start());
    counters_ = CountingBuiltIns();
    ChannelOptions options;
    options.compressors = AsCompressors(counters_);
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(server_.port()), options);
    ASSERT_TRUE(channel.ok()) << channel.status();
    channel_ = std::move(*channel);
    stub_ = std::make_unique<grpc::testing::TestService::Stub>(channel_);
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
  }
  const std::string& encoding() const { return GetParam(); }

  GrpcppServer server_;
  CounterMap counters_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::TestService::Stub> stub_;
};

TEST_P(RillToGrpcppTest, ClientCompressedUnary) {
  ClientContext context;
  PrepareContext(context, encoding());
  SimpleResponse response;
  const rill::Status status = stub_->UnaryCall(context, ZerosRequest(kSize, kSize), &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1");
  EXPECT_EQ(TrailerOf(context, kRequestEncodingKey), encoding());
  EXPECT_EQ(counters_[encoding()]->compress_calls(), 1);
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_TRUE(AllZeros(response.payload().body()));
  // libgrpc reads rill's "identity,gzip,deflate,zstd" as accepting gzip and deflate.
  const uint32_t accepts = static_cast<uint32_t>(std::stoul(TrailerOf(context, kPeerAcceptsKey)));
  EXPECT_TRUE(accepts & (1u << GRPC_COMPRESS_GZIP));
  EXPECT_TRUE(accepts & (1u << GRPC_COMPRESS_DEFLATE));
}

TEST_P(RillToGrpcppTest, ServerCompressedUnary) {
  ClientContext context;
  PrepareContext(context, "", encoding());
  SimpleResponse response;
  const rill::Status status = stub_->UnaryCall(context, ZerosRequest(100, kSize), &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0");
  EXPECT_TRUE(context.response_compressed());
  EXPECT_EQ(counters_[encoding()]->decompress_calls(), 1);
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_TRUE(AllZeros(response.payload().body()));
}

TEST_P(RillToGrpcppTest, ClientCompressedStreaming) {
  ClientContext context;
  PrepareContext(context, encoding());
  auto stream = stub_->FullDuplexCall(context);
  StreamingOutputCallResponse response;
  for (int i = 0; i < 4; ++i) {
    WriteOptions options;
    options.no_compression = i == 2;
    ASSERT_TRUE(stream->BlockingWrite(StreamRequest(kSize + i, {{1000, {}}}), options));
    ASSERT_TRUE(stream->BlockingRead(&response));
    EXPECT_FALSE(context.response_compressed());
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "1,1,0,1");
}

TEST_P(RillToGrpcppTest, ServerCompressedStreaming) {
  ClientContext context;
  PrepareContext(context, "", encoding());
  auto stream = stub_->FullDuplexCall(context);
  const std::vector<std::optional<bool>> compressed = {std::nullopt, false, true, std::nullopt};
  StreamingOutputCallResponse response;
  for (size_t i = 0; i < compressed.size(); ++i) {
    ASSERT_TRUE(
        stream->BlockingWrite(StreamRequest(100, {{static_cast<int32_t>(kSize), compressed[i]}})));
    ASSERT_TRUE(stream->BlockingRead(&response));
    EXPECT_EQ(context.response_compressed(), compressed[i].value_or(true)) << "response " << i;
    EXPECT_EQ(response.payload().body().size(), kSize);
    EXPECT_TRUE(AllZeros(response.payload().body()));
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const rill::Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), "0,0,0,0");
  EXPECT_EQ(counters_[encoding()]->decompress_calls(), 3);
}

INSTANTIATE_TEST_SUITE_P(GzipAndDeflate, RillToGrpcppTest, ::testing::Values("gzip", "deflate"),
                         [](const auto& param_info) { return param_info.param; });

// ---------------------------------------------------------------------------------------------
// libgrpc++ client → rill server.

class GrpcppToRillTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fixture_.Start());
    grpc::ChannelArguments args;
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(fixture_.port()),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = GrpcppTestService::NewStub(channel_);
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    fixture_.Stop();
  }
  const std::string& encoding() const { return GetParam(); }

  CompressionFixture fixture_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<GrpcppTestService::Stub> stub_;
};

// The client compresses; rill's server reads it and, by default, answers in kind.
TEST_P(GrpcppToRillTest, ClientCompressedUnaryAnsweredInKind) {
  grpc::ClientContext context;
  context.set_deadline(GrpcppDeadline());
  context.set_compression_algorithm(AlgorithmOf(encoding()));
  SimpleResponse response;
  const grpc::Status status = stub_->UnaryCall(&context, ZerosRequest(kSize, kSize), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto& trailers = context.GetServerTrailingMetadata();
  EXPECT_EQ(MetadataValue(trailers, kRequestCompressedKey), "1");
  EXPECT_EQ(MetadataValue(trailers, kRequestEncodingKey), encoding());
  EXPECT_EQ(fixture_.server_counter(encoding())->decompress_calls(), 1);
  EXPECT_TRUE(LastMessageWasCompressed(context.c_call()));
  EXPECT_EQ(IncomingEncoding(context.c_call()), encoding());
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_TRUE(AllZeros(response.payload().body()));
}

TEST_P(GrpcppToRillTest, ServerCompressedUnary) {
  grpc::ClientContext context;
  context.set_deadline(GrpcppDeadline());
  context.AddMetadata(std::string(kResponseEncodingKey), encoding());
  SimpleResponse response;
  const grpc::Status status = stub_->UnaryCall(&context, ZerosRequest(100, kSize), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(MetadataValue(context.GetServerTrailingMetadata(), kRequestCompressedKey), "0");
  EXPECT_TRUE(LastMessageWasCompressed(context.c_call()));
  EXPECT_EQ(IncomingEncoding(context.c_call()), encoding());
  EXPECT_EQ(fixture_.server_counter(encoding())->compress_calls(), 1);
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_TRUE(AllZeros(response.payload().body()));
}

TEST_P(GrpcppToRillTest, ClientCompressedStreaming) {
  grpc::ClientContext context;
  context.set_deadline(GrpcppDeadline());
  context.set_compression_algorithm(AlgorithmOf(encoding()));
  auto stream = stub_->FullDuplexCall(&context);
  StreamingOutputCallResponse response;
  for (int i = 0; i < 4; ++i) {
    grpc::WriteOptions options;
    if (i == 1) options.set_no_compression();
    ASSERT_TRUE(stream->Write(StreamRequest(kSize + i, {{1000, {}}}), options));
    ASSERT_TRUE(stream->Read(&response));
    // Answered in kind: rill compresses its responses with the request's encoding.
    EXPECT_TRUE(LastMessageWasCompressed(context.c_call())) << "response " << i;
    EXPECT_EQ(response.payload().body().size(), 1000u);
  }
  ASSERT_TRUE(stream->WritesDone());
  const grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(MetadataValue(context.GetServerTrailingMetadata(), kRequestCompressedKey), "1,0,1,1");
  EXPECT_EQ(fixture_.server_counter(encoding())->decompress_calls(), 3);
}

TEST_P(GrpcppToRillTest, ServerCompressedStreaming) {
  grpc::ClientContext context;
  context.set_deadline(GrpcppDeadline());
  context.AddMetadata(std::string(kResponseEncodingKey), encoding());
  auto stream = stub_->FullDuplexCall(&context);
  const std::vector<std::optional<bool>> compressed = {std::nullopt, false, true, std::nullopt};
  StreamingOutputCallResponse response;
  for (size_t i = 0; i < compressed.size(); ++i) {
    ASSERT_TRUE(stream->Write(StreamRequest(100, {{static_cast<int32_t>(kSize), compressed[i]}})));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(LastMessageWasCompressed(context.c_call()), compressed[i].value_or(true))
        << "response " << i;
    EXPECT_EQ(response.payload().body().size(), kSize);
    EXPECT_TRUE(AllZeros(response.payload().body()));
  }
  ASSERT_TRUE(stream->WritesDone());
  const grpc::Status status = stream->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(MetadataValue(context.GetServerTrailingMetadata(), kRequestCompressedKey), "0,0,0,0");
  EXPECT_EQ(fixture_.server_counter(encoding())->compress_calls(), 3);
}

INSTANTIATE_TEST_SUITE_P(GzipAndDeflate, GrpcppToRillTest, ::testing::Values("gzip", "deflate"),
                         [](const auto& param_info) { return param_info.param; });

// libgrpc++ 1.51 does not accept zstd: a rill handler choosing it must answer uncompressed, and
// the call succeeds.
TEST(GrpcppToRillNegotiation, ZstdChoiceIsNotSentToAClientThatLacksIt) {
  CompressionFixture fixture;
  ASSERT_TRUE(fixture.Start());
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(fixture.port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = GrpcppTestService::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(GrpcppDeadline());
  context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  context.AddMetadata(std::string(kResponseEncodingKey), "zstd");
  SimpleResponse response;
  const grpc::Status status = stub->UnaryCall(&context, ZerosRequest(kSize, kSize), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(LastMessageWasCompressed(context.c_call()));
  EXPECT_EQ(response.payload().body().size(), kSize);
  EXPECT_EQ(fixture.server_counter("zstd")->compress_calls(), 0);
  stub.reset();
  channel.reset();
  fixture.Stop();
}

}  // namespace
}  // namespace rill::test
