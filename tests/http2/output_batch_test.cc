// OutputBatch on its own: when its byte limit calls it full, and that draining it gives back
// everything it pinned.
#include "src/http2/output_batch.h"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/leak_check.h"

namespace rill::internal {
namespace {

constexpr size_t kFrameHeader = 9;
constexpr size_t kPayload = 2000;  // held as a view (over kCopyBelow)
static_assert(kPayload >= OutputBatch::kCopyBelow);

// Appends what the session appends for one DATA frame: its header, copied, and its payload.
void AppendDataFrame(OutputBatch& batch, char fill) {
  std::array<std::byte, kFrameHeader> header{};
  header.fill(static_cast<std::byte>(fill));
  batch.AppendCopy(header);
  Buffer payload = Buffer::Allocate(kPayload, DefaultBufferPool());
  std::memset(payload.mutable_data(), fill, kPayload);
  batch.AppendPayload(std::move(payload));
}

// The batch's bytes in order, as one string.
std::string Contents(OutputBatch& batch) {
  std::string out;
  for (const iovec& iov : batch.iovecs()) {
    out.append(static_cast<const char*>(iov.iov_base), iov.iov_len);
  }
  return out;
}

TEST(OutputBatchTest, DefaultLimitIs256KiB) {
  OutputBatch batch(DefaultBufferPool());
  EXPECT_EQ(batch.byte_limit(), 256u * 1024);
  EXPECT_EQ(OutputBatch::kDefaultByteLimit, 256u * 1024);
}

TEST(OutputBatchTest, AnEmptyBatchIsNeverFull) {
  for (size_t limit : {size_t{0}, size_t{1}, size_t{100}, OutputBatch::kDefaultByteLimit}) {
    OutputBatch batch(DefaultBufferPool(), limit);
    EXPECT_TRUE(batch.empty()) << limit;
    EXPECT_FALSE(batch.full()) << limit << ": no frame could ever go in";
  }
}

TEST(OutputBatchTest, LimitZeroIsFullOnceItHoldsOneFrame) {
  OutputBatch batch(DefaultBufferPool(), 0);
  AppendDataFrame(batch, 'a');
  EXPECT_TRUE(batch.full());
  EXPECT_EQ(batch.bytes(), kFrameHeader + kPayload);
  // A part written leaves the rest of the frame: still full, nothing else may join it.
  batch.Consume(kFrameHeader + 10);
  EXPECT_TRUE(batch.full());
  batch.Consume(batch.bytes());
  EXPECT_TRUE(batch.empty());
  EXPECT_FALSE(batch.full());
  test::ExpectNoOutstandingBlocks("after the batch drained");
}

TEST(OutputBatchTest, LimitZeroIsFullAfterEvenOneByte) {
  OutputBatch batch(DefaultBufferPool(), 0);
  const std::byte one{1};
  batch.AppendCopy(std::span(&one, 1));
  EXPECT_TRUE(batch.full());
  batch.Clear();
  EXPECT_FALSE(batch.full());
}

TEST(OutputBatchTest, DefaultLimitHoldsManyFrames) {
  OutputBatch batch(DefaultBufferPool());
  size_t frames = 0;
  while (!batch.full()) {
    AppendDataFrame(batch, static_cast<char>('a' + frames % 26));
    ++frames;
  }
  // Full at the first frame that reached 256 KiB, not before.
  constexpr size_t kFrame = kFrameHeader + kPayload;
  EXPECT_EQ(frames, (OutputBatch::kDefaultByteLimit + kFrame - 1) / kFrame);
  EXPECT_GE(batch.bytes(), OutputBatch::kDefaultByteLimit);
  EXPECT_LT(batch.bytes() - kFrame, OutputBatch::kDefaultByteLimit);
  // Every frame's bytes are there, in order.
  const std::string contents = Contents(batch);
  ASSERT_EQ(contents.size(), frames * kFrame);
  for (size_t i = 0; i < frames; ++i) {
    const char fill = static_cast<char>('a' + i % 26);
    ASSERT_EQ(contents.substr(i * kFrame, kFrame), std::string(kFrame, fill)) << i;
  }
  batch.Consume(batch.bytes());
  test::ExpectNoOutstandingBlocks("after the batch drained");
}

TEST(OutputBatchTest, SmallLimitCountsBytes) {
  OutputBatch batch(DefaultBufferPool(), 100);
  std::array<std::byte, 60> bytes{};
  batch.AppendCopy(bytes);
  EXPECT_FALSE(batch.full()) << "60 of 100 bytes";
  batch.AppendCopy(bytes);
  EXPECT_TRUE(batch.full()) << "120 of 100 bytes";
  // Writing part of it makes room again.
  batch.Consume(30);
  EXPECT_FALSE(batch.full()) << "90 of 100 bytes";
  batch.Consume(batch.bytes());
}

// What an in-process connection hands its peer: the same bytes, in order, as views, including
// small pieces grown in place in a staging block that filled up and was replaced meanwhile.
TEST(OutputBatchTest, TakeViewsGivesTheSameBytesAndEmptiesTheBatch) {
  OutputBatch batch(DefaultBufferPool(), /*byte_limit=*/1 << 30);
  std::string small(700, 's');
  for (int i = 0; i < 60; ++i) {  // 42 000 bytes of copies: more than two staging blocks
    small[0] = static_cast<char>('a' + i % 26);
    batch.AppendCopy(std::as_bytes(std::span(small)));
    if (i % 7 == 0) AppendDataFrame(batch, static_cast<char>('A' + i % 26));
  }
  batch.Consume(5);  // a partly written first piece
  const std::string expected = Contents(batch);
  std::vector<Buffer> views;
  batch.TakeViews(views);
  EXPECT_TRUE(batch.empty());
  std::string got;
  for (const Buffer& view : views) got.append(view.AsStringView());
  EXPECT_EQ(got, expected);
  views.clear();  // every block goes back (the leak check says so)
}

}  // namespace
}  // namespace rill::internal
