#include "bench/alloc_hook/alloc_hook.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RILL_ALLOC_HOOK_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define RILL_ALLOC_HOOK_ENABLED 0
#endif
#endif
#ifndef RILL_ALLOC_HOOK_ENABLED
#define RILL_ALLOC_HOOK_ENABLED 1
#endif

#if RILL_ALLOC_HOOK_ENABLED

// glibc's allocator under its exported internal names (GLIBC_2.2.5): the replacements below
// forward here, so every block is glibc's and glibc's free and malloc_usable_size work on it.
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* ptr, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void* __libc_valloc(std::size_t size);
void* __libc_pvalloc(std::size_t size);
}

namespace {

// Counters are sharded so that threads do not fight over one cache line: each thread picks a
// shard once, round robin, and adds to it with relaxed atomics. Reading sums the shards.
constexpr unsigned kShards = 64;

struct alignas(64) Shard {
  std::atomic<std::uint64_t> allocs{0};
  std::atomic<std::uint64_t> bytes{0};
};

// Constant-initialized: usable by the first malloc, before any constructor runs.
Shard g_shards[kShards];
std::atomic<unsigned> g_next_shard{0};

// initial-exec: reading it never calls into the dynamic loader (which could call malloc).
// 0 = no shard chosen yet, otherwise shard index + 1.
__attribute__((tls_model("initial-exec"))) thread_local unsigned t_shard = 0;

inline void Count(std::size_t bytes) noexcept {
  unsigned shard = t_shard;
  if (shard == 0) {
    shard = g_next_shard.fetch_add(1, std::memory_order_relaxed) % kShards + 1;
    t_shard = shard;
  }
  Shard& s = g_shards[shard - 1];
  s.allocs.fetch_add(1, std::memory_order_relaxed);
  s.bytes.fetch_add(bytes, std::memory_order_relaxed);
}

inline void* Counted(void* p, std::size_t bytes) noexcept {
  if (p != nullptr) {
    Count(bytes);
  }
  return p;
}

}  // namespace

extern "C" {

void* malloc(std::size_t size) noexcept { return Counted(__libc_malloc(size), size); }

void* calloc(std::size_t count, std::size_t size) noexcept {
  // On overflow glibc returns null, so nothing is counted.
  return Counted(__libc_calloc(count, size), count * size);
}

void* realloc(void* ptr, std::size_t size) noexcept {
  // realloc(p, 0) frees p and returns null: not an allocation.
  return Counted(__libc_realloc(ptr, size), size);
}

void* reallocarray(void* ptr, std::size_t count, std::size_t size) noexcept {
  std::size_t total = 0;
  if (__builtin_mul_overflow(count, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(ptr, total);
}

void* memalign(std::size_t alignment, std::size_t size) noexcept {
  return Counted(__libc_memalign(alignment, size), size);
}

void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
  // glibc 2.36 implements aligned_alloc as memalign.
  return Counted(__libc_memalign(alignment, size), size);
}

int posix_memalign(void** out, std::size_t alignment, std::size_t size) noexcept {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) {
    return EINVAL;
  }
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) {
    return ENOMEM;
  }
  Count(size);
  *out = p;
  return 0;
}

void* valloc(std::size_t size) noexcept { return Counted(__libc_valloc(size), size); }

void* pvalloc(std::size_t size) noexcept { return Counted(__libc_pvalloc(size), size); }

}  // extern "C"

namespace rill::bench {

AllocationTotals AllocationCounts() noexcept {
  AllocationTotals totals;
  for (const Shard& s : g_shards) {
    totals.allocs += s.allocs.load(std::memory_order_relaxed);
    totals.bytes += s.bytes.load(std::memory_order_relaxed);
  }
  return totals;
}

bool AllocationCountingEnabled() noexcept { return true; }

}  // namespace rill::bench

#else  // !RILL_ALLOC_HOOK_ENABLED

namespace rill::bench {

// The sanitizer runtime interposes malloc itself; a second interposer would fight it.
AllocationTotals AllocationCounts() noexcept { return {}; }

bool AllocationCountingEnabled() noexcept { return false; }

}  // namespace rill::bench

#endif  // RILL_ALLOC_HOOK_ENABLED
