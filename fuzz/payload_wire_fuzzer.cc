// Takes a PayloadField out of arbitrary message bytes (src/rpc/payload_wire.h), as a server does
// with every request of a method that carries one, and checks what the extraction promises:
//   - no crash, no read past the bytes, whatever they are;
//   - the flat form used for small messages agrees with the form that makes views;
//   - on success, the payload is a run of the input's bytes;
//   - the bytes left hold the field no more: a second extraction finds an empty payload;
//   - the payload appended back (headers + bytes, as a sender does) is extracted whole again.
//
// Input: byte 0 picks the path's depth (1..3) and bytes 1.. its field numbers (one byte each,
// 1..31); byte 4 splits the message into two buffers at a point; the rest is the message.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "rill/detail/check.h"
#include "rill/mem/buffer_pool.h"
#include "src/rpc/payload_wire.h"

namespace rill::internal {
namespace {

PayloadField FieldFrom(const uint8_t* data) {
  const uint32_t a = (data[1] & 31u) + 1;
  const uint32_t b = (data[2] & 31u) + 1;
  const uint32_t c = (data[3] & 31u) + 1;
  switch (data[0] % 3) {
    case 0:
      return PayloadField{a};
    case 1:
      return PayloadField{a, b};
    default:
      return PayloadField{a, b, c};
  }
}

BufferSlice SliceOf(const uint8_t* data, size_t size, size_t cut) {
  BufferSlice slice;
  BufferPool& pool = DefaultBufferPool();
  const std::byte* bytes = reinterpret_cast<const std::byte*>(data);
  if (cut > 0 && cut < size) {
    slice.Append(Buffer::Copy({bytes, cut}, pool));
    slice.Append(Buffer::Copy({bytes + cut, size - cut}, pool));
  } else if (size > 0) {
    slice.Append(Buffer::Copy({bytes, size}, pool));
  }
  return slice;
}

}  // namespace
}  // namespace rill::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  using namespace rill::internal;
  if (size < 5) return 0;
  const PayloadField field = FieldFrom(data);
  const uint8_t* message_bytes = data + 5;
  const size_t message_size = size - 5;
  const size_t cut = message_size == 0 ? 0 : data[4] % (message_size + 1);
  BufferPool& pool = DefaultBufferPool();

  BufferSlice message = SliceOf(message_bytes, message_size, cut);
  BufferSlice payload;
  const bool extracted = ExtractPayload(field, pool, message, payload);
  if (message_size <= kFlatExtractMax) {
    // The flat form for small messages agrees: same verdict, same bytes left, same payload.
    const BufferSlice input = SliceOf(message_bytes, message_size, cut);
    std::byte kept[kFlatExtractBuffer];
    size_t kept_size;
    BufferSlice flat_payload;
    RILL_CHECK(ExtractPayloadFlat(field, input, kept, &kept_size, flat_payload) == extracted);
    if (extracted) {
      const std::string left = kept_size == kNotExtracted
                                   ? input.Materialize()
                                   : std::string(reinterpret_cast<const char*>(kept), kept_size);
      RILL_CHECK(left == message.Materialize());
      RILL_CHECK(flat_payload.Materialize() == payload.Materialize());
    }
  }
  if (!extracted) return 0;

  const std::string input(reinterpret_cast<const char*>(message_bytes), message_size);
  const std::string taken = payload.Materialize();
  RILL_CHECK(taken.empty() || input.find(taken) != std::string::npos);
  RILL_CHECK(payload.size() <= message_size);

  BufferSlice again;
  RILL_CHECK(ExtractPayload(field, pool, message, again));
  RILL_CHECK(again.empty());

  // The sender's side: the bytes left, then the field's headers and the payload.
  std::string headers(PayloadHeaderSize(field, taken.size()), '\0');
  std::byte* end =
      WritePayloadHeaders(field, taken.size(), reinterpret_cast<std::byte*>(headers.data()));
  RILL_CHECK(end == reinterpret_cast<std::byte*>(headers.data()) + headers.size());
  BufferSlice resent = std::move(message);
  resent.Append(Buffer::Copy(headers, pool));
  if (!taken.empty()) resent.Append(Buffer::Copy(taken, pool));
  BufferSlice back;
  RILL_CHECK(ExtractPayload(field, pool, resent, back));
  RILL_CHECK(back.Materialize() == taken);
  return 0;
}
