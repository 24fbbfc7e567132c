// Decompression is bounded: a compression bomb stops at the limit with RESOURCE_EXHAUSTED after
// holding at most limit + one chunk of pooled memory, the limit itself is exact, and the sizes a
// stream declares (gzip's ISIZE, zstd's frame content size) never decide an allocation.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"
#include "tests/testing/pools.h"

namespace rill::test {
namespace {

constexpr uint64_t kBombZeros = uint64_t{1} << 30;  // 1 GiB
constexpr size_t kLimit = size_t{4} << 20;          // gRPC's default receive limit
constexpr size_t kChunk = BufferSliceWriter::kDefaultChunkSize;

// `zeros` zero bytes through deflate with the Z_RLE strategy (distance-1 matches only: the
// quickest way to zlib's best ratio), streamed from one zeroed block.
std::string ZlibBomb(int window_bits, uint64_t zeros) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 9, Z_RLE), Z_OK);
  const std::vector<Bytef> zero(1 << 20, 0);
  std::array<Bytef, 64 * 1024> chunk;
  std::string out;
  for (uint64_t left = zeros;;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zero.size()));
    left -= n;
    z.next_in = const_cast<Bytef*>(zero.data());
    z.avail_in = static_cast<uInt>(n);
    const int flush = left == 0 ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = chunk.data();
      z.avail_out = static_cast<uInt>(chunk.size());
      deflate(&z, flush);
      out.append(reinterpret_cast<const char*>(chunk.data()), chunk.size() - z.avail_out);
    } while (z.avail_out == 0);
    if (left == 0) break;
  }
  deflateEnd(&z);
  return out;
}

// The same through zstd, declaring the true size in the frame header.
std::string ZstdBomb(uint64_t zeros) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setPledgedSrcSize(cctx, zeros);
  const std::vector<char> zero(1 << 20, 0);
  std::array<char, 64 * 1024> chunk;
  std::string out;
  for (uint64_t left = zeros;;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zero.size()));
    left -= n;
    ZSTD_inBuffer in{zero.data(), n, 0};
    const ZSTD_EndDirective mode = left == 0 ? ZSTD_e_end : ZSTD_e_continue;
    size_t rc;
    do {
      ZSTD_outBuffer o{chunk.data(), chunk.size(), 0};
      rc = ZSTD_compressStream2(cctx, &o, &in, mode);
      EXPECT_FALSE(ZSTD_isError(rc));
      out.append(chunk.data(), o.pos);
    } while (mode == ZSTD_e_end ? rc != 0 : in.pos < in.size);
    if (left == 0) break;
  }
  ZSTD_freeCCtx(cctx);
  return out;
}

const std::string& Bomb(const std::string& format) {
  static std::map<std::string, std::string> bombs;
  auto it = bombs.find(format);
  if (it == bombs.end()) {
    std::string bomb = format == "gzip"      ? ZlibBomb(kGzipWindowBits, kBombZeros)
                       : format == "deflate" ? ZlibBomb(kZlibWindowBits, kBombZeros)
                                             : ZstdBomb(kBombZeros);
    it = bombs.emplace(format, std::move(bomb)).first;
  }
  return it->second;
}

class BombTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BombTest, StopsAtTheLimitHoldingAtMostLimitPlusOneChunk) {
  const std::shared_ptr<Compressor> compressor = BuiltinCompressor(GetParam());
  const std::string& bomb = Bomb(GetParam());
  std::printf("[ bomb     ] %s: 1 GiB of zeros in %zu compressed bytes\n", GetParam().c_str(),
              bomb.size());
  BufferPool& pool = DefaultBufferPool();
  const BufferSlice input = SliceOf(bomb, pool, kOddPieces);
  for (size_t limit : {kLimit, kLimit + 1, size_t{16} << 20}) {
    // Only the decompressor's output goes through the tracking pool.
    PeakPool tracking(pool);
    BufferSlice out(Buffer::Copy(std::string_view("untouched"), pool));
    const Status status = compressor->Decompress(input, tracking, limit, out);
    EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
    EXPECT_EQ(out.Materialize(), "untouched");
    EXPECT_EQ(tracking.Stats().blocks_out, 0u);
    // The asserted bound: limit + one 16 KiB chunk. The output reached the limit before
    // stopping, so the peak is at least the limit.
    EXPECT_LE(tracking.peak_bytes_out(), limit + kChunk);
    EXPECT_GE(tracking.peak_bytes_out(), limit);
    std::printf("[ bomb     ] %s: limit %zu, peak pooled bytes %zu (limit + %zu)\n",
                GetParam().c_str(), limit, tracking.peak_bytes_out(),
                tracking.peak_bytes_out() - limit);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, BombTest, ::testing::Values("gzip", "deflate", "zstd"));

TEST(LimitTest, ExactlyTheLimitPassesOneByteLessFails) {
  BufferPool& pool = DefaultBufferPool();
  for (const auto& compressor : BuiltinCompressors()) {
    for (size_t size : {size_t{1}, size_t{1000}, size_t{1024}, size_t{1025}, kChunk, kChunk + 1,
                        size_t{100000}, size_t{1} << 20}) {
      SCOPED_TRACE(std::string(compressor->name()) + " " + std::to_string(size));
      const std::string original = ProtobufLike(size);
      BufferSlice compressed;
      ASSERT_TRUE(compressor->Compress(SliceOf(original, pool), pool, compressed).ok());
      BufferSlice out;
      ASSERT_TRUE(compressor->Decompress(compressed, pool, size, out).ok());
      EXPECT_EQ(out.size(), size);
      out.Free();
      const Status status = compressor->Decompress(compressed, pool, size - 1, out);
      EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
      EXPECT_TRUE(out.empty());
    }
    // An empty message fits a limit of 0.
    BufferSlice compressed;
    ASSERT_TRUE(compressor->Compress(BufferSlice(), pool, compressed).ok());
    BufferSlice out;
    EXPECT_TRUE(compressor->Decompress(compressed, pool, 0, out).ok());
    EXPECT_TRUE(out.empty());
  }
}

// A gzip trailer claiming 4 GiB for a 1000-byte message: rill takes memory as bytes come out,
// so the claim costs nothing, and the mismatch is corruption.
TEST(DeclaredSizeTest, GzipIsizeIsNotTrusted) {
  BufferPool& pool = DefaultBufferPool();
  const std::string original = ProtobufLike(1000);
  std::string wire = ZlibCompress(original, kGzipWindowBits);
  wire.replace(wire.size() - 4, 4, "\xff\xff\xff\xff");
  PeakPool tracking(pool);
  BufferSlice out;
  const Status status =
      GzipCompressor()->Decompress(SliceOf(wire, pool), tracking, size_t{1} << 33, out);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
  EXPECT_LE(tracking.peak_bytes_out(), kChunk);

  // And one claiming 10 bytes for 1 MiB: the output is not cut short either.
  const std::string big = ProtobufLike(1 << 20);
  wire = ZlibCompress(big, kGzipWindowBits);
  wire.replace(wire.size() - 4, 4, std::string("\x0a\x00\x00\x00", 4));
  const Status mismatch =
      GzipCompressor()->Decompress(SliceOf(wire, pool), pool, size_t{4} << 20, out);
  EXPECT_EQ(mismatch.code(), StatusCode::kInternal) << mismatch;
  EXPECT_TRUE(out.empty());
}

// A zstd frame whose header claims 65791 bytes for 1000: decoded as it comes, the mismatch is
// corruption, and no memory is taken for the claim.
TEST(DeclaredSizeTest, ZstdContentSizeIsNotTrusted) {
  BufferPool& pool = DefaultBufferPool();
  const std::string original = ProtobufLike(1000);
  std::string wire = ZstdCompress(original);
  // Frame header: magic (4 bytes), descriptor 0x60 (single segment, 2-byte content size), then
  // the content size - 256, little endian.
  ASSERT_EQ(static_cast<unsigned char>(wire[4]), 0x60);
  ASSERT_EQ(static_cast<unsigned char>(wire[5]) | static_cast<unsigned char>(wire[6]) << 8,
            1000 - 256);
  wire[5] = '\xff';
  wire[6] = '\xff';
  PeakPool tracking(pool);
  BufferSlice out;
  const Status status =
      ZstdCompressor()->Decompress(SliceOf(wire, pool), tracking, size_t{1} << 20, out);
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
  EXPECT_TRUE(out.empty());
  EXPECT_LE(tracking.peak_bytes_out(), kChunk);
  // A claim beyond the limit is no shortcut to RESOURCE_EXHAUSTED either: the bytes decide.
  const Status small_limit = ZstdCompressor()->Decompress(SliceOf(wire, pool), pool, 2000, out);
  EXPECT_EQ(small_limit.code(), StatusCode::kInternal) << small_limit;
}

}  // namespace
}  // namespace rill::test
