// rill::BufferSlice: one message as an ordered list of buffers, plus the reader and writer that
// move bytes in and out of it without flattening.
//
//   rill::BufferSlice msg;
//   msg.Append(std::move(frame1_view));
//   msg.Append(std::move(frame2_view));
//   rill::BufferSlice head = msg.TakeFront(5);     // the gRPC prefix; zero copy
//   std::string flat = msg.Materialize();           // a copy, for tests and logging
//
//   rill::BufferSliceReader reader(std::move(msg)); // frees each buffer once consumed
//   iovec iov[16];
//   size_t n = reader.Peek(16384, iov, 16);          // views for writev
//   reader.Discard(sent);
//
// A slice keeps up to kInlineBuffers buffers without a heap allocation.
//
// Thread safety: thread-compatible.
#ifndef RILL_MEM_BUFFER_SLICE_H_
#define RILL_MEM_BUFFER_SLICE_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <string_view>

#include "rill/mem/buffer.h"
#include "rill/status_or.h"

namespace rill {

class BufferPool;

class [[nodiscard]] BufferSlice {
 public:
  static constexpr size_t kInlineBuffers = 4;

  BufferSlice() noexcept = default;
  explicit BufferSlice(Buffer buffer) { Append(std::move(buffer)); }
  BufferSlice(BufferSlice&& other) noexcept {
    if (!other.IsBare()) MoveFrom(other);
  }
  BufferSlice& operator=(BufferSlice&& other) noexcept {
    if (this != &other) {
      Free();
      if (!other.IsBare()) MoveFrom(other);
    }
    return *this;
  }
  BufferSlice(const BufferSlice&) = delete;
  BufferSlice& operator=(const BufferSlice&) = delete;
  ~BufferSlice() { Free(); }

  // Appends a buffer (an empty one is dropped).
  void Append(Buffer buffer);
  void Append(BufferSlice&& other);

  // Total bytes (not the number of buffers).
  [[nodiscard]] size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
  [[nodiscard]] size_t buffer_count() const noexcept { return count_; }
  [[nodiscard]] const Buffer& buffer(size_t i) const noexcept {
    RILL_DCHECK(i < count_);
    return data()[i];
  }
  [[nodiscard]] const Buffer* begin() const noexcept { return data(); }
  [[nodiscard]] const Buffer* end() const noexcept { return data() + count_; }

  // A second owner of every buffer. O(buffer_count) atomic increments; no bytes copied.
  [[nodiscard]] BufferSlice Ref() const;
  // Releases every buffer; the slice becomes empty.
  void Free() noexcept {
    if (!IsBare()) FreeSlow();
  }

  // Removes the first `n` bytes and returns them as a slice, splitting a buffer at the boundary
  // without copying. `n` must be <= size().
  BufferSlice TakeFront(size_t n);
  // Removes and returns the first buffer.
  Buffer PopFront();

  // Copies up to dst.size() bytes from the front; returns the count. Does not consume.
  size_t CopyTo(std::span<std::byte> dst) const;
  // A flat copy of all bytes.
  [[nodiscard]] std::string Materialize() const;
  // All bytes as one buffer: a Ref() of the only buffer when there is exactly one (no copy),
  // an empty buffer when the slice is empty, otherwise one new block holding a copy.
  [[nodiscard]] Buffer MaterializeToBuffer(BufferPool& pool) const;

  // Sum of the capacities of the blocks the buffers keep alive (compaction compares this with
  // size()). Neighbouring views of one block (the pieces a stream cuts out of one read block)
  // count it once; a block whose views are not neighbours is counted for each run of them.
  [[nodiscard]] size_t PinnedBytes() const noexcept;
  // The part of PinnedBytes() that only this slice keeps alive: blocks with no view outside it,
  // which Compact() would give back. A block still referenced elsewhere (a read block being
  // parsed, a sender's message buffer on an in-process connection) is not counted.
  [[nodiscard]] size_t ReclaimableBytes() const noexcept;
  // Replaces the buffers with one block holding a copy of all bytes, when they pin more than
  // twice the bytes they carry (several pieces, or one small view of a large block). A slice
  // that is already tight is left alone.
  void Compact(BufferPool& pool);

 private:
  friend class BufferSliceReader;

  // The buffers are storage()[head_, head_ + count_): removing from the front only advances
  // head_, appending relocates them to the start when the end of the storage is reached.
  Buffer* storage() noexcept {
    return heap_ != nullptr ? heap_ : std::launder(reinterpret_cast<Buffer*>(inline_));
  }
  const Buffer* storage() const noexcept {
    return heap_ != nullptr ? heap_ : std::launder(reinterpret_cast<const Buffer*>(inline_));
  }
  // No buffer and no heap storage: nothing to free or move (the common case on hot paths).
  bool IsBare() const noexcept { return count_ == 0 && heap_ == nullptr; }
  void MoveFrom(BufferSlice& other) noexcept;  // requires IsBare()
  void FreeSlow() noexcept;

