// Walks the bytes of a BufferSlice buffer by buffer, in pieces no longer than a codec accepts
// in one call (zlib counts in 32-bit unsigned ints), without copying them.
//
//   InputPieces pieces(input, std::numeric_limits<uInt>::max());
//   for (std::span<const std::byte> piece = pieces.Next(); !piece.empty(); piece = pieces.Next()) {
//     bool last = pieces.AtEnd();  // no bytes after this piece
//     ...
//   }
//
// The slice must outlive the InputPieces and stay unchanged while it is walked.
//
// Thread safety: thread-compatible.
#ifndef RILL_SRC_COMPRESS_INPUT_PIECES_H_
#define RILL_SRC_COMPRESS_INPUT_PIECES_H_

#include <algorithm>
#include <cstddef>
#include <limits>
#include <span>

#include "rill/mem/buffer_slice.h"

namespace rill::internal {

class InputPieces {
 public:
  explicit InputPieces(const BufferSlice& slice,
                       size_t max_piece = std::numeric_limits<size_t>::max()) noexcept
      : slice_(&slice), max_piece_(max_piece), left_(slice.size()) {}

  // The next piece (never empty), or an empty span once every byte was returned.
  std::span<const std::byte> Next() noexcept {
    while (index_ < slice_->buffer_count() && offset_ == slice_->buffer(index_).size()) {
      ++index_;
      offset_ = 0;
    }
    if (index_ == slice_->buffer_count()) return {};
    std::span<const std::byte> rest = slice_->buffer(index_).span().subspan(offset_);
    const size_t n = std::min(rest.size(), max_piece_);
    offset_ += n;
    left_ -= n;
    return rest.first(n);
  }

  // True when every byte of the slice was returned by Next().
  [[nodiscard]] bool AtEnd() const noexcept { return left_ == 0; }

 private:
  const BufferSlice* slice_;
  size_t max_piece_;
  size_t left_;        // bytes not yet returned
  size_t index_ = 0;   // buffer being walked
  size_t offset_ = 0;  // bytes of buffer(index_) already returned
};

}  // namespace rill::internal

#endif  // RILL_SRC_COMPRESS_INPUT_PIECES_H_
