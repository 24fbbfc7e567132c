// rill's compressed bytes are the standard formats: what rill writes, zlib, libzstd and the
// gzip and zstd tools read, and what they write, rill reads.
#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"
#include "tests/testing/require_peer.h"

namespace rill::test {
namespace {

constexpr size_t kSizes[] = {0, 1, 1000, 70000, 1 << 20};

std::string RillCompress(Compressor& compressor, std::string_view bytes) {
  BufferPool& pool = DefaultBufferPool();
  BufferSlice out;
  EXPECT_TRUE(compressor.Compress(SliceOf(bytes, pool, kOddPieces), pool, out).ok());
  return out.Materialize();
}

std::optional<std::string> RillDecompress(Compressor& compressor, std::string_view bytes,
                                          size_t limit = size_t{64} << 20) {
  BufferPool& pool = DefaultBufferPool();
  BufferSlice out;
  if (!compressor.Decompress(SliceOf(bytes, pool, kOddPieces), pool, limit, out).ok()) {
    return std::nullopt;
  }
  return out.Materialize();
}

TEST(InteropTest, LibrariesReadRillOutput) {
  for (const auto& compressor : BuiltinCompressors()) {
    for (size_t size : kSizes) {
      SCOPED_TRACE(std::string(compressor->name()) + " " + std::to_string(size));
      const std::string original = ProtobufLike(size);
      const std::string wire = RillCompress(*compressor, original);
      const std::optional<std::string> back = ReferenceDecompress(compressor->name(), wire);
      ASSERT_TRUE(back.has_value());
      EXPECT_TRUE(*back == original);
    }
  }
  // deflate is the zlib format: zlib's one-call uncompress() reads it.
  const std::string original = RandomBytes(5000);
  const std::string wire = RillCompress(*DeflateCompressor(), original);
  std::string back(original.size(), '\0');
  uLongf back_size = back.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(back.data()), &back_size,
                       reinterpret_cast<const Bytef*>(wire.data()), wire.size()),
            Z_OK);
  EXPECT_EQ(back_size, original.size());
  EXPECT_TRUE(back == original);
}

TEST(InteropTest, RillReadsLibraryOutput) {
  for (const auto& compressor : BuiltinCompressors()) {
    for (size_t size : kSizes) {
      SCOPED_TRACE(std::string(compressor->name()) + " " + std::to_string(size));
      const std::string original = RandomBytes(size);
      const std::optional<std::string> back =
          RillDecompress(*compressor, ReferenceCompress(compressor->name(), original));
      ASSERT_TRUE(back.has_value());
      EXPECT_TRUE(*back == original);
    }
  }
  // compress2() at every level.
  const std::string original = ProtobufLike(100000);
  for (int level = 0; level <= 9; ++level) {
    std::string wire(compressBound(original.size()), '\0');
    uLongf wire_size = wire.size();
    ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(wire.data()), &wire_size,
                        reinterpret_cast<const Bytef*>(original.data()), original.size(), level),
              Z_OK);
    wire.resize(wire_size);
    const std::optional<std::string> back = RillDecompress(*DeflateCompressor(), wire);
    ASSERT_TRUE(back.has_value()) << "level " << level;
    EXPECT_TRUE(*back == original);
  }
}

TEST(InteropTest, ToolsReadRillOutput) {
  RILL_REQUIRE_PEER(HaveProgram("gzip"), "the gzip command");
  RILL_REQUIRE_PEER(HaveProgram("zstd"), "the zstd command (Debian's zstd)");
  const std::string original = ProtobufLike(300000);
  const std::optional<std::string> gunzipped =
      RunFilter("gzip -dc", RillCompress(*GzipCompressor(), original));
  ASSERT_TRUE(gunzipped.has_value());
  EXPECT_TRUE(*gunzipped == original);
  const std::optional<std::string> unzstd =
      RunFilter("zstd -qdc", RillCompress(*ZstdCompressor(), original));
  ASSERT_TRUE(unzstd.has_value());
  EXPECT_TRUE(*unzstd == original);
  // `zstd -t` also verifies the frame checksum rill writes.
  EXPECT_TRUE(RunFilter("zstd -qt", RillCompress(*ZstdCompressor(), original)).has_value());
}

