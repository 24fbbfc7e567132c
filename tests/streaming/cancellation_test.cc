// Ending a stream early, from either side: the client cancels while the handler waits in Read()
// or Write(); the handler fails while the client waits in Read(); the client's deadline passes
// mid-stream; the client drops its stream object. The other side must learn of it: the handler's
// Read()/Write() returns false and ServerContext::IsCancelled() is true; the client's Read()
// returns false and Finish() gives the status. And a client that drops its stream object while
// completions are queued still gets each of them, once.
#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "tests/testing/raw_http2_client.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

using EchoStream = ClientReaderWriter<st::Chunk, st::Chunk>;
using SourceReader = ClientReader<st::Chunk>;

class Cancellation : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.ok()); }

  StreamingEnv env_;
};

// Starts an Echo call on `ctx`, echoes one chunk, and waits until the handler waits in Read()
// for the next; null (with a failure added) when a step fails.
std::unique_ptr<EchoStream> EchoParkedInRead(StreamingEnv& env, ClientContext& ctx) {
  auto stream = env.stub().Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  MakeChunk(0, 100, out);
  if (!stream->BlockingWrite(out) || !stream->BlockingRead(&in)) {
    ADD_FAILURE() << "the first chunk was not echoed";
    return nullptr;
  }
  if (!WaitParked(env.service().in_read, env.service().total_writes)) {
    ADD_FAILURE() << "the handler never waited in Read()";
    return nullptr;
  }
  return stream;
}

// Reads chunks of `size` bytes until the stream ends, expecting them in order; returns how many.
uint64_t ReadChunks(SourceReader& reader, size_t size) {
  st::Chunk in;
  uint64_t received = 0;
  while (reader.BlockingRead(&in)) {
    EXPECT_TRUE(IsChunk(in, received, size));
    ++received;
  }
  return received;
}

// Finishes a Source call whose handler waits in Write(): the call must end with `code`, the
// handler with a failed Write(), and nothing of it may stay pinned on the server. Stops `env`.
void ExpectEndedInWrite(StreamingEnv& env, std::unique_ptr<SourceReader> reader, StatusCode code) {
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), code) << status;
  env.ExpectHandlerEnded(HandlerEnd::kWriteFalse);
  reader.reset();
  env.ExpectServerPoolDrains();
  env.Stop();
}

TEST_F(Cancellation, ClientCancelReachesHandlerSuspendedInRead) {
  ClientContext ctx;
  auto stream = EchoParkedInRead(env_, ctx);
  ASSERT_NE(stream, nullptr);
  ctx.TryCancel();
  st::Chunk in;
  EXPECT_FALSE(stream->BlockingRead(&in));
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
  env_.ExpectHandlerEnded(HandlerEnd::kReadFalse);
  stream.reset();
  env_.Stop();
}

TEST_F(Cancellation, ClientCancelReachesHandlerSuspendedInWrite) {
  st::SourceRequest request = MakeSource(0, 16000);
  ClientContext ctx;
  auto reader = env_.stub().Source(ctx, request);
  // The client reads nothing: the handler fills the window and its quota, then waits.
  ASSERT_TRUE(WaitParked(env_.service().in_write, env_.service().total_writes))
      << "the handler never waited in Write()";
  ctx.TryCancel();
  ExpectEndedInWrite(env_, std::move(reader), StatusCode::kCancelled);
}

// Bidi: the handler echoes three chunks, then (200 ms later, while the client waits in Read())
// fails the call with ABORTED.
TEST_F(Cancellation, ServerErrorReachesClientBlockedInRead_Bidi) {
  ClientContext ctx;
  ctx.AddMetadata("x-fail-after", "3");
  ctx.AddMetadata("x-fail-delay-ms", "200");
  auto stream = env_.stub().Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  for (uint64_t i = 0; i < 3; ++i) {
    MakeChunk(i, 100, out);
    ASSERT_TRUE(stream->BlockingWrite(out));
    ASSERT_TRUE(stream->BlockingRead(&in));
    EXPECT_TRUE(IsChunk(in, i, 100));
  }
  EXPECT_FALSE(stream->BlockingRead(&in));  // blocks until the handler fails
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status;
  EXPECT_EQ(status.message(), "echo failed on purpose after 3 chunks");
  ASSERT_TRUE(env_.service().WaitForFinished(1));
  EXPECT_EQ(env_.service().outcomes().at(0).end, HandlerEnd::kFailedOnPurpose);
  // The client may keep writing after the server ended the call; the writes fail.
  MakeChunk(3, 100, out);
  EXPECT_FALSE(stream->BlockingWrite(out));
  stream.reset();
  env_.Stop();
}

