#include "rill/mem/buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "rill/mem/buffer.h"
#include "tests/testing/leak_check.h"

namespace rill {
namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * 1024;

TEST(TieredBufferPoolTest, CapacityIsTheSmallestTierThatFits) {
  EXPECT_EQ(TieredBufferPool::CapacityFor(0), 256u);
  EXPECT_EQ(TieredBufferPool::CapacityFor(1), 256u);
  EXPECT_EQ(TieredBufferPool::CapacityFor(256), 256u);
  EXPECT_EQ(TieredBufferPool::CapacityFor(257), 512u);
  EXPECT_EQ(TieredBufferPool::CapacityFor(4 * kKiB), 4 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(4 * kKiB + 1), 8 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(16 * kKiB), 16 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(33 * kKiB), 64 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(kMiB - 1), kMiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(kMiB), kMiB);
}

TEST(TieredBufferPoolTest, AboveOneMiBCapacityRoundsUpTo4KiB) {
  EXPECT_EQ(TieredBufferPool::CapacityFor(kMiB + 1), kMiB + 4 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(kMiB + 4 * kKiB), kMiB + 4 * kKiB);
  EXPECT_EQ(TieredBufferPool::CapacityFor(3 * kMiB + 5), 3 * kMiB + 4 * kKiB);

  TieredBufferPool pool;
  Buffer large = Buffer::Allocate(3 * kMiB + 5, pool);
  EXPECT_EQ(large.BlockCapacity(), 3 * kMiB + 4 * kKiB);
  large.Free();
  // Cached by exact capacity: the same rounded size is a hit, another size a miss.
  Buffer again = Buffer::Allocate(3 * kMiB + 100, pool);
  EXPECT_EQ(pool.Stats().hits, 1u);
  Buffer other = Buffer::Allocate(2 * kMiB, pool);
  EXPECT_EQ(pool.Stats().misses, 2u);
  EXPECT_EQ(pool.Stats().bytes_out, 5 * kMiB + 4 * kKiB);
}

TEST(TieredBufferPoolTest, BlocksGetTheirTierCapacity) {
  TieredBufferPool pool;
  for (size_t size :
       {size_t{1}, size_t{300}, 1025 * size_t{1}, 4 * kKiB, 16 * kKiB + 1, 200 * kKiB, kMiB}) {
    detail::BlockHeader* block = pool.AllocateBlock(size);
    EXPECT_EQ(block->capacity, TieredBufferPool::CapacityFor(size)) << size;
    EXPECT_EQ(block->pool, &pool);
    EXPECT_EQ(block->kind, detail::BlockKind::kPooled);
    EXPECT_EQ(block->refs.load(), 1);
    pool.ReleaseBlock(block);
  }
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(TieredBufferPoolTest, ReleasedBlockIsReusedAsAHit) {
  TieredBufferPool pool;
  Buffer first = Buffer::Allocate(10 * kKiB, pool);
  const std::byte* address = first.data();
  BufferPoolStats stats = pool.Stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.blocks_out, 1u);
  EXPECT_EQ(stats.bytes_out, 16 * kKiB);
  first.Free();
  stats = pool.Stats();
  EXPECT_EQ(stats.blocks_out, 0u);
  EXPECT_EQ(stats.bytes_out, 0u);
  EXPECT_EQ(stats.bytes_cached, 16 * kKiB);
  // Any size of the same tier reuses the block.
  Buffer second = Buffer::Allocate(9 * kKiB, pool);
  EXPECT_EQ(second.data(), address);
  stats = pool.Stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.bytes_cached, 0u);
}

TEST(TieredBufferPoolTest, TrimGivesCachedMemoryBack) {
  TieredBufferPool pool;
  std::vector<Buffer> buffers;
  for (int i = 0; i < 50; ++i) buffers.push_back(Buffer::Allocate(4 * kKiB, pool));
  for (int i = 0; i < 5; ++i) buffers.push_back(Buffer::Allocate(3 * kMiB, pool));
  buffers.clear();
  EXPECT_GE(pool.Stats().bytes_cached, 50 * 4 * kKiB);
  pool.Trim();
  EXPECT_EQ(pool.Stats().bytes_cached, 0u);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  // Trimmed blocks are gone: the next allocation goes to the heap.
  const uint64_t misses = pool.Stats().misses;
  Buffer after = Buffer::Allocate(4 * kKiB, pool);
  EXPECT_EQ(pool.Stats().misses, misses + 1);
}

TEST(TieredBufferPoolTest, CachesAreBounded) {
  TieredBufferPool::Options options;
  options.max_thread_cache_bytes_per_tier = 64 * kKiB;  // 16 blocks of 4 KiB
  options.max_shared_cache_bytes = 128 * kKiB;
  TieredBufferPool pool(options);
  std::vector<Buffer> buffers;
  for (int i = 0; i < 200; ++i) buffers.push_back(Buffer::Allocate(4 * kKiB, pool));
  for (int i = 0; i < 20; ++i) buffers.push_back(Buffer::Allocate(2 * kMiB, pool));
  buffers.clear();
  const BufferPoolStats stats = pool.Stats();
  EXPECT_EQ(stats.blocks_out, 0u);
  EXPECT_LE(stats.bytes_cached, 64 * kKiB + 128 * kKiB);
  EXPECT_GT(stats.bytes_cached, 0u);
}

