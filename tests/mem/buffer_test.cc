#include "rill/mem/buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::FailingPool;
using test::Pattern;

uint64_t BlocksOut(const BufferPool& pool) { return pool.Stats().blocks_out; }

TEST(BufferTest, EmptyBufferHoldsNothing) {
  Buffer empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.BlockCapacity(), 0u);
  EXPECT_FALSE(empty.IsPooled());
  EXPECT_TRUE(empty.IsUnique());
  Buffer zero = Buffer::Allocate(0, DefaultBufferPool());
  EXPECT_TRUE(zero.empty());
  EXPECT_EQ(zero.BlockCapacity(), 0u);
}

// One block, many views: the block stays out until the last view is released.
TEST(BufferTest, RefcountLifeCycleThroughRefSplitAndSlice) {
  TieredBufferPool pool;
  EXPECT_EQ(BlocksOut(pool), 0u);
  Buffer buffer = Buffer::Allocate(8192, pool);
  EXPECT_TRUE(buffer.IsPooled());
  EXPECT_TRUE(buffer.IsUnique());
  EXPECT_EQ(BlocksOut(pool), 1u);

  Buffer ref = buffer.Ref();
  EXPECT_FALSE(buffer.IsUnique());
  Buffer tail = buffer.Split(1000);
  Buffer middle = tail.Slice(10, 20);
  EXPECT_EQ(buffer.size(), 1000u);
  EXPECT_EQ(tail.size(), 7192u);
  EXPECT_EQ(middle.size(), 10u);
  EXPECT_EQ(BlocksOut(pool), 1u);

  buffer.Free();
  ref.Free();
  tail.Free();
  EXPECT_EQ(BlocksOut(pool), 1u) << "`middle` still views the block";
  EXPECT_TRUE(middle.IsUnique());
  middle.Free();
  EXPECT_EQ(BlocksOut(pool), 0u);
}

TEST(BufferTest, ViewKeepsRootAliveAfterRootIsFreed) {
  TieredBufferPool pool;
  const std::string bytes = Pattern(5000);
  Buffer root = Buffer::Copy(bytes, pool);
  Buffer view = root.Slice(100, 4100);
  root.Free();
  EXPECT_EQ(BlocksOut(pool), 1u);
  EXPECT_EQ(view.AsStringView(), std::string_view(bytes).substr(100, 4000));
  view.Free();
  EXPECT_EQ(BlocksOut(pool), 0u);
}

TEST(BufferTest, SplitAndSliceShareBytesWithoutCopying) {
  TieredBufferPool pool;
  Buffer buffer = Buffer::Copy(Pattern(4096), pool);
  const std::byte* base = buffer.data();
  const uint64_t copied_before = CopiedPayloadBytes();
  Buffer tail = buffer.Split(1500);
  Buffer slice = tail.Slice(6, 10);
  EXPECT_EQ(buffer.data(), base);
  EXPECT_EQ(tail.data(), base + 1500);
  EXPECT_EQ(slice.data(), base + 1506);
  EXPECT_EQ(CopiedPayloadBytes(), copied_before);
  EXPECT_TRUE(tail.Slice(3, 3).empty());
  EXPECT_TRUE(tail.Split(tail.size()).empty());
}

TEST(BufferTest, CopyCopiesAndCountsBytes) {
  TieredBufferPool pool;
  const std::string bytes = Pattern(3000, 7);
  const uint64_t copied_before = CopiedPayloadBytes();
  Buffer copy = Buffer::Copy(bytes, pool);
  EXPECT_EQ(CopiedPayloadBytes() - copied_before, 3000u);
  EXPECT_EQ(copy.AsStringView(), bytes);
  EXPECT_NE(static_cast<const void*>(copy.data()), static_cast<const void*>(bytes.data()));
}

TEST(BufferTest, PooledBlockCapacityIsTheTier) {
  TieredBufferPool pool;
  Buffer buffer = Buffer::Allocate(5000, pool);
  EXPECT_EQ(buffer.size(), 5000u);
  EXPECT_EQ(buffer.BlockCapacity(), 8192u);
  EXPECT_EQ(buffer.TailRoom(), 8192u - 5000u);
  buffer.Extend(buffer.TailRoom());
  EXPECT_EQ(buffer.size(), 8192u);
  buffer.Truncate(10);
  EXPECT_EQ(buffer.size(), 10u);
  buffer.RemovePrefix(4);
  EXPECT_EQ(buffer.size(), 6u);
  EXPECT_EQ(buffer.TailRoom(), 8192u - 10u);
}

