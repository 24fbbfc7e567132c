// Shared pieces of the RPC-level compression tests: a grpc.testing.TestService that reports
// what compression it saw, compressors that count, lie or explode, a pool that measures its peak,
// and a server + channel pair wired with all of them.
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
#ifndef RILL_TESTS_COMPRESSION_COMPRESSION_TEST_UTIL_H_
#define RILL_TESTS_COMPRESSION_COMPRESSION_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
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
#include "rill/mem/buffer_pool.h"
#include "rill/server.h"

namespace rill::test {

inline constexpr std::string_view kRequestCompressedKey = "x-request-compressed";
inline constexpr std::string_view kRequestEncodingKey = "x-request-encoding";
inline constexpr std::string_view kResponseEncodingKey = "x-response-encoding";

// The chunk the built-in decompressors write into (BufferSliceWriter::kDefaultChunkSize).
inline constexpr size_t kDecompressChunk = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Messages.

// A SimpleRequest whose payload is `body_size` zeros (grpc-go's benchmark payload) asking for a
// response of `response_size` zeros.
grpc::testing::SimpleRequest ZerosRequest(size_t body_size, int32_t response_size = 0);
// The body size that makes ZerosRequest(body, 0) serialize to exactly `serialized_size` bytes
// (aborts when no body size does: sizes below 5 and a few just above length-prefix steps).
size_t BodySizeForSerializedRequest(size_t serialized_size);
// The same for a SimpleResponse with a payload body of zeros.
size_t BodySizeForSerializedResponse(size_t serialized_size);

// A StreamingOutputCallRequest with `body_size` zeros asking for one response per entry of
// `responses`: {size, compressed} where compressed is nullopt for "leave it to the call".
struct ResponseSpec {
  int32_t size;
  std::optional<bool> compressed;
};
grpc::testing::StreamingOutputCallRequest StreamRequest(size_t body_size,
                                                        const std::vector<ResponseSpec>& responses);

bool AllZeros(const std::string& bytes);

// The value of `key` in the client context's trailing metadata ("<absent>" when missing).
std::string TrailerOf(const ClientContext& context, std::string_view key);

// ---------------------------------------------------------------------------------------------
// The service.

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

// ---------------------------------------------------------------------------------------------
// Compressors.

// Forwards to `inner` and counts the calls. Thread-safe.
class CountingCompressor final : public Compressor {
 public:
  explicit CountingCompressor(std::shared_ptr<Compressor> inner) : inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override;

  [[nodiscard]] int compress_calls() const { return compress_calls_.load(); }
  [[nodiscard]] int decompress_calls() const { return decompress_calls_.load(); }
  void Reset() {
    compress_calls_ = 0;
    decompress_calls_ = 0;
  }

 private:
  std::shared_ptr<Compressor> inner_;
  std::atomic<int> compress_calls_{0};
  std::atomic<int> decompress_calls_{0};
};

// CountingCompressor wrappers of gzip, deflate and zstd, by name.
using CounterMap = std::map<std::string, std::shared_ptr<CountingCompressor>, std::less<>>;
CounterMap CountingBuiltIns();
std::vector<std::shared_ptr<Compressor>> AsCompressors(const CounterMap& counters);

// What a misbehaving sender's compressor emits instead of a valid stream.
enum class BadOutput {
  kGarbage,    // bytes that are no stream of any format (half the input's size)
  kTruncated,  // the real compressor's output, cut after half of it
};

// Named like a real encoding; compresses with `real` and then spoils the output as `bad` says,
// for messages of at least `min_size` bytes (smaller ones are compressed properly). Decompresses
// with `real`. Thread-safe.
class BadCompressor final : public Compressor {
 public:
  BadCompressor(std::shared_ptr<Compressor> real, BadOutput bad, size_t min_size = 0)
      : real_(std::move(real)), bad_(bad), min_size_(min_size) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return real_->Decompress(input, pool, limit, out);
  }

 private:
  std::shared_ptr<Compressor> real_;
  BadOutput bad_;
  size_t min_size_;
};

// Named like a real encoding; for messages of at least `min_size` bytes ignores the input and
// emits `bomb`, a valid compressed stream that expands far beyond any limit. Smaller messages
// and decompression go to `real`. Thread-safe.
class BombCompressor final : public Compressor {
 public:
  BombCompressor(std::shared_ptr<Compressor> real, std::shared_ptr<const std::string> bomb,
                 size_t min_size)
      : real_(std::move(real)), bomb_(std::move(bomb)), min_size_(min_size) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override;
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return real_->Decompress(input, pool, limit, out);
  }
  [[nodiscard]] int bombs_sent() const { return bombs_sent_.load(); }

 private:
  std::shared_ptr<Compressor> real_;
  std::shared_ptr<const std::string> bomb_;
  size_t min_size_;
  std::atomic<int> bombs_sent_{0};
};

