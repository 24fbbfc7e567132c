// OutputBatch: the bytes a connection will write next, as iovecs for one writev/sendmsg.
//
// Large payload pieces are appended as views (the batch holds the buffer until the kernel has
// taken its bytes); small pieces (frame headers, control frames, payload under kCopyBelow) are
// copied into a pooled staging block so that a typical small RPC leaves as one contiguous iovec.
// An idle connection's batch holds no memory: the staging block is released once drained.
//
//   batch.AppendCopy(frame_header);
//   batch.AppendPayload(std::move(view));
//   ssize_t n = ::sendmsg(fd, batch.msghdr()...);
//   batch.Consume(n);
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
  // The batch reports full() past this many bytes or iovecs, so one write stays bounded.
  static constexpr size_t kSoftByteLimit = 256 * 1024;
  static constexpr size_t kMaxIovecs = 512;

  explicit OutputBatch(BufferPool& pool) : pool_(&pool) {}
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;

  // Copies bytes into the staging area.
  void AppendCopy(std::span<const std::byte> bytes);
  // Appends payload: copied when small, otherwise held as a view until written.
  void AppendPayload(Buffer payload);

  [[nodiscard]] size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool empty() const noexcept { return bytes_ == 0; }
  [[nodiscard]] bool full() const noexcept {
    return bytes_ >= kSoftByteLimit || iov_.size() - first_ >= kMaxIovecs;
  }
  // The unwritten bytes, in order.
  [[nodiscard]] std::span<iovec> iovecs() noexcept {
    return {iov_.data() + first_, iov_.size() - first_};
  }
  // Marks the first `n` unwritten bytes as written and releases what they pinned.
  void Consume(size_t n);
  // Drops everything (connection teardown).
  void Clear() noexcept;

 private:
  void PushPiece(iovec iov, Buffer keep);

  BufferPool* pool_;
  Buffer staging_;          // the block small pieces are copied into; shared with `keep_` views
  size_t staging_used_ = 0;
  std::vector<iovec> iov_;  // iov_[i] is kept alive by keep_[i] (which may be shorter)
  std::vector<Buffer> keep_;
  size_t first_ = 0;        // first unwritten piece
  size_t bytes_ = 0;        // unwritten bytes
};

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_OUTPUT_BATCH_H_
