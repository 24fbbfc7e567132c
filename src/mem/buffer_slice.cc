#include "rill/mem/buffer_slice.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <utility>

#include "rill/mem/buffer_pool.h"

namespace rill {
namespace {

// Storage for more than kInlineBuffers buffers comes from a per-thread cache of freed arrays,
// one list per capacity (kInlineBuffers doubled, up to kCachedCapacityMax): a large message that
// arrives a frame per read is a slice of dozens of views and grows the same arrays call after
// call, which were then the only heap allocations of a 1 MiB call (ten of them). Each list keeps
// kCachedPerCapacity arrays at most (under 50 KiB per thread in all); the rest go to the heap.
constexpr uint32_t kCachedCapacityMax = 256;
constexpr size_t kCachedPerCapacity = 4;
constexpr size_t kCapacities = static_cast<size_t>(
    std::countr_zero(kCachedCapacityMax) - std::countr_zero(BufferSlice::kInlineBuffers));

class StorageCache {
 public:
  StorageCache() { alive_ = true; }
  ~StorageCache() {
    alive_ = false;
    for (size_t c = 0; c < kCapacities; ++c) {
      for (size_t i = 0; i < counts_[c]; ++i) {
        std::allocator<Buffer>().deallocate(arrays_[c][i], CapacityOf(c));
      }
    }
  }
  StorageCache(const StorageCache&) = delete;
  StorageCache& operator=(const StorageCache&) = delete;

  // The calling thread's cache, or null once it was destroyed (slices freed late in a thread's
  // exit use the heap directly).
  static StorageCache* Get() {
    thread_local StorageCache cache;
    return alive_ ? &cache : nullptr;
  }

  Buffer* Take(uint32_t capacity) {
    const size_t c = IndexOf(capacity);
    if (c < kCapacities && counts_[c] > 0) return arrays_[c][--counts_[c]];
    return std::allocator<Buffer>().allocate(capacity);
  }
  void Give(Buffer* array, uint32_t capacity) {
    const size_t c = IndexOf(capacity);
    if (c < kCapacities && counts_[c] < kCachedPerCapacity) {
      arrays_[c][counts_[c]++] = array;
      return;
    }
    std::allocator<Buffer>().deallocate(array, capacity);
  }

 private:
  // 2 * kInlineBuffers → 0, 4 * kInlineBuffers → 1, ...; kCapacities for any other capacity.
  static size_t IndexOf(uint32_t capacity) {
    if (!std::has_single_bit(capacity) || capacity <= BufferSlice::kInlineBuffers ||
        capacity > kCachedCapacityMax) {
      return kCapacities;
    }
    return static_cast<size_t>(std::countr_zero(capacity) -
                               std::countr_zero(BufferSlice::kInlineBuffers) - 1);
  }
  static uint32_t CapacityOf(size_t index) {
    return static_cast<uint32_t>(BufferSlice::kInlineBuffers << (index + 1));
  }

