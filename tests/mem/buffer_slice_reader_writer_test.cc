// BufferSliceReader and BufferSliceWriter (declared in rill/mem/buffer_slice.h).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::FailingPool;
using test::Pattern;

constexpr size_t kKiB = 1024;

BufferSlice FourBlocksOf4KiB(BufferPool& pool) {
  const std::string bytes = Pattern(16 * kKiB);
  BufferSlice slice;
  for (size_t i = 0; i < 4; ++i) {
    slice.Append(Buffer::Copy(std::string_view(bytes).substr(i * 4 * kKiB, 4 * kKiB), pool));
  }
  return slice;
}

std::string AsString(const std::vector<std::byte>& bytes, size_t n) {
  return {reinterpret_cast<const char*>(bytes.data()), n};
}

TEST(BufferSliceReaderTest, ReadFreesEachBufferOnceConsumed) {
  TieredBufferPool pool;
  BufferSliceReader reader(FourBlocksOf4KiB(pool));
  const std::string all = Pattern(16 * kKiB);
  EXPECT_EQ(reader.Remaining(), 16 * kKiB);
  EXPECT_EQ(pool.Stats().blocks_out, 4u);

  std::vector<std::byte> out(6000);
  ASSERT_EQ(reader.Read(out), 6000u);
  EXPECT_EQ(AsString(out, 6000), all.substr(0, 6000));
  EXPECT_EQ(pool.Stats().blocks_out, 3u) << "the first block was consumed and freed";
  EXPECT_EQ(reader.Remaining(), 16 * kKiB - 6000);

  ASSERT_EQ(reader.Read(std::span(out).first(2192)), 2192u);
  EXPECT_EQ(pool.Stats().blocks_out, 2u) << "a read ending exactly at a boundary frees too";

  std::vector<std::byte> rest(20000);
  ASSERT_EQ(reader.Read(rest), 8 * kKiB);
  EXPECT_EQ(AsString(rest, 8 * kKiB), all.substr(8 * kKiB));
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(reader.Read(rest), 0u);
}

TEST(BufferSliceReaderTest, DiscardFreesThePassedBuffers) {
  TieredBufferPool pool;
  BufferSliceReader reader(FourBlocksOf4KiB(pool));
  reader.Discard(100);
  EXPECT_EQ(pool.Stats().blocks_out, 4u);
  reader.Discard(4 * kKiB - 100 + 4 * kKiB + 1);
  EXPECT_EQ(pool.Stats().blocks_out, 2u);
  EXPECT_EQ(reader.Remaining(), 8 * kKiB - 1);
  std::vector<std::byte> out(3);
  ASSERT_EQ(reader.Read(out), 3u);
  EXPECT_EQ(AsString(out, 3), Pattern(16 * kKiB).substr(8 * kKiB + 1, 3));
  reader.Close();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(reader.Remaining(), 0u);
}

TEST(BufferSliceReaderTest, PeekViewsWithoutConsuming) {
  TieredBufferPool pool;
  BufferSliceReader reader(FourBlocksOf4KiB(pool));
  reader.Discard(1000);
  const std::string all = Pattern(16 * kKiB);

  iovec iov[8];
  size_t bytes = 0;
  size_t count = reader.Peek(10000, iov, 8, &bytes);
  ASSERT_EQ(count, 3u);
  EXPECT_EQ(bytes, 10000u);
  EXPECT_EQ(iov[0].iov_len, 4 * kKiB - 1000);
  EXPECT_EQ(iov[1].iov_len, 4 * kKiB);
  EXPECT_EQ(iov[2].iov_len, 10000 - (8 * kKiB - 1000));
  std::string viewed;
  for (size_t i = 0; i < count; ++i)
    viewed.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  EXPECT_EQ(viewed, all.substr(1000, 10000));

  count = reader.Peek(100 * kKiB, iov, 2, &bytes);
  EXPECT_EQ(count, 2u) << "limited by the iovecs";
  EXPECT_EQ(bytes, 8 * kKiB - 1000);
  count = reader.Peek(100 * kKiB, iov, 8, &bytes);
  EXPECT_EQ(count, 4u) << "limited by what remains";
  EXPECT_EQ(bytes, 16 * kKiB - 1000);

  EXPECT_EQ(reader.Remaining(), 16 * kKiB - 1000) << "peek consumes nothing";
  EXPECT_EQ(pool.Stats().blocks_out, 4u);
  // The writev pattern: peek, send, discard what was sent.
  reader.Discard(bytes);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceReaderTest, TakeMovesViewsOutWithoutCopying) {
  TieredBufferPool pool;
  BufferSliceReader reader(FourBlocksOf4KiB(pool));
  std::vector<std::byte> out(10);
  ASSERT_EQ(reader.Read(out), 10u);
  const uint64_t before = CopiedPayloadBytes();
  BufferSlice taken = reader.Take(5000);
  EXPECT_EQ(CopiedPayloadBytes(), before);
  EXPECT_EQ(taken.size(), 5000u);
  EXPECT_EQ(taken.Materialize(), Pattern(16 * kKiB).substr(10, 5000));
  EXPECT_EQ(reader.Remaining(), 16 * kKiB - 5010);
  EXPECT_EQ(pool.Stats().blocks_out, 4u) << "the second block is shared by `taken` and the reader";
  taken.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 3u);
  BufferSlice rest = reader.Take(reader.Remaining());
  EXPECT_EQ(rest.Materialize(), Pattern(16 * kKiB).substr(5010));
}

