// Blocks taken on one thread and released on another (reactors hand buffers to workers and
// back). Also run under ThreadSanitizer (label "threads").
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "tests/testing/bytes.h"
#include "tests/testing/pools.h"

namespace rill {
namespace {

using test::Pattern;

constexpr size_t kKiB = 1024;

// A blocking queue of buffers between threads.
class BufferQueue {
 public:
  void Push(Buffer buffer) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(buffer));
    }
    cv_.notify_one();
  }
  // An empty optional once Close() was called and the queue is drained.
  std::optional<Buffer> Pop() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return std::nullopt;
    Buffer buffer = std::move(queue_.front());
    queue_.pop_front();
    return buffer;
  }
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Buffer> queue_;
  bool closed_ = false;
};

TEST(CrossThreadTest, BlockFreedOnAnExitedThreadReturnsToThePool) {
  TieredBufferPool pool;
  Buffer buffer = Buffer::Allocate(40 * kKiB, pool);
  std::thread([moved = std::move(buffer)]() mutable { moved.Free(); }).join();
  BufferPoolStats stats = pool.Stats();
  EXPECT_EQ(stats.blocks_out, 0u);
  EXPECT_EQ(stats.bytes_cached, 64 * kKiB) << "the exiting thread handed its cache back";
  Buffer again = Buffer::Allocate(50 * kKiB, pool);
  stats = pool.Stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
}

// A live consumer that frees more than its cache holds passes batches back to the shared lists,
// where the producer finds them.
TEST(CrossThreadTest, ConsumerFreesFlowBackToTheProducer) {
  TieredBufferPool pool;  // per-thread cache: 256 blocks of 4 KiB
  constexpr size_t kBlocks = 1000;
  BufferQueue to_consumer;
  std::mutex mu;
  std::condition_variable cv;
  bool consumed = false;
  bool may_exit = false;
  std::thread consumer([&] {
    while (std::optional<Buffer> buffer = to_consumer.Pop()) buffer->Free();
    std::unique_lock lock(mu);
    consumed = true;
    cv.notify_all();
    cv.wait(lock, [&] { return may_exit; });
  });
  std::vector<Buffer> produced;
  for (size_t i = 0; i < kBlocks; ++i) produced.push_back(Buffer::Allocate(4 * kKiB, pool));
  for (Buffer& buffer : produced) to_consumer.Push(std::move(buffer));
  to_consumer.Close();
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return consumed; });
  }
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(pool.Stats().misses, kBlocks);
  std::vector<Buffer> again;
  for (size_t i = 0; i < kBlocks; ++i) again.push_back(Buffer::Allocate(4 * kKiB, pool));
  EXPECT_GE(pool.Stats().hits, kBlocks - 256) << "all but the consumer's own cache came back";
  again.clear();
  {
    std::lock_guard lock(mu);
    may_exit = true;
  }
  cv.notify_all();
  consumer.join();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
}

TEST(CrossThreadTest, SmallBlockFreedOnAnotherThreadIsAccountedFor) {
  const int64_t before = SmallBlocksOutstanding();
  Buffer small = Buffer::Copy(Pattern(100), DefaultBufferPool());
  EXPECT_EQ(SmallBlocksOutstanding(), before + 1);
  std::thread([moved = std::move(small)]() mutable {
    EXPECT_EQ(moved.AsStringView(), Pattern(100));
    moved.Free();
  }).join();
  EXPECT_EQ(SmallBlocksOutstanding(), before);
}

// Producers and consumers on several threads; buffers of every kind, shared through Ref and
// Split, released wherever the last view ends up.
TEST(CrossThreadTest, ManyThreadsShareAndReleaseBuffers) {
  TieredBufferPool pool;
  const int64_t small_before = SmallBlocksOutstanding();
  constexpr int kProducers = 2;
  constexpr int kConsumers = 2;
  constexpr int kPerProducer = 600;
  const std::vector<size_t> sizes = {10, 700, 3000, 20000, 300000, 1100000};
  std::vector<std::string> patterns;
  for (size_t size : sizes) patterns.push_back(Pattern(size, static_cast<unsigned>(size)));
  BufferQueue queue;
  std::atomic<int> bad{0};
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      while (std::optional<Buffer> buffer = queue.Pop()) {
        // Every view of a Pattern() is a Pattern(): byte i is byte 0 plus i.
        const std::string_view bytes = buffer->AsStringView();
        for (size_t i = 0; i < bytes.size(); ++i) {
          if (static_cast<uint8_t>(bytes[i]) != static_cast<uint8_t>(bytes[0] + i)) {
            bad.fetch_add(1);
            break;
          }
        }
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const size_t kind = static_cast<size_t>(i + p) % sizes.size();
        Buffer buffer = Buffer::Copy(patterns[kind], pool);
        if (i % 3 == 0) queue.Push(buffer.Ref());
        // Two views of one block, released by whichever consumers get them.
        if (i % 5 == 0) queue.Push(buffer.Split(buffer.size() / 2));
        queue.Push(std::move(buffer));
      }
    });
  }
  for (std::thread& t : producers) t.join();
  queue.Close();
  for (std::thread& t : consumers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(SmallBlocksOutstanding(), small_before);
}

// Threads may keep cached blocks of a pool after it is destroyed; they are freed as plain heap
// memory when the thread needs the slot or exits (AddressSanitizer checks that nothing leaks or
// touches the dead pool).
TEST(CrossThreadTest, PoolDestroyedWhileAnotherThreadCachesItsBlocks) {
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;
  auto pool = std::make_unique<TieredBufferPool>();
  std::thread worker([&] {
    {
      std::vector<Buffer> buffers;
      for (int i = 0; i < 10; ++i) buffers.push_back(Buffer::Allocate(8 * kKiB, *pool));
    }  // now cached by this thread
    std::unique_lock lock(mu);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 2; });
    lock.unlock();
    // The old pool is gone; a new one takes a slot in this thread's table.
    for (int i = 0; i < 12; ++i) {
      TieredBufferPool other;
      Buffer buffer = Buffer::Allocate(8 * kKiB, other);
    }
  });
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return step == 1; });
    EXPECT_EQ(pool->Stats().bytes_cached, 10 * 8 * kKiB);
    pool.reset();
    step = 2;
  }
  cv.notify_all();
  worker.join();
}

// A buffer held by a thread_local object that is destroyed after the thread's caches were
// flushed is still released correctly.
TEST(CrossThreadTest, BuffersReleasedDuringThreadExit) {
  TieredBufferPool pool;
  const int64_t small_before = SmallBlocksOutstanding();
  struct Holder {
    Buffer pooled;
    Buffer small;
  };
  std::thread([&] {
    static thread_local Holder holder;  // constructed before the caches: destroyed after them
    holder.pooled = Buffer::Allocate(10 * kKiB, pool);
    holder.small = Buffer::Allocate(10, pool);
  }).join();
  EXPECT_EQ(pool.Stats().blocks_out, 0u);
  EXPECT_EQ(SmallBlocksOutstanding(), small_before);
}

TEST(CrossThreadTest, CopiedBytesAreSummedOverThreads) {
  TieredBufferPool pool;
  const uint64_t before = CopiedPayloadBytes();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { Buffer copy = Buffer::Copy(Pattern(5000), pool); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(CopiedPayloadBytes() - before, 4 * 5000u);
}

}  // namespace
}  // namespace rill
