// ClientCall: one RPC on the client, from its start to its completion.
//
// The request headers (grpc-timeout from the deadline, metadata with -bin values base64-encoded)
// and the request messages, serialized into pooled buffers before the starting call returned,
// are queued on the stream's OutboundStream. The response's DATA views go through an
// InboundQueue; the status comes from the trailers (or a trailers-only response, or an
// RST_STREAM / lost connection / HTTP error status mapped as gRPC specifies).
//
// Ownership (docs/ownership.md): a call is RefCounted. While it runs on the reactor (from
// dispatch until it completed, its stream closed, its deadline timer and queued completions
// finished) it holds one reference of its own and a hold on its channel's gate. A unary call is
// pooled by its channel: its last reference sends it back to the pool. A streaming call is
// also referenced by the user's stream object and deleted by its last reference, which keeps
// its channel alive meanwhile.
//
// User code: interceptors' OnCallEnd and the completions never run inside the HTTP/2 session's
// callbacks: a call that completes there is queued on its transport and delivered once the
// session step ended.
//
// The user's ClientContext: a unary call's context outlives the call (the API's contract), so
// the reactor writes results into it directly. A stream's context may go with the stream
// object at any time; the reactor touches it only under `user_mu_` and not after DetachUser().
//
// Hedging (gRFC A6 hedgingPolicy; unary calls only, streams are never hedged): the user's call
// sends no stream itself. It starts up to max_attempts child calls (pooled ClientCalls, each one
// attempt over the connection the channel picks, each sending the same retained request by
// reference), one at once and one more every hedging delay. The first child to receive response
// headers, or to end with OK or a fatal status, commits: the others are cancelled (RST_STREAM
// CANCEL) and its metadata and status become the call's. Interceptors, stats and the completion
// belong to the user's call only; children report to it from fresh handlers, and it delivers
// from one too, so no hedging step runs user code inside a session's callbacks.
//
// Thread safety: reactor-confined, except where noted.
#ifndef RILL_SRC_RPC_CLIENT_CALL_H_
#define RILL_SRC_RPC_CLIENT_CALL_H_

#include <asio/steady_timer.hpp>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "src/base/channelz.h"
#include "src/base/gate.h"
#include "src/base/ref_counted.h"
#include "src/http2/header_block.h"
#include "src/http2/http2_session.h"
#include "src/rpc/call_stats.h"
#include "src/rpc/handler_slot.h"
#include "src/rpc/inbound_queue.h"
#include "src/rpc/service_config.h"

namespace rill::internal {

class ChannelImpl;
class ClientTransport;

// The request payload a context holds for the next message written (rill/payload_field.h).
struct ClientPayloadAccess {
  static const PayloadField& request_field(const ClientContext& context) noexcept {
    return context.request_payload_field_;
  }
  static BufferSlice TakeRequest(ClientContext& context) noexcept {
    return std::move(context.request_payload_);
  }
};

class ClientCall : public RefCounted<ClientCall> {
 public:
  explicit ClientCall(ChannelImpl& channel);
  ~ClientCall();
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  // Pooled unary calls go back to their channel; streaming calls are deleted.
  void OnLastUnref();

  // Sets a unary call up (on the reactor) with its request already encoded. Dispatch follows.
  void InitUnary(const MethodDescriptor& method, ClientContext& context, BufferSlice request,
                 google::protobuf::MessageLite* response, detail::UnaryCompletion done);
  // Sets a streaming call up (on the calling thread, before the call reaches the reactor).
  void InitStream(const MethodDescriptor& method, ClientContext& context);
  // Runs interceptors, checks the deadline, picks the compressor and builds the request
  // headers. A non-OK status fails the call (Fail()). Unary: on the reactor; streams: on the
  // calling thread.
  Status Prepare();
  [[nodiscard]] bool is_stream() const noexcept { return is_stream_; }
  [[nodiscard]] const char* method_path() const noexcept { return method_->path; }
  // Waits for a connection in TRANSIENT_FAILURE instead of failing (the context's choice, or
  // the channel's default).
  [[nodiscard]] bool wait_for_ready() const noexcept { return wait_for_ready_; }
  // The compressor for request messages (after Prepare; null for none).
  [[nodiscard]] Compressor* request_compressor() const noexcept { return request_compressor_; }

