// Compress then decompress with each built-in compressor, across sizes around the small-buffer
// and chunk boundaries, with inputs cut into many odd-sized buffers.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"

namespace rill::test {
namespace {

enum class Payload { kCompressible, kRandom };

std::string MakePayload(Payload kind, size_t size) {
  return kind == Payload::kCompressible ? ProtobufLike(size, size) : RandomBytes(size, size);
}

using RoundTripParam = std::tuple<std::string, size_t, Payload>;

class RoundTripTest : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(RoundTripTest, DecompressGivesBackTheInput) {
  const auto& [name, size, kind] = GetParam();
  const std::shared_ptr<Compressor> compressor = BuiltinCompressor(name);
  ASSERT_NE(compressor, nullptr);
  BufferPool& pool = DefaultBufferPool();
  const std::string original = MakePayload(kind, size);

  BufferSlice compressed;
  {
    const BufferSlice input = SliceOf(original, pool, kOddPieces);
    ASSERT_TRUE(compressor->Compress(input, pool, compressed).ok());
  }
  ASSERT_FALSE(compressed.empty());
  if (kind == Payload::kCompressible && size >= 1024) {
    EXPECT_LT(compressed.size(), size >= (64 << 10) ? size / 2 : size)
        << "protobuf-like data should compress";
  }
  // Every chunk but the last is full: the output is not fragmented.
  for (size_t i = 0; i + 1 < compressed.buffer_count(); ++i) {
    EXPECT_EQ(compressed.buffer(i).size(), compressed.buffer(i).BlockCapacity());
  }

  // The compressed chunks as produced, with a limit of exactly the original size.
  BufferSlice decompressed;
  ASSERT_TRUE(compressor->Decompress(compressed, pool, size, decompressed).ok());
  EXPECT_EQ(decompressed.size(), size);
  EXPECT_TRUE(decompressed.Materialize() == original);
  decompressed.Free();

  // The same bytes cut into odd pieces, so that every codec state meets a buffer boundary.
  const std::string wire = compressed.Materialize();
  const BufferSlice pieces = SliceOf(wire, pool, kOddPieces);
  ASSERT_TRUE(compressor->Decompress(pieces, pool, size, decompressed).ok());
  EXPECT_TRUE(decompressed.Materialize() == original);

