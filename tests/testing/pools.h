// Pool probes: a pool that measures what the code under test takes from it, and one that no code
// path may take from at all.
//
//   rill::test::PeakPool pool(rill::test::TestBufferPool());
//   ... run the code under test with `pool` ...
//   EXPECT_LE(pool.peak_bytes_out(), limit);
//   EXPECT_EQ(pool.blocks_out(), 0u);
#ifndef RILL_TESTS_TESTING_POOLS_H_
#define RILL_TESTS_TESTING_POOLS_H_

#include <cstddef>
#include <mutex>

#include "rill/mem/buffer_pool.h"

namespace rill::test {

// Forwards to `inner` and counts what is out: blocks, bytes (block capacities), the peak of bytes
// out since construction or the last ResetPeak(), the peak within a window opened by
// StartWindow(), the largest block requested and the number of allocations. Blocks carry this
// pool as their owner while they are out. Thread-safe.
class PeakPool final : public BufferPool {
 public:
  explicit PeakPool(BufferPool& inner) : inner_(inner) {}

  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;

  // The counts at one moment, taken together.
  struct Counts {
    size_t blocks_out = 0;
    size_t bytes_out = 0;
    size_t peak_bytes_out = 0;  // since construction or the last ResetPeak()
    size_t window_peak = 0;     // since the last StartWindow()
    size_t largest_block = 0;   // the largest block requested since the last ResetPeak()
    size_t allocations = 0;
  };
  [[nodiscard]] Counts counts() const;
  [[nodiscard]] size_t blocks_out() const { return counts().blocks_out; }
  [[nodiscard]] size_t bytes_out() const { return counts().bytes_out; }
  [[nodiscard]] size_t peak_bytes_out() const { return counts().peak_bytes_out; }
  [[nodiscard]] size_t largest_block() const { return counts().largest_block; }
  [[nodiscard]] size_t allocations() const { return counts().allocations; }
  [[nodiscard]] size_t window_peak() const { return counts().window_peak; }
  // Starts the peak (and largest block) over from the current level.
  void ResetPeak();
  // Opens a window at the current level and returns that level; window_peak() is the highest
  // level since. Independent of peak_bytes_out().
  size_t StartWindow();

 private:
  BufferPool& inner_;
  mutable std::mutex mu_;
  Counts counts_;
};

// A pool no code path under test may take a block from: every allocation fails the test.
class FailingPool final : public BufferPool {
 public:
  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override { return heap_.Stats(); }

 private:
  HeapBufferPool heap_;
};

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_POOLS_H_
