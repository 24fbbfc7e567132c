// ReadAll (declared in rill/mem/buffer_slice.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::Pattern;
using test::PeakPool;

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

// Produces `total` bytes of Pattern() in reads of at most `max_read` bytes, then fails with
// `error` (if set) or reports the end.
class PatternSource final : public ByteSource {
 public:
  PatternSource(size_t total, size_t max_read, Status error = Status())
      : total_(total), max_read_(max_read), error_(std::move(error)) {}

  StatusOr<size_t> Read(std::span<std::byte> dst) override {
    if (produced_ == total_) {
      if (!error_.ok()) return error_;
      return size_t{0};
    }
    const size_t n = std::min({dst.size(), max_read_, total_ - produced_});
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<std::byte>((produced_ + i) & 0xFF);
    produced_ += n;
    return n;
  }
  size_t produced() const { return produced_; }

 private:
  size_t total_;
  size_t max_read_;
  Status error_;
  size_t produced_ = 0;
};

TEST(ReadAllTest, ReadsTheWholeSource) {
  TieredBufferPool pool;
  PatternSource source(100 * kKiB + 17, 3001);
  StatusOr<BufferSlice> slice = ReadAll(source, pool, kMiB);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->Materialize(), Pattern(100 * kKiB + 17));
  EXPECT_EQ(slice->buffer_count(), 7u) << "16 KiB chunks";
}

TEST(ReadAllTest, EmptySourceGivesAnEmptySlice) {
  TieredBufferPool pool;
  PatternSource source(0, 100);
  StatusOr<BufferSlice> slice = ReadAll(source, pool, kMiB);
  ASSERT_TRUE(slice.ok());
  EXPECT_TRUE(slice->empty());
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(ReadAllTest, ExactlyTheLimitIsAccepted) {
  TieredBufferPool pool;
  PatternSource source(64 * kKiB, 64 * kKiB);
  StatusOr<BufferSlice> slice = ReadAll(source, pool, 64 * kKiB);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->size(), 64 * kKiB);
}

// A decompression bomb: 10 MiB behind a 1 MiB limit. ReadAll stops one byte past the limit and
// never holds more than the limit plus one chunk.
TEST(ReadAllTest, OverTheLimitIsResourceExhaustedAndBounded) {
  TieredBufferPool inner;
  PeakPool pool(inner);
  PatternSource source(10 * kMiB, 64 * kKiB);
  StatusOr<BufferSlice> slice = ReadAll(source, pool, kMiB);
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(source.produced(), kMiB + 1);
  EXPECT_LE(pool.peak_bytes_out(), kMiB + BufferSliceWriter::kDefaultChunkSize);
  EXPECT_GE(pool.peak_bytes_out(), kMiB);
  EXPECT_EQ(pool.Stats().blocks_out, 0u) << "partial chunks are freed";
}

TEST(ReadAllTest, LimitHoldsForOddChunkSizes) {
  TieredBufferPool inner;
  PeakPool pool(inner);
  PatternSource source(3 * kMiB, 7777);
  const size_t chunk = 5000;  // 8 KiB blocks
  StatusOr<BufferSlice> slice = ReadAll(source, pool, 100 * kKiB + 3, chunk);
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().code(), StatusCode::kResourceExhausted);
  EXPECT_LE(pool.peak_bytes_out(), 100 * kKiB + 3 + TieredBufferPool::CapacityFor(chunk));
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(ReadAllTest, SourceErrorIsReturnedAndNothingLeaks) {
  TieredBufferPool pool;
  PatternSource source(50 * kKiB, 4000, Status(StatusCode::kDataLoss, "corrupt stream"));
  StatusOr<BufferSlice> slice = ReadAll(source, pool, kMiB);
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(slice.status().message(), "corrupt stream");
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

}  // namespace
}  // namespace rill
