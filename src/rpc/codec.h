// The protobuf codec on BufferSlice, and the gRPC message prefix.
//
// Serialize writes the 5-byte prefix and the message into one buffer sized from ByteSizeLong():
// a small block up to kSmallBufferMax, otherwise one pooled block (one tier lookup, no growth,
// no separate prefix piece). Parse reads straight from the slice (one contiguous buffer: a flat
// parse; several: protobuf's ZeroCopyInputStream over the views) and frees the slice's buffers
// as soon as the parse is done, whatever its outcome.
#ifndef RILL_SRC_RPC_CODEC_H_
#define RILL_SRC_RPC_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "rill/mem/buffer_slice.h"
#include "rill/status.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace rill::internal {

inline constexpr size_t kMessagePrefixSize = 5;

// Serializes `message` with its uncompressed gRPC prefix into `out` (appended). Fails with
// RESOURCE_EXHAUSTED above `max_size` bytes (or 4 GiB), INTERNAL if protobuf fails.
Status SerializeMessage(const google::protobuf::MessageLite& message, size_t max_size,
                        BufferPool& pool, BufferSlice& out);

// Parses `data` (the message body, without prefix) into `message` and frees `data`.
// INTERNAL when the bytes are not a valid message.
Status ParseMessage(BufferSlice data, google::protobuf::MessageLite& message);

// Writes the prefix for a body of `size` bytes.
inline void WriteMessagePrefix(std::byte* out, bool compressed, uint32_t size) {
  out[0] = std::byte{compressed ? uint8_t{1} : uint8_t{0}};
  out[1] = std::byte(size >> 24);
  out[2] = std::byte(size >> 16);
  out[3] = std::byte(size >> 8);
  out[4] = std::byte(size);
}

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CODEC_H_