// A compressor under a name no built-in has (deflate inside, so its output does shrink).
class RenamedCompressor final : public Compressor {
 public:
  RenamedCompressor(std::string name, std::shared_ptr<Compressor> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}
  [[nodiscard]] std::string_view name() const override { return name_; }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    return inner_->Compress(input, pool, out);
  }
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    return inner_->Decompress(input, pool, limit, out);
  }

 private:
  std::string name_;
  std::shared_ptr<Compressor> inner_;
};

// gzip and zstd streams of `size` zero bytes; the zeros are never materialized. zstd streams a
// zero block through the compressor (one frame that does not declare its size); gzip deflates
// one block of zeros that continues a run of zeros and repeats it (a single member, ~1:1030, as
// dense as zlib's own output, in milliseconds). Computed once per process and size.
std::shared_ptr<const std::string> GzipOfZeros(uint64_t size);
std::shared_ptr<const std::string> ZstdOfZeros(uint64_t size);
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// ---------------------------------------------------------------------------------------------
// Memory.

// Forwards to `inner`; counts the capacity of the blocks it has out, the peak of that count since
// construction, and the peak within a window a caller opens with StartWindow(). Blocks carry this
// pool as their owner while out. Thread-safe.
class MeasuringPool final : public BufferPool {
 public:
  explicit MeasuringPool(BufferPool& inner) : inner_(inner) {}
  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;

  [[nodiscard]] size_t bytes_out() const;
  [[nodiscard]] size_t peak_bytes_out() const;
  // Starts a window at the current level and returns that level; window_peak() is the highest
  // level since.
  size_t StartWindow();
  [[nodiscard]] size_t window_peak() const;

 private:
  BufferPool& inner_;
  mutable std::mutex mu_;
  size_t blocks_out_ = 0;
  size_t bytes_out_ = 0;
  size_t peak_ = 0;
  size_t window_peak_ = 0;
};

// Wraps a real decompressor and measures `pool` around each Decompress: the pooled bytes out
// when it started (the compressed message and the read blocks holding it) and the peak while it
// ran. Compress forwards untouched. Thread-safe (measurements of the last call only).
class MeasuredDecompressor final : public Compressor {
 public:
  MeasuredDecompressor(std::shared_ptr<Compressor> real, MeasuringPool& pool)
      : real_(std::move(real)), pool_(pool) {}
  [[nodiscard]] std::string_view name() const override { return real_->name(); }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    return real_->Compress(input, pool, out);
  }
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override;

  struct Measurement {
    size_t compressed_size = 0;  // the input's bytes
    size_t out_at_entry = 0;     // pooled bytes out when Decompress was called
    size_t peak_during = 0;      // the pool's peak while it ran
    StatusCode code = StatusCode::kOk;
    bool measured = false;
  };
  [[nodiscard]] Measurement last() const;

 private:
  std::shared_ptr<Compressor> real_;
  MeasuringPool& pool_;
  mutable std::mutex mu_;
  Measurement last_;
};

// ---------------------------------------------------------------------------------------------
// A server and a channel.

struct FixtureSetup {
  ServerOptions server_options;
  // Replaces the server's compressors when set (empty vector: ClearCompressors()).
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
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] CompressionTestService& service() { return service_; }
  [[nodiscard]] CallRecorder& recorder() { return *recorder_; }
  // The counting wrappers (null when the setup replaced that side's compressors).
  [[nodiscard]] CountingCompressor* server_counter(std::string_view name);
  [[nodiscard]] CountingCompressor* client_counter(std::string_view name);

  // A second channel to the same server.
  std::shared_ptr<Channel> NewChannel(ChannelOptions options) const;

 private:
  FixtureSetup setup_;
  CompressionTestService service_;
  std::shared_ptr<CallRecorder> recorder_ = std::make_shared<CallRecorder>();
  CounterMap server_counters_;
  CounterMap client_counters_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::TestService::Stub> stub_;
  int port_ = 0;
};

// A unary call that must succeed: request and response `size` zeros each, compressed with
// `encoding` ("" for none). Adds a test failure otherwise.
void ExpectGoodUnaryCall(grpc::testing::TestService::Stub& stub, std::string_view encoding,
                         size_t size = 20000);

}  // namespace rill::test

#endif  // RILL_TESTS_COMPRESSION_COMPRESSION_TEST_UTIL_H_
