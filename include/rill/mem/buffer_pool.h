// Buffer pools: where the blocks behind rill::Buffer come from and go back to.
//
// rill takes every block larger than kSmallBufferMax from a BufferPool chosen by the user (server
// builder and channel options) or from DefaultBufferPool(). Three pools ship:
//
//   TieredBufferPool        the default: power-of-two tiers from 256 B to 1 MiB (larger requests
//                           round up to 4 KiB multiples), per-thread caches in front of shared
//                           free lists, bounded caches, Trim() to give memory back.
//   HeapBufferPool          no pooling: every block is a fresh heap allocation, freed on release
//                           (the A/B switch for benchmarks).
//   LeakCheckingBufferPool  for tests (rill/mem/leak_checking_pool.h).
//
//   rill::TieredBufferPool pool;
//   rill::Buffer b = rill::Buffer::Allocate(100 * 1024, pool);   // a 128 KiB block
//   b.Free();                                                    // back into this thread's cache
//   pool.Trim();                                                 // cached memory back to the OS
//
// Thread safety: every BufferPool is thread-safe; a block may be released on any thread.
#ifndef RILL_MEM_BUFFER_POOL_H_
#define RILL_MEM_BUFFER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "rill/mem/buffer.h"

namespace rill {

// Counters a pool keeps. Tests and benchmarks read them; all are monotonic except *_out and
// bytes_cached, which are current levels.
struct BufferPoolStats {
  uint64_t blocks_out = 0;    // blocks handed out and not yet released
  uint64_t bytes_out = 0;     // capacity of those blocks
  uint64_t hits = 0;          // allocations served from a cache
  uint64_t misses = 0;        // allocations that went to the heap
  uint64_t bytes_cached = 0;  // capacity of blocks held in caches (not handed out)
};

class BufferPool {
 public:
  virtual ~BufferPool() = default;

  // Returns a block with capacity >= `size`, one reference, kind kPooled and pool == this.
  // Its contents are unspecified. Never returns null (allocation failure aborts).
  [[nodiscard]] virtual detail::BlockHeader* AllocateBlock(size_t size) = 0;
  // Takes back a block this pool handed out whose last reference was released. May be called on
  // any thread.
  virtual void ReleaseBlock(detail::BlockHeader* block) noexcept = 0;

  [[nodiscard]] virtual BufferPoolStats Stats() const = 0;
  // Returns cached memory to the operating system. Blocks that are out are not affected.
  virtual void Trim() {}

 protected:
  // Heap-allocates a block of `capacity` data bytes, owned by this pool, with one reference.
  detail::BlockHeader* NewBlock(size_t capacity);
  // Frees a block made by NewBlock.
  static void DeleteBlock(detail::BlockHeader* block) noexcept;
  // Re-initializes a cached block before it is handed out again.
  static void ReviveBlock(detail::BlockHeader* block) noexcept;
  // Marks a block as released (magic, generation; poisons its data in checked builds).
  static void RetireBlock(detail::BlockHeader* block) noexcept;
};

// The default pool. See the file comment.
class TieredBufferPool final : public BufferPool {
 public:
  struct Options {
    // Per thread and per tier, a cache keeps at most this many bytes (and at least one block).
    size_t max_thread_cache_bytes_per_tier = 1 << 20;
    // The shared free lists hold at most this many bytes in total.
    size_t max_shared_cache_bytes = 64 << 20;
  };

  TieredBufferPool();
  explicit TieredBufferPool(Options options);
  ~TieredBufferPool() override;
  TieredBufferPool(const TieredBufferPool&) = delete;
  TieredBufferPool& operator=(const TieredBufferPool&) = delete;

  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;
  // Empties the shared free lists and the calling thread's cache. Other threads' caches are
  // emptied when those threads call Trim() or exit.
  void Trim() override;

  // The capacity a request of `size` bytes gets: the smallest tier >= size, or above the top
  // tier, `size` rounded up to a multiple of 4 KiB.
  static size_t CapacityFor(size_t size) noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// No pooling: each block is a fresh heap allocation, deleted on release.
class HeapBufferPool final : public BufferPool {
 public:
  detail::BlockHeader* AllocateBlock(size_t size) override;
  void ReleaseBlock(detail::BlockHeader* block) noexcept override;
  BufferPoolStats Stats() const override;

 private:
  std::atomic<uint64_t> blocks_out_{0};
  std::atomic<uint64_t> bytes_out_{0};
  std::atomic<uint64_t> misses_{0};
};

// The pool rill uses when none is configured. Starts as a process-wide TieredBufferPool.
BufferPool& DefaultBufferPool();
// Replaces the default pool (tests install the leak-checking pool, benchmarks the heap pool).
// Call only while no rill object is using the default pool; `pool` must outlive that use.
// nullptr restores the built-in pool.
void SetDefaultBufferPool(BufferPool* pool);

// Process-wide count of payload bytes copied in user space by rill (see
// detail::CountCopiedBytes). Monotonic; benchmarks and tests read differences.
uint64_t CopiedPayloadBytes();

// Small blocks currently out (not in a cache). Exact in every build; used by the test listener.
int64_t SmallBlocksOutstanding();

}  // namespace rill

#endif  // RILL_MEM_BUFFER_POOL_H_
