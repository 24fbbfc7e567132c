// What the streaming tests share: the Streamer service (tests/streaming/streaming_test.proto),
// an environment of one server and one channel with a pool each, a pool that records its peak,
// and a raw HTTP/2 client for peers that misbehave in ways no rill client would.
//
//   rill::test::StreamingEnv env;                    // server + channel on loopback TCP
//   ASSERT_TRUE(env.ok());
//   rill::ClientContext ctx;
//   auto reader = env.stub().Source(ctx, request);
//   ...
//   env.Stop();                                      // everything ends inside the test
//
// Thread safety: thread-compatible, used from the test thread; the service is thread-safe.
#ifndef RILL_TESTS_STREAMING_STREAMING_TEST_UTIL_H_
#define RILL_TESTS_STREAMING_STREAMING_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/channel.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/status.h"
#include "tests/streaming/streaming_test.rill.h"

namespace rill::test {

namespace st = ::streaming_test;

// Long enough for anything that must complete on a loaded machine (sanitizers, two cores shared
// by several builds); only a hang reaches it.
inline constexpr std::chrono::seconds kMustComplete{120};

// Sanitizer builds run the same tests on less data (they are several times slower per byte).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// Forwards to `inner` and counts what is out, with the peak of bytes out since the last
// ResetPeak(). Blocks carry this pool as their owner while they are out.
class PeakPool final : public BufferPool {
 public:
  explicit PeakPool(BufferPool& inner) : inner_(inner) {}

  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;

  void ResetPeak();
  [[nodiscard]] size_t peak_bytes_out() const;
  [[nodiscard]] size_t bytes_out() const;
  [[nodiscard]] size_t blocks_out() const;
  // The largest block requested since the last ResetPeak().
  [[nodiscard]] size_t largest_block() const;

 private:
  BufferPool& inner_;
  mutable std::mutex mu_;
  size_t blocks_out_ = 0;
  size_t bytes_out_ = 0;
  size_t peak_bytes_out_ = 0;
  size_t largest_block_ = 0;
};

// The data of chunk `seq`: `size` bytes of a pattern that depends on `seq`, so a reordered,
// truncated or corrupted chunk is noticed.
std::string ChunkData(uint64_t seq, size_t size);
// Fills `chunk` with chunk `seq` of `size` bytes.
void MakeChunk(uint64_t seq, size_t size, st::Chunk& chunk);
// True when `chunk` is chunk `seq` of `size` bytes.
[[nodiscard]] bool IsChunk(const st::Chunk& chunk, uint64_t seq, size_t size);

// How a handler ended, as it saw it.
enum class HandlerEnd {
  kCompleted,        // did all it was asked to and returned OK
  kReadFalse,        // a Read() returned false where the handler expected more
  kWriteFalse,       // a Write() returned false
  kTimerAborted,     // its pause was aborted (the call's cancellation reached the timer)
  kFailedOnPurpose,  // returned the error status it was asked to
  kThrew,            // a Read(), Write() or pause threw (they must complete false instead)
};

struct HandlerOutcome {
  std::string method;
  HandlerEnd end = HandlerEnd::kCompleted;
  uint64_t reads = 0;
  uint64_t writes = 0;
  bool cancelled = false;  // ServerContext::IsCancelled() when it ended
  std::string peer;
};

// Source, Sink and Echo as the .proto describes them. Records every finished handler's outcome.
class StreamerService final : public st::Streamer::Service {
 public:
  Awaitable<Status> Source(ServerContext& context, const st::SourceRequest& request,
                           ServerWriter<st::Chunk>& writer) override;
  Awaitable<Status> Sink(ServerContext& context, ServerReader<st::Chunk>& reader,
                         st::SinkReply& reply) override;
  Awaitable<Status> Echo(ServerContext& context,
                         ServerReaderWriter<st::Chunk, st::Chunk>& stream) override;

  // Blocks until `count` handlers (in total) have finished; false if kMustComplete passed.
  bool WaitForFinished(size_t count);
  // Blocks until `predicate()` holds (checked every few ms); false if kMustComplete passed.
  static bool WaitUntil(const std::function<bool()>& predicate,
                        std::chrono::milliseconds limit = kMustComplete);

  [[nodiscard]] std::vector<HandlerOutcome> outcomes() const;
  [[nodiscard]] size_t finished() const;

  // Handlers that started, and that are suspended inside Read() / Write() right now.
  std::atomic<int> started{0};
  std::atomic<int> in_read{0};
  std::atomic<int> in_write{0};
  // Successful writes over all handlers (a writer that stopped advancing is blocked).
  std::atomic<uint64_t> total_writes{0};

