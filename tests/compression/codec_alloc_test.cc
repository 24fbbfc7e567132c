// In steady state a message costs no heap allocation: zlib and zstd contexts are per thread and
// reset, not rebuilt, and chunks come from the pool's thread cache. Counted with the malloc hook
// (bench/alloc_hook), which sees every allocation in the process, zlib's and zstd's included.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "bench/alloc_hook/alloc_hook.h"
#include "rill/compression.h"
#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/codecs.h"

namespace rill::test {
namespace {

constexpr int kWarmup = 300;  // past zstd's 128-call window for resizing its workspace
constexpr int kMeasured = 200;

struct PerMessage {
  double compress = 0;
  double decompress = 0;
};

PerMessage AllocationsPerMessage(Compressor& compressor, BufferPool& pool, const BufferSlice& input,
                                 size_t size) {
  BufferSlice compressed;
  EXPECT_TRUE(compressor.Compress(input, pool, compressed).ok());
  auto round = [&](uint64_t* compress_allocs, uint64_t* decompress_allocs) {
    const uint64_t before = bench::AllocationCounts().allocs;
    BufferSlice out;
    const Status compressed_ok = compressor.Compress(input, pool, out);
    const uint64_t middle = bench::AllocationCounts().allocs;
    BufferSlice back;
    const Status decompressed_ok = compressor.Decompress(compressed, pool, size, back);
    const uint64_t after = bench::AllocationCounts().allocs;
    EXPECT_TRUE(compressed_ok.ok());
    EXPECT_TRUE(decompressed_ok.ok());
    EXPECT_EQ(back.size(), size);
    *compress_allocs += middle - before;
    *decompress_allocs += after - middle;
  };
  uint64_t ignored_c = 0;
  uint64_t ignored_d = 0;
  for (int i = 0; i < kWarmup; ++i) round(&ignored_c, &ignored_d);
  uint64_t c = 0;
  uint64_t d = 0;
  for (int i = 0; i < kMeasured; ++i) round(&c, &d);
  return {static_cast<double>(c) / kMeasured, static_cast<double>(d) / kMeasured};
}

TEST(SteadyStateAllocationTest, NoHeapAllocationPerMessage) {
  if (!bench::AllocationCountingEnabled()) GTEST_SKIP() << "the sanitizer owns malloc";
  TieredBufferPool pool;
  struct Case {
    const char* name;
    std::string payload;
  };
  const Case cases[] = {{"1KiB proto-like", ProtobufLike(1024)},
                        {"1KiB random", RandomBytes(1024)},
                        {"64KiB proto-like", ProtobufLike(64 << 10)},
                        {"64KiB zeros", std::string(64 << 10, '\0')}};
  for (const auto& compressor : BuiltinCompressors()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(compressor->name()) + " " + c.name);
      const BufferSlice input = SliceOf(c.payload, pool, kOddPieces);
      const PerMessage per = AllocationsPerMessage(*compressor, pool, input, c.payload.size());
      std::printf("[ allocs   ] %-8s %-18s compress %.2f  decompress %.2f per message\n",
                  std::string(compressor->name()).c_str(), c.name, per.compress, per.decompress);
      EXPECT_EQ(per.compress, 0);
      EXPECT_EQ(per.decompress, 0);
    }
  }
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

// Incompressible 64 KiB compresses to five 16 KiB chunks: one more than a BufferSlice keeps
// without a heap array (BufferSlice::kInlineBuffers), so that output costs one allocation.
TEST(SteadyStateAllocationTest, IncompressibleLargeMessage) {
  if (!bench::AllocationCountingEnabled()) GTEST_SKIP() << "the sanitizer owns malloc";
  TieredBufferPool pool;
  const std::string payload = RandomBytes(64 << 10);
  for (const auto& compressor : BuiltinCompressors()) {
    SCOPED_TRACE(compressor->name());
    const BufferSlice input = SliceOf(payload, pool, kOddPieces);
    const PerMessage per = AllocationsPerMessage(*compressor, pool, input, payload.size());
    std::printf("[ allocs   ] %-8s %-18s compress %.2f  decompress %.2f per message\n",
                std::string(compressor->name()).c_str(), "64KiB random", per.compress,
                per.decompress);
    EXPECT_LE(per.compress, 1);
    EXPECT_EQ(per.decompress, 0);
  }
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

}  // namespace
}  // namespace rill::test
