// Pools for mem tests: one that watches the pool it wraps, one that must never be used.
#ifndef RILL_TESTS_MEM_TEST_POOLS_H_
#define RILL_TESTS_MEM_TEST_POOLS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <string>

#include "rill/mem/buffer_pool.h"

namespace rill::test {

// Forwards to `inner` and keeps its own count of what is out, including the peak of bytes out.
// Blocks carry this pool as their owner while they are out.
class TrackingPool final : public BufferPool {
 public:
  explicit TrackingPool(BufferPool& inner) : inner_(inner) {}

  detail::BlockHeader* AllocateBlock(size_t size) override {
    detail::BlockHeader* block = inner_.AllocateBlock(size);
    block->pool = this;
    std::lock_guard lock(mu_);
    ++blocks_out_;
    bytes_out_ += block->capacity;
    peak_bytes_out_ = std::max(peak_bytes_out_, bytes_out_);
    ++allocations_;
    return block;
  }
  void ReleaseBlock(detail::BlockHeader* block) noexcept override {
    {
      std::lock_guard lock(mu_);
      --blocks_out_;
      bytes_out_ -= block->capacity;
    }
    block->pool = &inner_;
    inner_.ReleaseBlock(block);
  }
  BufferPoolStats Stats() const override {
    BufferPoolStats stats = inner_.Stats();
    std::lock_guard lock(mu_);
    stats.blocks_out = blocks_out_;
    stats.bytes_out = bytes_out_;
    return stats;
  }

  size_t peak_bytes_out() const {
    std::lock_guard lock(mu_);
    return peak_bytes_out_;
  }
  size_t allocations() const {
    std::lock_guard lock(mu_);
    return allocations_;
  }

 private:
  BufferPool& inner_;
  mutable std::mutex mu_;
  size_t blocks_out_ = 0;
  size_t bytes_out_ = 0;
  size_t peak_bytes_out_ = 0;
  size_t allocations_ = 0;
};

// A pool no code path under test may take a block from: every allocation fails the test.
class FailingPool final : public BufferPool {
 public:
  detail::BlockHeader* AllocateBlock(size_t size) override {
    ADD_FAILURE() << "FailingPool::AllocateBlock(" << size << ") was called";
    detail::BlockHeader* block = heap_.AllocateBlock(size);
    block->pool = this;
    return block;
  }
  void ReleaseBlock(detail::BlockHeader* block) noexcept override {
    block->pool = &heap_;
    heap_.ReleaseBlock(block);
  }
  BufferPoolStats Stats() const override { return heap_.Stats(); }

 private:
  HeapBufferPool heap_;
};

// Bytes 0, 1, 2, ... 255, 0, 1, ... starting at `seed`.
inline std::string Pattern(size_t size, unsigned seed = 0) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i + seed) & 0xFF);
  return bytes;
}

// Printable text ('a'..'z' repeated, starting at `seed`), for protobuf string fields.
inline std::string Text(size_t size, unsigned seed = 0) {
  std::string text(size, '\0');
  for (size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + (i + seed) % 26);
  return text;
}

}  // namespace rill::test

#endif  // RILL_TESTS_MEM_TEST_POOLS_H_
