// A PayloadField at the protobuf wire level: taken out of a serialized message as views of its
// buffers, and appended to one as headers plus the payload's own buffers.
//
// Extraction walks the tags of the message, and of the message fields on the path, without
// parsing anything else: varints are read, length-delimited and fixed-size fields skipped, groups
// walked to their end. The message left for protobuf is made of views of the original buffers
// around the payload, with new tag/length headers (in one small block) for the enclosing fields
// whose length changed.
#ifndef RILL_SRC_RPC_PAYLOAD_WIRE_H_
#define RILL_SRC_RPC_PAYLOAD_WIRE_H_

#include <cstddef>

#include "rill/mem/buffer_slice.h"
#include "rill/payload_field.h"

namespace rill {
class BufferPool;
}  // namespace rill

namespace rill::internal {

// Takes `field` out of the serialized message `message`: `payload` receives the bytes of its last
// occurrence (views, no copy; empty when the field is absent) and `message` keeps the rest. A
// message without the field is left as it is. False when the message is malformed (a truncated
// or overlong varint, a length past the end, an unmatched group, an invalid wire type); both
// slices are then unspecified.
bool ExtractPayload(const PayloadField& field, BufferPool& pool, BufferSlice& message,
                    BufferSlice& payload);

// ExtractPayload for a message of at most kFlatExtractMax bytes, which writes the bytes left
// flat to `kept` (kFlatExtractBuffer bytes) instead of making views: cheaper for small messages,
// and protobuf then parses one array. `*kept_size` is kNotExtracted when the message has no such
// field (nothing was written; the message is parsed as it is).
inline constexpr size_t kFlatExtractMax = 1024;
inline constexpr size_t kFlatExtractBuffer = kFlatExtractMax + 15 * PayloadField::kMaxDepth;
inline constexpr size_t kNotExtracted = ~size_t{0};
bool ExtractPayloadFlat(const PayloadField& field, const BufferSlice& message, std::byte* kept,
                        size_t* kept_size, BufferSlice& payload);

// The bytes WritePayloadHeaders writes for a payload of `size` bytes: the tag and length of each
// field of the path.
size_t PayloadHeaderSize(const PayloadField& field, size_t size);
// Writes those headers (outermost first) to `out`; returns the end.
std::byte* WritePayloadHeaders(const PayloadField& field, size_t size, std::byte* out);

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_PAYLOAD_WIRE_H_
