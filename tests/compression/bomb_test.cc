// Compression bombs: a valid gzip or zstd stream of 1 GiB of zeros (about 1 MiB and 32 KiB on the
// wire) sent to a receiver whose limit is 4 MiB. The receiver must answer RESOURCE_EXHAUSTED
// after producing at most limit + one chunk of output, and serve a good call on the same
// connection afterwards.
//
// The sender is a real rill peer whose compressor, registered under the real name, ignores the
// message and emits the bomb. The receiver runs on its own PeakPool and its real
// decompressor is wrapped to measure that pool around the decompression. The bounds asserted:
//
//   (1) during decompression:      window_peak - out_at_entry <= limit + kDecompressChunk
//       the decompressed output never exceeds limit + one 16 KiB chunk (limit + 1 bytes are
//       produced to see the limit crossed, which takes one more chunk);
//   (2) over the whole call:       peak <= out_at_entry + limit + kDecompressChunk
//       nothing else in the call's life needs more than the decompression moment;
//   (3) what is in flight then:    out_at_entry <= 2 * compressed + 2 * read_block_size
//       the compressed message as received (views of read blocks, compacted once they pin more
//       than twice their bytes) plus the read block being parsed and one being filled.
//
// Measured values are printed (and recorded as test properties) for the record.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/testing/codecs.h"
#include "tests/testing/compression_service.h"
#include "tests/testing/leak_check.h"

