#include "src/http2/output_batch.h"

#include <algorithm>
#include <cstring>

#include "rill/mem/buffer_pool.h"

namespace rill::internal {

void OutputBatch::PushPiece(iovec iov, Buffer keep) {
  KeepLastPieceWhole();  // the last piece stops growing here
  iov_.push_back(iov);
  keep_.push_back(std::move(keep));
  bytes_ += iov.iov_len;
}

void OutputBatch::AppendCopy(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (staging_.empty() || staging_used_ == staging_.size()) {
      if (!staging_.empty()) KeepLastPieceWhole();
      staging_ = Buffer::Allocate(kStagingSize, *pool_);
      staging_used_ = 0;
    }
    const size_t n = std::min(bytes.size(), staging_.size() - staging_used_);
    std::byte* dst = const_cast<std::byte*>(staging_.data()) + staging_used_;
    std::memcpy(dst, bytes.data(), n);
    // Extend the previous piece when it ends where these bytes begin (same staging block).
    if (first_ < iov_.size()) {
      iovec& last = iov_.back();
      if (static_cast<std::byte*>(last.iov_base) + last.iov_len == dst) {
        last.iov_len += n;
        bytes_ += n;
        staging_used_ += n;
        bytes = bytes.subspan(n);
        continue;
      }
    }
    PushPiece(iovec{dst, n}, staging_.Slice(staging_used_, staging_used_ + n));
    staging_used_ += n;
    bytes = bytes.subspan(n);
  }
}

void OutputBatch::AppendPayload(Buffer payload) {
  if (payload.empty()) return;
  if (payload.size() < kCopyBelow) {
    detail::CountCopiedBytes(payload.size());
    AppendCopy(payload.span());
    return;
  }
  const iovec iov = payload.AsIovec();  // before the move below: argument order is unspecified
  PushPiece(iov, std::move(payload));
}

void OutputBatch::Consume(size_t n) {
  RILL_DCHECK(n <= bytes_);
  bytes_ -= n;
  while (n > 0) {
    iovec& iov = iov_[first_];
    if (n < iov.iov_len) {
      iov.iov_base = static_cast<std::byte*>(iov.iov_base) + n;
      iov.iov_len -= n;
      break;
    }
    n -= iov.iov_len;
    keep_[first_].Free();
    ++first_;
  }
  if (first_ == iov_.size()) {
    // Drained: forget the pieces (keeping vector capacity) and give the staging block back.
    iov_.clear();
    keep_.clear();
    first_ = 0;
    staging_ = Buffer();
    staging_used_ = 0;
  }
}

// A piece grown in place in the staging block (AppendCopy) is longer than its keep_ view. Only
// the last piece grows; before another piece follows it or its staging block is replaced, its
// keep_ view is widened to cover it, so that TakeViews can cut every piece from its keep_ view
// (the last one, possibly still growing, from staging_).
void OutputBatch::KeepLastPieceWhole() {
  if (first_ == iov_.size()) return;
  const auto* begin = static_cast<const std::byte*>(iov_.back().iov_base);
  const std::byte* end = begin + iov_.back().iov_len;
  const Buffer& keep = keep_.back();
  if (keep.data() + keep.size() >= end || begin < staging_.data() ||
      end > staging_.data() + staging_.size()) {
    return;
  }
  const size_t from = static_cast<size_t>(std::min(keep.data(), begin) - staging_.data());
  keep_.back() = staging_.Slice(from, static_cast<size_t>(end - staging_.data()));
}

void OutputBatch::TakeViews(std::vector<Buffer>& out) {
  for (size_t i = first_; i < iov_.size(); ++i) {
    const auto* begin = static_cast<const std::byte*>(iov_[i].iov_base);
    const size_t size = iov_[i].iov_len;
    const Buffer& keep = keep_[i];
    if (begin >= keep.data() && begin + size <= keep.data() + keep.size()) {
      const auto from = static_cast<size_t>(begin - keep.data());
      out.push_back(keep.Slice(from, from + size));
    } else {
      // Grown in place in the current staging block (see KeepLastPieceWhole).
      RILL_DCHECK(begin >= staging_.data() && begin + size <= staging_.data() + staging_.size());
      const auto from = static_cast<size_t>(begin - staging_.data());
      out.push_back(staging_.Slice(from, from + size));
    }
  }
  Clear();
}

void OutputBatch::Clear() noexcept {
  iov_.clear();
  keep_.clear();
  first_ = 0;
  bytes_ = 0;
  staging_ = Buffer();
  staging_used_ = 0;
}

}  // namespace rill::internal
