// Protobuf's base-128 varints, for the places that write wire-format bytes by hand (binary log
// entries, payload field headers).
#ifndef RILL_SRC_BASE_VARINT_H_
#define RILL_SRC_BASE_VARINT_H_

#include <cstddef>
#include <cstdint>

namespace rill::internal {

// Bytes WriteVarint writes for `value` (1 to 10).
inline size_t VarintSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Writes `value` at `out`; returns the end.
inline std::byte* WriteVarint(uint64_t value, std::byte* out) {
  while (value >= 0x80) {
    *out++ = std::byte(static_cast<uint8_t>(value) | 0x80);
    value >>= 7;
  }
  *out++ = std::byte(static_cast<uint8_t>(value));
  return out;
}

}  // namespace rill::internal

#endif  // RILL_SRC_BASE_VARINT_H_