namespace rill::test {
namespace {

constexpr size_t kLimit = 4 * 1024 * 1024;
constexpr size_t kReadBlock = 32 * 1024;  // ServerOptions / ChannelOptions read_block_size

std::shared_ptr<const std::string> BombFor(const std::string& encoding) {
  return encoding == "gzip" ? GzipOfZeros(kGiB) : ZstdOfZeros(kGiB);
}

// Waits (bounded) until the pool has nothing out: releases after a call may trail its status.
bool WaitUntilEmpty(const PeakPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.bytes_out() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void ExpectOneConnection(const CallRecorder& recorder) {
  const auto calls = recorder.calls();
  ASSERT_FALSE(calls.empty());
  for (const auto& call : calls) EXPECT_EQ(call.peer, calls.front().peer);
}

// Checks bounds (1) to (3) and prints the numbers.
void ExpectBounded(const char* side, const std::string& encoding,
                   const MeasuredDecompressor::Measurement& m, const PeakPool& pool) {
  ASSERT_TRUE(m.measured) << "the decompressor was not given the measured pool";
  EXPECT_EQ(m.code, StatusCode::kResourceExhausted);
  const size_t during = m.peak_during - m.out_at_entry;
  std::printf(
      "[ bomb ] %s %s: compressed %zu B; pooled at entry %zu B; peak during decompression "
      "%zu B (+%zu B = limit + %zd B); overall peak %zu B; bound (2) %zu B\n",
      side, encoding.c_str(), m.compressed_size, m.out_at_entry, m.peak_during, during,
      static_cast<ptrdiff_t>(during) - static_cast<ptrdiff_t>(kLimit), pool.peak_bytes_out(),
      m.out_at_entry + kLimit + kDecompressChunk);
  ::testing::Test::RecordProperty(std::string(side) + "_" + encoding + "_decompress_growth",
                                  std::to_string(during));
  ::testing::Test::RecordProperty(std::string(side) + "_" + encoding + "_overall_peak",
                                  std::to_string(pool.peak_bytes_out()));
  EXPECT_LE(during, kLimit + kDecompressChunk) << "(1) output beyond limit + one chunk";
  EXPECT_LE(pool.peak_bytes_out(), m.out_at_entry + kLimit + kDecompressChunk) << "(2)";
  EXPECT_LE(m.out_at_entry, 2 * m.compressed_size + 2 * kReadBlock) << "(3)";
}

class BombTest : public ::testing::TestWithParam<std::string> {
 protected:
  enum class Bomber { kClient, kServer };

  const std::string& encoding() const { return GetParam(); }
  void TearDown() override { fixture_.Stop(); }

  // Starts a server and channel where `bomber`'s compressor sends the bomb for any message
  // larger than it (trigger_ bytes and up) and the other side receives with a limit of kLimit,
  // decompressing (measured_) in pool_.
  bool StartWithBomber(Bomber bomber) {
    bomber_side_ = bomber;
    const auto bomb = BombFor(encoding());
    trigger_ = bomb->size() + 1;  // a message must be larger than the bomb to carry it
    bomber_ = std::make_shared<BombCompressor>(BuiltinCompressor(encoding()), bomb, trigger_);
    measured_ = std::make_shared<MeasuredDecompressor>(BuiltinCompressor(encoding()), pool_);
    auto& setup = fixture_.setup();
    if (bomber == Bomber::kClient) {
      setup.server_pool = &pool_;
      setup.server_options.max_receive_message_size = kLimit;
      setup.server_compressors = BuiltInsWith(measured_);
      setup.channel_compressors = BuiltInsWith(bomber_);
    } else {
      setup.server_compressors = BuiltInsWith(bomber_);
      setup.channel_options.buffer_pool = &pool_;
      setup.channel_options.max_receive_message_size = kLimit;
      setup.channel_compressors = BuiltInsWith(measured_);
    }
    return fixture_.Start();
  }

  // A call that carries the bomb: compressed in the encoding by the bomber's side, with a
  // deadline only a hang reaches.
  void PrepareBombCall(ClientContext& context) const {
    context.set_timeout(std::chrono::seconds(60));
    if (bomber_side_ == Bomber::kClient) {
      context.set_compression(encoding());
    } else {
      context.AddMetadata(kResponseEncodingKey, encoding());
    }
  }

  // A unary call whose request (the client bombs) or response (the server bombs) carries the
  // bomb ends RESOURCE_EXHAUSTED, the bomb sent once.
  void ExpectUnaryBombRefused() {
    ClientContext context;
    PrepareBombCall(context);
    const size_t large = trigger_ + 1000;
    const SimpleRequest request = bomber_side_ == Bomber::kClient
                                      ? ZerosRequest(large, 10)
                                      : ZerosRequest(10, static_cast<int32_t>(large));
    SimpleResponse response;
    const rill::Status status = fixture_.stub().UnaryCall(context, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
    EXPECT_EQ(bomber_->bombs_sent(), 1);
  }

  // A FullDuplexCall: a good exchange first (compressed by the bomber), then a message (the
  // client bombs) or response (the server bombs) carrying the bomb, which ends the call
  // RESOURCE_EXHAUSTED.
  void ExpectStreamBombRefused() {
    ClientContext context;
    PrepareBombCall(context);
    const bool client_bombs = bomber_side_ == Bomber::kClient;
    const auto large = static_cast<int32_t>(trigger_ + 1000);
    auto stream = fixture_.stub().FullDuplexCall(context);
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingWrite(client_bombs ? StreamRequest(5000, {{100, {}}})
                                                   : StreamRequest(10, {{5000, {}}})));
    ASSERT_TRUE(stream->BlockingRead(&response));
    if (!client_bombs) {
      EXPECT_TRUE(context.response_compressed());
    }
    (void)stream->BlockingWrite(client_bombs ? StreamRequest(large, {{100, {}}})
                                             : StreamRequest(10, {{large, {}}}));
    EXPECT_FALSE(stream->BlockingRead(&response));
    const rill::Status status = stream->BlockingFinish();
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  }

  // After the bomb, good calls on the same connection (`plain_too`: an uncompressed one, then
  // one compressed in the encoding), and nothing left out of the pool between calls.
  void ExpectGoodCallsAfter(bool plain_too) {
    if (plain_too) ExpectGoodUnaryCall(fixture_.stub(), "");
    ExpectGoodUnaryCall(fixture_.stub(), encoding(), 10000);
    ExpectOneConnection(fixture_.recorder());
    EXPECT_TRUE(WaitUntilEmpty(pool_)) << pool_.bytes_out() << " bytes still out";
  }

  // Declared before the fixture: the server and channel release into it when they stop.
  PeakPool pool_{TestBufferPool()};
  CompressionFixture fixture_;
  Bomber bomber_side_ = Bomber::kClient;
  size_t trigger_ = 0;
  std::shared_ptr<BombCompressor> bomber_;
  std::shared_ptr<MeasuredDecompressor> measured_;
};

TEST_P(BombTest, ClientToServerUnary) {
  ASSERT_TRUE(StartWithBomber(Bomber::kClient));
  ExpectUnaryBombRefused();
  EXPECT_EQ(fixture_.service().requests_seen(), 0);
  ExpectBounded("server", encoding(), measured_->last(), pool_);

  // Good calls on the same connection: plain, and properly compressed in the same encoding.
  ExpectGoodCallsAfter(/*plain_too=*/true);
}

TEST_P(BombTest, ClientToServerStreaming) {
  ASSERT_TRUE(StartWithBomber(Bomber::kClient));
  ExpectStreamBombRefused();
  EXPECT_EQ(bomber_->bombs_sent(), 1);
  EXPECT_EQ(fixture_.service().requests_seen(), 1);
  ExpectBounded("server-stream", encoding(), measured_->last(), pool_);
  ExpectGoodCallsAfter(/*plain_too=*/false);
}

TEST_P(BombTest, ServerToClientUnary) {
  ASSERT_TRUE(StartWithBomber(Bomber::kServer));
  ExpectUnaryBombRefused();
  ExpectBounded("client", encoding(), measured_->last(), pool_);

  // The channel's connection stays up; between calls it holds no blocks.
  ExpectGoodCallsAfter(/*plain_too=*/true);
}

TEST_P(BombTest, ServerToClientStreaming) {
  ASSERT_TRUE(StartWithBomber(Bomber::kServer));
  ExpectStreamBombRefused();
  ExpectBounded("client-stream", encoding(), measured_->last(), pool_);
  ExpectGoodCallsAfter(/*plain_too=*/false);
}

INSTANTIATE_TEST_SUITE_P(GzipAndZstd, BombTest, ::testing::Values("gzip", "zstd"),
                         [](const auto& param_info) { return param_info.param; });

// The bombs themselves: small on the wire, 1 GiB of zeros once expanded (checked by streaming
// them through zlib and zstd directly, counting, without keeping the output).
uint64_t ExpandedSize(const std::string& name, const std::string& bomb, bool* all_zero) {
  std::vector<unsigned char> out(64 * 1024);  // stays in cache: the check is 2 GiB of writes
  uint64_t total = 0;
  *all_zero = true;
  auto account = [&](size_t n) {
    total += n;
    // All n bytes equal the first, and the first is zero.
    if (n > 0 && (out[0] != 0 || std::memcmp(out.data(), out.data() + 1, n - 1) != 0)) {
      *all_zero = false;
    }
  };
  if (name == "gzip") {
    z_stream z{};
    inflateInit2(&z, 15 + 16);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bomb.data()));
    z.avail_in = static_cast<uInt>(bomb.size());
    int rc;
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      rc = inflate(&z, Z_NO_FLUSH);
      account(out.size() - z.avail_out);
    } while (rc == Z_OK);
    inflateEnd(&z);
    return rc == Z_STREAM_END ? total : 0;
  }
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ZSTD_inBuffer in{bomb.data(), bomb.size(), 0};
  size_t rc = 1;
  while (in.pos < in.size && !ZSTD_isError(rc)) {
    ZSTD_outBuffer o{out.data(), out.size(), 0};
    rc = ZSTD_decompressStream(dctx, &o, &in);
    account(o.pos);
  }
  ZSTD_freeDCtx(dctx);
  return rc == 0 ? total : 0;
}

TEST(BombStreams, AreSmallAndExpandToOneGiB) {
  for (const std::string name : {"gzip", "zstd"}) {
    SCOPED_TRACE(name);
    const auto bomb = BombFor(name);
    std::printf("[ bomb ] %s of 1 GiB of zeros: %zu bytes\n", name.c_str(), bomb->size());
    EXPECT_LT(bomb->size(), size_t{2} << 20);
    bool all_zero = false;
    EXPECT_EQ(ExpandedSize(name, *bomb, &all_zero), kGiB);
    EXPECT_TRUE(all_zero);
  }
}

}  // namespace
}  // namespace rill::test
