#include "rill/mem/protobuf_streams.h"

#include <algorithm>
#include <climits>

namespace rill {

bool BufferSliceInputStream::Next(const void** data, int* size) {
  while (index_ < slice_->buffer_count()) {
    const Buffer& buffer = slice_->buffer(index_);
    if (position_ < buffer.size()) {
      const size_t n = std::min<size_t>(buffer.size() - position_, INT_MAX);
      *data = buffer.data() + position_;
      *size = static_cast<int>(n);
      position_ += n;
      byte_count_ += static_cast<int64_t>(n);
      return true;
    }
    ++index_;
    position_ = 0;
  }
  return false;
}

void BufferSliceInputStream::BackUp(int count) {
  RILL_CHECK_MSG(count >= 0 && static_cast<size_t>(count) <= position_,
                 "BufferSliceInputStream::BackUp past the last Next()");
  position_ -= static_cast<size_t>(count);
  byte_count_ -= count;
}

bool BufferSliceInputStream::Skip(int count) {
  if (count < 0) return false;
  auto left = static_cast<size_t>(count);
  while (left > 0 && index_ < slice_->buffer_count()) {
    const size_t available = slice_->buffer(index_).size() - position_;
    const size_t step = std::min(available, left);
    position_ += step;
    byte_count_ += static_cast<int64_t>(step);
    left -= step;
    if (position_ == slice_->buffer(index_).size()) {
      ++index_;
      position_ = 0;
    }
  }
  return left == 0;
}

bool BufferSliceOutputStream::Next(void** data, int* size) {
  if (last_size_ > 0) writer_.Commit(static_cast<size_t>(last_size_));
  std::span<std::byte> space = writer_.NextSpace();
  const size_t n = std::min<size_t>(space.size(), INT_MAX);
  *data = space.data();
  *size = static_cast<int>(n);
  last_size_ = static_cast<int>(n);
  byte_count_ += static_cast<int64_t>(n);
  return true;
}

void BufferSliceOutputStream::BackUp(int count) {
  RILL_CHECK_MSG(count >= 0 && count <= last_size_,
                 "BufferSliceOutputStream::BackUp past the last Next()");
  writer_.Commit(static_cast<size_t>(last_size_ - count));
  last_size_ = 0;
  byte_count_ -= count;
}

void BufferSliceOutputStream::Flush() {
  if (last_size_ > 0) writer_.Commit(static_cast<size_t>(last_size_));
  last_size_ = 0;
  writer_.Flush();
}

}  // namespace rill