// Refcounting a tiny piece costs more than copying it: small buffers never touch a pool.
TEST(BufferTest, SmallBuffersNeverTouchThePool) {
  FailingPool pool;
  const int64_t small_before = SmallBlocksOutstanding();
  {
    Buffer one = Buffer::Allocate(1, pool);
    Buffer mid = Buffer::Copy(Pattern(200), pool);
    Buffer max = Buffer::Allocate(kSmallBufferMax, pool);
    EXPECT_FALSE(one.IsPooled());
    EXPECT_FALSE(max.IsPooled());
    EXPECT_EQ(mid.AsStringView(), Pattern(200));
    EXPECT_GE(max.BlockCapacity(), kSmallBufferMax);
    EXPECT_EQ(SmallBlocksOutstanding() - small_before, 3);
    Buffer ref = mid.Ref();
    Buffer tail = mid.Split(50);
    EXPECT_EQ(SmallBlocksOutstanding() - small_before, 3);
    EXPECT_EQ(tail.AsStringView(), Pattern(200).substr(50));
  }
  EXPECT_EQ(SmallBlocksOutstanding(), small_before);
  EXPECT_EQ(pool.Stats().misses, 0u);
}

TEST(BufferTest, SmallBlocksAreReusedFromTheThreadCache) {
  FailingPool pool;
  Buffer first = Buffer::Allocate(100, pool);
  const std::byte* address = first.data();
  first.Free();
  Buffer second = Buffer::Allocate(200, pool);  // same size class (up to 256 bytes)
  EXPECT_EQ(second.data(), address);
}

TEST(BufferTest, BufferIsMovable) {
  TieredBufferPool pool;
  Buffer a = Buffer::Copy(Pattern(2000), pool);
  Buffer b = std::move(a);
  EXPECT_EQ(b.size(), 2000u);
  Buffer c;
  c = std::move(b);
  EXPECT_EQ(c.AsStringView(), Pattern(2000));
  c = Buffer::Copy(Pattern(3000), pool);  // releases the first block
  EXPECT_EQ(BlocksOut(pool), 1u);
}

#if RILL_DCHECK_IS_ON

TEST(BufferDeathTest, DoubleFreeIsCaught) {
  TieredBufferPool pool;
  EXPECT_DEATH(
      {
        Buffer buffer = Buffer::Allocate(4096, pool);
        buffer.Free();
        buffer.Free();
      },
      "double free of a rill::Buffer");
}

TEST(BufferDeathTest, UseAfterFreeIsCaught) {
  TieredBufferPool pool;
  EXPECT_DEATH(
      {
        Buffer buffer = Buffer::Allocate(4096, pool);
        buffer.Free();
        (void)buffer.size();
      },
      "use of a freed rill::Buffer");
  EXPECT_DEATH(
      {
        Buffer buffer = Buffer::Allocate(16, pool);
        buffer.Free();
        Buffer again = buffer.Ref();
      },
      "use of a freed rill::Buffer");
}

// A view whose block was released behind its back (here: one reference adopted by two views)
// is caught on its next use, even though the block is cached and not returned to the heap.
TEST(BufferDeathTest, StaleViewIsCaught) {
  TieredBufferPool pool;
  EXPECT_DEATH(
      {
        detail::BlockHeader* block = pool.AllocateBlock(4096);
        Buffer first = Buffer::AdoptBlock(block, 4096);
        Buffer second = Buffer::AdoptBlock(block, 4096);  // the bug: no reference of its own
        first.Free();
        (void)second.data();
      },
      "stale view");
}

#endif  // RILL_DCHECK_IS_ON

#if defined(__SANITIZE_ADDRESS__) || RILL_DCHECK_IS_ON
// Released blocks are poisoned while they wait in a cache: a raw pointer kept past Free() reads
// 0xDD (checked builds) or faults (AddressSanitizer builds), never the old payload.
TEST(BufferDeathTest, ReleasedDataIsPoisoned) {
  TieredBufferPool pool;
  Buffer buffer = Buffer::Copy(Pattern(4096), pool);
  Buffer view = buffer.Slice(0, 100);
  const std::byte* raw = buffer.data();
  buffer.Free();
  view.Free();
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_DEATH((void)*static_cast<const volatile std::byte*>(raw + 100), "use-after-poison");
#else
  // The first word of a cached block links it into the cache; the rest is poison.
  EXPECT_EQ(raw[100], std::byte{0xDD});
  EXPECT_EQ(raw[4095], std::byte{0xDD});
#endif
}
#endif

}  // namespace
}  // namespace rill
