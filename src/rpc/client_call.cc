#include "src/rpc/client_call.h"

#include <asio/post.hpp>
#include <algorithm>
#include <charconv>
#include <random>

#include "rill/call_credentials.h"
#include "rill/interceptor.h"
#include "src/base/user_code.h"
#include "src/rpc/call_headers.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/client_transport.h"
#include "src/rpc/subchannel.h"
#include "src/rpc/codec.h"
#include "src/rpc/wire_format.h"

namespace rill {

ClientContext::~ClientContext() = default;

void ClientContext::TryCancel() {
  std::lock_guard lock(mu_);
  cancelled_ = true;
  if (call_ != nullptr) call_->RequestCancel();
}

void ClientContext::Reset() {
  std::lock_guard lock(mu_);
  metadata_.Clear();
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
  deadline_ = Clock::time_point::max();
  authority_.clear();
  peer_.clear();
  compression_.clear();
  credentials_.reset();
  request_payload_field_ = PayloadField();
  response_payload_field_ = PayloadField();
  request_payload_.Free();
  response_payload_.Free();
  response_compressed_ = false;
  wait_for_ready_ = -1;
  cancelled_ = false;
}

namespace internal {
namespace {

// PROTOCOL-HTTP2 / http-grpc-status-mapping: what a non-200 HTTP status means to a gRPC client.
StatusCode CodeForHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return StatusCode::kInternal;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kUnknown;
  }
}

// What an RST_STREAM error code means to a gRPC client.
Status StatusForReset(uint32_t error_code) {
  switch (error_code) {
    case kHttp2Cancel:
      return Status(StatusCode::kCancelled, "stream cancelled by the server");
    case kHttp2RefusedStream:
      return Status(StatusCode::kUnavailable, "stream refused by the server");
    case kHttp2FlowControlError:
    case kHttp2EnhanceYourCalm:
      return Status(StatusCode::kResourceExhausted,
                    "stream reset by the server (code " + std::to_string(error_code) + ")");
    case kHttp2InadequateSecurity:
      return Status(StatusCode::kPermissionDenied, "stream reset: inadequate security");
    default:
      return Status(StatusCode::kInternal,
                    "stream reset by the server (code " + std::to_string(error_code) + ")");
  }
}

int ParseInt(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  return value;
}

}  // namespace

// The plugin's callback refers to this, never to the call itself: a plugin may answer on any
// thread, late, twice, or drop the callback without answering, and none of that may touch the
// call off its reactor or outlive the channel. While the call waits it holds its channel's gate
// (credentials_pending_ keeps MaybeRelease away), so the first answer can take a reference to the
// call and a hold on the gate into a handler posted to the reactor; a call that completes first
// withdraws the request on the reactor, and later answers do nothing. A callback dropped without
// an answer answers UNAVAILABLE, so the call does not wait for its deadline.
class ClientCall::CredentialsRequest {
 public:
  explicit CredentialsRequest(ClientCall& call) : call_(&call), generation_(call.generation_) {}
  ~CredentialsRequest() {
    Answer(Status(StatusCode::kUnavailable,
                  "the call credentials plugin dropped its callback without answering"));
  }
  CredentialsRequest(const CredentialsRequest&) = delete;
  CredentialsRequest& operator=(const CredentialsRequest&) = delete;

  // Any thread.
  void Answer(StatusOr<Metadata> metadata) {
    RefPtr<ClientCall> call;
    Gate::Holder holder;
    {
      std::lock_guard lock(mu_);
      if (call_ == nullptr) return;
      call = RefPtr<ClientCall>(std::exchange(call_, nullptr));
      holder = call->channel_.gate().Enter();
    }
    asio::io_context& io = call->channel_.io_context();
    asio::post(io, [call = std::move(call), holder = std::move(holder), generation = generation_,
                    metadata = std::move(metadata)]() mutable {
      call->OnCredentials(generation, std::move(metadata));
    });
  }

  // On the reactor, from the call.
  void Withdraw() {
    std::lock_guard lock(mu_);
    call_ = nullptr;
  }

 private:
  std::mutex mu_;
  ClientCall* call_;  // null once answered or withdrawn
  const uint64_t generation_;
};

ClientCall::ClientCall(ChannelImpl& channel)
    : channel_(channel),
      retry_timer_(channel.io_context()),
      deadline_timer_(channel.io_context()) {}

ClientCall::~ClientCall() = default;

void ClientCall::OnLastUnref() {
  if (is_stream_) {
    delete this;
  } else {
    channel_.RecycleCall(this);
  }
}

void ClientCall::InitUnary(const MethodDescriptor& method, ClientContext& context,
                           BufferSlice request, google::protobuf::MessageLite* response,
                           detail::UnaryCompletion done) {
  InitCommon(method, context, /*stream=*/false);
  response_ = response;
  done_ = std::move(done);
  if (stats_.active()) {
    // Prepare() picks the compressor later; the flag in the prefix says whether it was used.
    const std::string_view encoding = context.compression();
    StatsQueued(stats_.OutMessage(
        request, encoding.empty() ? nullptr : channel_.compressors().Find(encoding)));
  }
  retained_request_ = request.Ref();  // for a transparent retry, until the response begins
  out_.Push(std::move(request));
  out_.Finish();  // unary: the request is the whole client stream
  if (stats_.active()) StatsQueued(stats_.HalfClose());
}

void ClientCall::InitStream(const MethodDescriptor& method, ClientContext& context) {
  InitCommon(method, context, /*stream=*/true);
  // Every stream may be retried transparently until its response begins.
  retaining_ = true;
  user_holds_ = true;
  channel_ref_ = RefPtr<ChannelImpl>(&channel_);
}

