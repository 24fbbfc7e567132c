#include "src/rpc/payload_wire.h"

#include <cstdint>
#include <cstring>
#include <span>

#include "rill/mem/buffer_pool.h"
#include "src/base/varint.h"

namespace rill::internal {

namespace {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Groups nest; protobuf stops at 100 levels, and so does the walk.
constexpr int kMaxGroupDepth = 100;

uint32_t LengthDelimitedTag(uint32_t number) { return (number << 3) | kLengthDelimited; }

// A read position in a BufferSlice: a pointer into the current buffer, and the offset of that
// buffer in the slice.
class SliceCursor {
 public:
  explicit SliceCursor(const BufferSlice& slice) : slice_(slice) { Load(); }

  [[nodiscard]] size_t position() const noexcept {
    return base_ + static_cast<size_t>(p_ - begin_);
  }

  bool ReadByte(uint8_t& byte) {
    if (p_ == end_ && !NextBuffer()) return false;
    byte = static_cast<uint8_t>(*p_++);
    return true;
  }

  // Moves `n` bytes forward, not past `end`.
  bool Skip(size_t end, uint64_t n) {
    if (n > end - position()) return false;
    while (n > static_cast<size_t>(end_ - p_)) {
      n -= static_cast<size_t>(end_ - p_);
      p_ = end_;
      if (!NextBuffer()) return false;  // not reached: `end` is within the slice
    }
    p_ += n;
    return true;
  }

 private:
  void Load() {
    if (index_ < slice_.buffer_count()) {
      const Buffer& buffer = slice_.buffer(index_);
      begin_ = p_ = buffer.data();
      end_ = begin_ + buffer.size();
    }
  }
  // Moves to the start of the next buffer; false at the end of the slice.
  bool NextBuffer() {
    if (index_ + 1 >= slice_.buffer_count()) return false;
    base_ += static_cast<size_t>(end_ - begin_);
    ++index_;
    Load();
    return true;
  }

  const BufferSlice& slice_;
  size_t index_ = 0;
  size_t base_ = 0;  // the slice offset of begin_
  const std::byte* begin_ = nullptr;
  const std::byte* p_ = nullptr;
  const std::byte* end_ = nullptr;
};

// A read position in contiguous bytes (small messages).
class FlatCursor {
 public:
  FlatCursor(const std::byte* data, size_t size) : data_(data), p_(data), end_(data + size) {}

  [[nodiscard]] size_t position() const noexcept { return static_cast<size_t>(p_ - data_); }
  bool ReadByte(uint8_t& byte) {
    if (p_ == end_) return false;
    byte = static_cast<uint8_t>(*p_++);
    return true;
  }
  bool Skip(size_t end, uint64_t n) {
    if (n > end - position()) return false;
    p_ += n;
    return true;
  }

