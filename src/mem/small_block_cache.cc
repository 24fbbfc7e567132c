// The small-block cache, and the per-thread copy counter that shares its per-thread state.
//
// Each thread keeps LIFO free lists of small blocks in three size classes. A block released on
// any thread joins the releasing thread's lists; lists are bounded (overflow goes back to the
// heap) and emptied when the thread exits. Outstanding small blocks and copied bytes are counted
// per thread (plain stores to thread-owned counters) and summed on read through a registry of
// live threads; an exiting thread folds its counts into the registry's retired totals.
#include <algorithm>
#include <mutex>
#include <vector>

#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "src/mem/block_memory.h"

namespace rill {
namespace {

constexpr size_t kClassCount = 3;
constexpr size_t kClassCapacity[kClassCount] = {64, 256, 1024};
// Per thread and class, at most this many cached blocks (16, 32 and 64 KiB).
constexpr uint32_t kClassMaxCached[kClassCount] = {256, 128, 64};
static_assert(kClassCapacity[kClassCount - 1] == kSmallBufferMax);

enum class TlsState : uint8_t { kFresh, kActive, kGone };

struct SmallTls {
  internal::FreeList lists[kClassCount];
  internal::OwnerCounter small_delta;  // blocks taken minus blocks released on this thread
  internal::OwnerCounter copied;       // payload bytes copied on this thread
  TlsState state = TlsState::kFresh;
};

constinit thread_local SmallTls tls_small;

struct Registry {
  std::mutex mu;
  std::vector<SmallTls*> threads;  // guarded by mu
  int64_t retired_delta = 0;       // guarded by mu
  int64_t retired_copied = 0;      // guarded by mu
  // Operations on a thread whose state is gone (during its thread-local destruction).
  std::atomic<int64_t> late_delta{0};
  std::atomic<int64_t> late_copied{0};
};

Registry& GetRegistry() {
  // Never destroyed: threads may exit during static destruction.
  static Registry* const registry = new Registry();
  return *registry;
}

struct SmallTlsGuard {
  SmallTlsGuard() {
    Registry& registry = GetRegistry();
    std::lock_guard lock(registry.mu);
    registry.threads.push_back(&tls_small);
  }
  ~SmallTlsGuard() {
    SmallTls& tls = tls_small;
    {
      Registry& registry = GetRegistry();
      std::lock_guard lock(registry.mu);
      registry.retired_delta += tls.small_delta.Get();
      registry.retired_copied += tls.copied.Get();
      std::erase(registry.threads, &tls);
    }
    tls.state = TlsState::kGone;
    for (internal::FreeList& list : tls.lists) internal::DeleteChain(list.TakeAll());
  }
};

// Returns true when this thread's state is usable (registering it on first use).
[[gnu::noinline, gnu::cold]] bool ActivateThread() {
  if (tls_small.state == TlsState::kGone) return false;
  static thread_local SmallTlsGuard guard;
  tls_small.state = TlsState::kActive;
  return true;
}

size_t ClassOf(size_t size) noexcept { return size <= 64 ? 0 : size <= 256 ? 1 : 2; }

}  // namespace

namespace detail {

BlockHeader* AllocateSmallBlock(size_t size) {
  RILL_DCHECK(size <= kSmallBufferMax);
  const size_t cls = ClassOf(size);
  SmallTls& tls = tls_small;
  if (RILL_PREDICT_FALSE(tls.state != TlsState::kActive) && !ActivateThread()) {
    GetRegistry().late_delta.fetch_add(1, std::memory_order_relaxed);
    return internal::NewBlockMemory(kClassCapacity[cls], BlockKind::kSmall, nullptr,
                                    static_cast<uint8_t>(cls));
  }
  tls.small_delta.Add(1);
  BlockHeader* block = tls.lists[cls].Pop();
  if (block == nullptr) {
    return internal::NewBlockMemory(kClassCapacity[cls], BlockKind::kSmall, nullptr,
                                    static_cast<uint8_t>(cls));
  }
  internal::ReviveBlockMemory(block);
  return block;
}

void ReleaseSmallBlock(BlockHeader* block) noexcept {
  RILL_DCHECK_MSG(block->kind == BlockKind::kSmall && block->size_class < kClassCount,
                  "not a small block");
  RILL_DCHECK_MSG(block->magic == kLiveMagic, "double release of a small block");
  internal::RetireBlockMemory(block);
  SmallTls& tls = tls_small;
  if (RILL_PREDICT_FALSE(tls.state != TlsState::kActive) && !ActivateThread()) {
    GetRegistry().late_delta.fetch_sub(1, std::memory_order_relaxed);
    internal::DeleteBlockMemory(block);
    return;
  }
  tls.small_delta.Add(-1);
  internal::FreeList& list = tls.lists[block->size_class];
  if (list.count >= kClassMaxCached[block->size_class]) {
    internal::DeleteBlockMemory(block);
    return;
  }
  list.Push(block);
}

void CountCopiedBytes(size_t n) noexcept {
  SmallTls& tls = tls_small;
  if (RILL_PREDICT_FALSE(tls.state != TlsState::kActive) && !ActivateThread()) {
    GetRegistry().late_copied.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
    return;
  }
  tls.copied.Add(static_cast<int64_t>(n));
}

}  // namespace detail

uint64_t CopiedPayloadBytes() {
  Registry& registry = GetRegistry();
  std::lock_guard lock(registry.mu);
  int64_t total = registry.retired_copied + registry.late_copied.load(std::memory_order_relaxed);
  for (const SmallTls* tls : registry.threads) total += tls->copied.Get();
  return static_cast<uint64_t>(total);
}

int64_t SmallBlocksOutstanding() {
  Registry& registry = GetRegistry();
  std::lock_guard lock(registry.mu);
  int64_t total = registry.retired_delta + registry.late_delta.load(std::memory_order_relaxed);
  for (const SmallTls* tls : registry.threads) total += tls->small_delta.Get();
  return total;
}

}  // namespace rill
