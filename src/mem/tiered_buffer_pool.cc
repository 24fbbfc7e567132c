// TieredBufferPool.
//
// Blocks of up to 1 MiB live in power-of-two tiers. Each thread keeps, per pool it uses, a LIFO
// list per tier (no lock, no atomic read-modify-write). Lists are bounded; an overflowing list
// moves a batch of blocks to the pool's shared stack for that tier, and an empty list takes a
// whole batch back, so the mutex is taken once per batch. Larger blocks go to a small shared
// cache keyed by exact capacity.
//
// A thread's caches are found through a small per-thread table keyed by the pool's Impl, which
// is reference-counted: the pool holds one reference and every thread table entry one more. A
// destroyed pool marks its Impl dead; threads that still cache its blocks free them (plain heap
// memory) when they drop the entry, which they do on thread exit or when they need the slot.
//
// Counters are per thread entry (written only by their thread) and summed by Stats() through the
// Impl's list of entries; an entry that goes away folds its counts into the Impl's totals.
//
// Idle memory goes back (TrimIdleBufferCaches, run about once a second by every reactor thread):
// a thread's lists that it has not allocated from since the last run are freed, and so are the
// shared caches of a pool nobody refilled from or spilled to for kSharedIdle; then glibc is asked
// to return freed heap pages (malloc_trim). Without it a burst left every cache full — up to
// 1 MiB per tier and thread plus 64 MiB shared — for the life of the process.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "rill/mem/buffer_pool.h"
#include "src/mem/block_memory.h"
#include "src/mem/idle_trim.h"

namespace rill {

using detail::BlockHeader;
using internal::FreeList;
using internal::OwnerCounter;

namespace {

constexpr int kMinTierShift = 8;   // 256 B
constexpr int kMaxTierShift = 20;  // 1 MiB
constexpr size_t kTierCount = kMaxTierShift - kMinTierShift + 1;
constexpr size_t kMaxTierSize = size_t{1} << kMaxTierShift;
constexpr size_t kLargeGranule = 4096;
constexpr uint8_t kLargeClass = 0xFF;
constexpr size_t kMaxBatch = 64;
constexpr size_t kLargeCacheSlots = 8;
constexpr size_t kThreadSlots = 8;
// A pool's shared caches unused for this long are freed by TrimIdleBufferCaches.
constexpr std::chrono::milliseconds kSharedIdle{1000};
using SteadyClock = std::chrono::steady_clock;

size_t TierOf(size_t size) noexcept {
  return size <= (size_t{1} << kMinTierShift)
             ? 0
             : static_cast<size_t>(std::bit_width(size - 1)) - kMinTierShift;
}
size_t TierCapacity(size_t tier) noexcept { return size_t{1} << (tier + kMinTierShift); }

// A stack of batches (chains linked through FreeList::Next). The first block of a batch holds,
// after its list link, the link to the next batch and the batch's block count, so that whole
// batches move in O(1) while the pool's mutex is held.
class BatchStack {
 public:
  void Push(BlockHeader* chain, size_t count) noexcept {
    RILL_ASAN_UNPOISON(chain->data(), kBatchHeadSize);
    std::memcpy(chain->data() + kWord, &top_, kWord);
    std::memcpy(chain->data() + 2 * kWord, &count, kWord);
    top_ = chain;
    blocks_ += count;
  }
  BlockHeader* Pop(size_t* count) noexcept {
    BlockHeader* chain = top_;
    if (chain == nullptr) return nullptr;
    std::memcpy(&top_, chain->data() + kWord, kWord);
    std::memcpy(count, chain->data() + 2 * kWord, kWord);
    blocks_ -= *count;
    return chain;
  }
  [[nodiscard]] size_t blocks() const noexcept { return blocks_; }