  static thread_local bool alive_;
  std::array<std::array<Buffer*, kCachedPerCapacity>, kCapacities> arrays_{};
  std::array<size_t, kCapacities> counts_{};
};

thread_local bool StorageCache::alive_ = false;

Buffer* AllocateStorage(uint32_t capacity) {
  StorageCache* cache = StorageCache::Get();
  return cache != nullptr ? cache->Take(capacity) : std::allocator<Buffer>().allocate(capacity);
}

void FreeStorage(Buffer* array, uint32_t capacity) {
  StorageCache* cache = StorageCache::Get();
  if (cache != nullptr) {
    cache->Give(array, capacity);
  } else {
    std::allocator<Buffer>().deallocate(array, capacity);
  }
}

}  // namespace

void BufferSlice::MoveFrom(BufferSlice& other) noexcept {
  RILL_DCHECK(IsBare());
  if (other.heap_ != nullptr) {
    heap_ = std::exchange(other.heap_, nullptr);
    capacity_ = std::exchange(other.capacity_, static_cast<uint32_t>(kInlineBuffers));
    head_ = std::exchange(other.head_, 0);
  } else {
    Buffer* from = other.data();
    auto* to = reinterpret_cast<Buffer*>(inline_);
    for (uint32_t i = 0; i < other.count_; ++i) {
      ::new (static_cast<void*>(to + i)) Buffer(std::move(from[i]));
      from[i].~Buffer();
    }
    other.head_ = 0;
  }
  count_ = std::exchange(other.count_, 0);
  size_ = std::exchange(other.size_, 0);
}

void BufferSlice::Grow() {
  Buffer* old = data();
  // With at least half of the storage free at the front, moving down keeps appends amortized
  // O(1); otherwise the storage doubles.
  const bool move_down = head_ > 0 && count_ <= capacity_ / 2;
  const uint32_t capacity = move_down ? capacity_ : capacity_ * 2;
  Buffer* target = move_down ? (heap_ != nullptr ? heap_ : reinterpret_cast<Buffer*>(inline_))
                             : AllocateStorage(capacity);
  for (uint32_t i = 0; i < count_; ++i) {
    ::new (static_cast<void*>(target + i)) Buffer(std::move(old[i]));
    old[i].~Buffer();
  }
  head_ = 0;
  if (move_down) return;
  if (heap_ != nullptr) FreeStorage(heap_, capacity_);
  heap_ = target;
  capacity_ = capacity;
}

void BufferSlice::Append(Buffer buffer) {
  if (buffer.empty()) return;
  if (head_ + count_ == capacity_) Grow();
  const size_t size = buffer.size();
  Buffer* base = heap_ != nullptr ? heap_ : reinterpret_cast<Buffer*>(inline_);
  ::new (static_cast<void*>(base + head_ + count_)) Buffer(std::move(buffer));
  ++count_;
  size_ += size;
}

void BufferSlice::Append(BufferSlice&& other) {
  if (count_ == 0) {
    *this = std::move(other);
    return;
  }
  Buffer* from = other.data();
  for (uint32_t i = 0; i < other.count_; ++i) Append(std::move(from[i]));
  other.Free();
}

BufferSlice BufferSlice::Ref() const {
  BufferSlice copy;
  for (const Buffer& buffer : *this) copy.Append(buffer.Ref());
  return copy;
}

void BufferSlice::FreeSlow() noexcept {
  Buffer* buffers = data();
  for (uint32_t i = 0; i < count_; ++i) buffers[i].~Buffer();
  if (heap_ != nullptr) FreeStorage(heap_, capacity_);
  heap_ = nullptr;
  capacity_ = kInlineBuffers;
  head_ = 0;
  count_ = 0;
  size_ = 0;
}

Buffer BufferSlice::PopFront() {
  RILL_DCHECK(count_ > 0);
  Buffer* front = data();
  Buffer buffer = std::move(*front);
  front->~Buffer();
  size_ -= buffer.size();
  --count_;
  head_ = count_ == 0 ? 0 : head_ + 1;
  return buffer;
}

void BufferSlice::TrimFront(size_t n) noexcept {
  RILL_DCHECK(count_ > 0 && n < data()[0].size());
  data()[0].RemovePrefix(n);
  size_ -= n;
}

BufferSlice BufferSlice::TakeFront(size_t n) {
  RILL_CHECK_MSG(n <= size_, "BufferSlice::TakeFront past the end");
  BufferSlice front;
  if (n == size_) {
    std::swap(front, *this);
    return front;
  }
  while (n > 0) {
    Buffer& first = data()[0];
    if (first.size() <= n) {
      n -= first.size();
      front.Append(PopFront());
      continue;
    }
    // Cut the boundary buffer: `first` keeps [0, n) and goes to `front`, the rest stays here.
    Buffer rest = first.Split(n);
    front.Append(std::move(first));
    first = std::move(rest);
    size_ -= n;
    n = 0;
  }
  return front;
}

size_t BufferSlice::CopyTo(std::span<std::byte> dst) const {
  size_t copied = 0;
  for (const Buffer& buffer : *this) {
    if (copied == dst.size()) break;
    const size_t n = std::min(buffer.size(), dst.size() - copied);
    std::memcpy(dst.data() + copied, buffer.data(), n);
    copied += n;
  }
  detail::CountCopiedBytes(copied);
  return copied;
}

std::string BufferSlice::Materialize() const {
  std::string flat;
  flat.reserve(size_);
  for (const Buffer& buffer : *this) flat.append(buffer.AsStringView());
  detail::CountCopiedBytes(size_);
  return flat;
}

Buffer BufferSlice::MaterializeToBuffer(BufferPool& pool) const {
  if (count_ == 0) return Buffer();
  if (count_ == 1) return data()[0].Ref();
  Buffer flat = Buffer::Allocate(size_, pool);
  std::byte* out = flat.mutable_data();
  for (const Buffer& buffer : *this) {
    std::memcpy(out, buffer.data(), buffer.size());
    out += buffer.size();
  }
  detail::CountCopiedBytes(size_);
  return flat;
}

size_t BufferSlice::PinnedBytes() const noexcept {
  // Counting a shared block once per view would make a message cut out of a few read blocks
  // look as if it pinned twice its size, and compaction would copy it for nothing. Views of one
  // block end their block at the same address.
  size_t pinned = 0;
  const std::byte* previous_block_end = nullptr;
  for (const Buffer& buffer : *this) {
    const std::byte* block_end = buffer.data() + buffer.size() + buffer.TailRoom();
    if (block_end != previous_block_end) pinned += buffer.BlockCapacity();
    previous_block_end = block_end;
  }
  return pinned;
}

size_t BufferSlice::ReclaimableBytes() const noexcept {
  size_t reclaimable = 0;
  const std::byte* run_block_end = nullptr;
  size_t run_capacity = 0;
  int32_t run_views = 0;
  int32_t run_refs = 0;
  for (const Buffer& buffer : *this) {
    const std::byte* block_end = buffer.data() + buffer.size() + buffer.TailRoom();
    if (block_end != run_block_end) {
      if (run_views > 0 && run_refs == run_views) reclaimable += run_capacity;
      run_block_end = block_end;
      run_capacity = buffer.BlockCapacity();
      run_views = 0;
      run_refs = buffer.BlockRefs();
    }
    ++run_views;
  }
  if (run_views > 0 && run_refs == run_views) reclaimable += run_capacity;
  return reclaimable;
}

void BufferSlice::Compact(BufferPool& pool) {
  if (count_ == 0 || (count_ == 1 && PinnedBytes() <= 2 * size_)) return;
  Buffer flat = Buffer::Allocate(size_, pool);
  CopyTo(std::span<std::byte>(flat.mutable_data(), size_));  // counts the copied bytes
  Free();
  Append(std::move(flat));
}

// BufferSliceReader

void BufferSliceReader::Reset(BufferSlice slice) {
  slice_ = std::move(slice);
  offset_ = 0;
}

size_t BufferSliceReader::Read(std::span<std::byte> dst) {
  size_t copied = 0;
  while (copied < dst.size() && !slice_.empty()) {
    const Buffer& front = slice_.buffer(0);
    const size_t n = std::min(front.size() - offset_, dst.size() - copied);
    std::memcpy(dst.data() + copied, front.data() + offset_, n);
    copied += n;
    offset_ += n;
    if (offset_ == front.size()) DropConsumedFront();
  }
  detail::CountCopiedBytes(copied);
  return copied;
}

void BufferSliceReader::Discard(size_t n) {
  RILL_CHECK_MSG(n <= Remaining(), "BufferSliceReader::Discard past the end");
  while (n > 0) {
    const size_t left = slice_.buffer(0).size() - offset_;
    const size_t step = std::min(left, n);
    offset_ += step;
    n -= step;
    if (step == left) DropConsumedFront();
  }
}

size_t BufferSliceReader::Peek(size_t n, iovec* iov, size_t max_iov, size_t* bytes) const {
  size_t used = 0;
  size_t covered = 0;
  size_t skip = offset_;
  for (const Buffer& buffer : slice_) {
    if (used == max_iov || covered == n) break;
    const size_t len = std::min(buffer.size() - skip, n - covered);
    iov[used].iov_base = const_cast<std::byte*>(buffer.data() + skip);
    iov[used].iov_len = len;
    ++used;
    covered += len;
    skip = 0;
  }
  if (bytes != nullptr) *bytes = covered;
  return used;
}

BufferSlice BufferSliceReader::Take(size_t n) {
  RILL_CHECK_MSG(n <= Remaining(), "BufferSliceReader::Take past the end");
  if (offset_ > 0) {
    slice_.TrimFront(offset_);
    offset_ = 0;
  }
  return slice_.TakeFront(n);
}

void BufferSliceReader::DropConsumedFront() {
  slice_.PopFront().Free();
  offset_ = 0;
}

// BufferSliceWriter

std::span<std::byte> BufferSliceWriter::NextSpace() {
  if (!chunk_.empty() && chunk_used_ == chunk_.size()) {
    out_->Append(std::move(chunk_));
    chunk_used_ = 0;
  }
  if (chunk_.empty()) {
    chunk_ = Buffer::Allocate(std::max<size_t>(chunk_size_, 1), *pool_);
    chunk_.Extend(chunk_.TailRoom());
  }
  return {chunk_.mutable_data() + chunk_used_, chunk_.size() - chunk_used_};
}

void BufferSliceWriter::Commit(size_t n) {
  RILL_DCHECK_MSG(n <= chunk_.size() - chunk_used_, "BufferSliceWriter::Commit past NextSpace");
  chunk_used_ += n;
}

void BufferSliceWriter::Write(std::span<const std::byte> bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    std::span<std::byte> space = NextSpace();
    const size_t n = std::min(space.size(), bytes.size() - written);
    std::memcpy(space.data(), bytes.data() + written, n);
    Commit(n);
    written += n;
  }
  detail::CountCopiedBytes(written);
}

