// ServerCall: one RPC on the server, from the request's HEADERS to the stream's close.
//
// Receive: request headers are validated as they arrive (DESIGN §6 answers bad input with a
// defined status); DATA views go through a MessageDeframer; for a unary call the request
// message is parsed once the client half-closed, and its buffers are freed right after the
// parse — before the handler runs — or when the call is rejected without a parse.
//
// Send: the response message is serialized into pooled buffers and queued on the stream's
// OutboundStream together with the trailers; the connection's writer frames it without copying.
//
// A call object is reused for many calls (ServerTransport keeps a free list); Begin() resets it.
// It is released when both its stream has closed and its handler (if any) has finished.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_SERVER_CALL_H_
#define RILL_SRC_RPC_SERVER_CALL_H_

#include <google/protobuf/arena.h>

#include <asio/cancellation_signal.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "rill/server_context.h"
#include "rill/server_stream.h"
#include "rill/service.h"
#include "src/http2/header_block.h"
#include "src/http2/http2_session.h"
#include "src/rpc/call_stats.h"
#include "src/rpc/compressor_set.h"
#include "src/rpc/inbound_queue.h"
#include "src/rpc/waiter.h"

namespace rill::internal {

class ServerTransport;

class ServerCall final : public ServerStreamCore {
 public:
  explicit ServerCall(ServerTransport& transport);
  ~ServerCall();
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  // Starts serving stream `stream_id` (the object may have served earlier calls).
  void Begin(int32_t stream_id);
  // The client reset the stream at `now`: whether that counts against the connection's reset
  // budget (ServerOptions::early_reset_burst): the handler had not started, or it runs and the
  // stream is younger than `window`. A call that has its status never counts.
  [[nodiscard]] bool IsEarlyReset(std::chrono::steady_clock::time_point now,
                                  std::chrono::milliseconds window) const noexcept {
    return phase_ < Phase::kRunning || (phase_ == Phase::kRunning && now - begun_at_ < window);
  }

  // Events from the transport, in stream order.
  void OnHeader(std::string_view name, std::string_view value);
  void OnHeadersEnd(bool end_stream);
  void OnData(Buffer payload);
  void OnRemoteEnd();
  void OnStreamClosed(uint32_t error_code);
  void OnDataFramed(size_t bytes);
  // The connection is gone: the call ends as cancelled.
  void OnConnectionLost();
  // The server's grace period ended with the call still open: the handler is cancelled and the
  // client gets UNAVAILABLE ("server shutting down") and RST_STREAM before the connection goes.
  void AbortForShutdown();

  [[nodiscard]] int32_t stream_id() const noexcept { return stream_id_; }
  [[nodiscard]] ServerTransport& transport() noexcept { return *transport_; }
  [[nodiscard]] ServerContext& context() noexcept { return context_; }
  // Call objects alive in the process (in use or cached by their connection), for tests.
  [[nodiscard]] static size_t LiveObjects() noexcept;
  // Released, and no asynchronous operation refers to the object any more: its transport may
  // destroy it.
  [[nodiscard]] bool disposable() const noexcept { return released_ && deadline_waits_ == 0; }

  // ServerStreamCore (streaming calls).
  Awaitable<bool> Read(google::protobuf::MessageLite* message) override;
  Awaitable<bool> Write(const google::protobuf::MessageLite& message,
                        WriteOptions options) override {
    return WriteOutgoing({.message = &message}, options);
  }
  Awaitable<bool> Write(const PreparedMessage& message, WriteOptions options) override {
    return WriteOutgoing({.prepared = &message}, options);
  }
  google::protobuf::Arena* arena() override { return &arena_; }

  // For ServerContext.
  void SendInitialMetadata();

  // Work that must not run inside the HTTP/2 session's callbacks (user code: interceptors,
  // handlers, cancellation handlers) waits in the transport's deferred list until the session
  // step ends; the transport then calls RunDeferred().
  void RunDeferred();
  ServerCall* next_deferred = nullptr;  // the transport's list link

 private:
  Awaitable<bool> WriteOutgoing(OutgoingMessage message, WriteOptions options);

  enum class Phase : uint8_t {
    kHeaders,   // receiving request headers
    kReceiving, // headers accepted; receiving the request message(s)
    kReady,     // the handler may start; it does once the session step ends
    kRunning,   // the handler runs
    kFinished,  // the status was sent (or the call was cancelled); waiting for the stream close
  };

