// Backpressure and memory bounds: a server that writes as fast as it can to a reader that is
// slow, or that stops reading altogether, holds a bounded amount of pooled memory — the peer's
// flow control window plus the per-stream write quota, plus a few fixed blocks — and a stream
// whose deadline passes is closed.
//
// What the server holds, and why each term is in the bound:
//   quota     Write() admits a message while less than kWriteQuota (64 KiB) is queued unframed,
//             so up to quota + one message sits in the stream's queue;
//   window    framed DATA waits in the connection's output batch until the kernel takes it; the
//             peer's window limits how much can be framed;
//   fixed     one read block (32 KiB, ServerOptions::read_block_size) while a read is parsed and
//             one 16 KiB staging block for frame headers.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "tests/testing/raw_http2_client.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

constexpr size_t kKiB = 1024;
// The server's per-stream write quota (src/rpc/server_call.h, kWriteQuota).
constexpr size_t kWriteQuota = 64 * kKiB;
// Blocks every connection may hold besides stream data: a read block and a staging block.
constexpr size_t kReadBlock = 32 * kKiB;
constexpr size_t kStagingBlock = 16 * kKiB;
// Chunks of this size serialize (with the 5-byte prefix) into one 16 KiB pool block.
constexpr size_t kChunkSize = 16000;
constexpr size_t kChunkBlock = 16 * kKiB;
// The server connection's output batch reports full past 256 KiB (the default
// ServerOptions::write_buffer_size); it may take one more DATA frame (16 KiB) before it stops.
constexpr size_t kBatchLimit = 256 * kKiB + 16 * kKiB;

struct SlowReaderRun {
  size_t server_peak = 0;
  size_t client_peak = 0;
  uint64_t received = 0;
  bool writer_was_blocked = false;
  Status status;
};

