#include "src/rpc/payload_wire.h"

#include <cstdint>

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

// A read position in a BufferSlice, by buffer and offset, that also knows its absolute offset.
class Cursor {
 public:
  explicit Cursor(const BufferSlice& slice) : slice_(slice) { SkipEmpty(); }

  [[nodiscard]] size_t position() const noexcept { return position_; }

  bool ReadByte(uint8_t& byte) {
    if (position_ >= slice_.size()) return false;
    byte = static_cast<uint8_t>(slice_.buffer(index_).data()[offset_]);
    ++offset_;
    ++position_;
    SkipEmpty();
    return true;
  }

  // A varint of at most 10 bytes (5 when `max_bytes` says so), not past `end`.
  bool ReadVarint(size_t end, uint64_t& value, int max_bytes = 10) {
    value = 0;
    for (int shift = 0, i = 0; i < max_bytes; ++i, shift += 7) {
      uint8_t byte;
      if (position_ >= end || !ReadByte(byte)) return false;
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // Moves `n` bytes forward, not past `end`.
  bool Skip(size_t end, uint64_t n) {
    if (n > end - position_) return false;
    position_ += n;
    while (n > 0) {
      const size_t here = slice_.buffer(index_).size() - offset_;
      if (n < here) {
        offset_ += n;
        break;
      }
      n -= here;
      ++index_;
      offset_ = 0;
    }
    SkipEmpty();
    return true;
  }

 private:
  // Keeps the cursor on a byte when there is one (buffers are never empty, but a position at the
  // end of one moves to the next).
  void SkipEmpty() {
    while (index_ < slice_.buffer_count() && offset_ == slice_.buffer(index_).size()) {
      ++index_;
      offset_ = 0;
    }
  }

  const BufferSlice& slice_;
  size_t index_ = 0;
  size_t offset_ = 0;
  size_t position_ = 0;
};

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
bool SkipGroup(Cursor& cursor, size_t end, uint32_t number, int depth);

// Skips the value of a field of `wire_type` (the tag was just read).
bool SkipValue(Cursor& cursor, size_t end, uint32_t number, uint32_t wire_type, int depth) {
  uint64_t value;
  switch (wire_type) {
    case kVarint:
      return cursor.ReadVarint(end, value);
    case kFixed64:
      return cursor.Skip(end, 8);
    case kLengthDelimited:
      return cursor.ReadVarint(end, value) && cursor.Skip(end, value);
    case kStartGroup:
      return SkipGroup(cursor, end, number, depth + 1);
    case kFixed32:
      return cursor.Skip(end, 4);
    default:
      return false;
  }
}

bool SkipGroup(Cursor& cursor, size_t end, uint32_t number, int depth) {
  if (depth > kMaxGroupDepth) return false;
  while (true) {
    uint64_t tag;
    if (!cursor.ReadVarint(end, tag, 5) || (tag >> 3) == 0) return false;
    const auto inner = static_cast<uint32_t>(tag >> 3);
    const auto wire_type = static_cast<uint32_t>(tag & 7);
    if (wire_type == kEndGroup) return inner == number;
    if (!SkipValue(cursor, end, inner, wire_type, depth)) return false;
  }
}

// One walk over the fields of a message (or of a message field on the path).
class Extraction {
 public:
  Extraction(const PayloadField& field, const BufferSlice& message, BufferPool& pool)
      : field_(field), message_(message), pool_(pool) {}

  // Walks the fields of [begin, end) at `depth` of the path. When a field of the path was found
  // there, `kept` receives the bytes that stay (views, and new headers for the message fields
  // whose length changed) and `*changed` is set; otherwise `kept` is untouched.
  bool Walk(Cursor& cursor, size_t end, size_t depth, BufferSlice& kept, bool* changed) {
    const uint32_t wanted = field_[depth];
    const bool leaf = depth + 1 == field_.depth();
    size_t run = cursor.position();  // the start of the bytes not yet appended to `kept`
    *changed = false;
    while (cursor.position() < end) {
      const size_t field_start = cursor.position();
      uint64_t tag;
      if (!cursor.ReadVarint(end, tag, 5) || (tag >> 3) == 0) return false;
      const auto number = static_cast<uint32_t>(tag >> 3);
      const auto wire_type = static_cast<uint32_t>(tag & 7);
      if (number != wanted || wire_type != kLengthDelimited) {
        if (!SkipValue(cursor, end, number, wire_type, 0)) return false;
        continue;
      }
      uint64_t length;
      if (!cursor.ReadVarint(end, length)) return false;
      const size_t value_start = cursor.position();
      if (length > end - value_start) return false;
      const size_t value_end = value_start + length;
      if (leaf) {
        payload_begin_ = value_start;
        payload_end_ = value_end;
        found_ = true;
        cursor.Skip(end, length);
        AppendViews(message_, run, field_start, kept);
        run = value_end;
        *changed = true;
        continue;
      }
      BufferSlice inner;
      bool inner_changed;
      if (!Walk(cursor, value_end, depth + 1, inner, &inner_changed)) return false;
      if (!inner_changed) continue;  // the field stays as it is, in the run
      AppendViews(message_, run, field_start, kept);
      std::byte header[15];
      std::byte* header_end = WriteVarint(LengthDelimitedTag(wanted), header);
      header_end = WriteVarint(inner.size(), header_end);
      kept.Append(Buffer::Copy({header, static_cast<size_t>(header_end - header)}, pool_));
      kept.Append(std::move(inner));
      run = value_end;
      *changed = true;
    }
    if (*changed) AppendViews(message_, run, end, kept);
    return true;
  }

  [[nodiscard]] bool found() const noexcept { return found_; }
  [[nodiscard]] size_t payload_begin() const noexcept { return payload_begin_; }
  [[nodiscard]] size_t payload_end() const noexcept { return payload_end_; }

 private:
  const PayloadField& field_;
  const BufferSlice& message_;
  BufferPool& pool_;
  bool found_ = false;
  size_t payload_begin_ = 0;
  size_t payload_end_ = 0;
};

}  // namespace

bool ExtractPayload(const PayloadField& field, BufferPool& pool, BufferSlice& message,
                    BufferSlice& payload) {
  if (field.empty()) return true;
  Extraction extraction(field, message, pool);
  Cursor cursor(message);
  BufferSlice kept;
  bool changed;
  if (!extraction.Walk(cursor, message.size(), 0, kept, &changed)) return false;
  if (!changed) return true;
  if (extraction.found()) {
    AppendViews(message, extraction.payload_begin(), extraction.payload_end(), payload);
  }
  message = std::move(kept);
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