 private:
  static constexpr size_t kWord = FreeList::kLinkSize;
  static_assert(sizeof(size_t) == kWord);
  // Link, next batch, count; every pooled block has at least this many data bytes.
  static constexpr size_t kBatchHeadSize = 3 * kWord;
  BlockHeader* top_ = nullptr;
  size_t blocks_ = 0;
};

void DeleteBatches(BatchStack& batches) noexcept {
  size_t count = 0;
  while (BlockHeader* chain = batches.Pop(&count)) internal::DeleteChain(chain);
}

// One thread's use of one pool.
struct ThreadStats {
  OwnerCounter allocs;
  OwnerCounter alloc_bytes;
  OwnerCounter frees;
  OwnerCounter free_bytes;
  OwnerCounter hits;
  OwnerCounter misses;
  OwnerCounter cached_bytes;  // capacity of the blocks in this thread's lists

  void Reset() noexcept {
    for (OwnerCounter* c :
         {&allocs, &alloc_bytes, &frees, &free_bytes, &hits, &misses, &cached_bytes}) {
      c->Reset();
    }
  }
};

struct Totals {
  int64_t allocs = 0;
  int64_t alloc_bytes = 0;
  int64_t frees = 0;
  int64_t free_bytes = 0;
  int64_t hits = 0;
  int64_t misses = 0;

  void Add(const ThreadStats& s) noexcept {
    allocs += s.allocs.Get();
    alloc_bytes += s.alloc_bytes.Get();
    frees += s.frees.Get();
    free_bytes += s.free_bytes.Get();
    hits += s.hits.Get();
    misses += s.misses.Get();
  }
};

struct ThreadEntry;

}  // namespace

struct TieredBufferPool::Impl {
  Impl(TieredBufferPool* owner_pool, const Options& options);

  BlockHeader* NewTierBlock(size_t tier) {
    return internal::NewBlockMemory(TierCapacity(tier), detail::BlockKind::kPooled, owner,
                                    static_cast<uint8_t>(tier));
  }

  BlockHeader* Refill(ThreadEntry& entry, size_t tier);
  void Spill(ThreadEntry& entry, size_t tier) noexcept;
  BlockHeader* AllocateLarge(size_t size);
  void ReleaseLarge(BlockHeader* block) noexcept;
  // For a thread that has no table (it is exiting).
  BlockHeader* AllocateShared(size_t tier);
  void ReleaseShared(BlockHeader* block) noexcept;
  // Moves a chain of `count` blocks of `tier` into the shared stack. When the shared cache is
  // full, batches of other tiers (and large blocks) are evicted to make room: recently released
  // blocks are likelier to be wanted again than blocks of a size nobody asked for since. What
  // cannot be kept (the pool is dead, or the chain alone exceeds the bound) goes to `to_free`,
  // to be deleted once mu is released. Needs mu held.
  void StashLocked(BlockHeader* chain, size_t count, size_t tier, BatchStack& to_free) noexcept;
  // Evicts cached blocks of tiers other than `keep_tier` into `to_free` until `bytes` more fit
  // under the bound; returns whether they fit. Needs mu held.
  bool MakeRoomLocked(size_t bytes, size_t keep_tier, BatchStack& to_free) noexcept;
  BufferPoolStats StatsLocked() const;

  // Immutable after construction.
  TieredBufferPool* const owner;
  const size_t max_shared_bytes;
  size_t max_cached[kTierCount];  // per thread
  size_t batch[kTierCount];

  std::atomic<int32_t> refs{1};
  std::atomic<bool> dead{false};