void BufferSliceWriter::Flush() {
  if (chunk_used_ == 0) return;
  if (chunk_used_ <= kSmallBufferMax && chunk_.IsPooled()) {
    // A pooled chunk would pin its whole capacity for a few bytes: move them to a small block
    // and keep the chunk for the next writes.
    out_->Append(Buffer::Copy(chunk_.span().first(chunk_used_), *pool_));
  } else {
    chunk_.Truncate(chunk_used_);
    out_->Append(std::move(chunk_));
  }
  chunk_used_ = 0;
}

// ReadAll

StatusOr<BufferSlice> ReadAll(ByteSource& source, BufferPool& pool, size_t limit,
                              size_t chunk_size) {
  BufferSlice out;
  {
    BufferSliceWriter writer(&out, pool, chunk_size);
    size_t total = 0;
    while (true) {
      std::span<std::byte> space = writer.NextSpace();
      // Never ask for more than one byte past the limit.
      space = space.first(std::min(space.size(), limit - total + 1));
      StatusOr<size_t> read = source.Read(space);
      if (!read.ok()) {
        out.Free();
        return read.status();
      }
      if (*read == 0) break;
      RILL_CHECK_MSG(*read <= space.size(), "ByteSource::Read returned more than it was given");
      writer.Commit(*read);
      total += *read;
      if (total > limit) {
        out.Free();
        return Status(StatusCode::kResourceExhausted,
                      "message larger than the limit of " + std::to_string(limit) + " bytes");
      }
    }
  }
  return out;
}

}  // namespace rill