void ClientCall::InitCommon(const MethodDescriptor& method, ClientContext& context, bool stream) {
  ++generation_;
  method_ = &method;
  context_ = &context;
  response_ = nullptr;
  transport_ = nullptr;
  stream_id_ = 0;
  deadline_ = ClientContext::Clock::time_point::max();
  out_.Reset();
  ForgetResponse();
  request_compressor_ = nullptr;
  inbound_.Reset(channel_.options().max_receive_message_size, /*credit_on_receipt=*/!stream);
  interceptors_started_ = 0;
  completed_ = false;
  channelz_admitted_ = false;
  channelz_subchannel_ = nullptr;
  transparent_retries_ = 0;
  attempts_ = 1;
  retry_pushback_ms_.reset();
  retry_policy_ = nullptr;
  hedging_policy_ = nullptr;  // the rest of the hedging state is set where it is used
  is_hedge_ = false;
  hedge_parent_ = nullptr;
  own_metadata_ = stream;
  CommitAttempt();
  retained_half_close_ = false;
  wait_for_ready_ = context.wait_for_ready(channel_.options().wait_for_ready);
  messages_before_stream_ = stream ? 0 : 1;  // a unary call's request is queued at once
  delivery_pending_ = false;
  stream_open_ = false;
  released_ = false;
  is_stream_ = stream;
  user_holds_ = false;
  status_known_ = false;
  final_status_ = Status();
  remote_closed_ = false;
  write_bytes_.Free();
  read_message_ = nullptr;
  finish_response_ = nullptr;
  last_compressed_ = false;
  user_gone_ = false;
  end_reported_ = false;
  context.initial_metadata_.Clear();
  context.trailing_metadata_.Clear();
  context.response_compressed_ = false;
  response_payload_field_ = context.response_payload_field_;
  context.response_payload_.Free();
  const auto& handlers = channel_.options().stats_handlers;
  stats_.Start(handlers.empty() ? nullptr : &handlers, /*client=*/true, channel_.pool());
  if (stats_.active()) stats_.Describe(method.path, channel_.authority(), std::chrono::nanoseconds(-1));
}

template <typename Fn>
void ClientCall::WithContext(Fn&& fn) {
  if (!is_stream_) {
    fn(*context_);
    return;
  }
  std::lock_guard lock(user_mu_);
  if (!user_gone_) fn(*context_);
}

Status ClientCall::Prepare() {
  bool cancelled;
  {
    std::lock_guard lock(context_->mu_);
    context_->call_ = this;
    cancelled = context_->cancelled_;
  }
  if (cancelled) return Status(StatusCode::kCancelled, "call cancelled before it started");
  for (const auto& interceptor : channel_.options().interceptors) {
    ++interceptors_started_;
    Status status;
    try {
      status = interceptor->OnCallStart(*context_, method_->path);
    } catch (...) {
      status = StatusForUserException("a client interceptor's OnCallStart", method_->path);
    }
    if (!status.ok()) return status;
  }
  deadline_ = context_->deadline();
  const auto now = ClientContext::Clock::now();
  if (const MethodConfig* config = channel_.MethodConfigFor(method_->path)) {
    if (config->timeout && (deadline_ == ClientContext::Clock::time_point::max() ||
                            now + *config->timeout < deadline_)) {
      deadline_ = now + *config->timeout;
    }
    wait_for_ready_ = context_->wait_for_ready(
        config->wait_for_ready.value_or(channel_.options().wait_for_ready));
    if (config->max_response_message_bytes) {
      inbound_.Reset(std::min(channel_.options().max_receive_message_size,
                              *config->max_response_message_bytes),
                     /*credit_on_receipt=*/!is_stream_);
    }
    if (config->max_request_message_bytes && !is_stream_ &&
        retained_request_.size() > *config->max_request_message_bytes + kMessagePrefixSize) {
      return Status(StatusCode::kResourceExhausted,
                    "request message larger than the method's maxRequestMessageBytes");
    }
    // Retried attempts resend the request from its pooled buffers, up to the per-call limit
    // gRPC sets for what a retry may hold.
    if (config->retry_policy && !is_stream_ &&
        retained_request_.size() <= kMaxRetryBufferBytes &&
        channel_.ReserveRetryBuffer(retained_request_.size())) {
      retry_policy_ = &*config->retry_policy;
      retry_reserved_ = retained_request_.size();
    }
    // A stream reserves its share message by message (RetainMessage).
    if (config->retry_policy && is_stream_) retry_policy_ = &*config->retry_policy;
    // Hedged attempts hold the request the same way, within the same limits.
    if (config->hedging_policy && !is_stream_ &&
        retained_request_.size() <= kMaxRetryBufferBytes &&
        channel_.ReserveRetryBuffer(retained_request_.size())) {
      hedging_policy_ = &*config->hedging_policy;
      retry_reserved_ = retained_request_.size();
      hedges_sent_ = 0;
      hedging_stopped_ = false;
      hedge_winner_ = nullptr;
      hedge_headers_ = false;
    }
  }
  if (deadline_ != ClientContext::Clock::time_point::max() && deadline_ <= now) {
    return Status(StatusCode::kDeadlineExceeded, "deadline exceeded before the call started");
  }
  const std::string_view compression = context_->compression();
  if (!compression.empty() && compression != "identity") {
    request_compressor_ = channel_.compressors().Find(compression);
    if (request_compressor_ == nullptr) {
      return Status(StatusCode::kInternal,
                    "the channel has no compressor \"" + std::string(compression) + "\"");
    }
  }

  // Strings owned by the channel or generated code outlive the HEADERS frame: no copies.
  headers_.Clear();
  headers_.AddStatic(":method", "POST");
  headers_.AddStatic(":scheme", channel_.secure() ? "https" : "http");
  headers_.AddStatic(":path", method_->path);
  if (context_->authority().empty()) {
    headers_.AddStatic(":authority", channel_.authority());
  } else {
    headers_.Add(":authority", context_->authority());
  }
  headers_.AddStatic("content-type", "application/grpc");
  headers_.AddStatic("te", "trailers");
  headers_.AddStatic("user-agent", channel_.user_agent());
  if (request_compressor_ != nullptr) {
    headers_.AddStatic("grpc-encoding", request_compressor_->name());
  }
  headers_.AddStatic("grpc-accept-encoding", channel_.compressors().accept_encoding());
  if (deadline_ != ClientContext::Clock::time_point::max()) {
    char timeout[kMaxTimeoutEncodedSize];
    const size_t n = EncodeTimeout(deadline_ - now, timeout);
    headers_.AddStaticName("grpc-timeout", std::string_view(timeout, n));
  }
  if (stats_.active()) {
    stats_.Describe(method_->path,
                    context_->authority().empty() ? channel_.authority() : context_->authority(),
                    deadline_ != ClientContext::Clock::time_point::max()
                        ? std::chrono::duration_cast<std::chrono::nanoseconds>(deadline_ - now)
                        : std::chrono::nanoseconds(-1));
    if (is_stream_) stats_metadata_ = context_->metadata();
  }
  call_credentials_ = context_->credentials() != nullptr ? context_->credentials()
                                                         : channel_.options().call_credentials;
  if (call_credentials_ != nullptr) {
    credentials_authority_ =
        context_->authority().empty() ? channel_.authority() : context_->authority();
  }
  // The context's metadata is copied into the header block here: a stream's context need not
  // be touched again.
  return AppendMetadata(context_->metadata(), headers_, scratch_);
}