  // On the reactor: the call is in the channel's hands (holds its gate) until released; its
  // deadline timer starts.
  void Admit(Gate::Holder holder);
  // Set while the user's starting call runs on the reactor: a completion reached meanwhile is
  // posted instead of run inside it.
  void set_starting(bool starting) noexcept { starting_ = starting; }
  // Opens the stream on `transport`.
  void StartOn(ClientTransport& transport);
  // Call credentials (after Prepare): when the call has some, ApplyCredentials() asks the
  // plugin and dispatches the call again once it answered (or fails it).
  [[nodiscard]] bool NeedsCredentials() const noexcept { return call_credentials_ != nullptr; }
  void ApplyCredentials();
  // Fails the call before it got a stream (a connection attempt failed, the channel closed,
  // Prepare() failed).
  void Fail(Status status);

  // Streaming operations (on the reactor). Each completion runs from a fresh handler, queued
  // without a heap allocation (one slot per kind: at most one write or WritesDone, one read and
  // one finish are outstanding). `bytes` were encoded on the caller's thread (or failed to be,
  // with `encode_status`).
  void StartWrite(BufferSlice bytes, Status encode_status, bool last,
                  detail::Completion<void(bool)> done);
  void StartWritesDone(detail::Completion<void(bool)> done);
  void StartRead(google::protobuf::MessageLite* message, detail::Completion<void(bool)> done);
  // Completes with the status; with `response`, half-closes first and decodes the one response
  // message into it (client streaming).
  void StartFinish(google::protobuf::MessageLite* response,
                   detail::Completion<void(Status)> done);

  // The user's stream object is going (called on the user's thread, before OnUserGone is
  // posted): the reactor no longer touches the ClientContext, and interceptors whose
  // OnCallStart ran hear the end now if they have not yet. Thread-safe.
  void DetachUser();
  // On the reactor, after DetachUser(): an unfinished call is cancelled, and pending
  // operations complete (false / CANCELLED).
  void OnUserGone();

  void OnDataFramed(size_t bytes);

  // Stream events from the transport.
  void OnHeader(HeadersKind kind, std::string_view name, std::string_view value);
  void OnHeadersEnd(HeadersKind kind, bool end_stream);
  void OnData(Buffer payload);
  void OnRemoteEnd();
  void OnStreamClosed(uint32_t error_code);
  void OnConnectionLost(const Status& reason);
  // The transport's deferred list: a completion reached inside the session step.
  void RunDeferred();
  ClientCall* next_deferred = nullptr;

  // From ClientContext::TryCancel and cancellation slots (any thread): posts the cancel to the
  // reactor. Thread-safe.
  void RequestCancel();

  // The call has a hedging policy: ChannelImpl::Dispatch() hands it to StartHedging() instead of
  // a connection.
  [[nodiscard]] bool hedged() const noexcept { return hedging_policy_ != nullptr; }
  // Sends the first attempt (all of them with a hedging delay of 0) and arms the hedge timer.
  void StartHedging();

  // Bookkeeping for ClientTransport (index into its call list).
  size_t transport_index = 0;
  [[nodiscard]] int32_t stream_id() const noexcept { return stream_id_; }

