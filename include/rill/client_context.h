// rill::ClientContext: per-call settings a client chooses (metadata, deadline, cancellation)
// and what it learns besides the response (the server's initial and trailing metadata).
//
//   rill::ClientContext ctx;
//   ctx.AddMetadata("x-request-id", "42");
//   ctx.set_timeout(std::chrono::milliseconds(200));
//   rill::Status s = stub.SayHello(ctx, request, &reply);
//   if (auto v = ctx.trailing_metadata().Get("x-served-by")) ...
//
// A context serves one call; create a new one (or Reset() it) for the next. It must outlive the
// call it is used for.
//
// Thread safety: TryCancel() may be called from any thread at any time; everything else is
// thread-compatible (set up before the call, read after it completed).
#ifndef RILL_CLIENT_CONTEXT_H_
#define RILL_CLIENT_CONTEXT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "rill/mem/buffer_slice.h"
#include "rill/metadata.h"
#include "rill/payload_field.h"

namespace rill {
class CallCredentials;
namespace internal {
class ClientCall;
struct ClientPayloadAccess;
}  // namespace internal

class ClientContext {
 public:
  using Clock = std::chrono::steady_clock;

  ClientContext() = default;
  ~ClientContext();
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  // Custom metadata sent with the request.
  void AddMetadata(std::string_view key, std::string_view value) { metadata_.Add(key, value); }
  [[nodiscard]] const Metadata& metadata() const noexcept { return metadata_; }
  [[nodiscard]] Metadata& mutable_metadata() noexcept { return metadata_; }

  // The call fails with DEADLINE_EXCEEDED if it has not completed by then; the server learns the
  // remaining time through grpc-timeout.
  void set_deadline(Clock::time_point deadline) noexcept { deadline_ = deadline; }
  template <typename Rep, typename Period>
  void set_timeout(std::chrono::duration<Rep, Period> timeout) noexcept {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  }
  [[nodiscard]] Clock::time_point deadline() const noexcept { return deadline_; }

  // Compresses this call's request messages with `encoding` ("gzip", "deflate", "zstd", or a
  // compressor registered on the channel; "" or "identity" for none).
  void set_compression(std::string_view encoding) { compression_.assign(encoding); }
  [[nodiscard]] std::string_view compression() const noexcept { return compression_; }
  // Whether the last response message received was compressed (valid after it was read).
  [[nodiscard]] bool response_compressed() const noexcept { return response_compressed_; }

  // Payloads (rill/payload_field.h): bytes carried outside protobuf, as pooled buffers.
  //
  //   ctx.SetRequestPayload(kBody, std::move(bytes));   // request.payload().body() left empty
  //   ctx.ReceivePayload(kBody);
  //   rill::Status s = stub.UnaryCall(ctx, request, &response);
  //   rill::BufferSlice reply = ctx.TakeResponsePayload();   // views of the received buffers
  //
  // `payload` is sent as `field` of the next request message written (unary: the request),
  // replacing what the message holds there; it is taken when the message is serialized, on the
  // calling thread.
  void SetRequestPayload(const PayloadField& field, BufferSlice payload) noexcept {
    request_payload_field_ = field;
    request_payload_ = std::move(payload);
  }
  // Takes `field` out of every response message: the last one read leaves its bytes in
  // response_payload() (valid once the read or the call completed; empty when the message had
  // no such field). Set before the call starts.
  void ReceivePayload(const PayloadField& field) noexcept { response_payload_field_ = field; }
  [[nodiscard]] const BufferSlice& response_payload() const noexcept { return response_payload_; }
  [[nodiscard]] BufferSlice TakeResponsePayload() noexcept { return std::move(response_payload_); }

  // Overrides the :authority header (default: the channel's authority).
  void set_authority(std::string_view authority) { authority_ = authority; }
  [[nodiscard]] std::string_view authority() const noexcept { return authority_; }

  // With wait-for-ready the call waits (until its deadline) for a connection when the channel
  // is in TRANSIENT_FAILURE, instead of failing UNAVAILABLE at once. Unset: the channel's
  // ChannelOptions::wait_for_ready.
  void set_wait_for_ready(bool wait) noexcept { wait_for_ready_ = wait ? 1 : 0; }
  [[nodiscard]] bool wait_for_ready(bool channel_default) const noexcept {
    return wait_for_ready_ < 0 ? channel_default : wait_for_ready_ == 1;
  }

  // Cancels the call if it is still running: the server sees RST_STREAM(CANCEL) and the call
  // completes with CANCELLED. Safe from any thread; no effect after completion.
  void TryCancel();

  // The server's response headers / trailers. Valid once the call completed.
  [[nodiscard]] const Metadata& initial_metadata() const noexcept { return initial_metadata_; }
  [[nodiscard]] const Metadata& trailing_metadata() const noexcept { return trailing_metadata_; }
  // The peer's address once connected, e.g. "ipv4:127.0.0.1:50051".
  [[nodiscard]] std::string_view peer() const noexcept { return peer_; }

  // Call credentials for this call (rill/call_credentials.h), instead of the channel's.
  void set_credentials(std::shared_ptr<CallCredentials> credentials) {
    credentials_ = std::move(credentials);
  }
  [[nodiscard]] const std::shared_ptr<CallCredentials>& credentials() const noexcept {
    return credentials_;
  }

  // Makes the context reusable for another call (metadata, deadline, payloads and results
  // cleared; capacity kept).
  void Reset();

 private:
  friend class internal::ClientCall;
  friend struct internal::ClientPayloadAccess;

  Metadata metadata_;
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  Clock::time_point deadline_ = Clock::time_point::max();
  std::string authority_;
  std::string peer_;
  std::string compression_;
  std::shared_ptr<CallCredentials> credentials_;
  PayloadField request_payload_field_;
  PayloadField response_payload_field_;
  BufferSlice request_payload_;
  BufferSlice response_payload_;
  bool response_compressed_ = false;
  int8_t wait_for_ready_ = -1;  // -1: the channel's default

  std::mutex mu_;  // guards call_ and cancelled_ against TryCancel() from other threads
  internal::ClientCall* call_ = nullptr;  // the running call (holds a reference), or null
  bool cancelled_ = false;
};

}  // namespace rill

#endif  // RILL_CLIENT_CONTEXT_H_
