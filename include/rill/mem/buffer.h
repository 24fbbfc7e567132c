// rill::Buffer: a reference-counted view onto a block of memory.
//
// Every payload byte rill moves lives in a block: a header followed by data, taken from a
// BufferPool (blocks larger than kSmallBufferMax) or from a per-thread cache of small blocks
// (kSmallBufferMax or less, never touching the pool). A Buffer is a view (pointer, length) onto
// one block and holds one reference to it; the block returns to where it came from when its
// last view is released.
//
//   rill::Buffer b = rill::Buffer::Allocate(64 * 1024, pool);
//   std::memcpy(b.mutable_data(), src, b.size());
//   rill::Buffer tail = b.Split(1000);   // b views [0, 1000), tail views [1000, 65536)
//   rill::Buffer again = tail.Ref();     // shares the block; no copy
//   tail.Free();                         // the block stays alive through `b` and `again`
//
// Ownership: a Buffer owns its reference. It is move-only; Ref() makes a second owner,
// Free() or destruction releases. Names state costs: Ref(), Slice(), Split() are O(1) and never
// copy bytes; Copy() allocates and copies.
//
// Misuse is caught in builds with RILL_DCHECK_IS_ON: Free() on a freed buffer ("double free"),
// any access to a freed buffer ("use of freed buffer"), and access through a view whose block
// was recycled behind its back (a generation mismatch) abort with a message.
//
// Thread safety: thread-compatible. Reference counts are atomic, so views of one block may be
// released on different threads; a single Buffer object must not be used from two threads at
// once.
#ifndef RILL_MEM_BUFFER_H_
#define RILL_MEM_BUFFER_H_

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "rill/detail/check.h"

namespace rill {

class BufferPool;

// Buffers of this many bytes or fewer are copied into small blocks instead of being views of
// pooled blocks: refcounting a tiny piece of a large block costs more than copying it, and
// would pin the large block.
inline constexpr size_t kSmallBufferMax = 1024;

namespace detail {

enum class BlockKind : uint8_t {
  kPooled = 1,  // owned by `pool`; returned through BufferPool::ReleaseBlock
  kSmall = 2,   // from the per-thread small-block cache; never touches a BufferPool
};

// The in-band header at the start of every block. The data follows at
// `reinterpret_cast<std::byte*>(header) + sizeof(BlockHeader)`.
//
// Invariants: `refs` >= 1 while any view exists; `capacity` is fixed at creation; `pool` is
// non-null exactly when kind == kPooled. `magic` and `generation` are maintained in every build
// but only checked when RILL_DCHECK_IS_ON.
struct alignas(16) BlockHeader {
  std::atomic<int32_t> refs;
  BlockKind kind;
  uint8_t size_class;  // the small-block class or the pool's tier; owner-defined
  uint16_t magic;
  uint32_t generation;  // bumped each time the block is released, so stale views are caught
  uint32_t pool_tag;    // free for the owning pool (the leak-checking pool keeps an index here)
  size_t capacity;      // bytes of data
  BufferPool* pool;

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this) + sizeof(BlockHeader); }
};
static_assert(sizeof(BlockHeader) == 32);

inline constexpr uint16_t kLiveMagic = 0xB10C;
inline constexpr uint16_t kFreedMagic = 0xDEAD;

// Small-block cache (src/mem/small_block_cache.cc). Allocation never fails; release may happen
// on any thread (the block joins that thread's cache).
BlockHeader* AllocateSmallBlock(size_t size);
void ReleaseSmallBlock(BlockHeader* block) noexcept;

// Returns a block whose last reference was dropped to its owner.
void ReturnBlock(BlockHeader* block) noexcept;

// Payload bytes copied in user space by rill's copy helpers (Buffer::Copy, BufferSlice
// materialize/copy-out, the small-chunk receive path, compaction). Per-thread, summed on read.
void CountCopiedBytes(size_t n) noexcept;

}  // namespace detail

