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

#include <string_view>

#include "rill/compression.h"
#include "rill/mem/buffer_slice.h"
#include "rill/payload_field.h"
#include "rill/prepared_message.h"
#include "rill/status.h"
#include "src/rpc/compressor_set.h"
#include "src/rpc/deframer.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace rill::internal {

inline constexpr size_t kMessagePrefixSize = 5;

// Serializes `message` with its uncompressed gRPC prefix into `out` (appended). Fails with
// RESOURCE_EXHAUSTED above `max_size` bytes (or 4 GiB), INTERNAL if protobuf fails.
Status SerializeMessage(const google::protobuf::MessageLite& message, size_t max_size,
                        BufferPool& pool, BufferSlice& out);

// Like SerializeMessage, but compresses the body with `compressor` (when not null and the
// body has at least `min_compress_size` bytes) and sets the prefix's compressed flag. A body that
// does not shrink is sent uncompressed (the flag is per message). The limit applies to the bytes
// sent. The prefix is a small separate piece in front of the compressed chunks.
Status EncodeMessage(const google::protobuf::MessageLite& message, Compressor* compressor,
                     size_t min_compress_size, size_t max_size, BufferPool& pool,
                     BufferSlice& out);

// EncodeMessage for a message that carries `payload` as `field` (rill/payload_field.h): the
// message is serialized as it is, then the field's headers and the payload's buffers (moved, not
// copied) follow it. The limit and compression apply to the whole. With an empty field or payload
// this is EncodeMessage.
Status EncodeMessage(const google::protobuf::MessageLite& message, const PayloadField& field,
                     BufferSlice&& payload, Compressor* compressor, size_t min_compress_size,
                     size_t max_size, BufferPool& pool, BufferSlice& out);

// What a stream needs of a PreparedMessage.
struct PreparedMessageAccess {
  static const BufferSlice& framed(const PreparedMessage& m) noexcept { return m.framed_; }
  static const BufferSlice& compressed_framed(const PreparedMessage& m) noexcept {
    return m.compressed_framed_;
  }
};

// EncodeMessage for a prepared message: appends references to its bytes (the prepared compressed
// form when `compressor` uses its encoding), or compresses its serialized bytes with a
// `compressor` of another encoding. Same limits, flags and errors as EncodeMessage.
Status EncodePrepared(const PreparedMessage& prepared, Compressor* compressor,
                      size_t min_compress_size, size_t max_size, BufferPool& pool,
                      BufferSlice& out);

// Parses a received message: decompresses it first when its flag says so (through `encoding`,
// the call's grpc-encoding, looked up in `compressors`), bounded by `max_size`. Frees every
// buffer involved. Errors: compressed without an encoding → INTERNAL; unknown encoding →
// UNIMPLEMENTED on a server, INTERNAL on a client; corrupt data → INTERNAL; larger than
// `max_size` once decompressed → RESOURCE_EXHAUSTED; unparsable → INTERNAL.
Status DecodeMessage(Message&& message, std::string_view encoding,
                     const CompressorSet& compressors, size_t max_size, BufferPool& pool,
                     bool server, google::protobuf::MessageLite& out);

// DecodeMessage for a message that carries `field` (rill/payload_field.h): after decompression
// the field's bytes are moved to `payload` (views of the received buffers; empty when the field
// is absent) and the rest is parsed. A malformed message is INTERNAL, as protobuf's own failure.
Status DecodeMessage(Message&& message, std::string_view encoding,
                     const CompressorSet& compressors, size_t max_size, BufferPool& pool,
                     bool server, const PayloadField& field, google::protobuf::MessageLite& out,
                     BufferSlice& payload);

// Parses `data` (the message body, without prefix) into `message` and frees `data`.
// INTERNAL when the bytes are not a valid message.
Status ParseMessage(BufferSlice&& data, google::protobuf::MessageLite& message);

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