// Reads `count` chunks of kChunkSize, one every 10 ms, from a server that writes them as fast as
// it can; returns the peaks of both pools over the stream's life.
SlowReaderRun RunSlowReader(StreamingEnv& env, uint64_t count) {
  SlowReaderRun run;
  env.server_pool().ResetPeak();
  env.client_pool().ResetPeak();
  st::SourceRequest request;
  request.set_count(count);
  request.set_size(kChunkSize);
  ClientContext ctx;
  auto reader = env.stub().Source(ctx, request);
  st::Chunk chunk;
  while (reader->BlockingRead(&chunk)) {
    EXPECT_TRUE(IsChunk(chunk, run.received, kChunkSize)) << "chunk " << run.received;
    ++run.received;
    // The writer is ahead of us and waiting for quota: backpressure works.
    if (env.service().in_write.load() > 0) run.writer_was_blocked = true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  run.status = reader->BlockingFinish();
  run.server_peak = env.server_pool().peak_bytes_out();
  run.client_peak = env.client_pool().peak_bytes_out();
  return run;
}

TEST(FlowControl, SlowReaderKeepsServerMemoryWithinWindowPlusQuota_StaticWindow) {
  constexpr uint32_t kWindow = 64 * kKiB;
  StreamingEnv env(StreamingEnv::Config::WithWindows(kWindow));
  ASSERT_TRUE(env.ok());
  constexpr uint64_t kCount = 150;  // 2.3 MiB, 35 times the window
  const SlowReaderRun run = RunSlowReader(env, kCount);
  EXPECT_EQ(run.received, kCount);
  EXPECT_TRUE(run.status.ok()) << run.status;
  EXPECT_TRUE(run.writer_was_blocked) << "the server never waited for the reader";

  const size_t window_plus_quota = kWindow + kWriteQuota;
  const size_t bound = window_plus_quota + kChunkBlock + kReadBlock + kStagingBlock;
  std::printf(
      "[ measure  ] static %u KiB window: server peak pooled %zu B (%.1f KiB); "
      "window+quota %zu B; with fixed blocks %zu B; client peak %zu B\n",
      kWindow / 1024, run.server_peak, run.server_peak / 1024.0, window_plus_quota, bound,
      run.client_peak);
  RecordProperty("server_peak_bytes", std::to_string(run.server_peak));
  RecordProperty("client_peak_bytes", std::to_string(run.client_peak));
  EXPECT_LE(run.server_peak, bound);
  env.Stop();
  EXPECT_EQ(env.server_pool().blocks_out(), 0u);
  EXPECT_EQ(env.client_pool().blocks_out(), 0u);
}

// A reader that takes nothing must hold its sender to the window it advertised. With a 64 KiB
// static window and the 64 KiB write quota, the handler completes at most window + quota + one
// message worth of writes before it waits. (The window grant for messages larger than the window
// must not kick in for a queue of small messages.)
TEST(FlowControl, ReceiverGrantsNoMoreThanItsWindowWhenTheReaderFallsBehind) {
  constexpr uint32_t kWindow = 64 * kKiB;
  StreamingEnv env(StreamingEnv::Config::WithWindows(kWindow));
  ASSERT_TRUE(env.ok());
  st::SourceRequest request;
  request.set_count(0);  // until the call ends
  request.set_size(kChunkSize);
  st::Chunk chunk;
  MakeChunk(1, kChunkSize, chunk);
  const size_t wire_size = chunk.ByteSizeLong() + 5;
  ClientContext ctx;
  auto reader = env.stub().Source(ctx, request);
  ASSERT_TRUE(WaitParked(env.service().in_write, env.service().total_writes, milliseconds(300)))
      << "the handler never waited in Write()";
  const uint64_t writes = env.service().total_writes.load();
  const size_t bound = kWindow + kWriteQuota + wire_size;
  std::printf(
      "[ measure  ] reader took nothing: the handler wrote %llu messages (%zu B) before "
      "waiting; window + quota + one message = %zu B\n",
      static_cast<unsigned long long>(writes), writes * wire_size, bound);
  EXPECT_LE(writes * wire_size, bound) << "the receiver let more than its window through";
  ctx.TryCancel();
  EXPECT_EQ(reader->BlockingFinish().code(), StatusCode::kCancelled);
  reader.reset();
  env.Stop();
}

// With the windows left to the BDP estimator the window may grow up to 16 MiB; what matters is
// that the server's memory stays bounded. The figure is printed for the record.
TEST(FlowControl, SlowReaderKeepsServerMemoryBounded_DynamicWindow) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint64_t kCount = 150;
  const SlowReaderRun run = RunSlowReader(env, kCount);
  EXPECT_EQ(run.received, kCount);
  EXPECT_TRUE(run.status.ok()) << run.status;
  constexpr size_t kMaxDynamicWindow = 16 * kKiB * kKiB;  // BdpEstimator::kMaxWindow
  std::printf(
      "[ measure  ] dynamic window: server peak pooled %zu B (%.1f KiB); "
      "client peak %zu B (%.1f KiB)\n",
      run.server_peak, run.server_peak / 1024.0, run.client_peak, run.client_peak / 1024.0);
  RecordProperty("server_peak_bytes", std::to_string(run.server_peak));
  RecordProperty("client_peak_bytes", std::to_string(run.client_peak));
  EXPECT_LE(run.server_peak,
            kMaxDynamicWindow + kWriteQuota + kChunkBlock + kReadBlock + kStagingBlock);
  env.Stop();
}

// Opens stream `id` on `peer` with a Source call of kChunkSize chunks until the call ends, with a
// grpc-timeout of `timeout`, and half-closes it. False when a frame could not be sent.
bool StartEndlessSource(RawHttp2Client& peer, int32_t id, milliseconds timeout) {
  st::SourceRequest request;
  request.set_count(0);  // until the call ends
  request.set_size(kChunkSize);
  return peer.SendHeaders(id,
                          {{":method", "POST"},
                           {":scheme", "http"},
                           {":path", "/streaming_test.Streamer/Source"},
                           {":authority", "localhost"},
                           {"content-type", "application/grpc"},
                           {"te", "trailers"},
                           {"grpc-timeout", std::to_string(timeout.count()) + "m"}},
                          /*end_stream=*/false) &&
         peer.SendGrpcMessage(id, request.SerializeAsString(), /*end_stream=*/true);
}

// A peer that opens a server-streaming call with a 500 ms grpc-timeout and then never reads a
// byte. `window` is what its SETTINGS grant per stream (and, when large, its connection window).
struct NonReaderRun {
  size_t peak_before_deadline = 0;
  size_t bytes_out_after_deadline = 0;  // the server's pooled bytes 1 s after the deadline
  bool handler_finished_in_time = false;
  HandlerOutcome outcome;
  std::string closed_by;  // how the stream ended on the wire, as the peer saw it
};