void ClientCall::ApplyCredentials() {
  std::shared_ptr<CallCredentials> credentials = std::move(call_credentials_);
  if (completed_) return;
  if (!channel_.secure() && !credentials->allow_insecure()) {
    Fail(Status(StatusCode::kUnauthenticated,
                "call credentials are sent only on a secure (TLS) channel; this one is "
                "plaintext (CallCredentials::allow_insecure() permits it)"));
    return;
  }
  CallCredentialsInfo info;
  info.authority = credentials_authority_;
  info.method = method_->path;
  const std::string_view path = method_->path;
  info.service_url = "https://" + std::string(info.authority) +
                     std::string(path.substr(0, path.rfind('/')));
  info.secure = channel_.secure();
  credentials_pending_ = true;
  auto request = std::make_shared<CredentialsRequest>(*this);
  credentials_request_ = request;
  CallCredentials::Done done = [request = std::move(request)](StatusOr<Metadata> metadata) {
    request->Answer(std::move(metadata));
  };
  try {
    credentials->GetMetadata(info, std::move(done));
  } catch (...) {
    LogUserException("CallCredentials::GetMetadata");
    WithdrawCredentialsRequest();
    Fail(Status(StatusCode::kUnavailable, "the call credentials plugin threw (see the log)"));
  }
}

void ClientCall::WithdrawCredentialsRequest() {
  if (!credentials_pending_) return;
  credentials_pending_ = false;
  if (std::shared_ptr<CredentialsRequest> request = credentials_request_.lock()) {
    request->Withdraw();
  }
  credentials_request_.reset();
}

void ClientCall::OnCredentials(uint64_t generation, StatusOr<Metadata> metadata) {
  if (generation != generation_ || !credentials_pending_) return;
  credentials_pending_ = false;
  credentials_request_.reset();
  if (completed_) {
    MaybeRelease();
    return;
  }
  if (!metadata.ok()) {
    const StatusCode code = metadata.status().code() == StatusCode::kUnauthenticated
                                ? StatusCode::kUnauthenticated
                                : StatusCode::kUnavailable;
    Fail(Status(code, "call credentials failed: " + std::string(metadata.status().message())));
    return;
  }
  if (Status status = AppendMetadata(*metadata, headers_, scratch_); !status.ok()) {
    Fail(Status(StatusCode::kUnavailable,
                "call credentials produced bad metadata: " + std::string(status.message())));
    return;
  }
  channel_.Dispatch(this);
}

void ClientCall::StartOn(ClientTransport& transport) {
  if (completed_) {
    MaybeRelease();
    return;
  }
  if (!transport.StartCall(this)) {
    Complete(Status(StatusCode::kUnavailable, "connection is not accepting calls"));
    return;
  }
  transport_ = &transport;
  stream_open_ = true;
  stream_id_ = transport.session().SubmitRequest(headers_, &out_, this);
  if (stream_id_ == 0) {
    stream_open_ = false;
    transport.DetachCall(this);
    transport_ = nullptr;
    Complete(Status(StatusCode::kUnavailable, "connection refused a new stream"));
    return;
  }
  transport.connection().ScheduleFlush();
  {
    channelz::SocketNode& socket = transport.channelz();
    socket.StreamStarted(/*local=*/true);
    if (messages_before_stream_ != 0) socket.MessagesSent(messages_before_stream_);
    messages_before_stream_ = 0;
    channelz_subchannel_ = &transport.subchannel().channelz();
    channelz_subchannel_->calls.Started();
  }
  if (stats_.active()) {
    StatsQueued(stats_.Headers(/*out=*/true,
                               is_stream_ ? &stats_metadata_ : &context_->metadata(),
                               transport.connection().peer()));
  }
  WithContext([&](ClientContext& context) {
    std::lock_guard lock(context.mu_);
    context.peer_ = transport.connection().peer();
  });
}

void ClientCall::Fail(Status status) { Complete(std::move(status)); }

