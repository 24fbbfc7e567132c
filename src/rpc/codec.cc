#include "src/rpc/codec.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>

#include <limits>

#include "rill/mem/buffer_pool.h"
#include "rill/mem/protobuf_streams.h"
#include "src/rpc/payload_wire.h"

namespace rill::internal {

namespace {

Status TooLarge(size_t size, size_t max_size) {
  return Status(StatusCode::kResourceExhausted, "message of " + std::to_string(size) +
                                                    " bytes exceeds the send limit of " +
                                                    std::to_string(max_size));
}

// Appends prefix + payload for the message body `plain`: compressed with the flag set, or `plain`
// itself when compressing does not shrink it (the flag is per message). The limit applies to the
// bytes sent. Sets `*compressed` to which one was appended.
Status AppendCompressed(BufferSlice plain, Compressor& compressor, size_t max_size,
                        BufferPool& pool, BufferSlice& out, bool* compressed) {
  BufferSlice packed;
  Status status = compressor.Compress(plain, pool, packed);
  if (!status.ok()) return status;
  const bool flag = packed.size() < plain.size();
  BufferSlice& payload = flag ? packed : plain;
  if (payload.size() > max_size) return TooLarge(payload.size(), max_size);
  Buffer prefix = Buffer::Allocate(kMessagePrefixSize, pool);
  WriteMessagePrefix(prefix.mutable_data(), flag, static_cast<uint32_t>(payload.size()));
  out.Append(std::move(prefix));
  out.Append(std::move(payload));
  if (compressed != nullptr) *compressed = flag;
  return Status();
}

}  // namespace

Status SerializeMessage(const google::protobuf::MessageLite& message, size_t max_size,
                        BufferPool& pool, BufferSlice& out) {
  const size_t size = message.ByteSizeLong();
  if (size > max_size || size > std::numeric_limits<uint32_t>::max()) {
    return TooLarge(size, max_size);
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

Status EncodeMessage(const google::protobuf::MessageLite& message, Compressor* compressor,
                     size_t min_compress_size, size_t max_size, BufferPool& pool,
                     BufferSlice& out) {
  if (compressor == nullptr) return SerializeMessage(message, max_size, pool, out);
  const size_t size = message.ByteSizeLong();
  if (size < min_compress_size || size == 0) return SerializeMessage(message, max_size, pool, out);
  if (size > std::numeric_limits<uint32_t>::max()) {
    return Status(StatusCode::kResourceExhausted,
                  "message of " + std::to_string(size) + " bytes cannot be sent");
  }
  Buffer body = Buffer::Allocate(size, pool);
  auto* begin = reinterpret_cast<uint8_t*>(body.mutable_data());
  if (static_cast<size_t>(message.SerializeWithCachedSizesToArray(begin) - begin) != size) {
    return Status(StatusCode::kInternal, "message changed while being serialized");
  }
  return AppendCompressed(BufferSlice(std::move(body)), *compressor, max_size, pool, out,
                          nullptr);
}

Status EncodeMessage(const google::protobuf::MessageLite& message, const PayloadField& field,
                     BufferSlice&& payload, Compressor* compressor, size_t min_compress_size,
                     size_t max_size, BufferPool& pool, BufferSlice& out) {
  if (field.empty() || payload.empty()) {
    payload.Free();
    return EncodeMessage(message, compressor, min_compress_size, max_size, pool, out);
  }
  const size_t message_size = message.ByteSizeLong();
  const size_t headers = PayloadHeaderSize(field, payload.size());
  const size_t size = message_size + headers + payload.size();
  if (size > std::numeric_limits<uint32_t>::max()) {
    payload.Free();
    return Status(StatusCode::kResourceExhausted,
                  "message of " + std::to_string(size) + " bytes cannot be sent");
  }
  const bool compress = compressor != nullptr && size >= min_compress_size;
  if (!compress && size > max_size) {
    payload.Free();
    return TooLarge(size, max_size);
  }
  // The prefix (unless compressing), the message and the payload's headers in one buffer; the
  // payload's buffers follow it, or, when it is small, a copy of it ends the buffer (the
  // connection would copy a piece that small into its write batch anyway).
  const size_t prefix = compress ? 0 : kMessagePrefixSize;
  const size_t inline_payload = payload.size() < kSmallBufferMax ? payload.size() : 0;
  Buffer head = Buffer::Allocate(prefix + message_size + headers + inline_payload, pool);
  std::byte* data = head.mutable_data();
  if (!compress) WriteMessagePrefix(data, /*compressed=*/false, static_cast<uint32_t>(size));
  auto* begin = reinterpret_cast<uint8_t*>(data + prefix);
  // ByteSizeLong() cached the sizes; this pass only writes.
  uint8_t* end = message.SerializeWithCachedSizesToArray(begin);
  if (static_cast<size_t>(end - begin) != message_size) {
    payload.Free();
    return Status(StatusCode::kInternal, "message changed while being serialized");
  }
  std::byte* payload_at =
      WritePayloadHeaders(field, payload.size(), reinterpret_cast<std::byte*>(end));
  if (inline_payload > 0) {
    payload.CopyTo({payload_at, inline_payload});  // (counted as a copy)
    payload.Free();
  }
  if (!compress) {
    out.Append(std::move(head));
    out.Append(std::move(payload));
    return Status();
  }
  BufferSlice plain(std::move(head));
  plain.Append(std::move(payload));
  return AppendCompressed(std::move(plain), *compressor, max_size, pool, out, nullptr);
}

Status EncodePrepared(const PreparedMessage& prepared, Compressor* compressor,
                      size_t min_compress_size, size_t max_size, BufferPool& pool,
                      BufferSlice& out) {
  const BufferSlice& framed = PreparedMessageAccess::framed(prepared);
  const size_t size = prepared.size();
  if (compressor != nullptr && size >= min_compress_size && size > 0) {
    if (compressor->name() != prepared.encoding()) {
      BufferSlice plain = framed.Ref();
      plain.TakeFront(kMessagePrefixSize).Free();
      return AppendCompressed(std::move(plain), *compressor, max_size, pool, out, nullptr);
    }
    const BufferSlice& packed = PreparedMessageAccess::compressed_framed(prepared);
    if (!packed.empty()) {  // empty: compressing did not shrink it; send it as it is
      if (packed.size() - kMessagePrefixSize > max_size) {
        return TooLarge(packed.size() - kMessagePrefixSize, max_size);
      }
      out.Append(packed.Ref());
      return Status();
    }
  }
  if (size > max_size) return TooLarge(size, max_size);
  out.Append(framed.Ref());
  return Status();
}

namespace {

// The body of a received message, decompressed when its flag says so. Frees the compressed bytes.
Status MessageBody(Message&& message, std::string_view encoding, const CompressorSet& compressors,
                   size_t max_size, BufferPool& pool, bool server, BufferSlice& body) {
  if (!message.compressed) {
    body = std::move(message.body);
    return Status();
  }
  if (encoding.empty() || encoding == "identity") {
    message.body.Free();
    return Status(StatusCode::kInternal,
                  "message flagged as compressed, but the call has no grpc-encoding");
  }
  Compressor* compressor = compressors.Find(encoding);
  if (compressor == nullptr) {
    message.body.Free();
    return Status(server ? StatusCode::kUnimplemented : StatusCode::kInternal,
                  "message compressed with unsupported encoding \"" + std::string(encoding) +
                      "\"");
  }
  Status status = compressor->Decompress(message.body, pool, max_size, body);
  message.body.Free();  // the compressed bytes go back as soon as they are expanded
  if (!status.ok()) {
    body.Free();
    if (status.code() == StatusCode::kResourceExhausted) {
      return Status(StatusCode::kResourceExhausted,
                    "message larger than max (" + std::to_string(max_size) +
                        " bytes) after decompression");
    }
    return status;
  }
  return Status();
}

}  // namespace

Status DecodeMessage(Message&& message, std::string_view encoding,
                     const CompressorSet& compressors, size_t max_size, BufferPool& pool,
                     bool server, google::protobuf::MessageLite& out) {
  if (!message.compressed) return ParseMessage(std::move(message.body), out);
  BufferSlice body;
  Status status = MessageBody(std::move(message), encoding, compressors, max_size, pool, server,
                              body);
  if (!status.ok()) return status;
  return ParseMessage(std::move(body), out);
}

Status DecodeMessage(Message&& message, std::string_view encoding,
                     const CompressorSet& compressors, size_t max_size, BufferPool& pool,
                     bool server, const PayloadField& field, google::protobuf::MessageLite& out,
                     BufferSlice& payload) {
  payload.Free();
  BufferSlice body;
  Status status = MessageBody(std::move(message), encoding, compressors, max_size, pool, server,
                              body);
  if (!status.ok()) return status;
  if (field.empty()) return ParseMessage(std::move(body), out);
  if (body.size() <= kFlatExtractMax) {
    // Small: the bytes left are copied flat (a few dozen, typically) and parsed as one array.
    std::byte kept[kFlatExtractBuffer];
    size_t kept_size;
    if (ExtractPayloadFlat(field, body, kept, &kept_size, payload)) {
      if (kept_size == kNotExtracted) return ParseMessage(std::move(body), out);
      body.Free();
      if (out.ParseFromArray(kept, static_cast<int>(kept_size))) return Status();
    }
  } else if (ExtractPayload(field, pool, body, payload)) {
    status = ParseMessage(std::move(body), out);
    if (status.ok()) return status;
  }
  body.Free();
  payload.Free();
  return Status(StatusCode::kInternal, "failed to parse the message");
}

Status ParseMessage(BufferSlice&& data, google::protobuf::MessageLite& message) {
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

namespace rill {

size_t PreparedMessage::size() const noexcept {
  return framed_.empty() ? 0 : framed_.size() - internal::kMessagePrefixSize;
}

StatusOr<PreparedMessage> PreparedMessage::Create(const google::protobuf::MessageLite& message,
                                                  BufferPool* pool) {
  PreparedMessage prepared;
  Status status =
      internal::SerializeMessage(message, std::numeric_limits<uint32_t>::max(),
                                 pool != nullptr ? *pool : DefaultBufferPool(), prepared.framed_);
  if (!status.ok()) return status;
  return prepared;
}

StatusOr<PreparedMessage> PreparedMessage::Create(const google::protobuf::MessageLite& message,
                                                  Compressor& compressor, BufferPool* pool) {
  BufferPool& from = pool != nullptr ? *pool : DefaultBufferPool();
  StatusOr<PreparedMessage> prepared = Create(message, &from);
  if (!prepared.ok()) return prepared;
  prepared->encoding_ = std::string(compressor.name());
  if (prepared->size() == 0) return prepared;
  BufferSlice plain = prepared->framed_.Ref();
  plain.TakeFront(internal::kMessagePrefixSize).Free();
  BufferSlice packed;
  bool compressed = false;
  Status status = internal::AppendCompressed(std::move(plain), compressor,
                                             std::numeric_limits<uint32_t>::max(), from, packed,
                                             &compressed);
  if (!status.ok()) return status;
  if (compressed) prepared->compressed_framed_ = std::move(packed);
  return prepared;
}

}  // namespace rill