  alignas(64) mutable std::mutex mu;
  BatchStack shared[kTierCount];            // guarded by mu
  BlockHeader* large[kLargeCacheSlots]{};   // guarded by mu
  size_t large_count = 0;                   // guarded by mu
  size_t shared_bytes = 0;                  // shared stacks and large cache; guarded by mu
  SteadyClock::time_point last_shared_use{};  // guarded by mu
  std::vector<const ThreadStats*> threads;  // guarded by mu
  Totals totals;  // retired thread entries and operations done under mu; guarded by mu
};

namespace {

using Impl = TieredBufferPool::Impl;

struct ThreadEntry {
  Impl* pool = nullptr;
  FreeList lists[kTierCount];
  ThreadStats stats;
  int64_t allocs_at_trim = -1;  // stats.allocs at the last TrimIdleBufferCaches
};

enum class TlsState : uint8_t { kFresh, kActive, kGone };

struct PoolTls {
  Impl* keys[kThreadSlots] = {};  // keys[i] == entries[i].pool; kept together for a fast scan
  ThreadEntry entries[kThreadSlots];
  TlsState state = TlsState::kFresh;
  uint8_t next_victim = 0;
};

constinit thread_local PoolTls tls_pools;

// Every live pool, for TrimIdleBufferCaches.
struct PoolRegistry {
  std::mutex mu;
  std::vector<Impl*> pools;  // guarded by mu
};

PoolRegistry& Registry() {
  static auto* registry = new PoolRegistry();  // never destroyed: pools may outlive statics
  return *registry;
}

void Unref(Impl* impl) noexcept {
  if (impl->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete impl;
}

// Empties a table slot: its blocks go to the pool's shared stacks (or are freed when the pool
// is dead or its shared cache full), its counters into the pool's totals.
void DetachSlot(PoolTls& tls, size_t slot) noexcept {
  ThreadEntry& entry = tls.entries[slot];
  Impl* impl = entry.pool;
  tls.keys[slot] = nullptr;
  entry.pool = nullptr;
  BatchStack to_free;
  {
    std::lock_guard lock(impl->mu);
    for (size_t tier = 0; tier < kTierCount; ++tier) {
      FreeList& list = entry.lists[tier];
      const size_t count = list.count;
      if (count != 0) impl->StashLocked(list.TakeAll(), count, tier, to_free);
    }
    impl->totals.Add(entry.stats);
    std::erase(impl->threads, &entry.stats);
  }
  entry.stats.Reset();
  DeleteBatches(to_free);
  Unref(impl);
}

struct PoolTlsGuard {
  PoolTlsGuard() = default;
  PoolTlsGuard(const PoolTlsGuard&) = delete;
  PoolTlsGuard& operator=(const PoolTlsGuard&) = delete;
  ~PoolTlsGuard() {
    PoolTls& tls = tls_pools;
    tls.state = TlsState::kGone;
    for (size_t slot = 0; slot < kThreadSlots; ++slot) {
      if (tls.keys[slot] != nullptr) DetachSlot(tls, slot);
    }
  }
};

[[gnu::noinline, gnu::cold]] ThreadEntry* AttachEntry(Impl* impl) {
  PoolTls& tls = tls_pools;
  if (tls.state == TlsState::kGone) return nullptr;
  if (tls.state == TlsState::kFresh) {
    static thread_local PoolTlsGuard guard;
    tls.state = TlsState::kActive;
  }
  size_t slot = kThreadSlots;
  for (size_t i = 0; i < kThreadSlots && slot == kThreadSlots; ++i) {
    if (tls.keys[i] == nullptr) slot = i;
  }
  for (size_t i = 0; i < kThreadSlots && slot == kThreadSlots; ++i) {
    if (tls.keys[i]->dead.load(std::memory_order_acquire)) slot = i;
  }
  if (slot == kThreadSlots) slot = tls.next_victim++ % kThreadSlots;
  if (tls.keys[slot] != nullptr) DetachSlot(tls, slot);

  ThreadEntry& entry = tls.entries[slot];
  entry.allocs_at_trim = -1;
  impl->refs.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard lock(impl->mu);
    impl->threads.push_back(&entry.stats);
  }
  entry.pool = impl;
  tls.keys[slot] = impl;
  return &entry;
}

// The calling thread's entry for `impl`, attaching one if needed; null while the thread exits.
inline ThreadEntry* FindEntry(Impl* impl) {
  PoolTls& tls = tls_pools;
  if (RILL_PREDICT_TRUE(tls.state == TlsState::kActive)) {
    for (size_t i = 0; i < kThreadSlots; ++i) {
      if (tls.keys[i] == impl) return &tls.entries[i];
    }
  }
  return AttachEntry(impl);
}

// The calling thread's entry for `impl` if it has one.
ThreadEntry* ExistingEntry(const Impl* impl) noexcept {
  PoolTls& tls = tls_pools;
  if (tls.state != TlsState::kActive) return nullptr;
  for (size_t i = 0; i < kThreadSlots; ++i) {
    if (tls.keys[i] == impl) return &tls.entries[i];
  }
  return nullptr;
}

// Blocks taken out of a pool's shared caches, to be freed once its mutex is released.
struct TakenBlocks {
  BatchStack stacks[kTierCount];
  BlockHeader* large[kLargeCacheSlots] = {};
  size_t large_count = 0;