void ClientCall::Admit(Gate::Holder holder) {
  gate_holder_ = std::move(holder);
  channel_.OnCallAdmitted();
  channelz_admitted_ = true;
  channel_.channelz().calls.Started();
  if (stats_.active()) StatsQueued(stats_.Begin({}));
  // The deadline runs from here, also while the call waits for a connection.
  if (!completed_ && deadline_ != ClientContext::Clock::time_point::max()) ArmDeadline();
}

void ClientCall::OnHeader(HeadersKind kind, std::string_view name, std::string_view value) {
  if (completed_) return;
  if (name == ":status") {
    http_status_ = ParseInt(value);
  } else if (name == "content-type") {
    saw_grpc_content_type_ = IsGrpcContentType(value);
  } else if (name == "grpc-status") {
    have_grpc_status_ = true;
    grpc_status_ = ParseInt(value);
  } else if (name == "grpc-message") {
    grpc_message_.clear();
    PercentDecode(value, grpc_message_);
  } else if (name == "grpc-encoding") {
    response_encoding_.assign(value);
  } else if (name == "grpc-status-details-bin") {
    grpc_details_.clear();
    if (!Base64Decode(value, grpc_details_)) grpc_details_.clear();
  } else if (name == "grpc-retry-pushback-ms") {
    // A negative or malformed value means "do not retry" (gRFC A6).
    int64_t ms = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    retry_pushback_ms_ = ec == std::errc() && end == value.data() + value.size() ? ms : -1;
  } else {
    const bool trailers = kind == HeadersKind::kTrailers;
    Metadata& target =
        own_metadata_
            ? (trailers ? stream_trailing_metadata_ : stream_initial_metadata_)
            : (trailers ? context_->trailing_metadata_ : context_->initial_metadata_);
    AddReceivedMetadata(name, value, target, scratch_);
  }
}

void ClientCall::OnHeadersEnd(HeadersKind kind, bool end_stream) {
  if (completed_) return;
  if (kind == HeadersKind::kResponse) {
    // Response headers commit the call (it is never retried from here on); a trailers-only
    // response does not.
    if (!end_stream) {
      CommitAttempt();
      if (hedge_parent_ != nullptr) hedge_parent_->OnHedgeCommitted(this);
    }
    if (end_stream) {
      // Trailers-only: its metadata is the call's trailing metadata.
      if (own_metadata_) {
        std::swap(stream_initial_metadata_, stream_trailing_metadata_);
      } else {
        std::swap(context_->initial_metadata_, context_->trailing_metadata_);
      }
      if (stats_.active()) {
        StatsQueued(stats_.Trailers(
            /*out=*/false, TrailerStatus(),
            is_stream_ ? &stream_trailing_metadata_ : &context_->trailing_metadata_,
            /*trailers_only=*/true));
      }
      Status status = StatusFromResponse();
      if (!status.ok() && RetryPerPolicy(status)) return;
      Complete(std::move(status));
    } else if (http_status_ != 200 || !saw_grpc_content_type_) {
      // Not a gRPC response: no point waiting for trailers that will not come.
      Cancel(StatusFromResponse());
    } else if (stats_.active()) {
      StatsQueued(stats_.Headers(
          /*out=*/false, is_stream_ ? &stream_initial_metadata_ : &context_->initial_metadata_));
    }
    return;
  }
  if (stats_.active()) {
    StatsQueued(stats_.Trailers(
        /*out=*/false, TrailerStatus(),
        is_stream_ ? &stream_trailing_metadata_ : &context_->trailing_metadata_,
        /*trailers_only=*/false));
  }
  Complete(StatusFromResponse());
}

Status ClientCall::TrailerStatus() const {
  if (!have_grpc_status_) return Status(StatusCode::kInternal, "no grpc-status");
  return Status(StatusCodeFromInt(grpc_status_), grpc_message_, grpc_details_);
}

void ClientCall::StatsQueued(bool queued) {
  if (queued && !deferred_ && transport_ != nullptr) {
    deferred_ = true;
    transport_->Defer(this);
  }
}

void ClientCall::RecordReceived(size_t first) {
  Compressor* compressor = nullptr;
  for (size_t i = first; i < inbound_.count(); ++i) {
    const Message& message = inbound_.Peek(i);
    if (message.compressed && compressor == nullptr) {
      compressor = channel_.compressors().Find(response_encoding_);
    }
    StatsQueued(stats_.InMessage(message, compressor));
  }
}

void ClientCall::OnData(Buffer payload) {
  if (transport_ == nullptr) return;
  Http2Session& session = transport_->session();
  if (completed_ && !is_stream_) {
    session.Consume(stream_id_, payload.size());
    return;
  }
  const size_t queued_before = inbound_.count();
  Status status = inbound_.Push(std::move(payload), session, stream_id_, channel_.pool());
  if (status.ok() && inbound_.count() != queued_before) {
    transport_->channelz().MessagesReceived(static_cast<int64_t>(inbound_.count() - queued_before));
    if (stats_.active()) RecordReceived(queued_before);
  }
  if (!status.ok()) {
    Cancel(std::move(status));
  } else if (!is_stream_ && inbound_.count() > 1) {
    Cancel(Status(StatusCode::kInternal, "unary call received more than one response"));
  } else if (is_stream_) {
    TryRead();
  }
}

void ClientCall::OnRemoteEnd() {
  remote_closed_ = true;
  if (completed_) return;
  // END_STREAM on DATA: the server ended without trailers.
  Complete(StatusFromResponse());
}

