#include "rill/mem/buffer_slice.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::Pattern;

constexpr size_t kKiB = 1024;

// A slice of buffers of the given sizes, each in its own pooled (or small) block, holding
// consecutive bytes of Pattern(total).
BufferSlice MakeSlice(const std::vector<size_t>& sizes, BufferPool& pool) {
  size_t total = 0;
  for (size_t size : sizes) total += size;
  const std::string bytes = Pattern(total);
  BufferSlice slice;
  size_t offset = 0;
  for (size_t size : sizes) {
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(offset, size), pool));
    offset += size;
  }
  return slice;
}

TEST(BufferSliceTest, AppendCountsBytesAndDropsEmptyBuffers) {
  TieredBufferPool pool;
  BufferSlice slice;
  EXPECT_TRUE(slice.empty());
  slice.Append(Buffer());
  slice.Append(Buffer::Allocate(2000, pool));
  slice.Append(Buffer::Allocate(10, pool));
  EXPECT_EQ(slice.size(), 2010u);
  EXPECT_EQ(slice.buffer_count(), 2u);
  slice.Free();
  EXPECT_TRUE(slice.empty());
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceTest, GrowsPastInlineStorageAndMoves) {
  TieredBufferPool pool;
  std::vector<size_t> sizes(37, 2000);
  BufferSlice slice = MakeSlice(sizes, pool);
  EXPECT_EQ(slice.buffer_count(), 37u);
  EXPECT_EQ(pool.Stats().blocks_out, 37u);
  BufferSlice moved = std::move(slice);
  EXPECT_TRUE(slice.empty());  // NOLINT(bugprone-use-after-move): moved-from slices are empty
  EXPECT_EQ(moved.Materialize(), Pattern(37 * 2000));

  BufferSlice small = MakeSlice({1500, 1500}, pool);
  BufferSlice small_moved;
  small_moved = std::move(small);
  EXPECT_EQ(small_moved.Materialize(), Pattern(3000));
  moved.Append(std::move(small_moved));
  EXPECT_EQ(moved.buffer_count(), 39u);
  EXPECT_EQ(moved.size(), 77000u);
  moved.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceTest, TakeFrontSplitsTheBoundaryBufferWithoutCopying) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({3000, 3000, 3000}, pool);
  const std::byte* second = slice.buffer(1).data();
  const uint64_t copied_before = CopiedPayloadBytes();

  BufferSlice front = slice.TakeFront(4000);
  EXPECT_EQ(CopiedPayloadBytes(), copied_before);
  EXPECT_EQ(pool.Stats().blocks_out, 3u) << "split, not copied";
  ASSERT_EQ(front.buffer_count(), 2u);
  EXPECT_EQ(front.size(), 4000u);
  EXPECT_EQ(front.buffer(1).data(), second);
  EXPECT_EQ(front.buffer(1).size(), 1000u);
  ASSERT_EQ(slice.buffer_count(), 2u);
  EXPECT_EQ(slice.size(), 5000u);
  EXPECT_EQ(slice.buffer(0).data(), second + 1000);

  const std::string all = Pattern(9000);
  EXPECT_EQ(front.Materialize(), all.substr(0, 4000));
  EXPECT_EQ(slice.Materialize(), all.substr(4000));

  BufferSlice nothing = slice.TakeFront(0);
  EXPECT_TRUE(nothing.empty());
  BufferSlice rest = slice.TakeFront(slice.size());
  EXPECT_TRUE(slice.empty());
  EXPECT_EQ(rest.size(), 5000u);
}

TEST(BufferSliceTest, RepeatedTakeFrontAndAppendKeepOrder) {
  TieredBufferPool pool;
  const std::string all = Pattern(64 * 1500);
  BufferSlice queue;
  std::string taken;
  size_t appended = 0;
  // A deframer-like pattern: append frames, cut messages of odd sizes from the front.
  while (appended < all.size() || !queue.empty()) {
    if (appended < all.size()) {
      queue.Append(Buffer::Copy(std::string_view(all).substr(appended, 1500), pool));
      appended += 1500;
    }
    const size_t n = std::min<size_t>(queue.size(), appended < all.size() ? 1100 : queue.size());
    taken += queue.TakeFront(n).Materialize();
  }
  EXPECT_EQ(taken, all);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceTest, PopFrontReturnsTheFirstBuffer) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({2000, 3000}, pool);
  Buffer first = slice.PopFront();
  EXPECT_EQ(first.size(), 2000u);
  EXPECT_EQ(slice.size(), 3000u);
  EXPECT_EQ(slice.buffer_count(), 1u);
}