  void DeleteAll() noexcept {
    for (BatchStack& stack : stacks) DeleteBatches(stack);
    for (size_t i = 0; i < large_count; ++i) internal::DeleteBlockMemory(large[i]);
    large_count = 0;
  }
};

TakenBlocks TakeCachedLocked(Impl& impl) noexcept {
  TakenBlocks taken;
  for (size_t tier = 0; tier < kTierCount; ++tier) std::swap(taken.stacks[tier], impl.shared[tier]);
  std::copy_n(impl.large, impl.large_count, taken.large);
  taken.large_count = impl.large_count;
  impl.large_count = 0;
  impl.shared_bytes = 0;
  return taken;
}

}  // namespace

TieredBufferPool::Impl::Impl(TieredBufferPool* owner_pool, const Options& options)
    : owner(owner_pool), max_shared_bytes(options.max_shared_cache_bytes) {
  for (size_t tier = 0; tier < kTierCount; ++tier) {
    max_cached[tier] =
        std::max<size_t>(1, options.max_thread_cache_bytes_per_tier / TierCapacity(tier));
    batch[tier] = std::clamp<size_t>(max_cached[tier] / 2, 1, kMaxBatch);
  }
}

void TieredBufferPool::Impl::StashLocked(BlockHeader* chain, size_t count, size_t tier,
                                         BatchStack& to_free) noexcept {
  last_shared_use = SteadyClock::now();
  const size_t bytes = count * TierCapacity(tier);
  if (dead.load(std::memory_order_relaxed) || !MakeRoomLocked(bytes, tier, to_free)) {
    to_free.Push(chain, count);
    return;
  }
  shared[tier].Push(chain, count);
  shared_bytes += bytes;
}

bool TieredBufferPool::Impl::MakeRoomLocked(size_t bytes, size_t keep_tier,
                                            BatchStack& to_free) noexcept {
  if (bytes > max_shared_bytes) return false;
  while (shared_bytes + bytes > max_shared_bytes) {
    if (large_count > 0) {
      BlockHeader* block = large[--large_count];
      shared_bytes -= block->capacity;
      FreeList::SetNext(block, nullptr);
      to_free.Push(block, 1);
      continue;
    }
    size_t victim = kTierCount;
    size_t victim_bytes = 0;
    for (size_t tier = 0; tier < kTierCount; ++tier) {
      const size_t tier_bytes = shared[tier].blocks() * TierCapacity(tier);
      if (tier != keep_tier && tier_bytes > victim_bytes) {
        victim = tier;
        victim_bytes = tier_bytes;
      }
    }
    if (victim == kTierCount) return false;
    size_t count = 0;
    BlockHeader* chain = shared[victim].Pop(&count);
    shared_bytes -= count * TierCapacity(victim);
    to_free.Push(chain, count);
  }
  return true;
}

BlockHeader* TieredBufferPool::Impl::Refill(ThreadEntry& entry, size_t tier) {
  size_t count = 0;
  BlockHeader* chain;
  {
    std::lock_guard lock(mu);
    chain = shared[tier].Pop(&count);
    if (chain != nullptr) shared_bytes -= count * TierCapacity(tier);
    last_shared_use = SteadyClock::now();
  }
  if (chain == nullptr) {
    entry.stats.misses.Add(1);
    return NewTierBlock(tier);
  }
  // The thread's list is empty: the rest of the batch becomes the list.
  FreeList& list = entry.lists[tier];
  RILL_DCHECK(list.count == 0);
  list.head = FreeList::Next(chain);
  list.count = static_cast<uint32_t>(count - 1);
  entry.stats.cached_bytes.Add(static_cast<int64_t>((count - 1) * TierCapacity(tier)));
  entry.stats.hits.Add(1);
  internal::ReviveBlockMemory(chain);
  return chain;
}

void TieredBufferPool::Impl::Spill(ThreadEntry& entry, size_t tier) noexcept {
  FreeList& list = entry.lists[tier];
  const size_t count = std::min<size_t>(batch[tier], list.count);
  BlockHeader* first = list.head;
  BlockHeader* last = first;
  for (size_t i = 1; i < count; ++i) last = FreeList::Next(last);
  list.head = FreeList::Next(last);
  list.count -= static_cast<uint32_t>(count);
  FreeList::SetNext(last, nullptr);
  entry.stats.cached_bytes.Add(-static_cast<int64_t>(count * TierCapacity(tier)));
  BatchStack to_free;
  {
    std::lock_guard lock(mu);
    StashLocked(first, count, tier, to_free);
  }
  DeleteBatches(to_free);
}

BlockHeader* TieredBufferPool::Impl::AllocateLarge(size_t size) {
  const size_t capacity = (size + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
  BlockHeader* block = nullptr;
  {
    std::lock_guard lock(mu);
    last_shared_use = SteadyClock::now();
    for (size_t i = 0; i < large_count; ++i) {
      if (large[i]->capacity == capacity) {
        block = large[i];
        large[i] = large[--large_count];
        shared_bytes -= capacity;
        break;
      }
    }
    ++totals.allocs;
    totals.alloc_bytes += static_cast<int64_t>(capacity);
    ++(block != nullptr ? totals.hits : totals.misses);
  }
  if (block == nullptr) {
    return internal::NewBlockMemory(capacity, detail::BlockKind::kPooled, owner, kLargeClass);
  }
  internal::ReviveBlockMemory(block);
  return block;
}

void TieredBufferPool::Impl::ReleaseLarge(BlockHeader* block) noexcept {
  const size_t capacity = block->capacity;
  BatchStack to_free;
  bool kept = false;
  {
    std::lock_guard lock(mu);
    last_shared_use = SteadyClock::now();
    ++totals.frees;
    totals.free_bytes += static_cast<int64_t>(capacity);
    if (large_count == kLargeCacheSlots) {
      // Full: the oldest large block makes room.
      BlockHeader* oldest = large[0];
      std::copy(large + 1, large + large_count, large);
      --large_count;
      shared_bytes -= oldest->capacity;
      FreeList::SetNext(oldest, nullptr);
      to_free.Push(oldest, 1);
    }
    if (!dead.load(std::memory_order_relaxed) && MakeRoomLocked(capacity, kTierCount, to_free)) {
      large[large_count++] = block;
      shared_bytes += capacity;
      kept = true;
    }
  }
  DeleteBatches(to_free);
  if (!kept) internal::DeleteBlockMemory(block);
}

BlockHeader* TieredBufferPool::Impl::AllocateShared(size_t tier) {
  BlockHeader* block = nullptr;
  {
    std::lock_guard lock(mu);
    size_t count = 0;
    BlockHeader* chain = shared[tier].Pop(&count);
    if (chain != nullptr) {
      shared_bytes -= count * TierCapacity(tier);
      block = chain;
      if (count > 1) {
        shared[tier].Push(FreeList::Next(chain), count - 1);
        shared_bytes += (count - 1) * TierCapacity(tier);
      }
    }
    ++totals.allocs;
    totals.alloc_bytes += static_cast<int64_t>(TierCapacity(tier));
    ++(block != nullptr ? totals.hits : totals.misses);
  }
  if (block == nullptr) return NewTierBlock(tier);
  internal::ReviveBlockMemory(block);
  return block;
}

void TieredBufferPool::Impl::ReleaseShared(BlockHeader* block) noexcept {
  BatchStack to_free;
  {
    std::lock_guard lock(mu);
    ++totals.frees;
    totals.free_bytes += static_cast<int64_t>(block->capacity);
    FreeList::SetNext(block, nullptr);
    StashLocked(block, 1, block->size_class, to_free);
  }
  DeleteBatches(to_free);
}

BufferPoolStats TieredBufferPool::Impl::StatsLocked() const {
  Totals sum = totals;
  int64_t cached = static_cast<int64_t>(shared_bytes);
  for (const ThreadStats* stats : threads) {
    sum.Add(*stats);
    cached += stats->cached_bytes.Get();
  }
  BufferPoolStats out;
  out.blocks_out = static_cast<uint64_t>(sum.allocs - sum.frees);
  out.bytes_out = static_cast<uint64_t>(sum.alloc_bytes - sum.free_bytes);
  out.hits = static_cast<uint64_t>(sum.hits);
  out.misses = static_cast<uint64_t>(sum.misses);
  out.bytes_cached = static_cast<uint64_t>(cached);
  return out;
}

TieredBufferPool::TieredBufferPool() : TieredBufferPool(Options()) {}

TieredBufferPool::TieredBufferPool(Options options)
    : impl_(std::make_unique<Impl>(this, options)) {
  PoolRegistry& registry = Registry();
  std::lock_guard lock(registry.mu);
  registry.pools.push_back(impl_.get());
}

TieredBufferPool::~TieredBufferPool() {
  RILL_DCHECK_MSG(Stats().blocks_out == 0, "TieredBufferPool destroyed while blocks are out");
  // The Impl is shared with thread caches that may outlive the pool; drop the pool's reference.
  Impl* impl = impl_.release();
  {
    PoolRegistry& registry = Registry();
    std::lock_guard lock(registry.mu);
    std::erase(registry.pools, impl);
  }
  TakenBlocks taken;
  {
    std::lock_guard lock(impl->mu);
    impl->dead.store(true, std::memory_order_release);
    taken = TakeCachedLocked(*impl);
  }
  taken.DeleteAll();
  PoolTls& tls = tls_pools;
  if (tls.state == TlsState::kActive) {
    for (size_t slot = 0; slot < kThreadSlots; ++slot) {
      if (tls.keys[slot] == impl) DetachSlot(tls, slot);
    }
  }
  Unref(impl);
}

BlockHeader* TieredBufferPool::AllocateBlock(size_t size) {
  Impl* impl = impl_.get();
  if (RILL_PREDICT_FALSE(size > kMaxTierSize)) return impl->AllocateLarge(size);
  const size_t tier = TierOf(size);
  ThreadEntry* entry = FindEntry(impl);
  if (RILL_PREDICT_FALSE(entry == nullptr)) return impl->AllocateShared(tier);
  const auto capacity = static_cast<int64_t>(TierCapacity(tier));
  BlockHeader* block = entry->lists[tier].Pop();
  if (RILL_PREDICT_TRUE(block != nullptr)) {
    entry->stats.hits.Add(1);
    entry->stats.cached_bytes.Add(-capacity);
    internal::ReviveBlockMemory(block);
  } else {
    block = impl->Refill(*entry, tier);
  }
  entry->stats.allocs.Add(1);
  entry->stats.alloc_bytes.Add(capacity);
  return block;
}

void TieredBufferPool::ReleaseBlock(BlockHeader* block) noexcept {
  RILL_DCHECK_MSG(block->pool == this && block->kind == detail::BlockKind::kPooled,
                  "block released to a TieredBufferPool that does not own it");
  RILL_DCHECK_MSG(block->magic == detail::kLiveMagic, "double release of a pooled block");
  internal::RetireBlockMemory(block);
  Impl* impl = impl_.get();
  if (RILL_PREDICT_FALSE(block->size_class == kLargeClass)) return impl->ReleaseLarge(block);
  ThreadEntry* entry = FindEntry(impl);
  if (RILL_PREDICT_FALSE(entry == nullptr)) return impl->ReleaseShared(block);
  const size_t tier = block->size_class;
  const auto capacity = static_cast<int64_t>(block->capacity);
  FreeList& list = entry->lists[tier];
  list.Push(block);
  entry->stats.frees.Add(1);
  entry->stats.free_bytes.Add(capacity);
  entry->stats.cached_bytes.Add(capacity);
  if (RILL_PREDICT_FALSE(list.count > impl->max_cached[tier])) impl->Spill(*entry, tier);
}

BufferPoolStats TieredBufferPool::Stats() const {
  std::lock_guard lock(impl_->mu);
  return impl_->StatsLocked();
}

void TieredBufferPool::Trim() {
  Impl* impl = impl_.get();
  TakenBlocks taken;
  {
    std::lock_guard lock(impl->mu);
    taken = TakeCachedLocked(*impl);
  }
  taken.DeleteAll();
  if (ThreadEntry* entry = ExistingEntry(impl)) {
    for (size_t tier = 0; tier < kTierCount; ++tier) {
      FreeList& list = entry->lists[tier];
      entry->stats.cached_bytes.Add(-static_cast<int64_t>(list.count * TierCapacity(tier)));
      internal::DeleteChain(list.TakeAll());
    }
  }
}

size_t TieredBufferPool::CapacityFor(size_t size) noexcept {
  if (size <= kMaxTierSize) return TierCapacity(TierOf(size));
  return (size + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
}


namespace internal {

size_t TrimIdleBufferCaches() noexcept {
  size_t freed = 0;
  // The calling thread's lists it has not allocated from since the last run.
  PoolTls& tls = tls_pools;
  if (tls.state == TlsState::kActive) {
    for (size_t slot = 0; slot < kThreadSlots; ++slot) {
      Impl* impl = tls.keys[slot];
      if (impl == nullptr) continue;
      if (impl->dead.load(std::memory_order_acquire)) {
        DetachSlot(tls, slot);  // frees what it cached of a destroyed pool
        continue;
      }
      ThreadEntry& entry = tls.entries[slot];
      const int64_t allocs = entry.stats.allocs.Get();
      if (allocs == entry.allocs_at_trim) {
        for (size_t tier = 0; tier < kTierCount; ++tier) {
          FreeList& list = entry.lists[tier];
          if (list.count == 0) continue;
          const size_t bytes = list.count * TierCapacity(tier);
          entry.stats.cached_bytes.Add(-static_cast<int64_t>(bytes));
          internal::DeleteChain(list.TakeAll());
          freed += bytes;
        }
      }
      entry.allocs_at_trim = allocs;
    }
  }
  // Shared caches nobody used for kSharedIdle.
  const SteadyClock::time_point now = SteadyClock::now();
  PoolRegistry& registry = Registry();
  std::lock_guard registry_lock(registry.mu);
  for (Impl* impl : registry.pools) {
    TakenBlocks taken;
    {
      std::lock_guard lock(impl->mu);
      if (impl->shared_bytes == 0 || now - impl->last_shared_use < kSharedIdle) continue;
      freed += impl->shared_bytes;
      taken = TakeCachedLocked(*impl);
    }
    taken.DeleteAll();
  }
#if defined(__GLIBC__)
  // Freed blocks are heap memory glibc keeps unless asked (its mmap threshold rises after the
  // first large blocks are freed, so later ones come from the heap).
  if (freed != 0) malloc_trim(0);
#endif
  return freed;
}

}  // namespace internal

}  // namespace rill
