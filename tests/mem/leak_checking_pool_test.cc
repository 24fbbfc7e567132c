#include "rill/mem/leak_checking_pool.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rill/mem/buffer.h"
#include "tests/testing/leak_check.h"

namespace rill {

// Outside the unnamed namespace so that its name is exported and appears in reports.
[[gnu::noinline]] Buffer LeakingAllocationOnPurpose(BufferPool& pool) {
  Buffer buffer = Buffer::Allocate(5000, pool);
  std::memset(buffer.mutable_data(), 0x42, buffer.size());
  return buffer;
}

namespace {

TEST(LeakCheckingBufferPoolTest, CleanUseReportsNothing) {
  LeakCheckingBufferPool pool;
  Buffer a = Buffer::Allocate(4096, pool);
  Buffer b = a.Split(100);
  EXPECT_EQ(pool.Stats().blocks_out, 1u);
  EXPECT_EQ(pool.Stats().bytes_out, 4096u);
  a.Free();
  b.Free();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(pool.CheckAndReset(), "");
}

TEST(LeakCheckingBufferPoolTest, ReportsALeakWithTheStackThatTookIt) {
  LeakCheckingBufferPool pool;
  std::vector<Buffer> leaked;
  for (int i = 0; i < 3; ++i) leaked.push_back(LeakingAllocationOnPurpose(pool));
  const std::string report = pool.CheckAndReset();
  // One group: the three blocks were taken at the same call site.
  EXPECT_NE(report.find("3 buffer block(s) never released, from 1 call stack(s)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("3 block(s), 15000 bytes, taken at:"), std::string::npos) << report;
  EXPECT_NE(report.find("rill::LeakingAllocationOnPurpose(rill::BufferPool&)"), std::string::npos)
      << report;
  // Reported once: releasing the blocks later is not a second problem.
  leaked.clear();
  EXPECT_EQ(pool.CheckAndReset(), "");
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(LeakCheckingBufferPoolTest, ReportsADoubleRelease) {
  LeakCheckingBufferPool pool;
  detail::BlockHeader* block = pool.AllocateBlock(2000);
  pool.ReleaseBlock(block);
  pool.ReleaseBlock(block);  // does not crash
  const std::string report = pool.CheckAndReset();
  EXPECT_NE(report.find("double release"), std::string::npos) << report;
  EXPECT_NE(report.find("released again at:\n    #0 "), std::string::npos) << report;
}

TEST(LeakCheckingBufferPoolTest, ReportsAForeignReleaseWithoutTouchingTheBlock) {
  LeakCheckingBufferPool pool;
  HeapBufferPool other;
  detail::BlockHeader* foreign = other.AllocateBlock(3000);
  pool.ReleaseBlock(foreign);
  const std::string report = pool.CheckAndReset();
  EXPECT_NE(report.find("never handed out"), std::string::npos) << report;
  EXPECT_EQ(foreign->magic, detail::kLiveMagic);
  other.ReleaseBlock(foreign);
  EXPECT_EQ(other.Stats().blocks_out, 0u);
}

TEST(LeakCheckingBufferPoolTest, PoisonsReleasedBlocks) {
  LeakCheckingBufferPool pool;
  Buffer buffer = Buffer::Allocate(3000, pool);
  std::memset(buffer.mutable_data(), 0x11, buffer.size());
  const std::byte* raw = buffer.data();
  buffer.Free();
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_DEATH((void)*static_cast<const volatile std::byte*>(raw + 10), "use-after-poison");
#else
  // The block is quarantined (still allocated), so the read is defined: it sees poison.
  EXPECT_EQ(raw[10], std::byte{0xDD});
  EXPECT_EQ(raw[2999], std::byte{0xDD});
#endif
}

// What the test main does at the end of every test fails a test that leaks a pooled or a small
// block.
TEST(LeakCheckTest, EndOfTestCheckFailsOnLeaks) {
  Buffer pooled = LeakingAllocationOnPurpose(DefaultBufferPool());
  EXPECT_EQ(test::CountOutstandingBlocks().pooled, 1);
  EXPECT_NONFATAL_FAILURE(test::CheckForLeaksNow(), "LeakingAllocationOnPurpose");
  pooled.Free();

  Buffer small = Buffer::Allocate(10, DefaultBufferPool());
  EXPECT_EQ(test::CountOutstandingBlocks().small, 1);
  EXPECT_NONFATAL_FAILURE(test::CheckForLeaksNow(), "small buffer block(s)");
  small.Free();
  test::ExpectNoOutstandingBlocks();
}

}  // namespace
}  // namespace rill