// Server streaming: five chunks, then ABORTED while the client waits for the sixth.
TEST_F(Cancellation, ServerErrorReachesClientBlockedInRead_ServerStreaming) {
  st::SourceRequest request = MakeSource(0, 100);
  request.set_fail_after(5);
  request.set_fail_code(static_cast<int>(StatusCode::kAborted));
  request.set_fail_delay_ms(200);
  ClientContext ctx;
  auto reader = env_.stub().Source(ctx, request);
  EXPECT_EQ(ReadChunks(*reader, 100), 5u);
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status;
  EXPECT_EQ(status.message(), "source failed on purpose after 5 chunks");
  reader.reset();
  env_.Stop();
}

// The client's deadline passes while chunks are still flowing (one every 5 ms).
TEST_F(Cancellation, DeadlineMidStream) {
  st::SourceRequest request = MakeSource(0, 1000);
  request.set_interval_ms(5);
  ClientContext ctx;
  ctx.set_timeout(milliseconds(300));
  auto reader = env_.stub().Source(ctx, request);
  EXPECT_GT(ReadChunks(*reader, 1000), 0u);
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;
  ASSERT_TRUE(env_.service().WaitForFinished(1));
  const HandlerOutcome outcome = env_.service().outcomes().at(0);
  EXPECT_TRUE(outcome.end == HandlerEnd::kWriteFalse || outcome.end == HandlerEnd::kTimerAborted)
      << static_cast<int>(outcome.end);
  EXPECT_TRUE(outcome.cancelled);
  reader.reset();
  env_.Stop();
}

// The deadline passes while the handler is blocked in Write() (the client reads nothing).
TEST_F(Cancellation, DeadlineWhileHandlerBlockedInWrite) {
  st::SourceRequest request = MakeSource(0, 16000);
  ClientContext ctx;
  ctx.set_timeout(milliseconds(300));
  ExpectEndedInWrite(env_, env_.stub().Source(ctx, request), StatusCode::kDeadlineExceeded);
}

// The client drops its stream object mid-stream (without TryCancel): the server is told.
TEST_F(Cancellation, DroppingTheClientStreamCancelsTheHandler) {
  ClientContext ctx;
  auto stream = EchoParkedInRead(env_, ctx);
  ASSERT_NE(stream, nullptr);
  stream.reset();
  env_.ExpectHandlerEnded(HandlerEnd::kReadFalse);
  env_.Stop();
}

// The client drops its stream object on the reactor right after starting a Read() and a
// Finish() on a call that has ended, so that both completions are still queued: each runs once,
// from a handler of its own, and the call's object outlives them (the channel, which waits for
// its calls' objects to go, still shuts down).
TEST_F(Cancellation, DroppingTheClientStreamWithCompletionsQueued) {
  ClientContext ctx;
  st::SourceRequest request = MakeSource(1, 100);
  auto reader = env_.stub().Source(ctx, request);
  st::Chunk chunk;
  ASSERT_TRUE(reader->BlockingRead(&chunk));
  ASSERT_FALSE(reader->BlockingRead(&chunk));
  ASSERT_TRUE(reader->BlockingFinish().ok());
  struct Seen {
    std::atomic<bool> dropped{false};  // the handler that dropped the stream has returned
    std::atomic<bool> ran_in_caller{false};
    std::atomic<int> reads{0};
    std::atomic<bool> read_ok{true};
    std::atomic<int> finishes{0};
    std::atomic<bool> finish_ok{false};
  } seen;
  asio::post(env_.client_io(), [&] {
    reader->Read(&chunk, [&seen](bool ok) {
      if (!seen.dropped) seen.ran_in_caller = true;
      seen.read_ok = ok;
      ++seen.reads;
    });
    reader->Finish([&seen](Status status) {
      if (!seen.dropped) seen.ran_in_caller = true;
      seen.finish_ok = status.ok();
      ++seen.finishes;
    });
    reader.reset();
    seen.dropped = true;
  });
  ASSERT_TRUE(WaitUntil([&] { return seen.reads > 0 && seen.finishes > 0; }));
  env_.Stop();
  EXPECT_EQ(seen.reads, 1);
  EXPECT_FALSE(seen.read_ok);
  EXPECT_EQ(seen.finishes, 1);
  EXPECT_TRUE(seen.finish_ok);
  EXPECT_FALSE(seen.ran_in_caller);
}