TEST(BufferSliceTest, RefSharesEveryBlock) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({2000, 3000, 4000}, pool);
  BufferSlice ref = slice.Ref();
  EXPECT_EQ(pool.Stats().blocks_out, 3u);
  slice.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 3u);
  EXPECT_EQ(ref.Materialize(), Pattern(9000));
  ref.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceTest, CopyToAndMaterializeCopyAndCount) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({1500, 10, 2000}, pool);
  uint64_t before = CopiedPayloadBytes();
  std::string flat = slice.Materialize();
  EXPECT_EQ(flat, Pattern(3510));
  EXPECT_EQ(CopiedPayloadBytes() - before, 3510u);

  before = CopiedPayloadBytes();
  std::vector<std::byte> out(1600);
  EXPECT_EQ(slice.CopyTo(out), 1600u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), out.size()), Pattern(1600));
  EXPECT_EQ(CopiedPayloadBytes() - before, 1600u);
  std::vector<std::byte> big(5000);
  EXPECT_EQ(slice.CopyTo(big), 3510u);
  EXPECT_EQ(slice.size(), 3510u) << "CopyTo does not consume";
}

TEST(BufferSliceTest, MaterializeToBufferOfOneBufferIsZeroCopy) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({6000}, pool);
  const uint64_t before = CopiedPayloadBytes();
  Buffer flat = slice.MaterializeToBuffer(pool);
  EXPECT_EQ(flat.data(), slice.buffer(0).data());
  EXPECT_EQ(CopiedPayloadBytes(), before);
  EXPECT_EQ(pool.Stats().blocks_out, 1u);
  slice.Free();
  EXPECT_EQ(flat.AsStringView(), Pattern(6000)) << "the result owns a reference";
}

TEST(BufferSliceTest, MaterializeToBufferOfManyBuffersCopiesOnce) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({3000, 3000}, pool);
  const uint64_t before = CopiedPayloadBytes();
  Buffer flat = slice.MaterializeToBuffer(pool);
  EXPECT_EQ(CopiedPayloadBytes() - before, 6000u);
  EXPECT_EQ(flat.AsStringView(), Pattern(6000));
  EXPECT_EQ(pool.Stats().blocks_out, 3u);
  EXPECT_TRUE(BufferSlice().MaterializeToBuffer(pool).empty());
}

// Small views of large blocks pin far more memory than they carry; Compact trades one copy for
// giving the large blocks back.
TEST(BufferSliceTest, CompactCopiesIntoOneBlockAndReleasesTheRest) {
  TieredBufferPool pool;
  BufferSlice slice;
  std::string expected;
  for (int i = 0; i < 6; ++i) {
    Buffer block = Buffer::Copy(Pattern(16 * kKiB, i), pool);
    slice.Append(block.Slice(100, 1300));
    expected += Pattern(16 * kKiB, i).substr(100, 1200);
  }
  EXPECT_EQ(slice.size(), 7200u);
  EXPECT_EQ(slice.PinnedBytes(), 6 * 16 * kKiB);
  EXPECT_EQ(pool.Stats().blocks_out, 6u);

  const uint64_t before = CopiedPayloadBytes();
  slice.Compact(pool);
  EXPECT_EQ(CopiedPayloadBytes() - before, 7200u);
  EXPECT_EQ(slice.buffer_count(), 1u);
  EXPECT_EQ(slice.Materialize(), expected);
  EXPECT_EQ(slice.PinnedBytes(), 8 * kKiB);
  EXPECT_EQ(pool.Stats().blocks_out, 1u);
  EXPECT_TRUE(slice.buffer(0).IsPooled());
}

TEST(BufferSliceTest, CompactOfSmallTotalUsesASmallBlock) {
  TieredBufferPool pool;
  Buffer block = Buffer::Copy(Pattern(8 * kKiB), pool);
  BufferSlice slice;
  slice.Append(block.Slice(0, 300));
  slice.Append(block.Slice(5000, 5400));
  block.Free();
  slice.Compact(pool);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  ASSERT_EQ(slice.buffer_count(), 1u);
  EXPECT_FALSE(slice.buffer(0).IsPooled());
  EXPECT_EQ(slice.Materialize(),
            Pattern(8 * kKiB).substr(0, 300) + Pattern(8 * kKiB).substr(5000, 400));
}

TEST(BufferSliceTest, CompactOfOneTightBufferIsANoOp) {
  TieredBufferPool pool;
  BufferSlice slice = MakeSlice({5000}, pool);  // a 8 KiB block: pins less than twice 5000
  const std::byte* data = slice.buffer(0).data();
  const uint64_t before = CopiedPayloadBytes();
  slice.Compact(pool);
  EXPECT_EQ(slice.buffer(0).data(), data);
  EXPECT_EQ(CopiedPayloadBytes(), before);
}

TEST(BufferSliceTest, CompactCopiesASmallViewOfALargeBlock) {
  TieredBufferPool pool;
  Buffer block = Buffer::Allocate(32 * 1024, pool);
  std::memset(block.mutable_data(), 7, block.size());
  BufferSlice slice(block.Slice(100, 100 + 2000));  // 2000 bytes pinning 32 KiB
  block.Free();
  const uint64_t before = CopiedPayloadBytes();
  slice.Compact(pool);
  EXPECT_EQ(slice.size(), 2000u);
  EXPECT_EQ(slice.PinnedBytes(), 2048u);
  EXPECT_EQ(CopiedPayloadBytes() - before, 2000u);
  EXPECT_EQ(slice.Materialize(), std::string(2000, '\7'));
}

}  // namespace
}  // namespace rill
