#include "src/rpc/client_call.h"

#include <asio/post.hpp>
#include <charconv>

#include "rill/interceptor.h"
#include "src/rpc/call_headers.h"
#include "src/rpc/channel_impl.h"
#include "src/rpc/client_transport.h"
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
  response_compressed_ = false;
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

ClientCall::ClientCall(ChannelImpl& channel)
    : channel_(channel), deadline_timer_(channel.io_context()) {}

ClientCall::~ClientCall() = default;

void ClientCall::InitUnary(const MethodDescriptor& method, ClientContext& context,
                           const google::protobuf::MessageLite& request,
                           google::protobuf::MessageLite* response,
                           detail::UnaryCompletion done) {
  InitCommon(method, context, /*stream=*/false);
  request_ = &request;
  response_ = response;
  done_ = std::move(done);
}

void ClientCall::InitStream(const MethodDescriptor& method, ClientContext& context) {
  InitCommon(method, context, /*stream=*/true);
  user_holds_ = true;
}

void ClientCall::InitCommon(const MethodDescriptor& method, ClientContext& context, bool stream) {
  ++generation_;
  method_ = &method;
  context_ = &context;
  request_ = nullptr;
  response_ = nullptr;
  transport_ = nullptr;
  stream_id_ = 0;
  out_.Reset();
  http_status_ = 0;
  saw_grpc_content_type_ = false;
  have_grpc_status_ = false;
  grpc_status_ = 0;
  grpc_message_.clear();
  grpc_details_.clear();
  request_compressor_ = nullptr;
  response_encoding_.clear();
  inbound_.Reset(channel_.options().max_receive_message_size, /*credit_on_receipt=*/!stream);
  interceptors_started_ = 0;
  completed_ = false;
  stream_open_ = false;
  released_ = false;
  is_stream_ = stream;
  user_holds_ = false;
  status_known_ = false;
  final_status_ = Status();
  remote_closed_ = false;
  write_message_ = {};
  read_message_ = nullptr;
  context.initial_metadata_.Clear();
  context.trailing_metadata_.Clear();
}

bool ClientCall::Prepare() {
  bool cancelled;
  {
    std::lock_guard lock(context_->mu_);
    context_->call_ = this;
    cancelled = context_->cancelled_;
  }
  if (cancelled) {
    Complete(Status(StatusCode::kCancelled, "call cancelled before it started"));
    return false;
  }
  for (const auto& interceptor : channel_.options().interceptors) {
    ++interceptors_started_;
    Status status = interceptor->OnCallStart(*context_, method_->path);
    if (!status.ok()) {
      Complete(std::move(status));
      return false;
    }
  }
  const auto deadline = context_->deadline();
  const auto now = ClientContext::Clock::now();
  if (deadline != ClientContext::Clock::time_point::max() && deadline <= now) {
    Complete(Status(StatusCode::kDeadlineExceeded, "deadline exceeded before the call started"));
    return false;
  }
  const std::string_view compression = context_->compression();
  if (!compression.empty() && compression != "identity") {
    request_compressor_ = channel_.compressors().Find(compression);
    if (request_compressor_ == nullptr) {
      Complete(Status(StatusCode::kInternal,
                      "the channel has no compressor \"" + std::string(compression) + "\""));
      return false;
    }
  }
  Status status;
  if (!is_stream_) {
    BufferSlice message;
    status = EncodeMessage(*request_, request_compressor_, channel_.options().min_compress_size,
                           channel_.options().max_send_message_size, channel_.pool(), message);
    if (!status.ok()) {
      Complete(std::move(status));
      return false;
    }
    out_.Push(std::move(message));
    out_.Finish();  // unary: the request is the whole client stream
  }

  // Strings owned by the channel or generated code outlive the HEADERS frame: no copies.
  headers_.Clear();
  headers_.AddStatic(":method", "POST");
  headers_.AddStatic(":scheme", "http");
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
  if (deadline != ClientContext::Clock::time_point::max()) {
    char timeout[kMaxTimeoutEncodedSize];
    const size_t n = EncodeTimeout(deadline - now, timeout);
    headers_.AddStaticName("grpc-timeout", std::string_view(timeout, n));
  }
  status = AppendMetadata(context_->metadata(), headers_, scratch_);
  if (!status.ok()) {
    Complete(std::move(status));
    return false;
  }
  if (deadline != ClientContext::Clock::time_point::max()) ArmDeadline();
  return true;
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
  std::lock_guard lock(context_->mu_);
  context_->peer_ = transport.connection().peer();
}

void ClientCall::FailBeforeStart(Status status) { Complete(std::move(status)); }

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
  } else {
    Metadata& target = kind == HeadersKind::kTrailers ? context_->trailing_metadata_
                                                      : context_->initial_metadata_;
    AddReceivedMetadata(name, value, target, scratch_);
  }
}

void ClientCall::OnHeadersEnd(HeadersKind kind, bool end_stream) {
  if (completed_) return;
  if (kind == HeadersKind::kResponse) {
    if (end_stream) {
      // Trailers-only: its metadata is the call's trailing metadata.
      std::swap(context_->initial_metadata_, context_->trailing_metadata_);
      Complete(StatusFromResponse());
    } else if (http_status_ != 200 || !saw_grpc_content_type_) {
      // Not a gRPC response: no point waiting for trailers that will not come.
      Cancel(StatusFromResponse());
    }
    return;
  }
  Complete(StatusFromResponse());
}

