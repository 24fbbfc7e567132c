// PreparedMessage: a message serialized (and compressed) once, then written on client and server
// streams any number of times. What a user notices: every copy arrives intact; the original can
// change after preparing without affecting what is sent; sends take no message-sized buffer from
// the channel's pool and compress nothing when the call's encoding is the prepared one; the call's
// send limit still applies.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string_view>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "rill/prepared_message.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

constexpr size_t kBig = 1024 * 1024;
constexpr uint64_t kSends = kSanitized ? 8 : 32;

// A compressor that forwards to another and counts its work.
class CountingCompressor final : public Compressor {
 public:
  explicit CountingCompressor(std::shared_ptr<Compressor> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    compressed.fetch_add(1);
    return inner_->Compress(input, pool, out);
  }
  Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                    BufferSlice& out) override {
    decompressed.fetch_add(1);
    return inner_->Decompress(input, pool, limit, out);
  }
  std::atomic<int> compressed{0};
  std::atomic<int> decompressed{0};

 private:
  std::shared_ptr<Compressor> inner_;
};

TEST(PreparedMessage, SizeAndEncoding) {
  st::Chunk chunk;
  MakeChunk(7, 1000, chunk);
  StatusOr<PreparedMessage> plain = PreparedMessage::Create(chunk);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->size(), chunk.ByteSizeLong());
  EXPECT_TRUE(plain->encoding().empty());
  StatusOr<PreparedMessage> gzip = PreparedMessage::Create(chunk, *GzipCompressor());
  ASSERT_TRUE(gzip.ok()) << gzip.status();
  EXPECT_EQ(gzip->size(), chunk.ByteSizeLong());
  EXPECT_EQ(gzip->encoding(), "gzip");
  StatusOr<PreparedMessage> empty = PreparedMessage::Create(st::Chunk());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->size(), 0u);
}

TEST(PreparedMessage, ClientSendsOneMessageManyTimesWithoutNewBuffers) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(0, kBig, chunk);
  // From the default pool, so the channel's pool only sees what sending takes.
  StatusOr<PreparedMessage> prepared = PreparedMessage::Create(chunk);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  MakeChunk(1, 10, chunk);  // what was prepared no longer depends on the message
  env.client_pool().ResetPeak();
  ASSERT_EQ(env.client_pool().largest_block(), 0u);
  {
    ClientContext ctx;
    auto stream = env.stub().Echo(ctx);
    for (uint64_t i = 0; i < kSends; ++i) {
      ASSERT_TRUE(stream->BlockingWrite(*prepared)) << "write " << i;
      st::Chunk echoed;
      ASSERT_TRUE(stream->BlockingRead(&echoed)) << "read " << i;
      EXPECT_TRUE(IsChunk(echoed, 0, kBig)) << "echo " << i << " differs";
    }
    ASSERT_TRUE(stream->BlockingWritesDone());
    const Status status = stream->BlockingFinish();
    EXPECT_TRUE(status.ok()) << status;
  }
  // Reading the 1 MiB echoes takes read blocks (32 KiB each) from the channel's pool; sending
  // took references to the prepared bytes, never a message-sized block.
  EXPECT_LT(env.client_pool().largest_block(), kBig / 2);
  env.Stop();
}

TEST(PreparedMessage, ServerWritesOnePreparedMessage) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  for (uint32_t size : {0u, 1u, 5000u, static_cast<uint32_t>(kBig)}) {
    ClientContext ctx;
    st::SourceRequest request;
    request.set_count(kSends);
    request.set_size(size);
    request.set_prepared(true);
    auto reader = env.stub().Source(ctx, request);
    st::Chunk chunk;
    uint64_t got = 0;
    while (reader->BlockingRead(&chunk)) {
      EXPECT_TRUE(IsChunk(chunk, 0, size)) << "size " << size << " chunk " << got;
      ++got;
    }
    const Status status = reader->BlockingFinish();
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_EQ(got, kSends) << "size " << size;
  }
  env.Stop();
}

