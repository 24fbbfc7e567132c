#include "rill/mem/buffer.h"

#include <cstring>

#include "rill/mem/buffer_pool.h"

namespace rill {
namespace detail {

void ReturnBlock(BlockHeader* block) noexcept {
  // The last owner either skipped the decrement (refs == 1) or took it to 0.
  RILL_DCHECK_MSG(block->refs.load(std::memory_order_relaxed) <= 1 &&
                      block->refs.load(std::memory_order_relaxed) >= 0,
                  "rill::Buffer reference count underflow");
  if (block->kind == BlockKind::kSmall) {
    ReleaseSmallBlock(block);
  } else {
    RILL_DCHECK_MSG(block->kind == BlockKind::kPooled && block->pool != nullptr,
                    "released a block with a corrupt header");
    block->pool->ReleaseBlock(block);
  }
}

}  // namespace detail

Buffer Buffer::Allocate(size_t size, BufferPool& pool) {
  if (size == 0) return Buffer();
  detail::BlockHeader* block =
      size <= kSmallBufferMax ? detail::AllocateSmallBlock(size) : pool.AllocateBlock(size);
  RILL_DCHECK(block->capacity >= size);
  return AdoptBlock(block, size);
}

Buffer Buffer::Copy(std::span<const std::byte> bytes, BufferPool& pool) {
  Buffer buffer = Allocate(bytes.size(), pool);
  if (!bytes.empty()) {
    std::memcpy(buffer.mutable_data(), bytes.data(), bytes.size());
    detail::CountCopiedBytes(bytes.size());
  }
  return buffer;
}

}  // namespace rill