  Buffer* data() noexcept { return storage() + head_; }
  const Buffer* data() const noexcept { return storage() + head_; }
  // Makes room for one more buffer at the end.
  void Grow();
  // Drops `n` bytes from the front of the first buffer (n < its size).
  void TrimFront(size_t n) noexcept;

  // Buffers [head_, head_ + count_) of the storage are constructed; the rest is raw.
  alignas(Buffer) std::byte inline_[kInlineBuffers * sizeof(Buffer)];
  Buffer* heap_ = nullptr;  // when non-null, holds capacity_ buffers
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t capacity_ = kInlineBuffers;
  size_t size_ = 0;
};

// Consumes a BufferSlice from the front, freeing each buffer as soon as all its bytes were read
// or discarded.
class BufferSliceReader {
 public:
  BufferSliceReader() = default;
  explicit BufferSliceReader(BufferSlice slice) : slice_(std::move(slice)) {}

  // Replaces the slice being read (the rest of the old one is freed).
  void Reset(BufferSlice slice);
  // Appends more bytes after the ones not yet read.
  void Append(BufferSlice more) { slice_.Append(std::move(more)); }
  [[nodiscard]] size_t Remaining() const noexcept { return slice_.size() - offset_; }

  // Copies up to dst.size() bytes; returns the count (0 at the end).
  size_t Read(std::span<std::byte> dst);
  // Skips `n` bytes (n <= Remaining()), freeing the buffers it passes.
  void Discard(size_t n);
  // Fills up to `max_iov` iovecs viewing the next `n` bytes (or fewer, if fewer remain or the
  // iovecs run out) without consuming them; returns the number of iovecs used and stores the
  // number of bytes they cover in `*bytes`. The views stay valid until those bytes are discarded.
  size_t Peek(size_t n, iovec* iov, size_t max_iov, size_t* bytes) const;
  // Moves the next `n` bytes out as a slice of views (zero copy).
  BufferSlice Take(size_t n);
  // Frees everything left.
  void Close() { Reset(BufferSlice()); }

 private:
  void DropConsumedFront();

  BufferSlice slice_;
  size_t offset_ = 0;  // bytes of slice_.buffer(0) already consumed
};

// Appends bytes to a BufferSlice in pooled chunks of `chunk_size` (small data goes to small
// blocks). Bytes are copied once, from the caller into the chunks.
class BufferSliceWriter {
 public:
  static constexpr size_t kDefaultChunkSize = 16 * 1024;

  BufferSliceWriter(BufferSlice* out, BufferPool& pool, size_t chunk_size = kDefaultChunkSize)
      : out_(out), pool_(&pool), chunk_size_(chunk_size) {}
  ~BufferSliceWriter() { Flush(); }
  BufferSliceWriter(const BufferSliceWriter&) = delete;
  BufferSliceWriter& operator=(const BufferSliceWriter&) = delete;

  void Write(std::span<const std::byte> bytes);
  void Write(std::string_view bytes) {
    Write(std::as_bytes(std::span(bytes.data(), bytes.size())));
  }
  // Writable space of at least one byte in the current chunk (for producers such as zlib that
  // write in place); Commit(n) marks n of those bytes written.
  std::span<std::byte> NextSpace();
  void Commit(size_t n);
  // Appends the partly filled chunk to the slice. Called by the destructor.
  void Flush();

 private:
  BufferSlice* out_;
  BufferPool* pool_;
  size_t chunk_size_;
  Buffer chunk_;  // allocated at full capacity
  size_t chunk_used_ = 0;
};

// A source of bytes for ReadAll.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills a prefix of `dst`; returns the number of bytes written, 0 at the end of the data.
  virtual StatusOr<size_t> Read(std::span<std::byte> dst) = 0;
};

// Reads `source` to its end into pooled chunks. If the source yields more than `limit` bytes,
// stops after limit + 1 (never holding more than limit + one chunk) and returns
// RESOURCE_EXHAUSTED; on any error nothing needs freeing.
StatusOr<BufferSlice> ReadAll(ByteSource& source, BufferPool& pool, size_t limit,
                              size_t chunk_size = BufferSliceWriter::kDefaultChunkSize);

}  // namespace rill

#endif  // RILL_MEM_BUFFER_SLICE_H_
