#include "tests/testing/pools.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace rill::test {

detail::BlockHeader* PeakPool::AllocateBlock(size_t size) {
  detail::BlockHeader* block = inner_.AllocateBlock(size);
  block->pool = this;
  std::lock_guard lock(mu_);
  ++counts_.blocks_out;
  ++counts_.allocations;
  counts_.bytes_out += block->capacity;
  counts_.peak_bytes_out = std::max(counts_.peak_bytes_out, counts_.bytes_out);
  counts_.window_peak = std::max(counts_.window_peak, counts_.bytes_out);
  counts_.largest_block = std::max(counts_.largest_block, size);
  return block;
}

void PeakPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  {
    std::lock_guard lock(mu_);
    --counts_.blocks_out;
    counts_.bytes_out -= block->capacity;
  }
  block->pool = &inner_;
  inner_.ReleaseBlock(block);
}

BufferPoolStats PeakPool::Stats() const {
  BufferPoolStats stats = inner_.Stats();
  const Counts now = counts();
  stats.blocks_out = now.blocks_out;
  stats.bytes_out = now.bytes_out;
  return stats;
}

PeakPool::Counts PeakPool::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

void PeakPool::ResetPeak() {
  std::lock_guard lock(mu_);
  counts_.peak_bytes_out = counts_.bytes_out;
  counts_.largest_block = 0;
}

size_t PeakPool::StartWindow() {
  std::lock_guard lock(mu_);
  counts_.window_peak = counts_.bytes_out;
  return counts_.bytes_out;
}

detail::BlockHeader* FailingPool::AllocateBlock(size_t size) {
  ADD_FAILURE() << "FailingPool::AllocateBlock(" << size << ") was called";
  detail::BlockHeader* block = heap_.AllocateBlock(size);
  block->pool = this;
  return block;
}

void FailingPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  block->pool = &heap_;
  heap_.ReleaseBlock(block);
}

}  // namespace rill::test
