// Streams that must simply work: every message arrives, in order, intact, and the call ends OK —
// server streaming, client streaming, bidirectional ping-pong, messages larger than the flow
// control window, mixed sizes through small windows, and 1000 streams open at once on one
// connection.
#include <gtest/gtest.h>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <set>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

TEST(StreamBasics, ServerStreamsThousandMessagesThenOk) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint64_t kCount = 1000;
  constexpr size_t kSize = 100;
  st::Chunk chunk;
  ASSERT_NO_FATAL_FAILURE(ExpectSourceStream(env.stub(), kCount, kSize, chunk));
  ASSERT_TRUE(env.service().WaitForFinished(1));
  const HandlerOutcome outcome = env.service().outcomes().at(0);
  EXPECT_EQ(outcome.end, HandlerEnd::kCompleted);
  EXPECT_EQ(outcome.writes, kCount);
  EXPECT_FALSE(outcome.cancelled);
  env.Stop();
  EXPECT_EQ(env.server_pool().blocks_out(), 0u);
  EXPECT_EQ(env.client_pool().blocks_out(), 0u);
}

TEST(StreamBasics, ClientStreamsThousandMessages) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint64_t kCount = 1000;
  constexpr size_t kSize = 100;
  ClientContext ctx;
  st::SinkReply reply;
  auto writer = env.stub().Sink(ctx, &reply);
  st::Chunk chunk;
  for (uint64_t i = 0; i < kCount; ++i) {
    MakeChunk(i, kSize, chunk);
    ASSERT_TRUE(writer->BlockingWrite(chunk)) << "write " << i;
  }
  const Status status = writer->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(reply.count(), kCount);
  EXPECT_EQ(reply.bytes(), kCount * kSize);
  ASSERT_TRUE(env.service().WaitForFinished(1));
  EXPECT_EQ(env.service().outcomes().at(0).end, HandlerEnd::kCompleted);
  writer.reset();
  env.Stop();
  EXPECT_EQ(env.server_pool().blocks_out(), 0u);
  EXPECT_EQ(env.client_pool().blocks_out(), 0u);
}

struct PingPongResult {
  uint64_t round_trips = 0;
  bool extra_read = false;  // a Read() after WritesDone() yielded a message
  Status status;
};

Awaitable<PingPongResult> PingPong(st::Streamer::Stub* stub, uint64_t count, size_t size) {
  PingPongResult result;
  ClientContext ctx;
  auto stream = stub->Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  for (uint64_t i = 0; i < count; ++i) {
    MakeChunk(i, size, out);
    if (!co_await stream->Write(out)) break;
    if (!co_await stream->Read(&in)) break;
    if (!IsChunk(in, i, size)) break;
    ++result.round_trips;
  }
  co_await stream->WritesDone();
  result.extra_read = co_await stream->Read(&in);
  result.status = co_await stream->Finish();
  co_return result;
}

TEST(StreamBasics, BidiPingPongSmallMessages) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  constexpr uint64_t kCount = kSanitized ? 500 : 2000;
  const PingPongResult result = RunOn(env.client_io(), PingPong(&env.stub(), kCount, 16));
  EXPECT_EQ(result.round_trips, kCount);
  EXPECT_FALSE(result.extra_read);
  EXPECT_TRUE(result.status.ok()) << result.status;
  ASSERT_TRUE(env.service().WaitForFinished(1));
  const HandlerOutcome outcome = env.service().outcomes().at(0);
  EXPECT_EQ(outcome.end, HandlerEnd::kCompleted);
  EXPECT_EQ(outcome.reads, kCount);
  EXPECT_EQ(outcome.writes, kCount);
  env.Stop();
}

// 4 MiB messages through 64 KiB static windows, both ways: a reader that takes only whole
// messages must credit a message's bytes as they arrive, or it would never arrive at all.
TEST(StreamBasics, MessagesLargerThanTheWindowComplete) {
  constexpr uint32_t kWindow = 64 * 1024;
  constexpr size_t kSize = 4 * 1024 * 1024;
  constexpr uint64_t kCount = kSanitized ? 2 : 6;
  auto config = StreamingEnv::Config::WithWindows(kWindow);
  config.server.max_receive_message_size = kSize + 1024;
  config.channel.max_receive_message_size = kSize + 1024;
  StreamingEnv env(config);
  ASSERT_TRUE(env.ok());
  ClientContext ctx;
  auto stream = env.stub().Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  for (uint64_t i = 0; i < kCount; ++i) {
    MakeChunk(i, kSize, out);
    ASSERT_TRUE(stream->BlockingWrite(out)) << "write " << i;
    ASSERT_TRUE(stream->BlockingRead(&in)) << "read " << i;
    ASSERT_TRUE(IsChunk(in, i, kSize)) << "chunk " << i;
  }
  EXPECT_TRUE(stream->BlockingWritesDone());
  EXPECT_FALSE(stream->BlockingRead(&in));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  ASSERT_TRUE(env.service().WaitForFinished(1));
  EXPECT_EQ(env.service().outcomes().at(0).writes, kCount);

  // And one way only: the server writes 4 MiB messages to a client with a 64 KiB window.
  ASSERT_NO_FATAL_FAILURE(ExpectSourceStream(env.stub(), kCount, kSize, in));
  stream.reset();
  env.Stop();
}