TEST(BufferSliceReaderTest, ResetFreesTheOldSlice) {
  TieredBufferPool pool;
  BufferSliceReader reader(FourBlocksOf4KiB(pool));
  reader.Reset(BufferSlice(Buffer::Copy(Pattern(3000), pool)));
  EXPECT_EQ(pool.Stats().blocks_out, 1u);
  EXPECT_EQ(reader.Remaining(), 3000u);
}

TEST(BufferSliceWriterTest, FillsFullPooledChunks) {
  TieredBufferPool pool;
  BufferSlice out;
  const std::string bytes = Pattern(10000);
  const uint64_t before = CopiedPayloadBytes();
  {
    BufferSliceWriter writer(&out, pool, 4096);
    size_t offset = 0;
    for (size_t piece : {1u, 3u, 7u, 4000u, 2500u, 3489u}) {
      writer.Write(std::string_view(bytes).substr(offset, piece));
      offset += piece;
    }
    ASSERT_EQ(offset, bytes.size());
  }
  EXPECT_EQ(CopiedPayloadBytes() - before, 10000u);
  ASSERT_EQ(out.buffer_count(), 3u);
  EXPECT_EQ(out.buffer(0).size(), 4096u);
  EXPECT_EQ(out.buffer(1).size(), 4096u);
  EXPECT_EQ(out.buffer(2).size(), 10000u - 8192u);
  for (const Buffer& buffer : out) EXPECT_TRUE(buffer.IsPooled());
  EXPECT_EQ(out.Materialize(), bytes);
  EXPECT_EQ(pool.Stats().blocks_out, 3u);
}

TEST(BufferSliceWriterTest, SmallOutputEndsInASmallBlock) {
  TieredBufferPool pool;
  BufferSlice out;
  {
    BufferSliceWriter writer(&out, pool);
    writer.Write(Pattern(700));
  }
  ASSERT_EQ(out.buffer_count(), 1u);
  EXPECT_FALSE(out.buffer(0).IsPooled()) << "700 bytes must not pin a 16 KiB chunk";
  EXPECT_EQ(out.Materialize(), Pattern(700));
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(BufferSliceWriterTest, ChunksOfAtMostOneKiBNeverTouchThePool) {
  FailingPool pool;
  BufferSlice out;
  {
    BufferSliceWriter writer(&out, pool, 1000);
    writer.Write(Pattern(5000));
  }
  EXPECT_EQ(out.Materialize(), Pattern(5000));
}

TEST(BufferSliceWriterTest, NextSpaceAndCommitWriteInPlace) {
  TieredBufferPool pool;
  BufferSlice out;
  BufferSliceWriter writer(&out, pool, 8192);
  const std::string bytes = Pattern(20000);
  size_t written = 0;
  while (written < bytes.size()) {
    std::span<std::byte> space = writer.NextSpace();
    ASSERT_FALSE(space.empty());
    const size_t n = std::min({space.size(), bytes.size() - written, size_t{3000}});
    std::memcpy(space.data(), bytes.data() + written, n);
    writer.Commit(n);
    written += n;
  }
  writer.Flush();
  EXPECT_EQ(out.Materialize(), bytes);
  ASSERT_EQ(out.buffer_count(), 3u);
  EXPECT_EQ(out.buffer(0).size(), 8192u);
  // Writing after a flush continues in new chunks, after the flushed bytes.
  writer.Write(Pattern(3000));
  writer.Flush();
  EXPECT_EQ(out.size(), 23000u);
}

}  // namespace
}  // namespace rill
