// rill::ServerContext: what a handler knows about the call it serves, and how it shapes the
// response beyond the message: initial and trailing metadata, cancellation, the deadline.
//
//   rill::Status SayHello(rill::ServerContext& ctx, const HelloRequest& req, HelloReply& reply) {
//     if (auto id = ctx.client_metadata().Get("x-request-id")) ctx.AddTrailingMetadata("x-id", *id);
//     if (ctx.IsCancelled()) return rill::Status(rill::StatusCode::kCancelled, "client left");
//     reply.set_message("Hello " + req.name());
//     return rill::Status();
//   }
//
// The context lives as long as the call; handlers receive it by reference and may keep using it
// until they return (or, for coroutine handlers, until their coroutine completes).
//
// Coroutine handlers run with an Asio cancellation slot bound to the call: when the client
// cancels, the deadline passes or the server shuts down, the operation the handler is awaiting
// completes with asio::error::operation_aborted. In streaming handlers later co_awaits do not
// throw for it: Read() and Write() complete false, and other waits run their course (check
// IsCancelled() before starting a long one).
//
// Thread safety: reactor-confined. A handler that moved work to another thread must come back
// to the call's reactor before touching the context.
#ifndef RILL_SERVER_CONTEXT_H_
#define RILL_SERVER_CONTEXT_H_

#include <chrono>
#include <string>
#include <string_view>

#include "rill/credentials.h"
#include "rill/mem/buffer_slice.h"
#include "rill/metadata.h"
#include "rill/status.h"

namespace asio {
class io_context;
}  // namespace asio

namespace rill {
class ServerContext;
namespace internal {
class ServerCall;
}  // namespace internal
namespace detail {
// For generated code: the plain form of a unary handler was not overridden, so its coroutine
// form runs instead.
Status RunAsyncHandler(ServerContext& context) noexcept;
}  // namespace detail

class ServerContext {
 public:
  using Clock = std::chrono::steady_clock;

  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // The request's custom metadata (reserved and pseudo headers excluded, except user-agent).
  // Interceptors may modify it before the handler runs.
  [[nodiscard]] const Metadata& client_metadata() const noexcept { return client_metadata_; }
  [[nodiscard]] Metadata& mutable_client_metadata() noexcept { return client_metadata_; }

  // Metadata sent in the response headers. Effective until the headers are sent: with the
  // first response message, at SendInitialMetadata(), or with the status.
  void AddInitialMetadata(std::string_view key, std::string_view value) {
    initial_metadata_.Add(key, value);
  }
  // Metadata sent with the status.
  void AddTrailingMetadata(std::string_view key, std::string_view value) {
    trailing_metadata_.Add(key, value);
  }
  [[nodiscard]] Metadata& initial_metadata() noexcept { return initial_metadata_; }
  [[nodiscard]] Metadata& trailing_metadata() noexcept { return trailing_metadata_; }

  // Sends the response headers now (streaming handlers that want the client to see them before
  // the first message). No effect once they were sent.
  void SendInitialMetadata();

  // When the client's deadline passes (Clock::time_point::max() without one).
  [[nodiscard]] Clock::time_point deadline() const noexcept { return deadline_; }
  // True once the client cancelled, the deadline passed, the connection broke, or the server is
  // shutting down immediately. A handler that sees it may stop early; its result is discarded.
  [[nodiscard]] bool IsCancelled() const noexcept { return cancelled_; }

  // "/package.Service/Method".
  [[nodiscard]] std::string_view method() const noexcept { return method_; }
  // The :authority the client sent.
  [[nodiscard]] std::string_view authority() const noexcept { return authority_; }
  // The peer's address, e.g. "ipv4:127.0.0.1:53012", "ipv6:[::1]:53012" or "unix:/path".
  [[nodiscard]] std::string_view peer() const noexcept;
  // The connection's security: TLS version, cipher and the client's verified certificate
  // (subject, subjectAltNames), for authorization in handlers and interceptors. `secure` is
  // false on a plaintext port.
  [[nodiscard]] const PeerIdentity& peer_identity() const noexcept;

  // The grpc-encoding of the request ("" when it sent none).
  [[nodiscard]] std::string_view request_encoding() const noexcept { return request_encoding_; }
  // Whether the last request message received was compressed.
  [[nodiscard]] bool request_compressed() const noexcept { return request_compressed_; }
  // The encodings the client accepts (its grpc-accept-encoding, verbatim).
  [[nodiscard]] std::string_view client_accept_encoding() const noexcept {
    return client_accept_encoding_;
  }
  // Compresses the response messages with `encoding` ("identity" for none). By default a call
  // answers in the request's encoding when the client accepts it. Ignored unless the client
  // accepts it and the server has that compressor; effective until the response headers are
  // sent.
  void set_compression(std::string_view encoding) { response_encoding_.assign(encoding); }
  [[nodiscard]] std::string_view compression() const noexcept { return response_encoding_; }

  // Payloads (rill/payload_field.h), when the service named the method's payload fields
  // (Service::CarryPayload). The request payload is that of the last request message read (unary:
  // the request): views of the received buffers, kept until the next message is read or the call
  // ends; take it to keep it longer or to send it on.
  //
  //   rill::BufferSlice body = ctx.TakeRequestPayload();   // request.payload().body() is empty
  //   ctx.SetResponsePayload(std::move(body));             // an echo: no byte copied
  [[nodiscard]] const BufferSlice& request_payload() const noexcept { return request_payload_; }
  [[nodiscard]] BufferSlice TakeRequestPayload() noexcept { return std::move(request_payload_); }
  // Sent as the response payload field with the next response message written (unary: the
  // response), replacing what the message holds there; one set before and not yet sent is
  // dropped. Ignored when the method names no response payload field.
  void SetResponsePayload(BufferSlice payload) noexcept {
    response_payload_ = std::move(payload);
  }

  // The reactor this call runs on (for co_spawn, timers, and coming back from other threads).
  [[nodiscard]] asio::io_context& io_context() const noexcept;

 private:
  friend class internal::ServerCall;
  explicit ServerContext(internal::ServerCall* call) : call_(call) {}
  void Reset();

  internal::ServerCall* call_;
  Metadata client_metadata_;
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  Clock::time_point deadline_ = Clock::time_point::max();
  std::string method_;
  std::string authority_;
  std::string request_encoding_;
  std::string client_accept_encoding_;
  std::string response_encoding_;
  BufferSlice request_payload_;
  BufferSlice response_payload_;
  bool request_compressed_ = false;
  bool cancelled_ = false;
  bool run_async_ = false;  // set by a generated sync stub that was not overridden

  friend Status detail::RunAsyncHandler(ServerContext& context) noexcept;
};

}  // namespace rill

#endif  // RILL_SERVER_CONTEXT_H_
