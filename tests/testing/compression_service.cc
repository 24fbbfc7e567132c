#include "tests/testing/compression_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "rill/server_stream.h"

namespace rill::test {

namespace {

rill::Status CheckExpectation(const ServerContext& context, bool expect_compressed) {
  if (context.request_compressed() == expect_compressed) return rill::Status();
  return rill::Status(StatusCode::kInvalidArgument,
                      expect_compressed ? "request was not compressed" : "request was compressed");
}

void ApplyResponseEncodingHeader(ServerContext& context) {
  if (auto encoding = context.client_metadata().Get(kResponseEncodingKey)) {
    context.set_compression(*encoding);
  }
}

}  // namespace

void CompressionTestService::Saw(const ServerContext& context, std::string& flags) {
  ++requests_seen_;
  if (context.request_compressed()) ++compressed_requests_seen_;
  if (!flags.empty()) flags += ',';
  flags += context.request_compressed() ? '1' : '0';
}

rill::Status CompressionTestService::UnaryCall(ServerContext& context, const SimpleRequest& request,
                                               SimpleResponse& response) {
  std::string flags;
  Saw(context, flags);
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  context.AddTrailingMetadata(kRequestEncodingKey, context.request_encoding());
  if (request.has_expect_compressed()) {
    rill::Status status = CheckExpectation(context, request.expect_compressed().value());
    if (!status.ok()) return status;
  }
  if (request.response_size() < 0) {
    return rill::Status(StatusCode::kInvalidArgument, "negative response_size");
  }
  if (request.has_response_compressed()) {
    context.set_compression(request.response_compressed().value() ? "gzip" : "identity");
  }
  ApplyResponseEncodingHeader(context);
  response.mutable_payload()->set_body(std::string(request.response_size(), '\0'));
  return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::StreamingOutputCall(
    ServerContext& context, const StreamingOutputCallRequest& request,
    ServerWriter<StreamingOutputCallResponse>& writer) {
  std::string flags;
  Saw(context, flags);
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  ApplyResponseEncodingHeader(context);
  const bool any_compressed =
      std::any_of(request.response_parameters().begin(), request.response_parameters().end(),
                  [](const auto& p) { return p.has_compressed() && p.compressed().value(); });
  if (any_compressed && context.compression().empty()) context.set_compression("gzip");
  StreamingOutputCallResponse response;
  for (const auto& parameters : request.response_parameters()) {
    response.mutable_payload()->set_body(std::string(std::max(parameters.size(), 0), '\0'));
    WriteOptions options;
    options.no_compression = parameters.has_compressed() && !parameters.compressed().value();
    if (!co_await writer.Write(response, options)) {
      co_return rill::Status(StatusCode::kCancelled, "the call ended while writing");
    }
  }
  co_return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::StreamingInputCall(
    ServerContext& context, ServerReader<StreamingInputCallRequest>& reader,
    StreamingInputCallResponse& response) {
  std::string flags;
  StreamingInputCallRequest request;
  int32_t total = 0;
  rill::Status status;
  while (co_await reader.Read(&request)) {
    Saw(context, flags);
    if (status.ok() && request.has_expect_compressed()) {
      status = CheckExpectation(context, request.expect_compressed().value());
    }
    total += static_cast<int32_t>(request.payload().body().size());
  }
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  if (!status.ok()) co_return status;
  response.set_aggregated_payload_size(total);
  co_return rill::Status();
}

Awaitable<rill::Status> CompressionTestService::FullDuplexCall(ServerContext& context,
                                                               FullDuplexServerStream& stream) {
  ApplyResponseEncodingHeader(context);
  std::string flags;
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  while (co_await stream.Read(&request)) {
    Saw(context, flags);
    for (const auto& parameters : request.response_parameters()) {
      // The encoding is fixed once the response headers are out; before that a message that
      // asks for compression turns it on for the call.
      if (context.compression().empty() && parameters.has_compressed() &&
          parameters.compressed().value()) {
        context.set_compression("gzip");
      }
      response.mutable_payload()->set_body(std::string(std::max(parameters.size(), 0), '\0'));
      WriteOptions options;
      options.no_compression = parameters.has_compressed() && !parameters.compressed().value();
      if (!co_await stream.Write(response, options)) {
        co_return rill::Status(StatusCode::kCancelled, "the call ended while writing");
      }
    }
  }
  context.AddTrailingMetadata(kRequestCompressedKey, flags);
  co_return rill::Status();
}

rill::Status CallRecorder::OnCallStart(ServerContext& /*context*/) { return rill::Status(); }

void CallRecorder::OnCallEnd(ServerContext& context, rill::Status& status) {
  std::lock_guard lock(mu_);
  calls_.push_back(Call{std::string(context.method()), std::string(context.peer()), status.code(),
                        std::string(status.message())});
}

std::vector<CallRecorder::Call> CallRecorder::calls() const {
  std::lock_guard lock(mu_);
  return calls_;
}

void CallRecorder::Clear() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

CompressionFixture::~CompressionFixture() { Stop(); }

bool CompressionFixture::Start() {
  TestServerSetup server;
  server.services.push_back(&service_);
  server.interceptors.push_back(recorder_);
  server.options = setup_.server_options;
  server.reactor_count = setup_.server_reactors;
  server.pool = setup_.server_pool;
  if (setup_.server_compressors) {
    server.compressors = *setup_.server_compressors;
  } else {
    server_counters_ = CountingBuiltIns();
    server.compressors = AsCompressors(server_counters_);
  }
  server_ = TestServer::Start(Transport::kTcp, server);
  if (server_ == nullptr) return false;

  ChannelOptions options = setup_.channel_options;
  if (setup_.channel_compressors) {
    options.compressors = *setup_.channel_compressors;
  } else {
    client_counters_ = CountingBuiltIns();
    options.compressors = AsCompressors(client_counters_);
  }
  channel_ = NewChannel(std::move(options));
  if (channel_ == nullptr) return false;
  stub_ = std::make_unique<grpc::testing::TestService::Stub>(channel_);
  return true;
}

std::shared_ptr<Channel> CompressionFixture::NewChannel(ChannelOptions options) const {
  return server_->NewChannel(std::move(options));
}

void CompressionFixture::Stop() {
  stub_.reset();
  channel_.reset();
  server_.reset();
}

void CompressionFixture::ExpectCalls(std::string_view encoding, Calls expected) {
  SCOPED_TRACE("calls of the counting " + std::string(encoding) + " compressors");
  CountingCompressor* client = client_counter(encoding);
  CountingCompressor* server = server_counter(encoding);
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  const auto expect = [](int want, int got, const char* what) {
    if (want != kUnchecked) {
      EXPECT_EQ(got, want) << what;
    }
  };
  expect(expected.client_compress, client->compress_calls(), "client compress");
  expect(expected.server_decompress, server->decompress_calls(), "server decompress");
  expect(expected.server_compress, server->compress_calls(), "server compress");
  expect(expected.client_decompress, client->decompress_calls(), "client decompress");
}

CountingCompressor* CompressionFixture::server_counter(std::string_view name) {
  auto it = server_counters_.find(name);
  return it == server_counters_.end() ? nullptr : it->second.get();
}

CountingCompressor* CompressionFixture::client_counter(std::string_view name) {
  auto it = client_counters_.find(name);
  return it == client_counters_.end() ? nullptr : it->second.get();
}

void PrepareContext(ClientContext& context, std::string_view encoding,
                    std::string_view response_encoding) {
  context.set_timeout(std::chrono::seconds(30));
  if (!encoding.empty()) context.set_compression(encoding);
  if (!response_encoding.empty()) context.AddMetadata(kResponseEncodingKey, response_encoding);
}

void ExpectGoodUnaryCall(grpc::testing::TestService::Stub& stub, std::string_view encoding,
                         size_t size) {
  SCOPED_TRACE("a good call with encoding \"" + std::string(encoding) + "\"");
  ClientContext context;
  context.set_timeout(std::chrono::seconds(30));
  context.set_compression(encoding);
  const SimpleRequest request = ZerosRequest(size, static_cast<int32_t>(size));
  SimpleResponse response;
  const rill::Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.payload().body().size(), size);
  EXPECT_TRUE(AllZeros(response.payload().body()));
  const bool compressed = !encoding.empty() && encoding != "identity";
  EXPECT_EQ(TrailerOf(context, kRequestCompressedKey), compressed ? "1" : "0");
}

}  // namespace rill::test