TEST(InteropTest, RillReadsToolOutput) {
  RILL_REQUIRE_PEER(HaveProgram("gzip"), "the gzip command");
  RILL_REQUIRE_PEER(HaveProgram("zstd"), "the zstd command (Debian's zstd)");
  const std::string original = RandomBytes(200000) + ProtobufLike(200000);
  for (const char* command : {"gzip -c -1", "gzip -c -9", "gzip -c --name"}) {
    SCOPED_TRACE(command);
    const std::optional<std::string> wire = RunFilter(command, original);
    ASSERT_TRUE(wire.has_value());
    const std::optional<std::string> back = RillDecompress(*GzipCompressor(), *wire);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(*back == original);
  }
  // -19 declares an 8 MiB window (the size is unknown on a pipe): accepted even at gRPC's
  // default limit of 4 MiB.
  for (const char* command : {"zstd -qc -1", "zstd -qc -19", "zstd -qc --no-check"}) {
    SCOPED_TRACE(command);
    const std::optional<std::string> wire = RunFilter(command, original);
    ASSERT_TRUE(wire.has_value());
    const std::optional<std::string> back =
        RillDecompress(*ZstdCompressor(), *wire, size_t{4} << 20);
    ASSERT_TRUE(back.has_value());
    EXPECT_TRUE(*back == original);
  }
}

// zstd keeps a frame's whole window in memory outside the pool. Windows up to 8 MiB, or up to
// the limit rounded up to a power of two, are accepted; a frame that needs more is refused as
// too large before zstd allocates it.
TEST(InteropTest, ZstdWindowsAreBoundedByTheLimit) {
  RILL_REQUIRE_PEER(HaveProgram("zstd"), "the zstd command (Debian's zstd)");
  const std::string original = ProtobufLike(100000);
  BufferPool& pool = DefaultBufferPool();
  for (const char* command : {"zstd -qc --ultra -22", "zstd -qc --long=27"}) {
    SCOPED_TRACE(command);
    const std::optional<std::string> wire = RunFilter(command, original);  // 128 MiB window
    ASSERT_TRUE(wire.has_value());
    const BufferSlice input = SliceOf(*wire, pool);
    BufferSlice out;
    const Status refused = ZstdCompressor()->Decompress(input, pool, size_t{4} << 20, out);
    EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused;
    EXPECT_TRUE(out.empty());
    ASSERT_TRUE(ZstdCompressor()->Decompress(input, pool, size_t{100} << 20, out).ok());
    EXPECT_TRUE(out.Materialize() == original);
  }
}

// A gzip stream may be several members and a zstd message several frames (what `cat a.gz b.gz`
// and `cat a.zst b.zst` make); the tools read them as one, and so does rill.
TEST(InteropTest, ConcatenatedMembersAndFrames) {
  const std::string a = ProtobufLike(5000, 1);
  const std::string b = RandomBytes(20000, 2);
  const std::optional<std::string> gzip = RillDecompress(
      *GzipCompressor(), ReferenceCompress("gzip", a) + ReferenceCompress("gzip", b));
  ASSERT_TRUE(gzip.has_value());
  EXPECT_TRUE(*gzip == a + b);
  const std::optional<std::string> zstd = RillDecompress(
      *ZstdCompressor(), ReferenceCompress("zstd", a) + ReferenceCompress("zstd", b));
  ASSERT_TRUE(zstd.has_value());
  EXPECT_TRUE(*zstd == a + b);
  // A skippable frame (magic 0x184D2A50, 4-byte length) carries no data.
  const std::string skippable("\x50\x2a\x4d\x18\x03\x00\x00\x00xyz", 11);
  const std::optional<std::string> skipped =
      RillDecompress(*ZstdCompressor(), skippable + ReferenceCompress("zstd", a));
  ASSERT_TRUE(skipped.has_value());
  EXPECT_TRUE(*skipped == a);
  // zlib's format is a single stream.
  EXPECT_FALSE(RillDecompress(*DeflateCompressor(),
                              ReferenceCompress("deflate", a) + ReferenceCompress("deflate", b))
                   .has_value());
}

}  // namespace
}  // namespace rill::test
