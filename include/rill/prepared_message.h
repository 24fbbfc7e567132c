// PreparedMessage: a message serialized once and then sent any number of times.
//
// Each send references the prepared bytes (pooled, reference-counted buffers): no serialization
// and no copy per send. Useful when the same message goes out again and again — a broadcast to
// many streams, a fixed probe, a benchmark's payload.
//
//   auto prepared = rill::PreparedMessage::Create(note);              // or Create(note, gzip)
//   co_await stream->Write(*prepared);                                 // client stream
//   co_await stream.Write(*prepared);                                  // server stream
//
// On a call that compresses with the encoding the message was prepared with, the prepared
// compressed bytes are sent; a call that compresses with another encoding compresses the
// prepared serialized bytes (serialization is still skipped); otherwise the serialized bytes go
// out as they are. The call's send limit applies at each send.
//
// Thread safety: immutable once created. One PreparedMessage may be sent on many calls, from
// any threads, at the same time; it must stay alive until each write using it has completed
// (the bytes themselves stay referenced by the connections until written, so destroying it
// afterwards is always safe).
#ifndef RILL_PREPARED_MESSAGE_H_
#define RILL_PREPARED_MESSAGE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "rill/mem/buffer_slice.h"
#include "rill/status_or.h"

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace rill {

class BufferPool;
class Compressor;

class PreparedMessage;

namespace internal {
struct PreparedMessageAccess;

// What one stream write sends: a message to serialize, or a prepared one (exactly one is set).
struct OutgoingMessage {
  const google::protobuf::MessageLite* message = nullptr;
  const PreparedMessage* prepared = nullptr;
};
}  // namespace internal

class PreparedMessage {
 public:
  // Serializes `message` into buffers from `pool` (DefaultBufferPool() when null). Fails with
  // RESOURCE_EXHAUSTED when it is larger than 4 GiB - 1, INTERNAL if protobuf fails.
  static StatusOr<PreparedMessage> Create(const google::protobuf::MessageLite& message,
                                          BufferPool* pool = nullptr);
  // Also compresses it with `compressor` for calls using that encoding. A message that does not
  // shrink is kept uncompressed only (calls then send it uncompressed, as they would anyway).
  static StatusOr<PreparedMessage> Create(const google::protobuf::MessageLite& message,
                                          Compressor& compressor, BufferPool* pool = nullptr);

  PreparedMessage() = default;
  PreparedMessage(PreparedMessage&&) noexcept = default;
  PreparedMessage& operator=(PreparedMessage&&) noexcept = default;
  PreparedMessage(const PreparedMessage&) = delete;
  PreparedMessage& operator=(const PreparedMessage&) = delete;
  ~PreparedMessage() = default;

  // The serialized message's size (without gRPC's 5-byte prefix).
  [[nodiscard]] size_t size() const noexcept;
  // The encoding it was prepared for (the compressor given to Create), or empty.
  [[nodiscard]] std::string_view encoding() const noexcept { return encoding_; }

 private:
  friend struct internal::PreparedMessageAccess;

  BufferSlice framed_;             // prefix (flag 0) + serialized message
  BufferSlice compressed_framed_;  // prefix (flag 1) + compressed message, when encoding_ is set
  std::string encoding_;
};

}  // namespace rill

#endif  // RILL_PREPARED_MESSAGE_H_