class [[nodiscard]] Buffer {
 public:
  // An empty buffer: no block, size 0.
  Buffer() noexcept = default;

  // A new buffer of `size` uninitialized bytes, uniquely owned. Sizes up to kSmallBufferMax come
  // from the small-block cache; larger ones from `pool`.
  static Buffer Allocate(size_t size, BufferPool& pool);
  // A new buffer holding a copy of `bytes` (counted by the copy counter).
  static Buffer Copy(std::span<const std::byte> bytes, BufferPool& pool);
  static Buffer Copy(std::string_view bytes, BufferPool& pool) {
    return Copy(std::as_bytes(std::span(bytes.data(), bytes.size())), pool);
  }

  Buffer(Buffer&& other) noexcept : data_(other.data_), size_(other.size_), block_(other.block_) {
#if RILL_DCHECK_IS_ON
    generation_ = other.generation_;
#endif
    other.data_ = nullptr;
    other.size_ = 0;
    other.block_ = nullptr;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      ReleaseIfHeld();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      block_ = std::exchange(other.block_, nullptr);
#if RILL_DCHECK_IS_ON
      generation_ = other.generation_;
#endif
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { ReleaseIfHeld(); }

  [[nodiscard]] const std::byte* data() const noexcept {
    CheckLive();
    return data_;
  }
  // Writable access; only for a buffer that is the sole view of its block (freshly allocated).
  [[nodiscard]] std::byte* mutable_data() noexcept {
    CheckLive();
    RILL_DCHECK_MSG(block_ == nullptr || IsUnique(), "mutable_data() on a shared buffer");
    return const_cast<std::byte*>(data_);
  }
  [[nodiscard]] size_t size() const noexcept {
    CheckLive();
    return size_;
  }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] std::span<const std::byte> span() const noexcept { return {data(), size_}; }
  [[nodiscard]] std::string_view AsStringView() const noexcept {
    return {reinterpret_cast<const char*>(data()), size_};
  }
  [[nodiscard]] iovec AsIovec() const noexcept { return {const_cast<std::byte*>(data()), size_}; }

  // A second owner of the same bytes. O(1): one atomic increment.
  [[nodiscard]] Buffer Ref() const noexcept {
    CheckLive();
    if (block_ != nullptr) block_->refs.fetch_add(1, std::memory_order_relaxed);
    return Buffer(data_, size_, block_);
  }
  // A new view of [begin, end) sharing the block. An empty range gives an empty buffer.
  [[nodiscard]] Buffer Slice(size_t begin, size_t end) const noexcept {
    CheckLive();
    RILL_DCHECK(begin <= end && end <= size_);
    if (begin == end) return Buffer();
    if (block_ != nullptr) block_->refs.fetch_add(1, std::memory_order_relaxed);
    return Buffer(data_ + begin, end - begin, block_);
  }
  // Cuts this buffer at `n` without copying: this keeps [0, n) and the result views [n, size).
  [[nodiscard]] Buffer Split(size_t n) noexcept {
    Buffer tail = Slice(n, size_);
    size_ = n;
    return tail;
  }
  // Drops bytes from the front or the back of the view (the block is unchanged).
  void RemovePrefix(size_t n) noexcept {
    CheckLive();
    RILL_DCHECK(n <= size_);
    data_ += n;
    size_ -= n;
  }
  void RemoveSuffix(size_t n) noexcept {
    CheckLive();
    RILL_DCHECK(n <= size_);
    size_ -= n;
  }
  // Shrinks a uniquely owned buffer to `n` bytes (used after writing fewer bytes than allocated).
  void Truncate(size_t n) noexcept { RemoveSuffix(size() - n); }

