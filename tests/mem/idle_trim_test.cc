// Idle buffer memory goes back: a thread's caches it stopped allocating from and a pool's shared
// caches nobody used for a second are freed, directly and by the reactor threads' periodic trim.
#include "src/mem/idle_trim.h"

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"

namespace rill {
namespace {

using std::chrono::milliseconds;

constexpr size_t kTierBlock = 64 * 1024;         // a tier block: thread cache, then shared
constexpr size_t kLargeBlock = 2 * 1024 * 1024;  // above the tiers: the shared large cache

// Takes and releases a burst of buffers: what the pool then caches is what a burst leaves.
void Burst(BufferPool& pool) {
  std::vector<Buffer> held;
  for (int i = 0; i < 200; ++i) held.push_back(Buffer::Allocate(kTierBlock, pool));
  for (int i = 0; i < 4; ++i) held.push_back(Buffer::Allocate(kLargeBlock, pool));
}

TEST(IdleTrim, CachesUnusedSinceTheLastTrimAreFreed) {
  TieredBufferPool pool;
  Burst(pool);
  ASSERT_GT(pool.Stats().bytes_cached, 2 * kLargeBlock);

  // The first run only notes what this thread allocated; the shared caches were used just now.
  internal::TrimIdleBufferCaches();
  EXPECT_GT(pool.Stats().bytes_cached, 2 * kLargeBlock);

  // A second later, with no allocation in between, everything goes.
  std::this_thread::sleep_for(milliseconds(1100));
  EXPECT_GT(internal::TrimIdleBufferCaches(), 2 * kLargeBlock);
  EXPECT_EQ(pool.Stats().bytes_cached, 0u);
  EXPECT_EQ(pool.Stats().blocks_out, 0u);

  // The pool still serves, from fresh memory.
  Buffer again = Buffer::Allocate(kTierBlock, pool);
  EXPECT_EQ(again.size(), kTierBlock);
}

TEST(IdleTrim, AThreadThatKeepsAllocatingKeepsItsCache) {
  TieredBufferPool pool;
  Burst(pool);
  internal::TrimIdleBufferCaches();
  std::this_thread::sleep_for(milliseconds(1100));
  { Buffer busy = Buffer::Allocate(kTierBlock, pool); }  // this thread is not idle
  internal::TrimIdleBufferCaches();
  // Its own lists stay (the shared caches, unused for a second, went).
  const size_t cached = pool.Stats().bytes_cached;
  EXPECT_GT(cached, 0u);
  EXPECT_LE(cached, size_t{1} << 20);  // at most the per-thread bound of one tier
}

TEST(IdleTrim, ReactorThreadsGiveIdleMemoryBack) {
  TieredBufferPool pool;
  ReactorPool reactors(ReactorPool::Options{.threads = 1, .cpus = {}});
  std::promise<void> done;
  asio::post(reactors.reactor(0), [&] {
    Burst(pool);
    done.set_value();
  });
  done.get_future().wait();
  ASSERT_GT(pool.Stats().bytes_cached, 0u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool.Stats().bytes_cached != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_EQ(pool.Stats().bytes_cached, 0u) << "the reactor kept its idle caches";
}

}  // namespace
}  // namespace rill