Status ClientCall::StatusFromResponse() {
  if (!have_grpc_status_) {
    if (http_status_ != 200) {
      return Status(CodeForHttpStatus(http_status_),
                    "HTTP status " + std::to_string(http_status_) + " from the server");
    }
    if (!saw_grpc_content_type_) {
      return Status(StatusCode::kUnknown, "response is not gRPC (content-type)");
    }
    return Status(StatusCode::kInternal, "server ended the call without a grpc-status");
  }
  const StatusCode code = StatusCodeFromInt(grpc_status_);
  if (code != StatusCode::kOk) {
    return Status(code, grpc_message_, std::move(grpc_details_));
  }
  if (inbound_.HasPartial()) {
    return Status(StatusCode::kInternal, "response stream ended inside a message");
  }
  if (is_stream_) return Status();
  if (inbound_.empty()) {
    return Status(StatusCode::kInternal, "server sent no response message for a unary call");
  }
  Message message = inbound_.Pop(nullptr, stream_id_);  // unary: credited on receipt
  context_->response_compressed_ = message.compressed;
  return DecodeMessage(std::move(message), response_encoding_, channel_.compressors(),
                       channel_.options().max_receive_message_size, channel_.pool(),
                       /*server=*/false, response_payload_field_, *response_,
                       context_->response_payload_);
}

void ClientCall::OnStreamClosed(uint32_t error_code) {
  if (stream_open_ && transport_ != nullptr) {
    transport_->channelz().StreamEnded(error_code == kHttp2NoError);
  }
  stream_open_ = false;
  if (!completed_ && error_code == kHttp2RefusedStream && RetryTransparently()) return;
  if (!completed_ && error_code != kHttp2NoError && RetryPerPolicy(StatusForReset(error_code))) {
    return;
  }
  if (!completed_) {
    Complete(error_code == kHttp2NoError ? StatusFromResponse() : StatusForReset(error_code));
  }
  if (transport_ != nullptr) {
    transport_->DetachCall(this);
    transport_ = nullptr;
  }
  MaybeRelease();
}

bool ClientCall::RetryTransparently() {
  // REFUSED_STREAM (also what a GOAWAY below the stream's id means) says the server's
  // application never saw the call, so it may go again, whatever its method: gRPC's transparent
  // retry. A unary call's request is still held (retained_request_), a stream's messages so far
  // too (retained_messages_) unless they passed the limit.
  if (http_status_ != 0 || !CanReplay() || transparent_retries_ >= kMaxTransparentRetries) {
    return false;
  }
  ++transparent_retries_;
  ResetAttempt();
  RedispatchAfter(std::chrono::milliseconds(0));
  return true;
}

bool ClientCall::RetryPerPolicy(const Status& status) {
  // gRFC A6: only before the response began (retained_request_ goes at its headers), for a
  // status the method's policy names, within its attempts, the channel's throttle, the call's
  // deadline and the server's pushback.
  if (retry_policy_ == nullptr || !CanReplay() || completed_) {
    return false;
  }
  const auto& codes = retry_policy_->retryable_status_codes;
  if (std::find(codes.begin(), codes.end(), status.code()) == codes.end()) return false;
  RetryThrottle* throttle = channel_.retry_throttle();
  if (throttle != nullptr && !throttle->RecordFailure()) return false;
  if (attempts_ >= retry_policy_->max_attempts) return false;
  std::chrono::milliseconds delay;
  if (retry_pushback_ms_) {
    // The server says when to retry, or (a negative or malformed value) not to.
    if (*retry_pushback_ms_ < 0) return false;
    delay = std::chrono::milliseconds(*retry_pushback_ms_);
  } else {
    double cap = static_cast<double>(retry_policy_->initial_backoff.count());
    for (int i = 1; i < attempts_; ++i) cap *= retry_policy_->backoff_multiplier;
    cap = std::min(cap, static_cast<double>(retry_policy_->max_backoff.count()));
    std::uniform_real_distribution<double> jitter(0, cap);
    delay = std::chrono::milliseconds(static_cast<int64_t>(jitter(channel_.rng())));
  }
  if (deadline_ != ClientContext::Clock::time_point::max() &&
      ClientContext::Clock::now() + delay >= deadline_) {
    return false;
  }
  ++attempts_;
  ResetAttempt();
  RedispatchAfter(delay);
  return true;
}

void ClientCall::CommitAttempt() {
  retained_request_.Free();
  retained_messages_.clear();
  retained_bytes_ = 0;
  retaining_ = false;
  if (retry_reserved_ != 0) {
    channel_.ReleaseRetryBuffer(retry_reserved_);
    retry_reserved_ = 0;
  }
}

void ClientCall::RetainMessage(const BufferSlice& message) {
  const size_t bytes = message.size();
  if (retained_bytes_ + bytes > kMaxRetryBufferBytes || !channel_.ReserveRetryBuffer(bytes)) {
    CommitAttempt();  // gRPC's rule: a call whose buffered messages pass the limit commits
    return;
  }
  retry_reserved_ += bytes;
  retained_bytes_ += bytes;
  // The first message goes where a unary call keeps its request: a stream of one request (server
  // streaming) allocates nothing for it.
  if (retained_request_.empty() && retained_messages_.empty()) {
    retained_request_ = message.Ref();
  } else {
    retained_messages_.push_back(message.Ref());
  }
}

void ClientCall::ForgetResponse() {
  http_status_ = 0;
  saw_grpc_content_type_ = false;
  have_grpc_status_ = false;
  grpc_status_ = 0;
  grpc_message_.clear();
  grpc_details_.clear();
  response_encoding_.clear();
}