  // The reference decoder reads rill's output.
  const std::optional<std::string> reference = ReferenceDecompress(name, wire);
  ASSERT_TRUE(reference.has_value());
  EXPECT_TRUE(*reference == original);
}

std::string ParamName(const ::testing::TestParamInfo<RoundTripParam>& info) {
  const auto& [name, size, kind] = info.param;
  return name + "_" + std::to_string(size) + (kind == Payload::kRandom ? "_random" : "_proto");
}

INSTANTIATE_TEST_SUITE_P(
    Sizes, RoundTripTest,
    ::testing::Combine(::testing::Values("gzip", "deflate", "zstd"),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{1023}, size_t{1024},
                                         size_t{1025}, size_t{64} << 10, size_t{1} << 20,
                                         size_t{5} << 20),
                       ::testing::Values(Payload::kCompressible, Payload::kRandom)),
    ParamName);

TEST(CompressTest, NamesAreTheGrpcEncodings) {
  EXPECT_EQ(GzipCompressor()->name(), "gzip");
  EXPECT_EQ(DeflateCompressor()->name(), "deflate");
  EXPECT_EQ(ZstdCompressor()->name(), "zstd");
}

TEST(CompressTest, AppendsToTheOutput) {
  BufferPool& pool = DefaultBufferPool();
  for (const auto& compressor : BuiltinCompressors()) {
    SCOPED_TRACE(compressor->name());
    const std::string original = ProtobufLike(3000);
    BufferSlice compressed(Buffer::Copy(std::string_view("head"), pool));
    ASSERT_TRUE(compressor->Compress(SliceOf(original, pool), pool, compressed).ok());
    ASSERT_EQ(compressed.Materialize().substr(0, 4), "head");
    BufferSlice body = std::move(compressed);
    body.TakeFront(4).Free();
    BufferSlice decompressed(Buffer::Copy(std::string_view("prefix:"), pool));
    ASSERT_TRUE(compressor->Decompress(body, pool, original.size(), decompressed).ok());
    EXPECT_TRUE(decompressed.Materialize() == "prefix:" + original);
  }
}

TEST(CompressTest, SmallMessagesGiveSmallBuffers) {
  BufferPool& pool = DefaultBufferPool();
  for (const auto& compressor : BuiltinCompressors()) {
    SCOPED_TRACE(compressor->name());
    const std::string original = ProtobufLike(900);
    BufferSlice compressed;
    ASSERT_TRUE(compressor->Compress(SliceOf(original, pool), pool, compressed).ok());
    ASSERT_EQ(compressed.buffer_count(), 1u);
    EXPECT_FALSE(compressed.buffer(0).IsPooled()) << "a small block, not a pooled chunk";
    EXPECT_LE(compressed.buffer(0).BlockCapacity(), kSmallBufferMax);

    BufferSlice decompressed;
    ASSERT_TRUE(compressor->Decompress(compressed, pool, original.size(), decompressed).ok());
    ASSERT_EQ(decompressed.buffer_count(), 1u);
    EXPECT_FALSE(decompressed.buffer(0).IsPooled());
  }
}

TEST(CompressTest, LargeOutputIsCutIntoChunks) {
  BufferPool& pool = DefaultBufferPool();
  constexpr size_t kChunk = BufferSliceWriter::kDefaultChunkSize;
  for (const auto& compressor : BuiltinCompressors()) {
    SCOPED_TRACE(compressor->name());
    const std::string original = RandomBytes(64 << 10);
    BufferSlice compressed;
    ASSERT_TRUE(compressor->Compress(SliceOf(original, pool, kOddPieces), pool, compressed).ok());
    EXPECT_GE(compressed.buffer_count(), 4u);
    for (const Buffer& chunk : compressed) EXPECT_LE(chunk.BlockCapacity(), kChunk);

    BufferSlice decompressed;
    ASSERT_TRUE(compressor->Decompress(compressed, pool, original.size(), decompressed).ok());
    ASSERT_EQ(decompressed.buffer_count(), 4u);
    for (const Buffer& chunk : decompressed) EXPECT_EQ(chunk.size(), kChunk);
  }
}

TEST(CompressTest, LevelsAreHonouredPerCompressor) {
  BufferPool& pool = DefaultBufferPool();
  const std::string original = ProtobufLike(256 << 10);
  const BufferSlice input = SliceOf(original, pool, kOddPieces);
  // Alternating levels on one thread: each call uses its compressor's level.
  for (int round = 0; round < 2; ++round) {
    for (auto [fast, best] : {std::pair{GzipCompressor(1), GzipCompressor(9)},
                              std::pair{DeflateCompressor(0), DeflateCompressor(9)},
                              std::pair{ZstdCompressor(1), ZstdCompressor(19)}}) {
      SCOPED_TRACE(fast->name());
      BufferSlice a;
      BufferSlice b;
      ASSERT_TRUE(fast->Compress(input, pool, a).ok());
      ASSERT_TRUE(best->Compress(input, pool, b).ok());
      EXPECT_LT(b.size(), a.size());
      BufferSlice back;
      ASSERT_TRUE(best->Decompress(a, pool, original.size(), back).ok());
      EXPECT_TRUE(back.Materialize() == original);
    }
  }
  // Level 0 is stored: larger than the input.
  BufferSlice stored;
  ASSERT_TRUE(GzipCompressor(0)->Compress(input, pool, stored).ok());
  EXPECT_GT(stored.size(), original.size());
}

}  // namespace
}  // namespace rill::test