 private:
  const std::byte* data_;
  const std::byte* p_;
  const std::byte* end_;
};

// A varint of at most 10 bytes (5 when `max_bytes` says so), not past `end`.
template <typename Cursor>
bool ReadVarint(Cursor& cursor, size_t end, uint64_t& value, int max_bytes = 10) {
  value = 0;
  for (int shift = 0, i = 0; i < max_bytes; ++i, shift += 7) {
    uint8_t byte;
    if (cursor.position() >= end || !cursor.ReadByte(byte)) return false;
    value |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

// Appends views of the bytes [begin, end) of `slice` to `out`.
void AppendViews(const BufferSlice& slice, size_t begin, size_t end, BufferSlice& out) {
  size_t at = 0;
  for (const Buffer& buffer : slice) {
    if (at >= end) break;
    const size_t next = at + buffer.size();
    if (next > begin) {
      const size_t from = begin > at ? begin - at : 0;
      const size_t to = end < next ? end - at : buffer.size();
      out.Append(buffer.Slice(from, to));
    }
    at = next;
  }
}

// Skips the rest of a group whose start tag (field `number`) was just read.
template <typename Cursor>
bool SkipGroup(Cursor& cursor, size_t end, uint32_t number, int depth);

// Skips the value of a field of `wire_type` (the tag was just read).
template <typename Cursor>
bool SkipValue(Cursor& cursor, size_t end, uint32_t number, uint32_t wire_type, int depth) {
  uint64_t value;
  switch (wire_type) {
    case kVarint:
      return ReadVarint(cursor, end, value);
    case kFixed64:
      return cursor.Skip(end, 8);
    case kLengthDelimited:
      return ReadVarint(cursor, end, value) && cursor.Skip(end, value);
    case kStartGroup:
      return SkipGroup(cursor, end, number, depth + 1);
    case kFixed32:
      return cursor.Skip(end, 4);
    default:
      return false;
  }
}

template <typename Cursor>
bool SkipGroup(Cursor& cursor, size_t end, uint32_t number, int depth) {
  if (depth > kMaxGroupDepth) return false;
  while (true) {
    uint64_t tag;
    if (!ReadVarint(cursor, end, tag, 5) || (tag >> 3) == 0) return false;
    const auto inner = static_cast<uint32_t>(tag >> 3);
    const auto wire_type = static_cast<uint32_t>(tag & 7);
    if (wire_type == kEndGroup) return inner == number;
    if (!SkipValue(cursor, end, inner, wire_type, depth)) return false;
  }
}

// The bytes left, as views of the message's buffers and new headers in small blocks.
class SliceSink {
 public:
  SliceSink(const BufferSlice& message, BufferPool& pool) : message_(message), pool_(pool) {}

  // A sink for the content of a message field whose preceding bytes (`pending`) are not given
  // to this one yet.
  SliceSink Nested(size_t /*pending*/) const { return SliceSink(message_, pool_); }
  void Range(size_t begin, size_t end) { AppendViews(message_, begin, end, out_); }
  // The header (tag and new length) of a rewritten message field, then its content.
  void Field(std::span<const std::byte> header, SliceSink&& content) {
    out_.Append(Buffer::Copy(header, pool_));
    out_.Append(std::move(content.out_));
  }
  [[nodiscard]] size_t size() const noexcept { return out_.size(); }
  BufferSlice& out() noexcept { return out_; }

 private:
  const BufferSlice& message_;
  BufferPool& pool_;
  BufferSlice out_;
};

// The bytes left, copied flat into the caller's memory from the contiguous message (small
// messages: cheaper than views and a parse over several buffers). A nested sink writes past its
// parent's end, the parent's pending bytes and room for the longest header; its content then
// moves down next to the header actually written.
class FlatSink {
 public:
  static constexpr size_t kHeaderRoom = 15;  // a 5-byte tag and a 10-byte length

  FlatSink(const std::byte* message, std::byte* out) : message_(message), out_(out) {}

  FlatSink Nested(size_t pending) const {
    return FlatSink(message_, out_ + size_ + pending + kHeaderRoom);
  }
  void Range(size_t begin, size_t end) {
    std::memcpy(out_ + size_, message_ + begin, end - begin);
    size_ += end - begin;
  }
  void Field(std::span<const std::byte> header, FlatSink&& content) {
    std::memcpy(out_ + size_, header.data(), header.size());
    size_ += header.size();
    std::memmove(out_ + size_, content.out_, content.size_);
    size_ += content.size_;
  }
  [[nodiscard]] size_t size() const noexcept { return size_; }

 private:
  const std::byte* message_;
  std::byte* out_;
  size_t size_ = 0;
};

// One walk over the fields of a message (or of a message field on the path).
class Extraction {
 public:
  explicit Extraction(const PayloadField& field) : field_(field) {}

  // Walks the fields of [begin, end) at `depth` of the path. When a field of the path was found
  // there, `kept` receives the bytes that stay (the message's own, and new headers for the
  // message fields whose length changed) and `*changed` is set; otherwise `kept` is untouched.
  template <typename Cursor, typename Sink>
  bool Walk(Cursor& cursor, size_t end, size_t depth, Sink& kept, bool* changed) {
    const uint32_t wanted = field_[depth];
    const bool leaf = depth + 1 == field_.depth();
    size_t run = cursor.position();  // the start of the bytes not yet given to `kept`
    *changed = false;
    while (cursor.position() < end) {
      const size_t field_start = cursor.position();
      uint64_t tag;
      if (!ReadVarint(cursor, end, tag, 5) || (tag >> 3) == 0) return false;
      const auto number = static_cast<uint32_t>(tag >> 3);
      const auto wire_type = static_cast<uint32_t>(tag & 7);
      if (number != wanted || wire_type != kLengthDelimited) {
        if (!SkipValue(cursor, end, number, wire_type, 0)) return false;
        continue;
      }
      uint64_t length;
      if (!ReadVarint(cursor, end, length)) return false;
      const size_t value_start = cursor.position();
      if (length > end - value_start) return false;
      const size_t value_end = value_start + length;
      if (leaf) {
        payload_begin_ = value_start;
        payload_end_ = value_end;
        found_ = true;
        cursor.Skip(end, length);
        kept.Range(run, field_start);
        run = value_end;
        *changed = true;
        continue;
      }
      Sink inner = kept.Nested(field_start - run);
      bool inner_changed;
      if (!Walk(cursor, value_end, depth + 1, inner, &inner_changed)) return false;
      if (!inner_changed) continue;  // the field stays as it is, in the run
      kept.Range(run, field_start);
      std::byte header[FlatSink::kHeaderRoom];
      std::byte* header_end = WriteVarint(LengthDelimitedTag(wanted), header);
      header_end = WriteVarint(inner.size(), header_end);
      kept.Field({header, static_cast<size_t>(header_end - header)}, std::move(inner));
      run = value_end;
      *changed = true;
    }
    if (*changed) kept.Range(run, end);
    return true;
  }

  // Appends the payload found (views of `message`) to `payload`.
  void TakePayload(const BufferSlice& message, BufferSlice& payload) const {
    if (found_) AppendViews(message, payload_begin_, payload_end_, payload);
  }

 private:
  const PayloadField& field_;
  bool found_ = false;
  size_t payload_begin_ = 0;
  size_t payload_end_ = 0;
};

}  // namespace

bool ExtractPayload(const PayloadField& field, BufferPool& pool, BufferSlice& message,
                    BufferSlice& payload) {
  if (field.empty()) return true;
  Extraction extraction(field);
  SliceCursor cursor(message);
  SliceSink kept(message, pool);
  bool changed;
  if (!extraction.Walk(cursor, message.size(), 0, kept, &changed)) return false;
  if (!changed) return true;
  extraction.TakePayload(message, payload);
  message = std::move(kept.out());
  return true;
}

bool ExtractPayloadFlat(const PayloadField& field, const BufferSlice& message, std::byte* kept,
                        size_t* kept_size, BufferSlice& payload) {
  RILL_DCHECK(message.size() <= kFlatExtractMax);
  *kept_size = kNotExtracted;
  if (field.empty()) return true;
  // One buffer (the usual case for a small message) is read in place; several are copied
  // together first.
  std::byte joined[kFlatExtractMax];
  const std::byte* bytes = joined;
  if (message.buffer_count() == 1) {
    bytes = message.buffer(0).data();
  } else {
    message.CopyTo({joined, message.size()});
  }
  Extraction extraction(field);
  FlatCursor cursor(bytes, message.size());
  FlatSink sink(bytes, kept);
  bool changed;
  if (!extraction.Walk(cursor, message.size(), 0, sink, &changed)) return false;
  if (!changed) return true;
  extraction.TakePayload(message, payload);
  *kept_size = sink.size();
  return true;
}

size_t PayloadHeaderSize(const PayloadField& field, size_t size) {
  size_t headers = 0;
  uint64_t length = size;  // the content of the field at each level, innermost first
  for (size_t i = field.depth(); i-- > 0;) {
    const size_t header = VarintSize(LengthDelimitedTag(field[i])) + VarintSize(length);
    headers += header;
    length += header;
  }
  return headers;
}

std::byte* WritePayloadHeaders(const PayloadField& field, size_t size, std::byte* out) {
  // The length of level i is the payload plus the headers of the levels below it.
  std::array<uint64_t, PayloadField::kMaxDepth> lengths{};
  uint64_t length = size;
  for (size_t i = field.depth(); i-- > 0;) {
    lengths[i] = length;
    length += VarintSize(LengthDelimitedTag(field[i])) + VarintSize(length);
  }
  for (size_t i = 0; i < field.depth(); ++i) {
    out = WriteVarint(LengthDelimitedTag(field[i]), out);
    out = WriteVarint(lengths[i], out);
  }
  return out;
}

}  // namespace rill::internal