void ClientCall::ResetAttempt() {
  if (transport_ != nullptr) {
    // A stream still open (a trailers-only response whose END_STREAM is being processed) ends
    // without this call: its last events find no call.
    if (stream_open_) {
      transport_->session().SetStreamData(stream_id_, nullptr);
      // A stream may still be sending: reset, it stops drawing on out_, which the next attempt
      // refills. (A unary call's request was sent whole.)
      if (is_stream_) {
        transport_->session().Reset(stream_id_, kHttp2Cancel);
        transport_->connection().ScheduleFlush();
      }
      transport_->channelz().StreamEnded(false);
    }
    transport_->DetachCall(this);
    transport_ = nullptr;
  }
  if (channelz_subchannel_ != nullptr) {
    channelz_subchannel_->calls.Ended(false);
    channelz_subchannel_ = nullptr;
  }
  stream_id_ = 0;
  stream_open_ = false;
  ForgetResponse();
  retry_pushback_ms_.reset();
  remote_closed_ = false;
  inbound_.Clear();
  if (own_metadata_) {
    stream_initial_metadata_.Clear();
    stream_trailing_metadata_.Clear();
  } else {
    context_->initial_metadata_.Clear();
    context_->trailing_metadata_.Clear();
  }
  out_.Reset();
  if (!is_stream_) {
    out_.Push(retained_request_.Ref());
    out_.Finish();
    return;
  }
  if (!retained_request_.empty()) out_.Push(retained_request_.Ref());
  for (const BufferSlice& message : retained_messages_) out_.Push(message.Ref());
  if (retained_half_close_) out_.Finish();
}

void ClientCall::RedispatchAfter(std::chrono::milliseconds delay) {
  // From a timer's handler even without a delay: this runs inside the old connection's
  // callbacks, and a dispatch may complete the call.
  retry_pending_ = true;
  retry_timer_.expires_after(delay);
  retry_timer_.async_wait([this, generation = generation_](const asio::error_code& ec) {
    if (generation != generation_) return;
    retry_pending_ = false;
    if (ec || completed_) {
      MaybeRelease();
      return;
    }
    channel_.Dispatch(this);
  });
}

void ClientCall::OnConnectionLost(const Status& reason) {
  if (stream_open_ && transport_ != nullptr) transport_->channelz().StreamEnded(false);
  stream_open_ = false;
  transport_ = nullptr;
  if (!completed_) {
    Status status = channel_.closed()
                        ? Status(StatusCode::kCancelled, "channel closed")
                        : Status(StatusCode::kUnavailable,
                                 "connection lost: " + std::string(reason.message()));
    if (!channel_.closed() && RetryPerPolicy(status)) return;
    Complete(std::move(status));
  }
  MaybeRelease();
}

void ClientCall::RequestCancel() {
  // The reference keeps the object (and, through its gate hold or its stream, the channel)
  // alive until the reactor ran this; the generation tells a later call on a reused object.
  asio::post(channel_.io_context(),
             [call = RefPtr<ClientCall>(this), generation = generation_] {
               if (generation == call->generation_ && !call->completed_ && !call->released_) {
                 call->Cancel(Status(StatusCode::kCancelled, "call cancelled by the client"));
               }
             });
}

void ClientCall::Cancel(Status status) {
  if (completed_) return;
  if (stream_open_ && transport_ != nullptr) {
    inbound_.Clear();
    transport_->session().Reset(stream_id_, kHttp2Cancel);
    transport_->connection().ScheduleFlush();
  }
  Complete(std::move(status));
}

void ClientCall::ArmDeadline() {
  deadline_armed_ = true;
  deadline_timer_.expires_at(deadline_);
  deadline_timer_.async_wait([this, generation = generation_](const asio::error_code& ec) {
    if (generation != generation_) return;
    deadline_armed_ = false;
    if (!ec && !completed_) {
      Cancel(Status(StatusCode::kDeadlineExceeded, "deadline exceeded"));
    }
    MaybeRelease();
  });
}

void ClientCall::Complete(Status status) {
  if (completed_) return;
  completed_ = true;
  if (channelz_admitted_) channel_.channelz().calls.Ended(status.ok());
  if (channelz_subchannel_ != nullptr) channelz_subchannel_->calls.Ended(status.ok());
  if (deadline_armed_) deadline_timer_.cancel();
  if (retry_pending_) retry_timer_.cancel();
  if ((retry_policy_ != nullptr || hedging_policy_ != nullptr) && status.ok()) {
    if (RetryThrottle* throttle = channel_.retry_throttle()) throttle->RecordSuccess();
  }
  // A plugin that has not answered yet neither holds up the call's release nor the channel's
  // close.
  WithdrawCredentialsRequest();
  if (is_hedge_ || hedging_policy_ != nullptr) [[unlikely]] {
    CompleteHedging(std::move(status));
    return;
  }
  pending_status_ = std::move(status);
  delivery_pending_ = true;
  if (InsideHttp2Session() && transport_ != nullptr) {
    // User code must not run inside nghttp2's callbacks: deliver once the step is over.
    if (!deferred_) {
      deferred_ = true;
      transport_->Defer(this);
    }
    return;
  }
  if (starting_) {
    // Inside the user's own starting call: a completion must not run from there.
    Post(finish_slot_, [] {});
    return;
  }
  Deliver();
}

void ClientCall::CompleteHedging(Status status) {
  if (hedging_policy_ != nullptr) {
    // Attempts still running end too (each reports from a handler of its own).
    for (ClientCall* hedge : hedges_) {
      if (hedge != nullptr) hedge->Cancel(status);
    }
    stream_initial_metadata_.Clear();
    stream_trailing_metadata_.Clear();
  }
  pending_status_ = std::move(status);
  delivery_pending_ = true;
  // An attempt reports to its call, and a hedged call delivers, from a fresh handler: never
  // inside a session's callbacks, a picking loop or another attempt's report.
  Post(finish_slot_, [] {});
}

void ClientCall::ReportToParent(Status status) {
  inbound_.Clear();
  context_ = nullptr;
  if (ClientCall* parent = std::exchange(hedge_parent_, nullptr)) {
    parent->OnHedgeEnded(this, std::move(status));
  }
  MaybeRelease();
}