 private:
  void InitCommon(const MethodDescriptor& method, ClientContext& context, bool stream);
  // Marks the call complete with `status`; delivers it (interceptors' OnCallEnd, then the
  // completion) at once, or after the session step when inside one.
  void Complete(Status status);
  void Deliver();
  void RunInterceptorsEnd(Status& status);
  void TryWrite();
  void TryRead();
  void TryFinish();
  // Queues `fn` to run from a fresh handler whose operation lives in `slot`. The call is not
  // released while a completion is queued.
  template <typename Slot, typename Fn>
  void Post(Slot& slot, Fn fn);
  void Cancel(Status status);
  // The server refused the stream before its application saw it: opens it again (true), or
  // false when the call cannot be retried.
  bool RetryTransparently();
  // The attempt ended with `status` before the response began: starts the next attempt after
  // the policy's backoff (true), or false when the method's retry policy does not allow one.
  bool RetryPerPolicy(const Status& status);
  // Clears what the response said (status line, grpc-status, message, details, encoding).
  void ForgetResponse();
  // Forgets the last attempt's stream and response and queues the request (a stream's messages
  // so far) again.
  void ResetAttempt();
  // The request can be sent again: a unary call still holds it, a stream still keeps its
  // messages.
  [[nodiscard]] bool CanReplay() const noexcept {
    return is_stream_ ? retaining_ : !retained_request_.empty();
  }
  // Keeps a reference to a stream's message for replay, or commits the call when the message
  // does not fit the per-call or per-channel limit.
  void RetainMessage(const BufferSlice& message);
  // The call is committed (its response began, or it is over): the request held for retries
  // goes, with its share of the channel's retry buffer.
  void CommitAttempt();
  void RedispatchAfter(std::chrono::milliseconds delay);
  // Hedging, on the user's call. SendHedge() starts one more attempt; CanHedge() says whether
  // one may start now; ArmHedgeTimer() sends the next one after `delay`.
  void SendHedge();
  [[nodiscard]] bool CanHedge() const;
  void ArmHedgeTimer(std::chrono::milliseconds delay);
  // Further attempts are off: a pending wait of the hedge timer does nothing.
  void StopHedgeTimer();
  // The call ends with `status` and the metadata of the attempt that decided it (`hedge`, null
  // when that attempt is gone), which stats handlers hear of as the call's exchange.
  void EndHedging(Status status, const ClientCall* hedge);
  // From an attempt: its response headers arrived (inside its session's callbacks).
  void OnHedgeCommitted(ClientCall* hedge);
  // From an attempt's own fresh handler: it ended with `status` (it no longer refers to this
  // call afterwards).
  void OnHedgeEnded(ClientCall* hedge, Status status);
  // `hedge` decides the call: no more attempts, the others are cancelled.
  void CommitHedge(ClientCall* hedge);
  // An attempt's response metadata becomes the user's.
  void TakeHedgeMetadata(ClientCall* hedge);
  // Sets an attempt up: attempt `index` (0-based) of `parent`.
  void InitHedge(ClientCall& parent, int index);
  // Complete() of a hedged call or of one of its attempts (kept off the plain call's path).
  [[gnu::noinline]] void CompleteHedging(Status status);
  // Deliver() of an attempt: its end goes to its call.
  [[gnu::noinline]] void ReportToParent(Status status);
  void ArmDeadline();
  void MaybeRelease();
  void OnCredentials(uint64_t generation, StatusOr<Metadata> metadata);
  // The call no longer waits for its credentials plugin (it completed first): a late answer finds
  // nothing to do.
  void WithdrawCredentialsRequest();
  Status StatusFromResponse();
  // A stats event was queued inside the session step: deliver it after.
  void StatsQueued(bool queued);
  // Reports the messages Push() just added (from index `first` of the queue).
  void RecordReceived(size_t first);
  // The status the server's trailers carry (for stats).
  Status TrailerStatus() const;
  // Runs `fn(context)` if the user's context may still be touched (see the file comment).
  template <typename Fn>
  void WithContext(Fn&& fn);

  ChannelImpl& channel_;
  uint64_t generation_ = 0;  // bumped at each Init; a stale cancel carries an old value

  const MethodDescriptor* method_ = nullptr;
  ClientContext* context_ = nullptr;
  google::protobuf::MessageLite* response_ = nullptr;
  detail::UnaryCompletion done_;

  ClientTransport* transport_ = nullptr;
  int32_t stream_id_ = 0;
  OutboundStream out_;
  HeaderBlock headers_;
  std::string scratch_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();

  // Response.
  int http_status_ = 0;
  bool saw_grpc_content_type_ = false;
  bool have_grpc_status_ = false;
  int grpc_status_ = 0;
  std::string grpc_message_;
  std::string grpc_details_;
  InboundQueue inbound_;
  // A stream's metadata, handed to its context when the call completes.
  Metadata stream_initial_metadata_;
  Metadata stream_trailing_metadata_;
  bool last_compressed_ = false;  // what the context last heard of response compression
  PayloadField response_payload_field_;  // the context's, copied at the start