  enum DeferredWork : uint8_t {
    kDeferredStart = 1,   // run interceptors and the handler
    kDeferredCancel = 2,  // emit the cancellation signal into the running handler
    kDeferredStats = 4,   // deliver stats events recorded inside the session step
  };
  // A stats event was queued inside the session step: deliver it after.
  void StatsQueued(bool queued) {
    if (queued) Defer(kDeferredStats);
  }
  // Reports the messages Push() just added (from index `first` of the queue).
  void RecordReceived(size_t first);
  void Defer(uint8_t work);
  // Starts the handler once the session step ends (the request is complete for unary and
  // server-streaming calls; client and bidi streaming start at the headers).
  void StartHandler();
  void EmitCancel();

  void Fail(int http_status, Status status);
  void RunUnary();
  void FinishUnary(Status status);
  void RunStream();
  void FinishStream(Status status);
  bool single_request() const noexcept {
    return method_->kind() == RpcKind::kUnary || method_->kind() == RpcKind::kServerStreaming;
  }

  // Ends the response with `status`: after the queued messages, or with `drop_queued`, at once
  // (the queued messages are dropped and the trailers do not wait for flow control).
  void SendStatus(Status status, bool drop_queued = false);
  bool SendHeadersIfNeeded();
  // The compressor for response messages (null: uncompressed); fixed once headers are sent.
  Compressor* ResponseCompressor();
  void Cancel(StatusCode why);
  void ArmDeadline();
  void DisarmDeadline();
  void OnDeadline();
  void Flush();
  void MaybeRelease();
  Status RunInterceptorsStart();
  // The status for a coroutine handler that ended with `error`.
  Status StatusForHandlerException(const std::exception_ptr& error);
  void RunInterceptorsEnd(Status& status);

  ServerTransport* transport_;
  int32_t stream_id_ = 0;
  Phase phase_ = Phase::kHeaders;
  std::chrono::steady_clock::time_point begun_at_;  // the read that opened the stream
  const detail::MethodHandler* method_ = nullptr;
  ServerContext context_;

  // Request headers.
  size_t header_bytes_ = 0;
  int http_error_ = 0;       // first problem found in the request headers
  Status header_error_;
  bool saw_method_post_ = false;
  bool saw_grpc_content_type_ = false;
  bool saw_path_ = false;
  std::optional<std::chrono::nanoseconds> timeout_;
  std::string scratch_;

  // Request body: messages wait here until the handler reads them (see InboundQueue for when
  // the stream window is credited).
  InboundQueue inbound_;
  bool remote_closed_ = false;
  Waiter read_waiter_;
  Waiter write_waiter_;

  // Response. A writer may queue up to kWriteQuota bytes beyond what was framed before Write()
  // suspends it.
  static constexpr size_t kWriteQuota = 64 * 1024;
  OutboundStream out_;
  HeaderBlock headers_;
  bool headers_sent_ = false;
  bool status_sent_ = false;
  // For channelz: the call got its request headers (it counts as started), the status it sent
  // was OK, and the stream closed without a reset.
  bool channelz_started_ = false;
  bool sent_ok_ = false;
  bool stream_reset_ = false;
  Compressor* response_compressor_ = nullptr;

  // Life cycle.
  uint8_t deferred_ = 0;     // DeferredWork bits
  bool queued_ = false;      // in the transport's deferred list (not released meanwhile)
  bool stream_closed_ = false;
  bool handler_running_ = false;
  bool awaiting_handler_ = false;  // in the transport's admission count, no handler started
  bool released_ = true;
  size_t interceptors_started_ = 0;
  asio::steady_timer deadline_timer_;
  uint64_t deadline_generation_ = 0;  // identifies the latest arming; stale waits ignore it
  bool deadline_armed_ = false;
  uint32_t deadline_waits_ = 0;  // deadline waits whose completion has not run (they use this)
  asio::cancellation_signal cancel_signal_;

  // Observers (inactive when the server has no stats handler). final_status_ is kept only then.
  CallStats stats_;
  Status final_status_;

  // Per-call arena for request and response messages; its first block lives in this object so
  // small calls never reach the heap.
  static constexpr size_t kArenaBlockSize = 2048;
  alignas(16) std::byte arena_block_[kArenaBlockSize];
  google::protobuf::Arena arena_;
  google::protobuf::MessageLite* request_message_ = nullptr;
  google::protobuf::MessageLite* response_message_ = nullptr;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_SERVER_CALL_H_