NonReaderRun RunNonReader(StreamingEnv& env, uint32_t window, int receive_buffer,
                          milliseconds timeout) {
  NonReaderRun run;
  RawHttp2Client peer;
  if (!peer.Connect(env.port(), receive_buffer)) {
    ADD_FAILURE() << "cannot connect";
    return run;
  }
  env.server_pool().ResetPeak();
  EXPECT_TRUE(peer.SendPreface({{0x4 /*INITIAL_WINDOW_SIZE*/, window}}));
  if (window > 65535) {
    EXPECT_TRUE(peer.SendWindowUpdate(0, window - 65535));
  }
  EXPECT_TRUE(StartEndlessSource(peer, 1, timeout));
  const auto start = std::chrono::steady_clock::now();

  // Not reading: watch the server until a second after the deadline.
  const auto deadline = start + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    run.peak_before_deadline = std::max(run.peak_before_deadline, env.server_pool().bytes_out());
    std::this_thread::sleep_for(milliseconds(5));
  }
  run.peak_before_deadline = std::max(run.peak_before_deadline, env.server_pool().peak_bytes_out());
  run.handler_finished_in_time =
      WaitUntil([&] { return env.service().finished() >= 1; }, milliseconds(1000));
  std::this_thread::sleep_for(deadline + milliseconds(1000) - std::chrono::steady_clock::now());
  run.bytes_out_after_deadline = env.server_pool().bytes_out();
  if (env.service().finished() >= 1) run.outcome = env.service().outcomes().at(0);

  // Now read what the server sent: did stream 1 end (trailers or RST_STREAM), or the connection?
  const auto& frames = peer.ReadFrames(milliseconds(3000), [](const auto& so_far) {
    for (const auto& f : so_far) {
      if (f.stream_id == 1 &&
          (f.type == RawHttp2Client::kRstStream ||
           ((f.type == RawHttp2Client::kHeaders || f.type == RawHttp2Client::kData) &&
            (f.flags & RawHttp2Client::kFlagEndStream) != 0))) {
        return true;
      }
      if (f.type == RawHttp2Client::kGoaway) return true;
    }
    return false;
  });
  size_t data_bytes = 0;
  for (const auto& f : frames) {
    if (f.stream_id == 1 && f.type == RawHttp2Client::kData) data_bytes += f.payload.size();
    if (f.stream_id == 1 && f.type == RawHttp2Client::kRstStream) {
      const auto* p = reinterpret_cast<const uint8_t*>(f.payload.data());
      run.closed_by = "RST_STREAM(" +
                      std::to_string((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                     (uint32_t{p[2]} << 8) | p[3]) +
                      ")";
    }
    if (f.type == RawHttp2Client::kHeaders) {
      for (const auto& [name, value] : peer.DecodeHeaders(f)) {
        if (f.stream_id == 1 && name == "grpc-status") run.closed_by += "grpc-status " + value;
      }
    }
    if (f.type == RawHttp2Client::kGoaway) run.closed_by += " GOAWAY";
  }
  if (run.closed_by.empty() && peer.eof()) run.closed_by = "connection closed";
  std::printf(
      "[ measure  ] non-reading peer (window %u): %zu DATA bytes reached it; stream end "
      "seen: %s\n",
      window, data_bytes, run.closed_by.empty() ? "none" : run.closed_by.c_str());
  peer.Close();
  return run;
}

// What a never-reading peer must see: the server's pooled memory within `bound` before the
// deadline, the handler ended by a failed write and cancelled within 1 s of it, the stream
// closed with DEADLINE_EXCEEDED, and at most `max_out_after` bytes still out 1 s later.
void ExpectBoundedAndEndedAtDeadline(const NonReaderRun& run, const char* name, size_t bound,
                                     size_t max_out_after) {
  std::printf(
      "[ measure  ] %s: server peak pooled %zu B before the deadline (bound %zu B); %zu B still "
      "out 1 s after it\n",
      name, run.peak_before_deadline, bound, run.bytes_out_after_deadline);
  EXPECT_LE(run.peak_before_deadline, bound);
  ASSERT_TRUE(run.handler_finished_in_time) << "the handler did not end within 1 s of the deadline";
  EXPECT_EQ(run.outcome.end, HandlerEnd::kWriteFalse);
  EXPECT_TRUE(run.outcome.cancelled);
  EXPECT_EQ(run.closed_by, "grpc-status 4") << "the stream did not end with DEADLINE_EXCEEDED";
  EXPECT_LE(run.bytes_out_after_deadline, max_out_after)
      << "the expired stream still holds pooled memory";
}