// A burst of one size must not fill the shared cache for good: blocks released later evict it.
TEST(TieredBufferPoolTest, SharedCacheMakesRoomForRecentlyReleasedBlocks) {
  TieredBufferPool::Options options;
  options.max_thread_cache_bytes_per_tier = 0;  // one block per tier
  options.max_shared_cache_bytes = 256 * kKiB;
  TieredBufferPool pool(options);
  std::vector<Buffer> buffers;
  for (int i = 0; i < 100; ++i) buffers.push_back(Buffer::Allocate(4 * kKiB, pool));
  buffers.clear();
  EXPECT_EQ(pool.Stats().bytes_cached, 4 * kKiB + 256 * kKiB);
  for (int i = 0; i < 10; ++i) buffers.push_back(Buffer::Allocate(16 * kKiB, pool));
  buffers.clear();
  const uint64_t hits = pool.Stats().hits;
  for (int i = 0; i < 10; ++i) buffers.push_back(Buffer::Allocate(16 * kKiB, pool));
  EXPECT_EQ(pool.Stats().hits, hits + 10);
  EXPECT_LE(pool.Stats().bytes_cached + 0, 4 * kKiB + 256 * kKiB);
}

TEST(TieredBufferPoolTest, ThreadCacheKeepsAtLeastOneBlock) {
  TieredBufferPool::Options options;
  options.max_thread_cache_bytes_per_tier = 0;
  options.max_shared_cache_bytes = 0;
  TieredBufferPool pool(options);
  Buffer buffer = Buffer::Allocate(kMiB, pool);
  buffer.Free();
  EXPECT_EQ(pool.Stats().bytes_cached, kMiB);
  Buffer again = Buffer::Allocate(kMiB, pool);
  EXPECT_EQ(pool.Stats().hits, 1u);
}

// Tests and servers create many pools; each keeps its own caches and counters, also when one
// thread uses more pools than its table has slots.
TEST(TieredBufferPoolTest, ManyPoolsCoexist) {
  std::vector<std::unique_ptr<TieredBufferPool>> pools;
  for (int i = 0; i < 20; ++i) pools.push_back(std::make_unique<TieredBufferPool>());
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < pools.size(); ++i) {
      Buffer buffer = Buffer::Allocate(2 * kKiB * (i + 1), *pools[i]);
      EXPECT_EQ(pools[i]->Stats().blocks_out, 1u);
    }
  }
  for (size_t i = 0; i < pools.size(); ++i) {
    const BufferPoolStats stats = pools[i]->Stats();
    EXPECT_EQ(stats.blocks_out, 0u) << i;
    EXPECT_EQ(stats.hits + stats.misses, 3u) << i;
  }
  pools.clear();
  // Pools come and go; new ones start from zero.
  for (int i = 0; i < 30; ++i) {
    TieredBufferPool pool;
    Buffer buffer = Buffer::Allocate(64 * kKiB, pool);
    buffer.Free();
    EXPECT_EQ(pool.Stats().misses, 1u);
    EXPECT_EQ(pool.Stats().bytes_cached, 64 * kKiB);
  }
}

TEST(HeapBufferPoolTest, EveryBlockIsAFreshAllocation) {
  HeapBufferPool pool;
  Buffer a = Buffer::Allocate(5000, pool);
  EXPECT_EQ(a.BlockCapacity(), 5000u);
  EXPECT_EQ(pool.Stats().blocks_out, 1u);
  EXPECT_EQ(pool.Stats().bytes_out, 5000u);
  a.Free();
  Buffer b = Buffer::Allocate(5000, pool);
  const BufferPoolStats stats = pool.Stats();
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.bytes_cached, 0u);
  b.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(DefaultBufferPoolTest, TestsRunWithTheLeakCheckingPool) {
  EXPECT_EQ(&DefaultBufferPool(), &test::TestBufferPool());
  Buffer buffer = Buffer::Allocate(4 * kKiB, DefaultBufferPool());
  EXPECT_EQ(test::CountOutstandingBlocks().pooled, 1);
  buffer.Free();
  test::ExpectNoOutstandingBlocks("after Free");
}

TEST(DefaultBufferPoolTest, CanBeReplacedAndRestored) {
  HeapBufferPool heap;
  SetDefaultBufferPool(&heap);
  EXPECT_EQ(&DefaultBufferPool(), &heap);
  SetDefaultBufferPool(nullptr);
  BufferPool& built_in = DefaultBufferPool();
  EXPECT_NE(dynamic_cast<TieredBufferPool*>(&built_in), nullptr);
  SetDefaultBufferPool(&test::TestBufferPool());
  EXPECT_EQ(&DefaultBufferPool(), &test::TestBufferPool());
}

}  // namespace
}  // namespace rill