// Messages of mixed sizes through 64 KiB static windows, both ways, on a fresh connection. The
// reader credits a message when it takes it, and nghttp2 announces credit only once it reaches
// half the window: after 27182 + 8 + 1828 bytes (credited, not announced) the sender has too
// little window left for a 45904-byte message, and with nothing left to take the reader must
// still let it arrive (these are the grpc interop cases' sizes).
TEST(StreamBasics, MixedMessageSizesThroughSmallWindowsNeverStall) {
  constexpr uint32_t kWindow = 64 * 1024;
  StreamingEnv env(StreamingEnv::Config::WithWindows(kWindow));
  ASSERT_TRUE(env.ok());
  const size_t sizes[] = {27182, 8, 1828, 45904, 1, 32760, 60000, 65536, 200000, 100, 40000};
  ClientContext ctx;
  // Only a stall reaches it (the exchange takes milliseconds), and it turns one into a failure.
  ctx.set_timeout(std::chrono::seconds(30));
  auto stream = env.stub().Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  uint64_t seq = 0;
  for (int round = 0; round < 2; ++round) {
    for (const size_t size : sizes) {
      MakeChunk(seq, size, out);
      ASSERT_TRUE(stream->BlockingWrite(out)) << "write of " << size << " bytes";
      ASSERT_TRUE(stream->BlockingRead(&in)) << "no echo of the " << size << "-byte chunk";
      ASSERT_TRUE(IsChunk(in, seq, size)) << "chunk " << seq;
      ++seq;
    }
  }
  EXPECT_TRUE(stream->BlockingWritesDone());
  EXPECT_FALSE(stream->BlockingRead(&in));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  stream.reset();
  env.Stop();
}

// Every stream does one round trip, then waits until all of them have: so all kStreams are open
// on the connection at the same time. Then each finishes its exchange and half-closes.
struct ConcurrentResult {
  uint64_t round_trips = 0;
  bool all_were_open = false;
  Status status;
};

struct Rendezvous {
  explicit Rendezvous(asio::io_context& io, size_t total) : timer(io), total(total) {
    timer.expires_after(kMustComplete);
  }
  asio::steady_timer timer;
  size_t total;
  size_t arrived = 0;
};

Awaitable<ConcurrentResult> ConcurrentEcho(st::Streamer::Stub* stub, Rendezvous* rendezvous,
                                           uint64_t index) {
  constexpr uint64_t kExchanges = 5;
  constexpr size_t kSize = 200;
  ConcurrentResult result;
  ClientContext ctx;
  auto stream = stub->Echo(ctx);
  st::Chunk out;
  st::Chunk in;
  for (uint64_t i = 0; i < kExchanges; ++i) {
    const uint64_t seq = index * kExchanges + i;
    MakeChunk(seq, kSize, out);
    if (!co_await stream->Write(out)) break;
    if (!co_await stream->Read(&in) || !IsChunk(in, seq, kSize)) break;
    ++result.round_trips;
    if (i == 0) {
      if (++rendezvous->arrived == rendezvous->total) {
        rendezvous->timer.cancel();  // the last one in releases the others
      } else {
        asio::error_code ec;
        co_await rendezvous->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      result.all_were_open = rendezvous->arrived == rendezvous->total;
    }
  }
  co_await stream->WritesDone();
  co_await stream->Read(&in);
  result.status = co_await stream->Finish();
  co_return result;
}

TEST(StreamBasics, ThousandConcurrentStreamsOnOneConnection) {
  constexpr size_t kStreams = 1000;
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  Rendezvous rendezvous(env.client_io(), kStreams);
  std::vector<std::future<ConcurrentResult>> results;
  results.reserve(kStreams);
  for (size_t i = 0; i < kStreams; ++i) {
    results.push_back(asio::co_spawn(env.client_io(), ConcurrentEcho(&env.stub(), &rendezvous, i),
                                     asio::use_future));
  }
  size_t ok = 0;
  size_t all_open = 0;
  for (auto& future : results) {
    ASSERT_EQ(future.wait_for(kMustComplete), std::future_status::ready);
    const ConcurrentResult result = future.get();
    if (result.status.ok() && result.round_trips == 5) ++ok;
    if (result.all_were_open) ++all_open;
    EXPECT_TRUE(result.status.ok()) << result.status;
  }
  EXPECT_EQ(ok, kStreams);
  EXPECT_EQ(all_open, kStreams) << "not every stream was open at the same time";
  ASSERT_TRUE(env.service().WaitForFinished(kStreams));
  std::set<std::string> peers;
  for (const HandlerOutcome& outcome : env.service().outcomes()) {
    peers.insert(outcome.peer);
    EXPECT_EQ(outcome.end, HandlerEnd::kCompleted);
  }
  EXPECT_EQ(peers.size(), 1u) << "the streams did not share one connection";
  env.Stop();
  EXPECT_EQ(env.server_pool().blocks_out(), 0u);
  EXPECT_EQ(env.client_pool().blocks_out(), 0u);
}

}  // namespace
}  // namespace rill::test
