#include "src/http2/nghttp2_memory.h"

#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace rill::internal {
namespace {

// Classes of 32 B .. 16 KiB of usable space, two per power of two (2^k and 1.5 x 2^k), so a
// block wastes at most a third of itself: the session object (2.9 KiB in nghttp2 1.52) takes a
// 3 KiB block, not a 4 KiB one, in every connection. Larger requests go to malloc directly.
constexpr int kMinShift = 5;
constexpr int kMaxShift = 14;
constexpr int kClasses = 2 * (kMaxShift - kMinShift) + 1;
constexpr uint32_t kLargeClass = 0xFF;
// Per thread and class, at most this many bytes of free blocks are kept.
constexpr size_t kMaxCachedBytesPerClass = 256 * 1024;

// Precedes every block. 16 bytes keep the returned pointer 16-byte aligned.
struct alignas(16) Prefix {
  uint32_t size_class;
  uint32_t unused;
  size_t usable;
};
static_assert(sizeof(Prefix) == 16);

struct FreeNode {
  FreeNode* next;
};

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RILL_NGHTTP2_NO_CACHE 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(RILL_NGHTTP2_NO_CACHE)
// Sanitizers see every allocation and free as it happens.
constexpr bool kCache = false;
#else
constexpr bool kCache = true;
#endif

// Set once this thread's lists are destroyed (thread exit); later calls bypass them.
thread_local bool t_lists_gone = false;

struct ThreadLists {
  std::array<FreeNode*, kClasses> head{};
  std::array<size_t, kClasses> count{};

  ~ThreadLists() {
    t_lists_gone = true;
    for (FreeNode*& node : head) {
      while (node != nullptr) {
        FreeNode* next = node->next;
        std::free(reinterpret_cast<Prefix*>(node) - 1);
        node = next;
      }
    }
  }
};

thread_local ThreadLists t_lists;

// Class 0 is 32 B; then, for each shift k above kMinShift, class 2(k - kMinShift) - 1 holds
// 3 x 2^(k-2) B and class 2(k - kMinShift) holds 2^k B.
constexpr int ComputeClass(size_t size) {
  if (size <= (size_t{1} << kMinShift)) return 0;
  const size_t last = size - 1;
  const int shift = std::bit_width(last);  // 2^(shift-1) <= last < 2^shift
  const int upper_half = static_cast<int>((last >> (shift - 2)) & 1);
  return 2 * (shift - kMinShift) - 1 + upper_half;
}

// Every class boundary is a multiple of 16 B: one table load finds the class.
constexpr size_t kGranule = 16;
constexpr size_t kLargest = size_t{1} << kMaxShift;
constexpr auto kClassTable = [] {
  std::array<uint8_t, kLargest / kGranule> table{};
  for (size_t i = 0; i < table.size(); ++i) {
    table[i] = static_cast<uint8_t>(ComputeClass((i + 1) * kGranule));
  }
  return table;
}();

int ClassFor(size_t size) {
  const size_t last = size - 1;  // size 0 wraps around and goes to malloc
  return last < kLargest ? kClassTable[last / kGranule] : -1;
}

size_t UsableSize(int cls) {
  if (cls == 0) return size_t{1} << kMinShift;
  const int shift = (cls + 1) / 2 + kMinShift;
  return (cls & 1) != 0 ? size_t{3} << (shift - 2) : size_t{1} << shift;
}

void* Allocate(size_t size, void* /*user_data*/) {
  const int cls = kCache && !t_lists_gone ? ClassFor(size) : -1;
  if (cls >= 0) {
    ThreadLists& lists = t_lists;
    if (FreeNode* node = lists.head[cls]; node != nullptr) {
      lists.head[cls] = node->next;
      --lists.count[cls];
      return node;
    }
    const size_t usable = UsableSize(cls);
    auto* prefix = static_cast<Prefix*>(std::malloc(sizeof(Prefix) + usable));
    if (prefix == nullptr) return nullptr;
    *prefix = Prefix{static_cast<uint32_t>(cls), 0, usable};
    return prefix + 1;
  }
  auto* prefix = static_cast<Prefix*>(std::malloc(sizeof(Prefix) + size));
  if (prefix == nullptr) return nullptr;
  *prefix = Prefix{kLargeClass, 0, size};
  return prefix + 1;
}

void Free(void* ptr, void* /*user_data*/) {
  if (ptr == nullptr) return;
  Prefix* prefix = static_cast<Prefix*>(ptr) - 1;
  if (prefix->size_class == kLargeClass) {
    std::free(prefix);
    return;
  }
  const uint32_t cls = prefix->size_class;
  if (t_lists_gone) {
    std::free(prefix);
    return;
  }
  ThreadLists& lists = t_lists;
  if ((lists.count[cls] + 1) * prefix->usable > kMaxCachedBytesPerClass) {
    std::free(prefix);
    return;
  }
  auto* node = static_cast<FreeNode*>(ptr);
  node->next = lists.head[cls];
  lists.head[cls] = node;
  ++lists.count[cls];
}

void* Calloc(size_t count, size_t size, void* user_data) {
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  void* ptr = Allocate(count * size, user_data);
  if (ptr != nullptr) std::memset(ptr, 0, count * size);
  return ptr;
}

void* Realloc(void* ptr, size_t size, void* user_data) {
  if (ptr == nullptr) return Allocate(size, user_data);
  if (size == 0) {
    Free(ptr, user_data);
    return nullptr;
  }
  const Prefix* prefix = static_cast<Prefix*>(ptr) - 1;
  if (size <= prefix->usable) return ptr;
  void* grown = Allocate(size, user_data);
  if (grown == nullptr) return nullptr;
  std::memcpy(grown, ptr, prefix->usable);
  Free(ptr, user_data);
  return grown;
}

nghttp2_mem g_allocator = {nullptr, Allocate, Free, Calloc, Realloc};

}  // namespace

nghttp2_mem* Nghttp2Allocator() { return &g_allocator; }

}  // namespace rill::internal
