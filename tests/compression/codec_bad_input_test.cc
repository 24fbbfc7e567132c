// Bad compressed input gets INTERNAL and leaves the caller's slice untouched: flipped bytes,
// every truncation, bytes after the end of the stream, another format, nothing at all.
#include <gtest/gtest.h>

#include <string>

#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"

namespace rill::test {
namespace {

constexpr size_t kLimit = size_t{1} << 20;

// Decompresses `wire` (cut into `pieces`) into a slice that already holds "keep"; checks that
// a failure leaves it as it was.
Status DecompressInto(Compressor& compressor, std::string_view wire, std::span<const size_t> pieces,
                      std::string* output = nullptr) {
  BufferPool& pool = DefaultBufferPool();
  BufferSlice out(Buffer::Copy(std::string_view("keep"), pool));
  Status status = compressor.Decompress(SliceOf(wire, pool, pieces), pool, kLimit, out);
  std::string all = out.Materialize();
  if (!status.ok()) {
    EXPECT_EQ(all, "keep") << "a failed call changed the output";
    EXPECT_EQ(out.buffer_count(), 1u);
  } else {
    EXPECT_EQ(all.substr(0, 4), "keep");
    if (output != nullptr) *output = all.substr(4);
  }
  return status;
}

Status DecompressInto(Compressor& compressor, std::string_view wire) {
  const size_t whole[] = {wire.size() + 1};
  return DecompressInto(compressor, wire, whole);
}

std::string CompressFlat(Compressor& compressor, std::string_view bytes) {
  BufferPool& pool = DefaultBufferPool();
  BufferSlice out;
  EXPECT_TRUE(compressor.Compress(SliceOf(bytes, pool), pool, out).ok());
  return out.Materialize();
}

// Bytes at the end of each format's stream that are a check over the data: gzip's CRC-32 and
// length, zlib's Adler-32, the zstd frame checksum rill writes.
size_t TrailerSize(std::string_view format) { return format == "gzip" ? 8 : 4; }

class BadInputTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::shared_ptr<Compressor> compressor_ = BuiltinCompressor(GetParam());
};

TEST_P(BadInputTest, FlippedBytesAreCaught) {
  const std::string original = ProtobufLike(3000);
  const std::string wire = CompressFlat(*compressor_, original);
  size_t rejected = 0;
  for (size_t i = 0; i < wire.size(); ++i) {
    for (unsigned char mask : {0x01, 0x80, 0xFF}) {
      std::string bad = wire;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      std::string output;
      const Status status = DecompressInto(*compressor_, bad, kOddPieces, &output);
      if (status.ok()) {
        // Only fields that do not affect the data (gzip's timestamp and OS byte, a zstd window
        // larger than needed) may change without notice, and then the bytes are the original.
        EXPECT_TRUE(output == original) << "flip at " << i << " decoded to different bytes";
        continue;
      }
      ++rejected;
      // A corrupt stream may also decode to more than the limit before the check fails.
      EXPECT_TRUE(status.code() == StatusCode::kInternal ||
                  status.code() == StatusCode::kResourceExhausted)
          << "flip at " << i << ": " << status;
      // Flips in the compressed body and the trailer are corruption, never a size problem.
      const bool body = i >= wire.size() / 4 && i < wire.size() - TrailerSize(GetParam());
      const bool trailer = i >= wire.size() - TrailerSize(GetParam());
      if (body || trailer) {
        EXPECT_EQ(status.code(), StatusCode::kInternal) << "flip at " << i << ": " << status;
      }
    }
  }
  EXPECT_GT(rejected, wire.size() * 3 * 9 / 10);
}

TEST_P(BadInputTest, EveryTruncationIsInternal) {
  const std::string wire = CompressFlat(*compressor_, ProtobufLike(3000));
  const size_t bytewise[] = {1};
  for (size_t n = 0; n < wire.size(); ++n) {
    const std::string_view prefix = std::string_view(wire).substr(0, n);
    const Status whole = DecompressInto(*compressor_, prefix);
    EXPECT_EQ(whole.code(), StatusCode::kInternal) << "prefix " << n << ": " << whole;
    const Status pieces = DecompressInto(*compressor_, prefix, bytewise);
    EXPECT_EQ(pieces.code(), StatusCode::kInternal) << "prefix " << n << ": " << pieces;
  }
  EXPECT_TRUE(DecompressInto(*compressor_, wire, bytewise).ok());
}

TEST_P(BadInputTest, BytesAfterTheStreamAreInternal) {
  const std::string wire = CompressFlat(*compressor_, ProtobufLike(3000));
  const std::string garbage[] = {
      std::string("x"), std::string(4, '\0'), std::string(100, '\0'), "garbage after the end",
      // The start of a second gzip member or zstd frame, cut short.
      std::string("\x1f\x8b", 2), std::string("\x28\xb5\x2f\xfd", 4), wire.substr(0, 12)};
  for (const std::string& tail : garbage) {
    const Status status = DecompressInto(*compressor_, wire + tail, kOddPieces);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << tail.size() << " bytes: " << status;
  }
}

TEST_P(BadInputTest, EmptyInputIsInternal) {
  const Status status = DecompressInto(*compressor_, "");
  EXPECT_EQ(status.code(), StatusCode::kInternal) << status;
}

TEST_P(BadInputTest, OtherFormatsAreInternal) {
  const std::string original = ProtobufLike(3000);
  for (const auto& other : BuiltinCompressors()) {
    if (other->name() == GetParam()) continue;
    const std::string wire = CompressFlat(*other, original);
    const Status status = DecompressInto(*compressor_, wire);
    EXPECT_EQ(status.code(), StatusCode::kInternal) << other->name() << ": " << status;
  }
  // Raw deflate (no wrapper) and plain bytes.
  const Status raw = DecompressInto(*compressor_, ZlibCompress(original, -15));
  EXPECT_EQ(raw.code(), StatusCode::kInternal) << raw;
  const Status plain = DecompressInto(*compressor_, original);
  EXPECT_EQ(plain.code(), StatusCode::kInternal) << plain;
}

INSTANTIATE_TEST_SUITE_P(Formats, BadInputTest, ::testing::Values("gzip", "deflate", "zstd"));

}  // namespace
}  // namespace rill::test