void ClientCall::OnData(Buffer payload) {
  if (transport_ == nullptr) return;
  Http2Session& session = transport_->session();
  if (completed_ && !is_stream_) {
    session.Consume(stream_id_, payload.size());
    return;
  }
  Status status = inbound_.Push(std::move(payload), session, stream_id_, channel_.pool());
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
                       /*server=*/false, *response_);
}

void ClientCall::OnStreamClosed(uint32_t error_code) {
  stream_open_ = false;
  if (transport_ != nullptr) {
    transport_->DetachCall(this);
    transport_ = nullptr;
  }
  if (!completed_) {
    Complete(error_code == kHttp2NoError ? StatusFromResponse() : StatusForReset(error_code));
  }
  MaybeRelease();
}

void ClientCall::OnConnectionLost(const Status& reason) {
  stream_open_ = false;
  transport_ = nullptr;
  if (!completed_) {
    Complete(Status(StatusCode::kUnavailable, "connection lost: " + std::string(reason.message())));
  }
  MaybeRelease();
}

void ClientCall::RequestCancel() {
  const uint64_t generation = generation_;
  asio::post(channel_.io_context(), [this, generation] {
    if (generation == generation_ && !completed_) {
      Cancel(Status(StatusCode::kCancelled, "call cancelled by the client"));
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
  deadline_timer_.expires_at(context_->deadline());
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
  if (deadline_armed_) deadline_timer_.cancel();
  const auto& interceptors = channel_.options().interceptors;
  while (interceptors_started_ > 0) {
    --interceptors_started_;
    interceptors[interceptors_started_]->OnCallEnd(*context_, method_->path, status);
  }
  {
    std::lock_guard lock(context_->mu_);
    context_->call_ = nullptr;
  }
  if (is_stream_) {
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
  asio::post(channel_.io_context(), slot.Bind([this, fn = std::move(fn)]() mutable {
    // Asio freed the slot before running this, so the call may be released here (a stream's
    // call is deleted from a later handler); `fn` touches only what it holds.
    --queued_completions_;
    MaybeRelease();
    fn();
  }));
}

void ClientCall::StartWrite(OutgoingMessage message, bool last, bool no_compression,
                            detail::Completion<void(bool)> done) {
  RILL_CHECK_MSG(!write_done_, "a second Write() while one is outstanding");
  write_message_ = message;
  write_last_ = last;
  write_no_compression_ = no_compression;
  write_done_ = std::move(done);
  TryWrite();
}

void ClientCall::TryWrite() {
  if (!write_done_) return;
  if (completed_ || out_.finished()) {
    write_message_ = {};
    Post(write_slot_, [done = std::move(write_done_)]() mutable { done(false); });
    return;
  }
  if (out_.queued_bytes() >= kWriteQuota) return;  // OnDataFramed retries
  BufferSlice bytes;
  Compressor* compressor = write_no_compression_ ? nullptr : request_compressor_;
  const ChannelOptions& options = channel_.options();
  Status status =
      write_message_.prepared != nullptr
          ? EncodePrepared(*write_message_.prepared, compressor, options.min_compress_size,
                           options.max_send_message_size, channel_.pool(), bytes)
          : EncodeMessage(*write_message_.message, compressor, options.min_compress_size,
                          options.max_send_message_size, channel_.pool(), bytes);
  write_message_ = {};
  if (!status.ok()) {
    Post(write_slot_, [done = std::move(write_done_)]() mutable { done(false); });
    Cancel(std::move(status));
    return;
  }
  out_.Push(std::move(bytes));
  if (write_last_) out_.Finish();
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
    if (context_ != nullptr) context_->response_compressed_ = next.compressed;
    Status status = DecodeMessage(std::move(next), response_encoding_, channel_.compressors(),
                                  channel_.options().max_receive_message_size, channel_.pool(),
                                  /*server=*/false, *read_message_);
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

void ClientCall::StartFinish(detail::Completion<void(Status)> done) {
  finish_done_ = std::move(done);
  TryFinish();
}

void ClientCall::TryFinish() {
  if (!finish_done_ || !status_known_) return;
  Post(finish_slot_, [done = std::move(finish_done_), status = final_status_]() mutable {
    done(std::move(status));
  });
}

void ClientCall::OnDataFramed(size_t /*bytes*/) {
  if (out_.queued_bytes() < kWriteQuota) TryWrite();
}

void ClientCall::OnUserGone() {
  user_holds_ = false;
  if (!completed_) Cancel(Status(StatusCode::kCancelled, "stream destroyed before it finished"));
  // Nobody will collect these any more.
  write_done_ = {};
  read_done_ = {};
  finish_done_ = {};
  MaybeRelease();
}

void ClientCall::MaybeRelease() {
  if (released_ || !completed_ || stream_open_ || deadline_armed_ || user_holds_ ||
      queued_completions_ > 0) {
    return;
  }
  released_ = true;
  out_.Reset();
  inbound_.Clear();
  channel_.ReleaseCall(this);
}

}  // namespace internal
}  // namespace rill
