#include "rill/mem/buffer_pool.h"

#include <atomic>
#include <new>

#include "src/mem/block_memory.h"

namespace rill {
namespace internal {

static_assert(alignof(detail::BlockHeader) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
              "block memory comes from the default operator new");

detail::BlockHeader* NewBlockMemory(size_t capacity, detail::BlockKind kind, BufferPool* pool,
                                    uint8_t size_class) {
  void* memory = ::operator new(sizeof(detail::BlockHeader) + capacity, std::nothrow);
  RILL_CHECK_MSG(memory != nullptr, "out of memory allocating a buffer block");
  auto* block = new (memory) detail::BlockHeader();
  block->refs.store(1, std::memory_order_relaxed);
  block->kind = kind;
  block->size_class = size_class;
  block->magic = detail::kLiveMagic;
  block->generation = 0;
  block->pool_tag = 0;
  block->capacity = capacity;
  block->pool = pool;
  return block;
}

void DeleteBlockMemory(detail::BlockHeader* block) noexcept {
  RILL_ASAN_UNPOISON(block->data(), block->capacity);
  block->~BlockHeader();
  ::operator delete(static_cast<void*>(block));
}

}  // namespace internal

detail::BlockHeader* BufferPool::NewBlock(size_t capacity) {
  return internal::NewBlockMemory(capacity, detail::BlockKind::kPooled, this, 0);
}

void BufferPool::DeleteBlock(detail::BlockHeader* block) noexcept {
  internal::DeleteBlockMemory(block);
}

void BufferPool::ReviveBlock(detail::BlockHeader* block) noexcept {
  internal::ReviveBlockMemory(block);
}

void BufferPool::RetireBlock(detail::BlockHeader* block) noexcept {
  internal::RetireBlockMemory(block);
}

detail::BlockHeader* HeapBufferPool::AllocateBlock(size_t size) {
  detail::BlockHeader* block = NewBlock(size);
  blocks_out_.fetch_add(1, std::memory_order_relaxed);
  bytes_out_.fetch_add(size, std::memory_order_relaxed);
  misses_.fetch_add(1, std::memory_order_relaxed);
  return block;
}

void HeapBufferPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  RILL_DCHECK_MSG(block->pool == this && block->magic == detail::kLiveMagic,
                  "HeapBufferPool: release of a block it does not own or already released");
  blocks_out_.fetch_sub(1, std::memory_order_relaxed);
  bytes_out_.fetch_sub(block->capacity, std::memory_order_relaxed);
  DeleteBlock(block);
}

BufferPoolStats HeapBufferPool::Stats() const {
  BufferPoolStats stats;
  stats.blocks_out = blocks_out_.load(std::memory_order_relaxed);
  stats.bytes_out = bytes_out_.load(std::memory_order_relaxed);
  stats.misses = misses_.load(std::memory_order_relaxed);
  return stats;
}

namespace {

std::atomic<BufferPool*> g_default_pool{nullptr};

BufferPool& BuiltInPool() {
  // Never destroyed: blocks of the default pool may be released while the process exits.
  static TieredBufferPool* const pool = new TieredBufferPool();
  return *pool;
}

}  // namespace

BufferPool& DefaultBufferPool() {
  BufferPool* pool = g_default_pool.load(std::memory_order_acquire);
  return pool != nullptr ? *pool : BuiltInPool();
}

void SetDefaultBufferPool(BufferPool* pool) {
  g_default_pool.store(pool, std::memory_order_release);
}

}  // namespace rill
