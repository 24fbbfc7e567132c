#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/leak_check.h"

namespace rill::test {
namespace {

// Small blocks out when the current test started.
int64_t g_small_at_start = 0;

LeakCheckingBufferPool* g_pool = nullptr;

class LeakCheckListener final : public ::testing::EmptyTestEventListener {
 public:
  void OnTestStart(const ::testing::TestInfo& /*info*/) override {
    g_small_at_start = SmallBlocksOutstanding();
  }
  // Runs before the result printer reports the test (end events go to listeners in reverse
  // order), so a failure added here fails this test.
  void OnTestEnd(const ::testing::TestInfo& /*info*/) override { CheckForLeaksNow(); }
};

}  // namespace

LeakCheckingBufferPool& TestBufferPool() { return *g_pool; }

OutstandingBlocks CountOutstandingBlocks() {
  OutstandingBlocks out;
  out.pooled = static_cast<int64_t>(g_pool->Stats().blocks_out);
  out.small = SmallBlocksOutstanding() - g_small_at_start;
  return out;
}

void ExpectNoOutstandingBlocks(const char* where) {
  const OutstandingBlocks out = CountOutstandingBlocks();
  EXPECT_EQ(out.pooled, 0) << "pooled blocks out " << where;
  EXPECT_EQ(out.small, 0) << "small blocks out " << where;
}

void CheckForLeaksNow() {
  const std::string report = g_pool->CheckAndReset();
  if (!report.empty()) ADD_FAILURE() << "LeakCheckingBufferPool: " << report;
  const int64_t small = SmallBlocksOutstanding() - g_small_at_start;
  if (small != 0) {
    ADD_FAILURE() << small << " small buffer block(s) taken during the test were never released";
  }
}

}  // namespace rill::test

int main(int argc, char** argv) {
  ::testing::InitGoogleMock(&argc, argv);
  // Death tests re-run the binary, so the child has a fresh pool and no other threads.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Never destroyed: blocks may be released while the process exits.
  rill::test::g_pool = new rill::LeakCheckingBufferPool();
  rill::SetDefaultBufferPool(rill::test::g_pool);
  ::testing::UnitTest::GetInstance()->listeners().Append(new rill::test::LeakCheckListener());
  return RUN_ALL_TESTS();
}