// The peer grants a 1 KiB stream window: the server frames at most 1 KiB; the rest stays
// queued within the write quota until the handler is suspended.
TEST(FlowControl, PeerThatNeverReadsIsBoundedAndClosedAtDeadline_TinyWindow) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint32_t kWindow = 1024;
  const NonReaderRun run = RunNonReader(env, kWindow, /*receive_buffer=*/0, milliseconds(500));
  const size_t bound = kWindow + kWriteQuota + kChunkBlock + kReadBlock + kStagingBlock;
  // The status does not wait behind the queued messages for a window that never opens, and
  // once the stream is over nothing of it stays pinned (the connection itself is idle).
  ExpectBoundedAndEndedAtDeadline(run, "tiny window", bound, /*max_out_after=*/0);
  env.Stop();
}

// The peer grants a huge window and shrinks its socket's receive buffer: the server frames as
// much as the kernel takes, then its writes block. Its memory must still stay bounded.
TEST(FlowControl, PeerThatNeverReadsIsBoundedAndClosedAtDeadline_HugeWindow) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint32_t kWindow = 0x7FFFFFFF;
  const NonReaderRun run = RunNonReader(env, kWindow, /*receive_buffer=*/4096, milliseconds(500));
  const size_t bound = kBatchLimit + kWriteQuota + kChunkBlock + kReadBlock + kStagingBlock;
  // The socket is full, so nothing can reach the peer until it reads again; the server must not
  // hold more than before, and the stream's end must be the next thing the peer sees.
  ExpectBoundedAndEndedAtDeadline(run, "huge window", bound, /*max_out_after=*/bound);
  env.Stop();
}

// Ten streams of one connection expire while the peer reads nothing (1 KiB windows): once their
// handlers are gone nothing of them may stay pinned, or a peer could make the server hold
// max_concurrent_streams × (quota + message) by opening streams and never reading.
TEST(FlowControl, ExpiredStreamsOfAPeerThatNeverReadsAreReleased) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr int kStreams = 10;
  RawHttp2Client peer;
  ASSERT_TRUE(peer.Connect(env.port()));
  constexpr uint32_t kWindow = 1024;
  env.server_pool().ResetPeak();
  ASSERT_TRUE(peer.SendPreface({{0x4 /*INITIAL_WINDOW_SIZE*/, kWindow}}));
  for (int i = 0; i < kStreams; ++i) {
    ASSERT_TRUE(StartEndlessSource(peer, 2 * i + 1, milliseconds(300)));
  }
  ASSERT_TRUE(env.service().WaitForFinished(kStreams));
  // Until their deadline each stream held at most its window, its quota and one message.
  const size_t peak = env.server_pool().peak_bytes_out();
  const size_t bound =
      kStreams * (kWindow + kWriteQuota + kChunkBlock) + kReadBlock + kStagingBlock;
  std::this_thread::sleep_for(milliseconds(1000));
  const size_t held = env.server_pool().bytes_out();
  const auto& frames = peer.ReadFrames(milliseconds(2000), [](const auto&) { return false; });
  std::set<int32_t> ended_streams;
  for (const auto& f : frames) {
    if (f.stream_id != 0 &&
        (f.type == RawHttp2Client::kRstStream ||
         (f.type == RawHttp2Client::kHeaders && (f.flags & RawHttp2Client::kFlagEndStream) != 0))) {
      ended_streams.insert(f.stream_id);
    }
  }
  const int ended = static_cast<int>(ended_streams.size());
  std::printf(
      "[ measure  ] %d streams of a non-reading peer: server peak pooled %zu B before "
      "their deadline (bound %zu B); %zu B held 1 s after their handlers ended; %d of "
      "them were reset or ended\n",
      kStreams, peak, bound, held, ended);
  EXPECT_LE(peak, bound);
  EXPECT_EQ(held, 0u) << "expired streams still pin their queued messages";
  EXPECT_EQ(ended, kStreams) << "expired streams were left open";
  for (const HandlerOutcome& outcome : env.service().outcomes()) EXPECT_TRUE(outcome.cancelled);
  peer.Close();
  env.Stop();
}

}  // namespace
}  // namespace rill::test