// The handler ends the call (ABORTED after echoing one chunk) while the client has not
// half-closed. On the wire, as a raw HTTP/2 peer sees it: the response headers, the echo, the
// trailers with END_STREAM, and then RST_STREAM(NO_ERROR) telling the client to stop sending
// (PROTOCOL-HTTP2). The stream must be closed with no error, not cancelled.
TEST_F(Cancellation, ServerFinishingBeforeClientHalfClosedSendsTrailersThenRstStreamNoError) {
  RawHttp2Client peer;
  ASSERT_TRUE(peer.Connect(env_.port()));
  ASSERT_TRUE(peer.SendPreface({}));
  ASSERT_TRUE(peer.SendHeaders(1,
                               {{":method", "POST"},
                                {":scheme", "http"},
                                {":path", "/streaming_test.Streamer/Echo"},
                                {":authority", "localhost"},
                                {"content-type", "application/grpc"},
                                {"te", "trailers"},
                                {"x-fail-after", "1"}},
                               /*end_stream=*/false));
  st::Chunk chunk;
  MakeChunk(0, 100, chunk);
  ASSERT_TRUE(peer.SendGrpcMessage(1, chunk.SerializeAsString(), /*end_stream=*/false));
  const auto seen = [](uint8_t type, uint8_t flags) {
    return [type, flags](const std::vector<RawHttp2Client::Frame>& so_far) {
      for (const auto& f : so_far) {
        if (f.stream_id == 1 && f.type == type && (f.flags & flags) == flags) return true;
      }
      return false;
    };
  };
  // The trailers come once the handler failed; the reset goes out right behind them.
  peer.ReadFrames(kMustComplete, seen(RawHttp2Client::kHeaders, RawHttp2Client::kFlagEndStream));
  const auto& frames =
      peer.ReadFrames(std::chrono::seconds(2), seen(RawHttp2Client::kRstStream, 0));
  // Stream 1's frames in order, as "HEADERS", "DATA", "TRAILERS" (HEADERS with END_STREAM) and
  // "RST_STREAM(code)".
  std::vector<std::string> sequence;
  std::string grpc_status;
  std::string echoed;
  for (const auto& f : frames) {
    if (f.type == RawHttp2Client::kHeaders) {
      // Decoded in order for every stream: HPACK state is per connection.
      const auto fields = peer.DecodeHeaders(f);
      if (f.stream_id != 1) continue;
      const bool end = (f.flags & RawHttp2Client::kFlagEndStream) != 0;
      sequence.push_back(end ? "TRAILERS" : "HEADERS");
      for (const auto& [name, value] : fields) {
        if (end && name == "grpc-status") grpc_status = value;
      }
    } else if (f.stream_id == 1 && f.type == RawHttp2Client::kData) {
      if (sequence.empty() || sequence.back() != "DATA") sequence.push_back("DATA");
      echoed += f.payload;
    } else if (f.stream_id == 1 && f.type == RawHttp2Client::kRstStream) {
      const auto* p = reinterpret_cast<const uint8_t*>(f.payload.data());
      const uint32_t code =
          (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      sequence.push_back("RST_STREAM(" + std::to_string(code) + ")");
    }
  }
  const std::vector<std::string> expected = {"HEADERS", "DATA", "TRAILERS", "RST_STREAM(0)"};
  EXPECT_EQ(sequence, expected);
  EXPECT_EQ(grpc_status, std::to_string(static_cast<int>(StatusCode::kAborted)));
  // The echo is the chunk, framed: flag 0, 4-byte length, then the message.
  ASSERT_GE(echoed.size(), 5u);
  st::Chunk echo;
  ASSERT_TRUE(echo.ParseFromString(echoed.substr(5)));
  EXPECT_TRUE(IsChunk(echo, 0, 100));
  ASSERT_TRUE(env_.service().WaitForFinished(1));
  const HandlerOutcome outcome = env_.service().outcomes().at(0);
  EXPECT_EQ(outcome.end, HandlerEnd::kFailedOnPurpose);
  EXPECT_FALSE(outcome.cancelled);
  peer.Close();
  env_.Stop();
}

}  // namespace
}  // namespace rill::test