// The prepared compressed bytes go out on calls with that encoding: no compression per send.
TEST(PreparedMessage, CompressedOnceForCallsWithItsEncoding) {
  auto counting = std::make_shared<CountingCompressor>(GzipCompressor());
  StreamingEnv::Config config;
  config.channel.compressors = {counting, DeflateCompressor()};
  StreamingEnv env(config);
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(3, 64 * 1024, chunk);
  StatusOr<PreparedMessage> prepared = PreparedMessage::Create(chunk, *counting);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  ASSERT_EQ(counting->compressed.load(), 1);

  for (const char* encoding : {"gzip", "deflate", ""}) {
    ClientContext ctx;
    if (*encoding != '\0') ctx.set_compression(encoding);
    auto stream = env.stub().Echo(ctx);
    for (uint64_t i = 0; i < kSends; ++i) {
      ASSERT_TRUE(stream->BlockingWrite(*prepared)) << encoding << " write " << i;
      st::Chunk echoed;
      ASSERT_TRUE(stream->BlockingRead(&echoed)) << encoding << " read " << i;
      EXPECT_TRUE(IsChunk(echoed, 3, 64 * 1024)) << encoding << " echo " << i;
    }
    // Write options still apply to prepared messages.
    ASSERT_TRUE(stream->BlockingWrite(*prepared, WriteOptions{.no_compression = true}));
    st::Chunk echoed;
    ASSERT_TRUE(stream->BlockingRead(&echoed));
    EXPECT_TRUE(IsChunk(echoed, 3, 64 * 1024));
    ASSERT_TRUE(stream->BlockingWritesDone());
    const Status status = stream->BlockingFinish();
    EXPECT_TRUE(status.ok()) << encoding << ": " << status;
  }
  // gzip calls reused the prepared bytes; deflate and identity calls never used gzip.
  EXPECT_EQ(counting->compressed.load(), 1);
  env.Stop();
}

// A message that does not shrink is prepared uncompressed and goes out as it is.
TEST(PreparedMessage, IncompressibleMessageIsSentUncompressed) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  chunk.set_seq(9);
  std::string noise(4096, '\0');
  uint32_t x = 2463534242u;
  for (char& c : noise) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  chunk.set_data(noise);
  StatusOr<PreparedMessage> prepared = PreparedMessage::Create(chunk, *GzipCompressor());
  ASSERT_TRUE(prepared.ok());
  {
    ClientContext ctx;
    ctx.set_compression("gzip");
    auto stream = env.stub().Echo(ctx);
    ASSERT_TRUE(stream->BlockingWrite(*prepared));
    st::Chunk echoed;
    ASSERT_TRUE(stream->BlockingRead(&echoed));
    EXPECT_EQ(echoed.seq(), 9u);
    EXPECT_EQ(echoed.data(), noise);
    ASSERT_TRUE(stream->BlockingWritesDone());
    EXPECT_TRUE(stream->BlockingFinish().ok());
  }
  env.Stop();
}

TEST(PreparedMessage, ServerPreparedGzipReachesAGzipClient) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  {
    ClientContext ctx;
    ctx.set_compression("gzip");  // the server answers in the request's encoding
    st::SourceRequest request;
    request.set_count(kSends);
    request.set_size(30000);
    request.set_prepared(true);
    request.set_prepared_encoding("gzip");
    auto reader = env.stub().Source(ctx, request);
    st::Chunk chunk;
    uint64_t got = 0;
    while (reader->BlockingRead(&chunk)) {
      EXPECT_TRUE(IsChunk(chunk, 0, 30000)) << got;
      ++got;
    }
    EXPECT_TRUE(reader->BlockingFinish().ok());
    EXPECT_EQ(got, kSends);
  }
  env.Stop();
}

TEST(PreparedMessage, SendLimitAppliesAtEachSend) {
  StreamingEnv::Config config;
  config.channel.max_send_message_size = 1000;
  StreamingEnv env(config);
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(0, 2000, chunk);
  StatusOr<PreparedMessage> prepared = PreparedMessage::Create(chunk);
  ASSERT_TRUE(prepared.ok());
  {
    ClientContext ctx;
    auto stream = env.stub().Echo(ctx);
    EXPECT_FALSE(stream->BlockingWrite(*prepared));
    const Status status = stream->BlockingFinish();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  }
  env.Stop();
}

// One prepared message written from several threads' streams at once.
TEST(PreparedMessage, SharedAcrossConcurrentStreams) {
  StreamingEnv env;
  ASSERT_TRUE(env.ok());
  st::Chunk chunk;
  MakeChunk(5, 3000, chunk);
  StatusOr<PreparedMessage> prepared = PreparedMessage::Create(chunk);
  ASSERT_TRUE(prepared.ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      ClientContext ctx;
      auto stream = env.stub().Echo(ctx);
      for (int i = 0; i < 200; ++i) {
        st::Chunk echoed;
        if (!stream->BlockingWrite(*prepared) || !stream->BlockingRead(&echoed) ||
            !IsChunk(echoed, 5, 3000)) {
          failures.fetch_add(1);
          break;
        }
      }
      stream->BlockingWritesDone();
      if (!stream->BlockingFinish().ok()) failures.fetch_add(1);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  env.Stop();
}

}  // namespace
}  // namespace rill::test
