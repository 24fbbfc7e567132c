// OutputBatch: the bytes a connection will write next, as iovecs for one writev/sendmsg.
//
// Large payload pieces are appended as views (the batch holds the buffer until the kernel has
// taken its bytes); small pieces (frame headers, control frames, payload under kCopyBelow) are
// copied into a pooled staging block so that a typical small RPC leaves as one contiguous iovec.
// An idle connection's batch holds no memory: the staging block is released once drained.
//
//   OutputBatch batch(pool, /*byte_limit=*/64 * 1024);
//   batch.AppendCopy(frame_header);
//   batch.AppendPayload(std::move(view));
//   std::span<iovec> iov = batch.iovecs();
//   ssize_t n = ::writev(fd, iov.data(), static_cast<int>(iov.size()));
//   batch.Consume(n);
//
// The byte limit bounds one write: once the batch holds that many bytes it reports full() and
// the session stops adding frames. Frames are never split, so a batch is closed by the frame
// that reaches the limit and may exceed it by up to one frame; a limit of 0 makes every frame a
// batch (and a write) of its own. An empty batch is never full, so a frame always fits.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_HTTP2_OUTPUT_BATCH_H_
#define RILL_SRC_HTTP2_OUTPUT_BATCH_H_

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <vector>

#include "rill/mem/buffer.h"

namespace rill::internal {

class OutputBatch {
 public:
  // Payload pieces smaller than this are copied into the staging block instead of held as views.
  static constexpr size_t kCopyBelow = kSmallBufferMax;
  static constexpr size_t kStagingSize = 16 * 1024;
  // The default byte limit (see the file comment).
  static constexpr size_t kDefaultByteLimit = 256 * 1024;
  // The batch also reports full() at this many iovecs, so one write stays well under IOV_MAX.
  static constexpr size_t kMaxIovecs = 512;

  explicit OutputBatch(BufferPool& pool, size_t byte_limit = kDefaultByteLimit)
      : pool_(&pool), byte_limit_(byte_limit) {}
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;

  // Copies bytes into the staging area.
  void AppendCopy(std::span<const std::byte> bytes);
  // Appends payload: copied when small, otherwise held as a view until written.
  void AppendPayload(Buffer payload);

  [[nodiscard]] size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool empty() const noexcept { return bytes_ == 0; }
  [[nodiscard]] size_t byte_limit() const noexcept { return byte_limit_; }
  // True when no further frame should be added. Never true for an empty batch.
  [[nodiscard]] bool full() const noexcept {
    return bytes_ > 0 && (bytes_ >= byte_limit_ || iov_.size() - first_ >= kMaxIovecs);
  }
  // The unwritten bytes, in order.
  [[nodiscard]] std::span<iovec> iovecs() noexcept {
    return {iov_.data() + first_, iov_.size() - first_};
  }
  // Marks the first `n` unwritten bytes as written and releases what they pinned.
  void Consume(size_t n);
  // Drops everything (connection teardown).
  void Clear() noexcept;
  // Moves the unwritten bytes out as views, in order, and leaves the batch empty (an in-memory
  // connection hands these to its peer instead of writing them). O(pieces): no byte is copied.
  void TakeViews(std::vector<Buffer>& out);

 private:
  void PushPiece(iovec iov, Buffer keep);
  void KeepLastPieceWhole();

  BufferPool* pool_;
  size_t byte_limit_;
  Buffer staging_;          // the block small pieces are copied into; shared with `keep_` views
  size_t staging_used_ = 0;
  std::vector<iovec> iov_;  // iov_[i] is kept alive by keep_[i] (which may be shorter)
  std::vector<Buffer> keep_;
  size_t first_ = 0;        // first unwritten piece
  size_t bytes_ = 0;        // unwritten bytes
};

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_OUTPUT_BATCH_H_
