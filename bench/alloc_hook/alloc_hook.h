// Process-wide heap allocation counters for benchmarks: the C++ counterpart of the
// TotalAlloc/Mallocs pair that grpc-go's benchmark reads from runtime.MemStats.
//
// Linking the `rill_alloc_hook` OBJECT library into an executable replaces malloc, calloc,
// realloc, reallocarray, memalign, aligned_alloc, posix_memalign, valloc and pvalloc with
// versions that count and forward to glibc's allocator (free is glibc's own). operator new
// reaches malloc through libstdc++, so C++ allocations are counted too.
//
//   # CMakeLists.txt
//   target_link_libraries(benchmain PRIVATE rill_bench_stats rill_alloc_hook)
//
//   // main.cc
//   rill::bench::Stats stats({.allocation_source = &rill::bench::AllocationCounts});
//
// In builds with AddressSanitizer or ThreadSanitizer the sanitizer owns malloc: nothing is
// replaced, AllocationCountingEnabled() is false and the counts stay zero.
//
// Thread-safe.
#ifndef RILL_BENCH_ALLOC_HOOK_ALLOC_HOOK_H_
#define RILL_BENCH_ALLOC_HOOK_ALLOC_HOOK_H_

#include <cstdint>

namespace rill::bench {

// Totals since process start.
struct AllocationTotals {
  // Successful allocation calls (a realloc that returns memory counts as one).
  std::uint64_t allocs = 0;
  // Bytes requested by those calls.
  std::uint64_t bytes = 0;
};

// Current process-wide totals. Counters are updated with relaxed atomics, so a snapshot taken
// while other threads allocate may be off by the allocations in flight.
// Defined only when rill_alloc_hook is linked.
AllocationTotals AllocationCounts() noexcept;

// false when the hook is compiled out (sanitizer builds).
// Defined only when rill_alloc_hook is linked.
bool AllocationCountingEnabled() noexcept;

}  // namespace rill::bench

#endif  // RILL_BENCH_ALLOC_HOOK_ALLOC_HOOK_H_
