// The RPC-level compression tests' server: a grpc.testing.TestService that reports what
// compression it saw, and a server + channel pair wired with counting compressors
// (tests/testing/codecs.h) on both sides.
//
//   rill::test::CompressionFixture f;                 // server and channel on loopback TCP
//   ASSERT_TRUE(f.Start());
//   rill::ClientContext ctx;
//   ctx.set_compression("gzip");
//   grpc::testing::SimpleResponse response;
//   rill::Status s = f.stub().UnaryCall(ctx, ZerosRequest(10000, 10000), &response);
//   EXPECT_EQ(TrailerOf(ctx, kRequestCompressedKey), "1");
//   EXPECT_EQ(f.server_counter("gzip")->decompress_calls(), 1);
//
// The service's handlers report in the response trailers:
//   x-request-compressed  "1"/"0" per request message, comma-separated, in arrival order
//   x-request-encoding    the request's grpc-encoding ("" without one; UnaryCall only)
// and obey this request header:
//   x-response-encoding   ServerContext::set_compression(value) before the first response
//
// Thread safety: thread-compatible; used from the test thread (the service itself is
// thread-safe).
#ifndef RILL_TESTS_TESTING_COMPRESSION_SERVICE_H_
#define RILL_TESTS_TESTING_COMPRESSION_SERVICE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/compression.h"
#include "rill/interceptor.h"
#include "rill/server.h"
#include "tests/testing/codecs.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {

inline constexpr std::string_view kRequestCompressedKey = "x-request-compressed";
inline constexpr std::string_view kRequestEncodingKey = "x-request-encoding";
inline constexpr std::string_view kResponseEncodingKey = "x-response-encoding";

// grpc.testing.TestService with the interop semantics of the compression cases
// (expect_compressed, response_compressed, ResponseParameters.compressed) and the reporting
// described at the top of this file. Thread-safe.
class CompressionTestService final : public grpc::testing::TestService::Service {
 public:
  rill::Status UnaryCall(ServerContext& context, const grpc::testing::SimpleRequest& request,
                         grpc::testing::SimpleResponse& response) override;
  Awaitable<rill::Status> StreamingOutputCall(
      ServerContext& context, const grpc::testing::StreamingOutputCallRequest& request,
      ServerWriter<grpc::testing::StreamingOutputCallResponse>& writer) override;
  Awaitable<rill::Status> StreamingInputCall(
      ServerContext& context, ServerReader<grpc::testing::StreamingInputCallRequest>& reader,
      grpc::testing::StreamingInputCallResponse& response) override;
  Awaitable<rill::Status> FullDuplexCall(
      ServerContext& context,
      ServerReaderWriter<grpc::testing::StreamingOutputCallResponse,
                         grpc::testing::StreamingOutputCallRequest>& stream) override;

  // Request messages that reached a handler, and how many of them were compressed.
  [[nodiscard]] int requests_seen() const { return requests_seen_.load(); }
  [[nodiscard]] int compressed_requests_seen() const { return compressed_requests_seen_.load(); }

 private:
  void Saw(const ServerContext& context, std::string& flags);

  std::atomic<int> requests_seen_{0};
  std::atomic<int> compressed_requests_seen_{0};
};

// Records, for every call the server starts, the client's address and the final status, so that
// a test can tell that two calls shared one connection. Thread-safe.
class CallRecorder final : public ServerInterceptor {
 public:
  struct Call {
    std::string method;
    std::string peer;
    StatusCode code = StatusCode::kUnknown;
    std::string message;
  };
  rill::Status OnCallStart(ServerContext& context) override;
  void OnCallEnd(ServerContext& context, rill::Status& status) override;
  [[nodiscard]] std::vector<Call> calls() const;
  void Clear();

 private:
  mutable std::mutex mu_;
  std::vector<Call> calls_;
};

struct FixtureSetup {
  ServerOptions server_options;
  // Replaces the server's compressors when set (empty vector: no compressors at all).
  std::optional<std::vector<std::shared_ptr<Compressor>>> server_compressors;
  BufferPool* server_pool = nullptr;
  size_t server_reactors = 1;
  ChannelOptions channel_options;
  // Replaces the channel's compressors when set.
  std::optional<std::vector<std::shared_ptr<Compressor>>> channel_compressors;
};

// A server running CompressionTestService and a CallRecorder on 127.0.0.1 (one reactor unless
// the setup says otherwise), and one channel to it. By default both sides use
// CountingCompressor wrappers of the built-ins.
// A count ExpectCalls() leaves unchecked.
inline constexpr int kUnchecked = -1;

class CompressionFixture {
 public:
  CompressionFixture() = default;
  ~CompressionFixture();
  CompressionFixture(const CompressionFixture&) = delete;
  CompressionFixture& operator=(const CompressionFixture&) = delete;

  // Options and compressors; change them before Start().
  [[nodiscard]] FixtureSetup& setup() { return setup_; }

  // Starts the server and creates the channel; false (with a test failure) when either fails.
  [[nodiscard]] bool Start();
  // Destroys the channel and the server (before the leak check at the end of a test).
  void Stop();

  [[nodiscard]] grpc::testing::TestService::Stub& stub() { return *stub_; }
  [[nodiscard]] Channel& channel() { return *channel_; }
  [[nodiscard]] int port() const { return server_->port(); }
  [[nodiscard]] CompressionTestService& service() { return service_; }
  [[nodiscard]] CallRecorder& recorder() { return *recorder_; }
  // The counting wrappers (null when the setup replaced that side's compressors).
  [[nodiscard]] CountingCompressor* server_counter(std::string_view name);
  [[nodiscard]] CountingCompressor* client_counter(std::string_view name);

  // A second channel to the same server.
  std::shared_ptr<Channel> NewChannel(ChannelOptions options) const;

  // Expects the counting wrappers of `encoding` to have counted these calls (kUnchecked: any).
  struct Calls {
    int client_compress;
    int server_decompress;
    int server_compress;
    int client_decompress;
  };
  void ExpectCalls(std::string_view encoding, Calls expected);

 private:
  FixtureSetup setup_;
  CompressionTestService service_;
  std::shared_ptr<CallRecorder> recorder_ = std::make_shared<CallRecorder>();
  CounterMap server_counters_;
  CounterMap client_counters_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::TestService::Stub> stub_;
};

// Sets `context` up for a compression test: a 30 s deadline, requests compressed with `encoding`
// (unless empty), and the handler asked for `response_encoding` (unless empty) through
// kResponseEncodingKey.
void PrepareContext(ClientContext& context, std::string_view encoding,
                    std::string_view response_encoding = "");

// A unary call that must succeed: request and response `size` zeros each, compressed with
// `encoding` ("" for none). Adds a test failure otherwise.
void ExpectGoodUnaryCall(grpc::testing::TestService::Stub& stub, std::string_view encoding,
                         size_t size = 20000);

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_COMPRESSION_SERVICE_H_