  // Streaming state.
  static constexpr size_t kWriteQuota = 64 * 1024;
  bool is_stream_ = false;
  bool wait_for_ready_ = false;
  // A unary call's request, kept (a reference, not a copy) until the response begins.
  BufferSlice retained_request_;
  // A stream's messages written so far (the first in retained_request_), kept the same way until
  // its response begins (or they pass the per-call limit), for replay on a new attempt.
  std::vector<BufferSlice> retained_messages_;
  size_t retained_bytes_ = 0;
  bool retaining_ = false;          // the stream keeps its messages (not yet committed)
  bool retained_half_close_ = false;  // and its half-close
  static constexpr int kMaxTransparentRetries = 5;
  int transparent_retries_ = 0;
  // Retries per the service config (gRFC A6): unary calls whose request fits the buffer limit,
  // streams while their messages so far fit it.
  static constexpr size_t kMaxRetryBufferBytes = 256 * 1024;
  const RetryPolicy* retry_policy_ = nullptr;  // the channel's service config owns it
  size_t retry_reserved_ = 0;  // bytes of the channel's retry buffer this call holds
  int attempts_ = 1;
  std::optional<int64_t> retry_pushback_ms_;  // the server's grpc-retry-pushback-ms
  bool retry_pending_ = false;  // retry_timer_ runs
  // Hedging, on the user's call (the channel's service config owns the policy, whose
  // max_attempts is at most 5).
  static constexpr int kMaxHedges = 5;
  const HedgingPolicy* hedging_policy_ = nullptr;
  ClientCall* hedges_[kMaxHedges] = {};  // attempts still running (null: a free slot)
  int hedges_sent_ = 0;
  int hedges_live_ = 0;
  int hedge_waits_ = 0;            // waits of retry_timer_ whose handler has not run
  uint64_t hedge_timer_seq_ = 0;   // a wait armed before the last change is stale
  bool hedging_stopped_ = false;   // pushback or the throttle: no further attempts
  ClientCall* hedge_winner_ = nullptr;
  bool hedge_headers_ = false;     // the winner committed with response headers
  Status hedge_last_status_;       // the last non-fatal failure (its metadata: stream_*)
  // On an attempt: the user's call it belongs to (until it reported its end).
  ClientCall* hedge_parent_ = nullptr;
  bool is_hedge_ = false;
  // Received metadata stays in stream_*_metadata_ (streams, attempts) instead of going to the
  // context.
  bool own_metadata_ = false;
  asio::steady_timer retry_timer_;
  bool user_holds_ = false;    // the user's stream object still exists (reactor's view)
  bool status_known_ = false;  // the final status is in final_status_
  Status final_status_;
  bool remote_closed_ = false;
  BufferSlice write_bytes_;  // a write waiting for quota
  Status write_status_;      // why its encoding failed
  bool write_last_ = false;
  Compressor* request_compressor_ = nullptr;
  std::string response_encoding_;
  detail::Completion<void(bool)> write_done_;
  google::protobuf::MessageLite* read_message_ = nullptr;  // a read waiting for a message
  detail::Completion<void(bool)> read_done_;
  google::protobuf::MessageLite* finish_response_ = nullptr;
  detail::Completion<void(Status)> finish_done_;
  // Where the queued completions live: Asio's operation header, the completion, its argument
  // and this call's reference.
  using CompletionSlot = HandlerSlot<256>;
  CompletionSlot write_slot_;  // Write() and WritesDone()
  CompletionSlot read_slot_;
  CompletionSlot finish_slot_;
  int queued_completions_ = 0;  // posted, not yet run

  // The user's side of a stream (any thread, under user_mu_).
  std::mutex user_mu_;
  bool user_gone_ = false;     // DetachUser() ran: the context is off limits
  bool end_reported_ = false;  // interceptors' OnCallEnd ran (or had nothing to run)

  size_t interceptors_started_ = 0;
  asio::steady_timer deadline_timer_;
  Status pending_status_;         // set by Complete(), delivered by Deliver()
  bool delivery_pending_ = false;
  bool deferred_ = false;         // in a transport's deferred list
  bool starting_ = false;         // inside the user's starting call: completions are posted
  bool deadline_armed_ = false;
  bool credentials_pending_ = false;  // the call credentials plugin has not answered yet
  // What the plugin's callback refers to while it is pending (see CredentialsRequest). Only the
  // callback owns it, so a plugin that drops the callback ends it.
  class CredentialsRequest;
  std::weak_ptr<CredentialsRequest> credentials_request_;
  std::shared_ptr<CallCredentials> call_credentials_;  // to apply before the call starts
  std::string credentials_authority_;
  bool completed_ = false;
  // For channelz: the call was admitted on the channel (it counts as started there), it got a
  // stream (it counts on the subchannel), and the messages queued before it had one.
  bool channelz_admitted_ = false;
  channelz::ChannelNode* channelz_subchannel_ = nullptr;  // set once the call had a stream
  int64_t messages_before_stream_ = 0;
  bool stream_open_ = false;
  bool released_ = true;
  Gate::Holder gate_holder_;
  // Observers (inactive when the channel has no stats handler). A stream's request metadata is
  // copied for them (its context may go while an event waits).
  CallStats stats_;
  Metadata stats_metadata_;
  // A stream keeps its channel (and the reactor it runs on) alive while anything — the user's
  // stream object, a queued completion — refers to it.
  RefPtr<ChannelImpl> channel_ref_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CLIENT_CALL_H_
