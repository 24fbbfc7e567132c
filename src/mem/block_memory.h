// Internal helpers shared by everything that owns blocks: creating and deleting block memory,
// the release/revive transitions of the header, intrusive free lists, and counters that one
// thread writes and any thread may read.
#ifndef RILL_SRC_MEM_BLOCK_MEMORY_H_
#define RILL_SRC_MEM_BLOCK_MEMORY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "rill/mem/buffer.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define RILL_ASAN_POISON(addr, size) ASAN_POISON_MEMORY_REGION((addr), (size))
#define RILL_ASAN_UNPOISON(addr, size) ASAN_UNPOISON_MEMORY_REGION((addr), (size))
#else
#define RILL_ASAN_POISON(addr, size) ((void)(addr), (void)(size))
#define RILL_ASAN_UNPOISON(addr, size) ((void)(addr), (void)(size))
#endif

namespace rill::internal {

// The byte released data is filled with in checked builds and by the leak-checking pool.
inline constexpr unsigned char kPoisonByte = 0xDD;

// Heap memory for a block of `capacity` data bytes with a live header (one reference, generation
// 0). Aborts when the heap is exhausted.
detail::BlockHeader* NewBlockMemory(size_t capacity, detail::BlockKind kind, BufferPool* pool,
                                    uint8_t size_class);
void DeleteBlockMemory(detail::BlockHeader* block) noexcept;

// Marks a block released: freed magic, next generation (every build), data poisoned with 0xDD
// (checked builds) and unaddressable (AddressSanitizer builds).
inline void RetireBlockMemory(detail::BlockHeader* block) noexcept {
  block->magic = detail::kFreedMagic;
  block->generation = block->generation + 1;
#if RILL_DCHECK_IS_ON
  std::memset(block->data(), kPoisonByte, block->capacity);
#endif
  RILL_ASAN_POISON(block->data(), block->capacity);
}

// Makes a released block live again with one reference.
inline void ReviveBlockMemory(detail::BlockHeader* block) noexcept {
  RILL_ASAN_UNPOISON(block->data(), block->capacity);
  block->refs.store(1, std::memory_order_relaxed);
  block->magic = detail::kLiveMagic;
}

// A LIFO list of released blocks linked through the first word of their data (every block that
// is put on a list has at least 8 data bytes).
struct FreeList {
  detail::BlockHeader* head = nullptr;
  uint32_t count = 0;

  // Bytes of a block's data that hold its link.
  static constexpr size_t kLinkSize = sizeof(uintptr_t);
  static_assert(sizeof(detail::BlockHeader*) == kLinkSize);

  static detail::BlockHeader* Next(detail::BlockHeader* block) noexcept {
    detail::BlockHeader* next;
    std::memcpy(&next, block->data(), kLinkSize);
    return next;
  }
  static void SetNext(detail::BlockHeader* block, detail::BlockHeader* next) noexcept {
    RILL_ASAN_UNPOISON(block->data(), kLinkSize);
    std::memcpy(block->data(), &next, kLinkSize);
  }

  void Push(detail::BlockHeader* block) noexcept {
    SetNext(block, head);
    head = block;
    ++count;
  }
  detail::BlockHeader* Pop() noexcept {
    detail::BlockHeader* block = head;
    if (block != nullptr) {
      head = Next(block);
      --count;
    }
    return block;
  }
  // Returns the whole chain (linked through Next) and empties the list.
  detail::BlockHeader* TakeAll() noexcept {
    detail::BlockHeader* all = head;
    head = nullptr;
    count = 0;
    return all;
  }
};

// Deletes every block of a chain linked through FreeList::Next.
inline void DeleteChain(detail::BlockHeader* chain) noexcept {
  while (chain != nullptr) {
    detail::BlockHeader* next = FreeList::Next(chain);
    DeleteBlockMemory(chain);
    chain = next;
  }
}

// A counter written by one thread and read by any: the writer does a plain load and store (no
// read-modify-write, no lock prefix), readers see a recent value.
class OwnerCounter {
 public:
  void Add(int64_t n) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Reset() noexcept { value_.store(0, std::memory_order_relaxed); }
  [[nodiscard]] int64_t Get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

}  // namespace rill::internal

#endif  // RILL_SRC_MEM_BLOCK_MEMORY_H_