 private:
  void Record(HandlerOutcome outcome);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HandlerOutcome> outcomes_;
};

// One server and one channel to it over loopback TCP, each with a PeakPool of its own over the
// default (leak-checking) pool (or the config's), the channel on a reactor the test can run
// coroutines on.
class StreamingEnv {
 public:
  struct Config {
    ServerOptions server;
    // `reactors` and `buffer_pool` are set by the environment.
    ChannelOptions channel;
    // Under both PeakPools; null: the default (leak-checking) pool.
    BufferPool* pool = nullptr;
  };

  StreamingEnv() : StreamingEnv(Config{}) {}
  explicit StreamingEnv(Config config);
  ~StreamingEnv();
  StreamingEnv(const StreamingEnv&) = delete;
  StreamingEnv& operator=(const StreamingEnv&) = delete;

  // False (with a test failure added) when the server could not start.
  [[nodiscard]] bool ok() const { return stub_ != nullptr; }
  StreamerService& service() { return service_; }
  st::Streamer::Stub& stub() { return *stub_; }
  PeakPool& server_pool() { return server_pool_; }
  PeakPool& client_pool() { return client_pool_; }
  asio::io_context& client_io() { return client_reactors_.reactor(0); }
  [[nodiscard]] int port() const { return port_; }

  // Destroys the channel, then the server (cancelling what still runs). Idempotent.
  void Stop();

 private:
  StreamerService service_;
  PeakPool server_pool_;
  PeakPool client_pool_;
  ReactorPool client_reactors_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<st::Streamer::Stub> stub_;
  int port_ = 0;
};

// True once `counter` is nonzero and `progress` has not moved for `quiet`: a handler is parked
// in Read() or Write() (whichever `counter` counts). False if kMustComplete passed first.
bool WaitParked(const std::atomic<int>& counter, const std::atomic<uint64_t>& progress,
                std::chrono::milliseconds quiet = std::chrono::milliseconds(200));

// Runs `awaitable` on `io` and waits for its result on the calling thread (not a reactor).
template <typename T>
T RunOn(asio::io_context& io, Awaitable<T> awaitable) {
  std::future<T> result = asio::co_spawn(io, std::move(awaitable), asio::use_future);
  return result.get();
}

// A plain-socket HTTP/2 client that frames and HPACK-encodes by hand (with nghttp2's HPACK
// codec), for peers that stop reading or never acknowledge anything.
class RawHttp2Client {
 public:
  struct Frame {
    uint8_t type = 0;
    uint8_t flags = 0;
    int32_t stream_id = 0;
    std::string payload;
  };
  static constexpr uint8_t kData = 0x0;
  static constexpr uint8_t kHeaders = 0x1;
  static constexpr uint8_t kRstStream = 0x3;
  static constexpr uint8_t kSettings = 0x4;
  static constexpr uint8_t kPing = 0x6;
  static constexpr uint8_t kGoaway = 0x7;
  static constexpr uint8_t kWindowUpdate = 0x8;
  static constexpr uint8_t kFlagEndStream = 0x1;
  static constexpr uint8_t kFlagAck = 0x1;
  static constexpr uint8_t kFlagEndHeaders = 0x4;

  RawHttp2Client();
  ~RawHttp2Client();
  RawHttp2Client(const RawHttp2Client&) = delete;
  RawHttp2Client& operator=(const RawHttp2Client&) = delete;

  // Connects to 127.0.0.1:`port`; a nonzero `receive_buffer` sets SO_RCVBUF first.
  bool Connect(int port, int receive_buffer = 0);
  // The client preface followed by SETTINGS with `settings` (id, value) entries.
  bool SendPreface(const std::vector<std::pair<uint16_t, uint32_t>>& settings);
  bool SendFrame(uint8_t type, uint8_t flags, int32_t stream_id, std::string_view payload);
  bool SendHeaders(int32_t stream_id,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   bool end_stream);
  bool SendWindowUpdate(int32_t stream_id, uint32_t increment);
  // One gRPC message (5-byte prefix + `message`) in a DATA frame.
  bool SendGrpcMessage(int32_t stream_id, std::string_view message, bool end_stream);

  // Reads and parses frames for up to `limit`, stopping early once `done(frames)` is true or
  // the server closed the connection. Returns everything parsed so far (over all calls).
  const std::vector<Frame>& ReadFrames(std::chrono::milliseconds limit,
                                       const std::function<bool(const std::vector<Frame>&)>& done);
  [[nodiscard]] bool eof() const { return eof_; }
  // Decodes a HEADERS payload (END_HEADERS, no padding or priority), in order of arrival.
  std::vector<std::pair<std::string, std::string>> DecodeHeaders(const Frame& frame);

  // Closes the socket now.
  void Close();

 private:
  int fd_ = -1;
  std::string in_;  // bytes read and not parsed yet
  std::vector<Frame> frames_;
  bool eof_ = false;
  void* deflater_ = nullptr;  // nghttp2_hd_deflater
  void* inflater_ = nullptr;  // nghttp2_hd_inflater
};

}  // namespace rill::test

#endif  // RILL_TESTS_STREAMING_STREAMING_TEST_UTIL_H_
