#include "bench/alloc_hook/alloc_hook.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bench/stats/stats.h"

namespace rill::bench {
namespace {

// Stores pointers where the optimizer cannot see them, so that allocation calls are not elided.
void* volatile g_sink;

void Keep(void* p) { g_sink = p; }

class AllocHookTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!AllocationCountingEnabled()) {
      GTEST_SKIP() << "allocation counting is compiled out under sanitizers";
    }
  }
};

TEST_F(AllocHookTest, MallocIsCountedExactly) {
  const AllocationTotals before = AllocationCounts();
  void* p = malloc(1000);
  Keep(p);
  const AllocationTotals after = AllocationCounts();
  free(p);
  EXPECT_EQ(after.allocs - before.allocs, 1u);
  EXPECT_EQ(after.bytes - before.bytes, 1000u);
  // free is not an allocation.
  EXPECT_EQ(AllocationCounts().allocs, after.allocs);
}

TEST_F(AllocHookTest, EveryEntryPointCountsAndWorks) {
  const AllocationTotals before = AllocationCounts();
  auto* c = static_cast<unsigned char*>(calloc(10, 30));
  ASSERT_NE(c, nullptr);
  for (int i = 0; i < 300; ++i) ASSERT_EQ(c[i], 0);
  Keep(c);
  void* r = realloc(c, 5000);
  ASSERT_NE(r, nullptr);
  Keep(r);
  void* a = aligned_alloc(64, 128);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 64, 0u);
  Keep(a);
  void* m = memalign(256, 100);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(m) % 256, 0u);
  Keep(m);
  void* pm = nullptr;
  ASSERT_EQ(posix_memalign(&pm, 128, 50), 0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pm) % 128, 0u);
  Keep(pm);
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  void* v = valloc(10);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v) % page, 0u);
  Keep(v);
  void* ra = reallocarray(nullptr, 4, 8);
  ASSERT_NE(ra, nullptr);
  Keep(ra);
  const AllocationTotals after = AllocationCounts();
  EXPECT_EQ(after.allocs - before.allocs, 7u);
  EXPECT_EQ(after.bytes - before.bytes, 300u + 5000u + 128u + 100u + 50u + 10u + 32u);
  // Blocks are glibc's: its free and malloc_usable_size work on them.
  EXPECT_GE(malloc_usable_size(r), 5000u);
  for (void* p : {r, a, m, pm, v, ra}) free(p);
}

TEST_F(AllocHookTest, FailuresAreNotCounted) {
  const AllocationTotals before = AllocationCounts();
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(posix_memalign(&p, 3, 16), EINVAL);
  EXPECT_EQ(p, reinterpret_cast<void*>(1));
  // Sizes through a volatile so that the compiler does not reject the calls outright.
  volatile std::size_t huge_size = SIZE_MAX - 4096;
  volatile std::size_t half = SIZE_MAX / 2;
  errno = 0;
  EXPECT_EQ(reallocarray(nullptr, half, 4), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  void* huge = malloc(huge_size);
  EXPECT_EQ(huge, nullptr);
  Keep(huge);
  // realloc(p, 0) frees.
  void* q = malloc(8);
  Keep(q);
  EXPECT_EQ(realloc(q, 0), nullptr);
  const AllocationTotals after = AllocationCounts();
  EXPECT_EQ(after.allocs - before.allocs, 1u);
  EXPECT_EQ(after.bytes - before.bytes, 8u);
}

TEST_F(AllocHookTest, CountsCxxAndLibcInternalAllocations) {
  const AllocationTotals before = AllocationCounts();
  auto* v = new std::vector<char>(5000);
  Keep(v);
  char* s = strdup("allocated inside glibc");
  Keep(s);
  const AllocationTotals after = AllocationCounts();
  delete v;
  free(s);
  EXPECT_GE(after.allocs - before.allocs, 3u);  // The vector object, its buffer, the string.
  EXPECT_GE(after.bytes - before.bytes, 5000u + sizeof(std::vector<char>) + 23u);
}

TEST_F(AllocHookTest, ThreadsCountWithoutLosingUpdates) {
  constexpr int kThreads = 8;
  constexpr int kAllocs = 20000;
  const AllocationTotals before = AllocationCounts();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kAllocs; ++i) {
        void* p = malloc(16);
        Keep(p);
        free(p);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const AllocationTotals after = AllocationCounts();
  const std::uint64_t allocs = after.allocs - before.allocs;
  // Thread creation allocates a little too (stacks are mmapped, not malloced).
  EXPECT_GE(allocs, std::uint64_t{kThreads} * kAllocs);
  EXPECT_LE(allocs, std::uint64_t{kThreads} * kAllocs + 100);
  EXPECT_GE(after.bytes - before.bytes, std::uint64_t{kThreads} * kAllocs * 16);
}

TEST_F(AllocHookTest, StatsReportsBytesAndAllocsPerOp) {
  Stats stats(StatsOptions{.allocation_source = &AllocationCounts});
  Features f;
  f.bench_time = std::chrono::seconds(1);
  stats.StartRun("unary", f, {});
  for (int i = 0; i < 100; ++i) {
    void* p = malloc(64);
    Keep(p);
    free(p);
  }
  stats.EndRun(100);
  const RunData& d = stats.results().back().data;
  EXPECT_GE(d.allocs, 1.0);
  EXPECT_LT(d.allocs, 1.5);
  EXPECT_GE(d.alloced_bytes, 64.0);
  EXPECT_LT(d.alloced_bytes, 200.0);
}

}  // namespace
}  // namespace rill::bench
