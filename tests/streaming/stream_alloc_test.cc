// A message on an established stream costs no heap allocation, at either end. Many streams
// ping-pong over one connection at once, the case where one reactor turn completes a read (or a
// write) for many of them, so many completions are queued together. Counted with the malloc
// hook (bench/alloc_hook), which sees every allocation in the process: client and server, Asio,
// nghttp2 and protobuf.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <future>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

constexpr int kStreams = 100;
constexpr int kWarmupRounds = 50;                         // per stream, before the count starts
constexpr uint64_t kMeasuredRoundTrips = 200 * kStreams;  // over all streams, while counted
constexpr size_t kChunkSize = 32;

// Opens the count once every stream is past its warmup and closes it after
// kMeasuredRoundTrips, so that no stream is being set up or torn down while it is open. Lives on
// the client reactor, like the streams that update it.
struct Window {
  int warmed = 0;  // streams past their warmup
  bool open = false;
  bool closed = false;
  uint64_t round_trips = 0;  // completed while open
  uint64_t allocs_before = 0;
  uint64_t allocs_after = 0;

  void OnRoundTrip(int round) {
    if (open) {
      if (++round_trips == kMeasuredRoundTrips) {
        allocs_after = bench::AllocationCounts().allocs;
        open = false;
        closed = true;
      }
    } else if (round == kWarmupRounds && ++warmed == kStreams) {
      open = true;
      allocs_before = bench::AllocationCounts().allocs;
    }
  }
};

// Writes a chunk and reads its echo until the window closed, then ends the stream. A stream that
// fails closes the window, so that the others end too.
Awaitable<Status> PingPong(st::Streamer::Stub* stub, Window* window) {
  ClientContext context;
  auto stream = stub->Echo(context);
  st::Chunk request;
  MakeChunk(7, kChunkSize, request);
  st::Chunk echo;
  for (int round = 1; !window->closed; ++round) {
    const char* failed = nullptr;
    if (!co_await stream->Write(request)) {
      failed = "write failed";
    } else if (!co_await stream->Read(&echo)) {
      failed = "read failed";
    } else if (!IsChunk(echo, 7, kChunkSize)) {
      failed = "wrong echo";
    }
    if (failed != nullptr) {
      window->closed = true;
      co_return Status(StatusCode::kInternal, failed);
    }
    window->OnRoundTrip(round);
  }
  co_await stream->WritesDone();
  while (co_await stream->Read(&echo)) {
  }
  co_return co_await stream->Finish();
}

TEST(StreamAllocationTest, NoHeapAllocationPerMessage) {
  if (!bench::AllocationCountingEnabled()) GTEST_SKIP() << "the sanitizer owns malloc";
  // The leak-checking default pool records a stack for every block: a plain pool here.
  TieredBufferPool pool;
  // Static windows. Dynamic ones probe the bandwidth with a PING now and then, and the PING's
  // nghttp2 item may find no free block of its size in the reactor thread's cache of nghttp2
  // memory, which these fresh threads are still filling: a warm-up cost, not a per-message one,
  // that would fall inside the count at random.
  auto config = StreamingEnv::Config::WithWindows(64 * 1024);
  config.pool = &pool;
  StreamingEnv env(config);
  ASSERT_TRUE(env.ok());
  Window window;
  std::vector<std::future<Status>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(
        asio::co_spawn(env.client_io(), PingPong(&env.stub(), &window), asio::use_future));
  }
  for (auto& stream : streams) {
    ASSERT_EQ(stream.wait_for(kMustComplete), std::future_status::ready);
    const Status status = stream.get();
    EXPECT_TRUE(status.ok()) << status;
  }
  ASSERT_TRUE(window.closed);
  ASSERT_EQ(window.round_trips, kMeasuredRoundTrips);
  const uint64_t allocs = window.allocs_after - window.allocs_before;
  std::printf("[ allocs   ] %llu over %llu round trips on %d streams\n",
              static_cast<unsigned long long>(allocs),
              static_cast<unsigned long long>(kMeasuredRoundTrips), kStreams);
  EXPECT_EQ(allocs, 0u) << static_cast<double>(allocs) / kMeasuredRoundTrips
                        << " per round trip (a write and a read at each end)";
  env.Stop();
}

}  // namespace
}  // namespace rill::test
