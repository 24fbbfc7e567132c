#include "src/rpc/codec.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>

#include <limits>

#include "rill/mem/protobuf_streams.h"

namespace rill::internal {

Status SerializeMessage(const google::protobuf::MessageLite& message, size_t max_size,
                        BufferPool& pool, BufferSlice& out) {
  const size_t size = message.ByteSizeLong();
  if (size > max_size || size > std::numeric_limits<uint32_t>::max()) {
    return Status(StatusCode::kResourceExhausted,
                  "message of " + std::to_string(size) + " bytes exceeds the send limit of " +
                      std::to_string(max_size));
  }
  Buffer buffer = Buffer::Allocate(kMessagePrefixSize + size, pool);
  std::byte* data = buffer.mutable_data();
  WriteMessagePrefix(data, /*compressed=*/false, static_cast<uint32_t>(size));
  auto* begin = reinterpret_cast<uint8_t*>(data + kMessagePrefixSize);
  // ByteSizeLong() cached the sizes; this pass only writes.
  uint8_t* end = message.SerializeWithCachedSizesToArray(begin);
  if (static_cast<size_t>(end - begin) != size) {
    return Status(StatusCode::kInternal, "message changed while being serialized");
  }
  out.Append(std::move(buffer));
  return Status();
}

Status ParseMessage(BufferSlice data, google::protobuf::MessageLite& message) {
  bool ok;
  if (data.buffer_count() <= 1) {
    const Buffer* only = data.begin();
    ok = data.empty() ? message.ParseFromArray(nullptr, 0)
                      : message.ParseFromArray(only->data(), static_cast<int>(only->size()));
  } else {
    BufferSliceInputStream stream(data);
    ok = message.ParseFromZeroCopyStream(&stream);
  }
  data.Free();
  if (!ok) return Status(StatusCode::kInternal, "failed to parse the message");
  return Status();
}

}  // namespace rill::internal