void ClientCall::RunDeferred() {
  deferred_ = false;
  if (stats_.has_queued()) stats_.Flush();
  if (delivery_pending_) Deliver();
  MaybeRelease();
}

void ClientCall::RunInterceptorsEnd(Status& status) {
  const auto& interceptors = channel_.options().interceptors;
  auto run = [&](ClientContext& context) {
    if (end_reported_) return;
    end_reported_ = true;
    while (interceptors_started_ > 0) {
      --interceptors_started_;
      try {
        interceptors[interceptors_started_]->OnCallEnd(context, method_->path, status);
      } catch (...) {
        status = StatusForUserException("a client interceptor's OnCallEnd", method_->path);
      }
    }
  };
  if (!is_stream_) {
    run(*context_);
    return;
  }
  std::lock_guard lock(user_mu_);
  if (!user_gone_) run(*context_);
}

void ClientCall::Deliver() {
  if (!delivery_pending_) return;
  delivery_pending_ = false;
  Status status = std::move(pending_status_);
  if (is_hedge_) [[unlikely]] {
    ReportToParent(std::move(status));
    return;
  }
  RunInterceptorsEnd(status);
  if (stats_.active()) stats_.End(status);
  if (is_stream_) {
    {
      std::lock_guard lock(user_mu_);
      if (!user_gone_) {
        {
          std::lock_guard context_lock(context_->mu_);
          context_->call_ = nullptr;
        }
        std::swap(context_->initial_metadata_, stream_initial_metadata_);
        std::swap(context_->trailing_metadata_, stream_trailing_metadata_);
      }
    }
    stream_initial_metadata_.Clear();
    stream_trailing_metadata_.Clear();
    // Messages already received stay readable; pending operations learn the outcome.
    final_status_ = std::move(status);
    status_known_ = true;
    // After a local failure (cancelled, deadline, reset, connection lost) reads report the end.
    // A status the server sent comes after its messages, which stay the reader's, as in gRPC.
    if (!final_status_.ok() && !have_grpc_status_) inbound_.Clear();
    TryWrite();
    TryRead();
    TryFinish();
    MaybeRelease();
    return;
  }
  {
    std::lock_guard lock(context_->mu_);
    context_->call_ = nullptr;
  }
  inbound_.Clear();
  // The completion may start the next call or destroy the context: touch neither afterwards.
  context_ = nullptr;
  detail::UnaryCompletion done = std::move(done_);
  done(std::move(status));
  MaybeRelease();
}

template <typename Slot, typename Fn>
void ClientCall::Post(Slot& slot, Fn fn) {
  ++queued_completions_;
  asio::post(channel_.io_context(),
             slot.Bind([call = RefPtr<ClientCall>(this), fn = std::move(fn)]() mutable {
               // Asio freed the slot before running this; the reference keeps the call.
               --call->queued_completions_;
               call->Deliver();  // a completion put off from inside the user's starting call
               fn();
               call->MaybeRelease();
             }));
}

void ClientCall::StartWrite(BufferSlice bytes, Status encode_status, bool last,
                            detail::Completion<void(bool)> done) {
  RILL_CHECK_MSG(!write_done_, "a second Write() while one is outstanding");
  write_bytes_ = std::move(bytes);
  write_status_ = std::move(encode_status);
  write_last_ = last;
  write_done_ = std::move(done);
  TryWrite();
}

void ClientCall::TryWrite() {
  if (!write_done_) return;
  if (completed_ || out_.finished()) {
    write_bytes_.Free();
    Post(write_slot_, [done = std::move(write_done_)]() mutable { done(false); });
    return;
  }
  if (!write_status_.ok()) {
    // The message could not be encoded (too large, say): that fails the call, which says why.
    Post(write_slot_, [done = std::move(write_done_)]() mutable { done(false); });
    Cancel(std::exchange(write_status_, Status()));
    return;
  }
  if (out_.queued_bytes() >= kWriteQuota) return;  // OnDataFramed retries
  if (stats_.active()) StatsQueued(stats_.OutMessage(write_bytes_, request_compressor_));
  if (stream_open_) {
    transport_->channelz().MessageSent();
  } else {
    ++messages_before_stream_;
  }
  if (retaining_) RetainMessage(write_bytes_);
  out_.Push(std::move(write_bytes_));
  if (write_last_) {
    out_.Finish();
    retained_half_close_ = true;
    if (stats_.active()) StatsQueued(stats_.HalfClose());
  }
  if (stream_open_) {
    transport_->session().Resume(stream_id_, &out_);
    transport_->connection().ScheduleFlush();
  }
  Post(write_slot_, [done = std::move(write_done_)]() mutable { done(true); });
}

void ClientCall::StartWritesDone(detail::Completion<void(bool)> done) {
  const bool ok = !completed_ && !out_.finished();
  if (ok) {
    out_.Finish();
    retained_half_close_ = true;
    if (stats_.active()) StatsQueued(stats_.HalfClose());
    if (stream_open_) {
      transport_->session().Resume(stream_id_, &out_);
      transport_->connection().ScheduleFlush();
    }
  }
  Post(write_slot_, [done = std::move(done), ok]() mutable { done(ok); });
}

void ClientCall::StartRead(google::protobuf::MessageLite* message,
                           detail::Completion<void(bool)> done) {
  RILL_CHECK_MSG(!read_done_, "a second Read() while one is outstanding");
  read_message_ = message;
  read_done_ = std::move(done);
  TryRead();
}