  // Releases this view's reference; the buffer becomes unusable. Freeing a freed buffer aborts in
  // checked builds. Destroying a buffer releases it implicitly.
  void Free() noexcept {
#if RILL_DCHECK_IS_ON
    RILL_CHECK_MSG(block_ != FreedMarker(), "double free of a rill::Buffer");
#endif
    ReleaseIfHeld();
#if RILL_DCHECK_IS_ON
    block_ = FreedMarker();
#endif
  }

  // True when this view's block has no other view (it may be written and trimmed).
  [[nodiscard]] bool IsUnique() const noexcept {
    CheckLive();
    return block_ == nullptr || block_->refs.load(std::memory_order_acquire) == 1;
  }
  // Views of this view's block, this one included (0 for an empty buffer). A snapshot: views
  // on other threads may come and go.
  [[nodiscard]] int32_t BlockRefs() const noexcept {
    CheckLive();
    return block_ == nullptr ? 0 : block_->refs.load(std::memory_order_relaxed);
  }
  // True for views of a block from a BufferPool (as opposed to a small block or no block).
  [[nodiscard]] bool IsPooled() const noexcept {
    CheckLive();
    return block_ != nullptr && block_->kind == detail::BlockKind::kPooled;
  }
  // Bytes of memory this view keeps alive: the capacity of its block (0 for an empty buffer).
  [[nodiscard]] size_t BlockCapacity() const noexcept {
    CheckLive();
    return block_ != nullptr ? block_->capacity : 0;
  }
  // Bytes available after the end of this view in its block (for appending in place when the
  // buffer is unique).
  [[nodiscard]] size_t TailRoom() const noexcept {
    CheckLive();
    if (block_ == nullptr) return 0;
    return static_cast<size_t>(block_->data() + block_->capacity - (data_ + size_));
  }
  // Grows a unique view by `n` bytes into its tail room.
  void Extend(size_t n) noexcept {
    RILL_DCHECK(IsUnique() && n <= TailRoom());
    size_ += n;
  }

  // For the pool implementation and tests: adopts a block that carries one reference.
  static Buffer AdoptBlock(detail::BlockHeader* block, size_t size) noexcept {
    return Buffer(block->data(), size, block);
  }

 private:
  Buffer(const std::byte* data, size_t size, detail::BlockHeader* block) noexcept
      : data_(data), size_(size), block_(block) {
#if RILL_DCHECK_IS_ON
    if (block_ != nullptr) generation_ = block_->generation;
#endif
  }

  // Never dereferenced: compared only.
  static detail::BlockHeader* FreedMarker() noexcept {
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    return reinterpret_cast<detail::BlockHeader*>(uintptr_t{1});
  }

  void CheckLive() const noexcept {
#if RILL_DCHECK_IS_ON
    RILL_CHECK_MSG(block_ != FreedMarker(), "use of a freed rill::Buffer");
    if (block_ != nullptr) {
      RILL_CHECK_MSG(block_->magic == detail::kLiveMagic && block_->generation == generation_,
                     "rill::Buffer views a block that was already released (stale view)");
    }
#endif
  }

  void ReleaseIfHeld() noexcept {
    detail::BlockHeader* block = block_;
#if RILL_DCHECK_IS_ON
    if (block == FreedMarker()) return;
#endif
    if (block == nullptr) return;
    CheckLive();
    block_ = nullptr;
    data_ = nullptr;
    size_ = 0;
    // The sole owner skips the atomic read-modify-write: nobody else can add a reference.
    if (block->refs.load(std::memory_order_acquire) != 1) {
      const int32_t before = block->refs.fetch_sub(1, std::memory_order_acq_rel);
      RILL_DCHECK_MSG(before >= 1, "rill::Buffer reference count underflow");
      if (before != 1) return;
    }
    detail::ReturnBlock(block);
  }

  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  detail::BlockHeader* block_ = nullptr;
#if RILL_DCHECK_IS_ON
  uint32_t generation_ = 0;
#endif
};

}  // namespace rill

#endif  // RILL_MEM_BUFFER_H_
