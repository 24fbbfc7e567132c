// The streaming tests' service and environment: the Streamer service
// (tests/testing/streaming_test.proto), and one server and one channel with a PeakPool each.
//
//   rill::test::StreamingEnv env;                    // server + channel on loopback TCP
//   ASSERT_TRUE(env.ok());
//   rill::ClientContext ctx;
//   auto reader = env.stub().Source(ctx, request);
//   ...
//   env.Stop();                                      // everything ends inside the test
//
// Thread safety: thread-compatible, used from the test thread; the service is thread-safe.
#ifndef RILL_TESTS_TESTING_STREAMER_H_
#define RILL_TESTS_TESTING_STREAMER_H_

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rill/channel.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/status.h"
#include "tests/testing/fixture.h"
#include "tests/testing/pools.h"
#include "tests/testing/streaming_test.rill.h"

namespace rill::test {

namespace st = ::streaming_test;

// The data of chunk `seq`: `size` bytes of a pattern that depends on `seq`, so a reordered,
// truncated or corrupted chunk is noticed.
std::string ChunkData(uint64_t seq, size_t size);
// Fills `chunk` with chunk `seq` of `size` bytes.
void MakeChunk(uint64_t seq, size_t size, st::Chunk& chunk);
// True when `chunk` is chunk `seq` of `size` bytes.
[[nodiscard]] bool IsChunk(const st::Chunk& chunk, uint64_t seq, size_t size);

// Calls Source on `stub` for `count` chunks of `size` bytes and reads the stream to its end into
// `chunk`: each chunk must be the next in order (a fatal failure at the first that is not), then
// there must have been `count` of them and the call must end OK.
void ExpectSourceStream(st::Streamer::Stub& stub, uint64_t count, size_t size, st::Chunk& chunk);

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

    // A config whose two sides advertise `window` as their stream and connection windows (0:
    // each side's default).
    static Config WithWindows(uint32_t window) {
      Config config;
      config.server.initial_stream_window = window;
      config.server.initial_connection_window = window;
      config.channel.initial_stream_window = window;
      config.channel.initial_connection_window = window;
      return config;
    }
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
  [[nodiscard]] int port() const { return server_->port(); }

  // Destroys the channel, then the server (cancelling what still runs). Idempotent.
  void Stop();

  // Waits for the first handler to finish, then expects it to have ended as `end`, having seen
  // the call cancelled.
  void ExpectHandlerEnded(HandlerEnd end);
  // Expects nothing of the server's streams to stay pinned in its pool (waits for that).
  void ExpectServerPoolDrains();

 private:
  StreamerService service_;
  PeakPool server_pool_;
  PeakPool client_pool_;
  ReactorPool client_reactors_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<st::Streamer::Stub> stub_;
};

// A Source request for `count` chunks (0: until the call ends) of `size` bytes.
st::SourceRequest MakeSource(uint64_t count, uint32_t size);

// True once `counter` is nonzero and `progress` has not moved for `quiet`: a handler is parked
// in Read() or Write() (whichever `counter` counts). False if kMustComplete passed first.
bool WaitParked(const std::atomic<int>& counter, const std::atomic<uint64_t>& progress,
                std::chrono::milliseconds quiet = std::chrono::milliseconds(200));

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_STREAMER_H_