void ClientCall::TryRead() {
  if (!read_done_) return;
  bool ok;
  if (!inbound_.empty()) {
    Message next = inbound_.Pop(stream_open_ ? &transport_->session() : nullptr, stream_id_);
    if (stream_open_) transport_->connection().ScheduleFlush();
    if (next.compressed != last_compressed_) {
      last_compressed_ = next.compressed;
      WithContext([&](ClientContext& context) { context.response_compressed_ = next.compressed; });
    }
    BufferSlice payload;
    Status status = DecodeMessage(std::move(next), response_encoding_, channel_.compressors(),
                                  channel_.options().max_receive_message_size, channel_.pool(),
                                  /*server=*/false, response_payload_field_, *read_message_,
                                  payload);
    if (!response_payload_field_.empty()) {
      WithContext([&](ClientContext& context) { context.response_payload_ = std::move(payload); });
    }
    ok = status.ok();
    if (!ok) {
      // Cancel completes the call, and completion retries TryRead: hand this read its answer
      // first, so that the completion is taken (and posted) exactly once.
      read_message_ = nullptr;
      Post(read_slot_, [done = std::move(read_done_)]() mutable { done(false); });
      Cancel(std::move(status));
      return;
    }
  } else if (completed_ || remote_closed_) {
    ok = false;
  } else {
    return;  // OnData or completion retries
  }
  read_message_ = nullptr;
  Post(read_slot_, [done = std::move(read_done_), ok]() mutable { done(ok); });
}

void ClientCall::StartFinish(google::protobuf::MessageLite* response,
                             detail::Completion<void(Status)> done) {
  RILL_CHECK_MSG(!finish_done_, "a second Finish() while one is outstanding");
  finish_response_ = response;
  finish_done_ = std::move(done);
  if (response != nullptr && !completed_ && !out_.finished()) {
    out_.Finish();
    retained_half_close_ = true;
    if (stats_.active()) StatsQueued(stats_.HalfClose());
    if (stream_open_) {
      transport_->session().Resume(stream_id_, &out_);
      transport_->connection().ScheduleFlush();
    }
  }
  TryFinish();
}

void ClientCall::TryFinish() {
  if (!finish_done_ || !status_known_) return;
  Status status = final_status_;
  if (finish_response_ != nullptr && status.ok()) {
    // Client streaming: exactly one response message.
    if (inbound_.empty()) {
      status = Status(StatusCode::kInternal, "server sent no response message");
    } else {
      Message message = inbound_.Pop(nullptr, stream_id_);
      BufferSlice payload;
      status = DecodeMessage(std::move(message), response_encoding_, channel_.compressors(),
                             channel_.options().max_receive_message_size, channel_.pool(),
                             /*server=*/false, response_payload_field_, *finish_response_,
                             payload);
      if (!response_payload_field_.empty()) {
        WithContext(
            [&](ClientContext& context) { context.response_payload_ = std::move(payload); });
      }
      if (status.ok() && !inbound_.empty()) {
        status = Status(StatusCode::kInternal, "server sent more than one response message");
      }
    }
    inbound_.Clear();
  }
  finish_response_ = nullptr;
  Post(finish_slot_, [done = std::move(finish_done_), status = std::move(status)]() mutable {
    done(std::move(status));
  });
}

void ClientCall::OnDataFramed(size_t /*bytes*/) {
  if (out_.queued_bytes() < kWriteQuota) TryWrite();
}

void ClientCall::DetachUser() {
  std::lock_guard lock(user_mu_);
  if (!end_reported_) {
    // The call has not ended yet (or its end is not delivered): interceptors hear of it now,
    // while the context still exists. The reactor sees end_reported_ and skips them.
    end_reported_ = true;
    Status status(StatusCode::kCancelled, "stream destroyed before it finished");
    const auto& interceptors = channel_.options().interceptors;
    while (interceptors_started_ > 0) {
      --interceptors_started_;
      try {
        interceptors[interceptors_started_]->OnCallEnd(*context_, method_->path, status);
      } catch (...) {
        LogUserException("a client interceptor's OnCallEnd");
      }
    }
  }
  {
    std::lock_guard context_lock(context_->mu_);
    if (context_->call_ == this) context_->call_ = nullptr;
  }
  user_gone_ = true;
}

void ClientCall::OnUserGone() {
  user_holds_ = false;
  if (!completed_) Cancel(Status(StatusCode::kCancelled, "stream destroyed before it finished"));
  // Operations still pending complete now (as an Asio object's do when it is destroyed).
  if (write_done_) {
    write_bytes_.Free();
    Post(write_slot_, [done = std::move(write_done_)]() mutable { done(false); });
  }
  if (read_done_) {
    read_message_ = nullptr;
    Post(read_slot_, [done = std::move(read_done_)]() mutable { done(false); });
  }
  if (finish_done_ && !status_known_) {
    finish_response_ = nullptr;
    Post(finish_slot_, [done = std::move(finish_done_)]() mutable {
      done(Status(StatusCode::kCancelled, "stream destroyed before it finished"));
    });
  }
  MaybeRelease();
}

void ClientCall::MaybeRelease() {
  if (released_ || !completed_ || delivery_pending_ || deferred_ || stream_open_ ||
      deadline_armed_ || retry_pending_ || queued_completions_ > 0 || credentials_pending_ ||
      hedges_live_ > 0) {
    return;
  }
  // Nothing runs for the call on the reactor any more: the channel need not wait for it. A
  // stream the user still holds keeps the object (and, through channel_ref_, the channel).
  if (gate_holder_) {
    channel_.OnCallDone(this);
    gate_holder_.Release();
  }
  if (user_holds_) return;
  released_ = true;
  out_.Reset();
  inbound_.Clear();
  write_bytes_.Free();
  CommitAttempt();
  Gate::Holder holder = std::move(gate_holder_);
  Unref();  // the reactor's reference; the call may be gone after this
}

}  // namespace internal
}  // namespace rill
