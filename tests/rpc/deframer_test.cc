// MessageDeframer: messages cut out of DATA views of every shape, and what the views of an
// unfinished message may keep pinned.
#include "src/rpc/deframer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"

namespace rill::internal {
namespace {

constexpr size_t kKiB = 1024;

std::string Framed(const std::string& body) {
  std::string out(5, '\0');
  const auto n = static_cast<uint32_t>(body.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + body;
}

std::string Pattern(size_t n) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>('a' + i % 23);
  return out;
}

// A view of `bytes` that keeps a block of `block_size` to itself, as a small DATA frame alone in
// a read block does.
Buffer LoneView(std::string_view bytes, size_t block_size, BufferPool& pool) {
  Buffer block = Buffer::Allocate(block_size, pool);
  std::memcpy(block.mutable_data(), bytes.data(), bytes.size());
  block.Truncate(bytes.size());
  return block;
}

TEST(DeframerTest, MessageFromFullBlocksIsNotCopied) {
  TieredBufferPool pool;
  const std::string wire = Framed(Pattern(1024 * kKiB));
  MessageDeframer deframer;
  deframer.Reset(4 * 1024 * kKiB);
  uint64_t copied = 0;  // by the deframer (Buffer::Copy below counts too)
  Message message;
  Status error;
  MessageDeframer::Result result = MessageDeframer::Result::kNeedMore;
  // 16 KiB frames, each filling its own block (a peer writing a frame per read).
  for (size_t at = 0; at < wire.size(); at += 16 * kKiB) {
    const std::string_view frame = std::string_view(wire).substr(at, 16 * kKiB);
    deframer.Push(Buffer::Copy(frame, pool));
    const uint64_t before = CopiedPayloadBytes();
    result = deframer.Next(message, error, pool);
    copied += CopiedPayloadBytes() - before;
    if (at + frame.size() < wire.size()) {
      ASSERT_EQ(result, MessageDeframer::Result::kNeedMore);
    }
  }
  ASSERT_EQ(result, MessageDeframer::Result::kMessage);
  EXPECT_LE(copied, 5u) << "views of full blocks were compacted";  // the prefix is read out
  EXPECT_EQ(message.body.size(), 1024 * kKiB);
  EXPECT_EQ(message.body.Materialize(), Pattern(1024 * kKiB));
}

TEST(DeframerTest, TinyPiecesOfBigBlocksAreCompacted) {
  TieredBufferPool pool;
  const std::string wire = Framed(Pattern(256 * kKiB));
  MessageDeframer deframer;
  deframer.Reset(4 * 1024 * kKiB);
  Message message;
  Status error;
  MessageDeframer::Result result = MessageDeframer::Result::kNeedMore;
  uint64_t worst_ratio_x100 = 0;
  // 100-byte frames, each alone in a 16 KiB block: left as they are, the views of the message
  // would pin 160 times its size.
  for (size_t at = 0; at < wire.size(); at += 100) {
    const std::string_view frame = std::string_view(wire).substr(at, 100);
    deframer.Push(LoneView(frame, 16 * kKiB, pool));
    result = deframer.Next(message, error, pool);
    if (result != MessageDeframer::Result::kNeedMore) break;
    if (deframer.buffered() >= 64 * kKiB) {
      worst_ratio_x100 = std::max(worst_ratio_x100,
                                  100 * pool.Stats().bytes_out / deframer.buffered());
    }
  }
  ASSERT_EQ(result, MessageDeframer::Result::kMessage);
  EXPECT_EQ(message.body.Materialize(), Pattern(256 * kKiB));
  // Compaction at twice the size, looked at when the views grew by half: about three times,
  // plus the pool's rounding of the compacted block.
  std::printf("[ measure  ] worst pinned / buffered: %.2f\n",
              static_cast<double>(worst_ratio_x100) / 100);
  EXPECT_LE(worst_ratio_x100, 400u) << "pinned/buffered x100";
  message.body.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(DeframerTest, MessagesSplitAcrossAndWithinViews) {
  TieredBufferPool pool;
  std::string wire;
  std::vector<std::string> bodies;
  for (size_t size : {0u, 1u, 5u, 4096u, 70000u, 3u}) {
    bodies.push_back(Pattern(size));
    wire += Framed(bodies.back());
  }
  for (size_t step : {1u, 7u, 1000u, 65536u}) {
    MessageDeframer deframer;
    deframer.Reset(1024 * kKiB);
    std::vector<std::string> got;
    Message message;
    Status error;
    for (size_t at = 0; at < wire.size(); at += step) {
      deframer.Push(Buffer::Copy(std::string_view(wire).substr(at, step), pool));
      MessageDeframer::Result result;
      while ((result = deframer.Next(message, error, pool)) == MessageDeframer::Result::kMessage) {
        got.push_back(message.body.Materialize());
        message.body.Free();
      }
      ASSERT_EQ(result, MessageDeframer::Result::kNeedMore) << error.message();
    }
    EXPECT_EQ(got, bodies) << "pieces of " << step << " bytes";
    EXPECT_FALSE(deframer.HasPartial());
  }
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(DeframerTest, OversizedAndBadFlagFailBeforeTheBody) {
  TieredBufferPool pool;
  Message message;
  Status error;
  MessageDeframer deframer;
  deframer.Reset(100);
  deframer.Push(Buffer::Copy(Framed(Pattern(101)).substr(0, 5), pool));
  ASSERT_EQ(deframer.Next(message, error, pool), MessageDeframer::Result::kError);
  EXPECT_EQ(error.code(), StatusCode::kResourceExhausted);
  deframer.Reset(100);
  std::string bad = Framed("x");
  bad[0] = '\2';
  deframer.Push(Buffer::Copy(bad, pool));
  ASSERT_EQ(deframer.Next(message, error, pool), MessageDeframer::Result::kError);
  EXPECT_EQ(error.code(), StatusCode::kInternal);
  deframer.Clear();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

}  // namespace
}  // namespace rill::internal
