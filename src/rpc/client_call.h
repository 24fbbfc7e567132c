// ClientCall: one RPC on the client, from Start() to its completion.
//
// The request is serialized into pooled buffers and queued on the stream's OutboundStream with
// the request headers (grpc-timeout from the deadline, metadata with -bin values base64-encoded).
// The response's DATA views go through a MessageDeframer; the status comes from the trailers (or
// a trailers-only response, or an RST_STREAM / lost connection / HTTP error status mapped as
// gRPC specifies).
//
// Call objects are pooled by their channel and reused; a call is released once its completion
// has run and its stream is gone. TryCancel() from another thread reaches the call through a
// post to the reactor, guarded by a generation number so a late cancel never touches the next
// call that reuses the object.
//
// Thread safety: reactor-confined (except where noted).
#ifndef RILL_SRC_RPC_CLIENT_CALL_H_
#define RILL_SRC_RPC_CLIENT_CALL_H_

#include <asio/steady_timer.hpp>
#include <cstdint>
#include <string>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "src/http2/header_block.h"
#include "src/http2/http2_session.h"
#include "src/rpc/handler_slot.h"
#include "src/rpc/inbound_queue.h"

namespace rill::internal {

class ChannelImpl;
class ClientTransport;

class ClientCall {
 public:
  explicit ClientCall(ChannelImpl& channel);
  ~ClientCall();
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  // Sets the call up (on the reactor); Dispatch follows.
  void InitUnary(const MethodDescriptor& method, ClientContext& context,
                 const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response, detail::UnaryCompletion done);
  // Sets a streaming call up (on the reactor). The object is not pooled: it belongs to the
  // user's stream object until OnUserGone(), and deletes itself once also complete and closed.
  void InitStream(const MethodDescriptor& method, ClientContext& context);
  // False for stream calls, which the channel deletes instead of pooling.
  bool pooled = true;
  // Runs interceptors, checks the deadline and prepares the request; false when the call
  // already completed (rejected by an interceptor, deadline passed, request too large).
  bool Prepare();

  // Streaming operations (on the reactor). Each completion runs from a fresh handler, queued
  // without a heap allocation (one slot per kind: at most one write or WritesDone, one read and
  // one finish are outstanding).
  void StartWrite(OutgoingMessage message, bool last, bool no_compression,
                  detail::Completion<void(bool)> done);
  void StartWritesDone(detail::Completion<void(bool)> done);
  void StartRead(google::protobuf::MessageLite* message, detail::Completion<void(bool)> done);
  void StartFinish(detail::Completion<void(Status)> done);
  // The user's stream object is gone: an unfinished call is cancelled.
  void OnUserGone();
  void OnDataFramed(size_t bytes);
  // Opens the stream on `transport`.
  void StartOn(ClientTransport& transport);
  // Fails the call before it got a stream (connection attempt failed, channel shut down).
  void FailBeforeStart(Status status);

  // Stream events from the transport.
  void OnHeader(HeadersKind kind, std::string_view name, std::string_view value);
  void OnHeadersEnd(HeadersKind kind, bool end_stream);
  void OnData(Buffer payload);
  void OnRemoteEnd();
  void OnStreamClosed(uint32_t error_code);
  void OnConnectionLost(const Status& reason);

  // From ClientContext::TryCancel (any thread): posts the cancel to the reactor.
  void RequestCancel();

  // Bookkeeping for ClientTransport (index into its call list).
  size_t transport_index = 0;
  [[nodiscard]] int32_t stream_id() const noexcept { return stream_id_; }

 private:
  void InitCommon(const MethodDescriptor& method, ClientContext& context, bool stream);
  void Complete(Status status);
  void TryWrite();
  void TryRead();
  void TryFinish();
  // Queues `fn` to run from a fresh handler whose operation lives in `slot`. The call is not
  // released while a completion is queued.
  template <typename Slot, typename Fn>
  void Post(Slot& slot, Fn fn);
  void Cancel(Status status);
  void ArmDeadline();
  void MaybeRelease();
  Status StatusFromResponse();

  ChannelImpl& channel_;
  uint64_t generation_ = 0;  // bumped at each InitUnary; a stale cancel carries an old value

  const MethodDescriptor* method_ = nullptr;
  ClientContext* context_ = nullptr;
  const google::protobuf::MessageLite* request_ = nullptr;
  google::protobuf::MessageLite* response_ = nullptr;
  detail::UnaryCompletion done_;

  ClientTransport* transport_ = nullptr;
  int32_t stream_id_ = 0;
  OutboundStream out_;
  HeaderBlock headers_;
  std::string scratch_;

  // Response.
  int http_status_ = 0;
  bool saw_grpc_content_type_ = false;
  bool have_grpc_status_ = false;
  int grpc_status_ = 0;
  std::string grpc_message_;
  std::string grpc_details_;
  InboundQueue inbound_;

  // Streaming state.
  static constexpr size_t kWriteQuota = 64 * 1024;
  bool is_stream_ = false;
  bool user_holds_ = false;       // the user's stream object still exists
  bool status_known_ = false;     // the final status is in final_status_
  Status final_status_;
  bool remote_closed_ = false;
  OutgoingMessage write_message_;  // a write waiting for quota
  bool write_last_ = false;
  bool write_no_compression_ = false;
  Compressor* request_compressor_ = nullptr;
  std::string response_encoding_;
  detail::Completion<void(bool)> write_done_;
  google::protobuf::MessageLite* read_message_ = nullptr;  // a read waiting for a message
  detail::Completion<void(bool)> read_done_;
  detail::Completion<void(Status)> finish_done_;
  // Where the queued completions live: Asio's operation header, the completion, its argument
  // and this call's pointer.
  using CompletionSlot = HandlerSlot<208>;
  CompletionSlot write_slot_;  // Write() and WritesDone()
  CompletionSlot read_slot_;
  CompletionSlot finish_slot_;
  int queued_completions_ = 0;  // posted, not yet run

  size_t interceptors_started_ = 0;
  asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  bool completed_ = false;
  bool stream_open_ = false;
  bool released_ = true;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CLIENT_CALL_H_
