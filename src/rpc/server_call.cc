#include "src/rpc/server_call.h"

#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/this_coro.hpp>
#include <atomic>
#include <charconv>

#include "rill/interceptor.h"
#include "src/base/user_code.h"
#include "src/rpc/call_headers.h"
#include "src/rpc/codec.h"
#include "src/rpc/server_impl.h"
#include "src/rpc/server_transport.h"
#include "src/rpc/wire_format.h"

namespace rill {

// ServerContext's out-of-line members live here, next to the call they forward to.

void ServerContext::SendInitialMetadata() { call_->SendInitialMetadata(); }

std::string_view ServerContext::peer() const noexcept {
  return call_->transport().connection().peer();
}

const PeerIdentity& ServerContext::peer_identity() const noexcept {
  return call_->transport().connection().peer_identity();
}

asio::io_context& ServerContext::io_context() const noexcept {
  return call_->transport().connection().io_context();
}

Status detail::RunAsyncHandler(ServerContext& context) noexcept {
  context.run_async_ = true;
  return Status();
}

void ServerContext::Reset() {
  client_metadata_.Clear();
  initial_metadata_.Clear();
  trailing_metadata_.Clear();
  deadline_ = Clock::time_point::max();
  method_.clear();
  authority_.clear();
  request_encoding_.clear();
  client_accept_encoding_.clear();
  response_encoding_.clear();
  request_payload_.Free();
  response_payload_.Free();
  request_compressed_ = false;
  cancelled_ = false;
  run_async_ = false;
}

namespace internal {
namespace {

// Counted at construction and destruction only (objects are reused call after call).
std::atomic<size_t> g_live_calls{0};

google::protobuf::ArenaOptions ArenaOptionsFor(std::byte* block, size_t size) {
  google::protobuf::ArenaOptions options;
  options.initial_block = reinterpret_cast<char*>(block);
  options.initial_block_size = size;
  return options;
}

std::string_view HttpStatusText(int status, char (&buf)[4]) {
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), status);
  return {buf, static_cast<size_t>(end - buf)};
}

// Runs a streaming handler with Asio's throw-if-cancelled check off. With the check on, every
// co_await after the call's cancellation signal throws operation_aborted, Read() and Write()
// included, which must complete false once the call ended (rill/server_stream.h); and whether
// they threw would depend on where the handler happened to be suspended when the call ended.
// What the handler awaits at that moment is still aborted through the cancellation slot.
Awaitable<Status> RunWithoutThrowIfCancelled(Awaitable<Status> handler) {
  co_await asio::this_coro::throw_if_cancelled(false);
  co_return co_await std::move(handler);
}

}  // namespace

ServerCall::ServerCall(ServerTransport& transport)
    : transport_(&transport),
      context_(this),
      read_waiter_(transport.connection().io_context()),
      write_waiter_(transport.connection().io_context()),
      deadline_timer_(transport.connection().io_context()),
      arena_(ArenaOptionsFor(arena_block_, kArenaBlockSize)) {
  g_live_calls.fetch_add(1, std::memory_order_relaxed);
}

ServerCall::~ServerCall() { g_live_calls.fetch_sub(1, std::memory_order_relaxed); }

size_t ServerCall::LiveObjects() noexcept { return g_live_calls.load(std::memory_order_relaxed); }

void ServerCall::Begin(int32_t stream_id) {
  stream_id_ = stream_id;
  awaiting_handler_ = true;
  phase_ = Phase::kHeaders;
  begun_at_ = transport_->session().now();
  method_ = nullptr;
  context_.Reset();
  header_bytes_ = 0;
  http_error_ = 0;
  header_error_ = Status();
  saw_method_post_ = false;
  saw_grpc_content_type_ = false;
  saw_path_ = false;
  timeout_.reset();
  inbound_.Reset(transport_->server().options().max_receive_message_size,
                 /*credit_on_receipt=*/true);
  remote_closed_ = false;
  out_.Reset();
  headers_sent_ = false;
  status_sent_ = false;
  channelz_started_ = false;
  sent_ok_ = false;
  stream_reset_ = false;
  response_compressor_ = nullptr;
  deferred_ = 0;
  queued_ = false;
  stream_closed_ = false;
  handler_running_ = false;
  released_ = false;
  interceptors_started_ = 0;
  request_message_ = nullptr;
  response_message_ = nullptr;
  stats_.Start(transport_->server().stats_handlers(), /*client=*/false,
               transport_->server().pool());
}

void ServerCall::OnHeader(std::string_view name, std::string_view value) {
  if (phase_ != Phase::kHeaders) return;  // request trailers carry nothing gRPC uses
  // RFC 9113 §6.5.2 size accounting: name + value + 32 per field.
  header_bytes_ += name.size() + value.size() + 32;
  if (header_bytes_ > transport_->server().options().max_header_list_size) {
    if (header_error_.ok() && http_error_ == 0) {
      header_error_ = Status(StatusCode::kResourceExhausted, "request headers are too large");
      http_error_ = 200;
    }
    return;
  }
  if (http_error_ != 0) return;  // the first problem decides the answer

  // Dispatch on length first: every request carries these fields, so this runs per field.
  if (!name.empty() && name[0] == ':') {
    if (name == ":path") {
      saw_path_ = true;
      context_.method_.assign(value);
      method_ = transport_->server().FindMethod(value);
    } else if (name == ":method") {
      saw_method_post_ = value == "POST";
    } else if (name == ":authority") {
      context_.authority_.assign(value);
    }
    return;
  }
  switch (name.size()) {
    case 2:
      if (name == "te") return;  // validated by the HTTP/2 layer
      break;
    case 12:
      if (name == "content-type") {
        const auto subtype = GrpcContentSubtype(value);
        saw_grpc_content_type_ = subtype.has_value();
        if (subtype && !IsProtoSubtype(*subtype) && http_error_ == 0) {
          // "+json" and the like: decoding such a body as protobuf would misread it.
          http_error_ = 415;
          header_error_ = Status(StatusCode::kUnimplemented,
                                 "content-subtype '" + std::string(*subtype) +
                                     "' is not supported; this server speaks application/grpc+proto");
        }
        return;
      }
      if (name == "grpc-timeout") {
        timeout_ = ParseTimeout(value);
        if (!timeout_) {
          http_error_ = 400;
          header_error_ = Status(StatusCode::kInternal,
                                 "malformed grpc-timeout \"" + std::string(value) + "\"");
        }
        return;
      }
      break;
    case 13:
      if (name == "grpc-encoding") {
        context_.request_encoding_.assign(value);
        return;
      }
      break;
    case 20:
      if (name == "grpc-accept-encoding") {
        context_.client_accept_encoding_.assign(value);
        return;
      }
      break;
    default:
      break;
  }
  if (!AddReceivedMetadata(name, value, context_.client_metadata_, scratch_)) {
    http_error_ = 400;
    header_error_ = Status(StatusCode::kInternal,
                           "invalid base64 in binary header \"" + std::string(name) + "\"");
  }
}

void ServerCall::OnHeadersEnd(bool end_stream) {
  if (phase_ != Phase::kHeaders) {
    if (end_stream) OnRemoteEnd();
    return;
  }
  phase_ = Phase::kReceiving;
  {
    channelz::SocketNode& channelz = transport_->channelz();
    channelz_started_ = true;
    channelz.StreamStarted(/*local=*/false);
    channelz.calls.Started();
  }
  if (stats_.active()) {
    // Borrowed: the context keeps them until the next call begins, after this one's kEnd, and
    // the connection's address outlives its calls.
    stats_.Describe(context_.method_, context_.authority_,
                    timeout_.value_or(std::chrono::nanoseconds(-1)), /*borrow=*/true);
    StatsQueued(stats_.Begin(transport_->connection().peer(), /*borrow=*/true));
    StatsQueued(stats_.Headers(/*out=*/false, &context_.client_metadata_));
  }
  // The order of these checks decides which answer a request with several problems gets:
  // HTTP-level problems first, then header contents, then routing.
  if (!saw_method_post_) {
    Fail(405, Status(StatusCode::kInternal, "gRPC requires the POST method"));
  } else if (!saw_grpc_content_type_) {
    Fail(415, Status(StatusCode::kInternal, "content-type is not application/grpc"));
  } else if (http_error_ != 0) {
    Fail(http_error_, header_error_);
  } else if (method_ == nullptr) {
    const bool well_formed = saw_path_ && ParseMethodPath(context_.method_).has_value();
    Fail(200, Status(StatusCode::kUnimplemented,
                     well_formed ? "unknown method " + context_.method_
                                 : "malformed :path \"" + context_.method_ + "\""));
  } else {
    // Answer in the request's encoding when the client accepts it.
    const std::string& encoding = context_.request_encoding_;
    if (!encoding.empty() && encoding != "identity" &&
        AcceptsEncoding(context_.client_accept_encoding_, encoding)) {
      context_.response_encoding_ = encoding;
    }
    if (timeout_) {
      context_.deadline_ = ServerContext::Clock::now() +
                           std::chrono::duration_cast<ServerContext::Clock::duration>(*timeout_);
      ArmDeadline();
    }
    // Client and bidi streaming handlers start right away; the others once their one request
    // message arrived whole.
    inbound_.Reset(transport_->server().options().max_receive_message_size,
                   /*credit_on_receipt=*/single_request());
    if (!single_request()) StartHandler();
  }
  if (end_stream) OnRemoteEnd();
}

void ServerCall::OnData(Buffer payload) {
  Http2Session& session = transport_->session();
  if (phase_ != Phase::kReceiving && phase_ != Phase::kReady && phase_ != Phase::kRunning) {
    session.Consume(stream_id_, payload.size());  // answered already: dropped, window returned
    return;
  }
  const size_t queued_before = inbound_.count();
  Status status = inbound_.Push(std::move(payload), session, stream_id_,
                                transport_->server().pool());
  if (status.ok() && inbound_.count() != queued_before) {
    transport_->channelz().MessagesReceived(static_cast<int64_t>(inbound_.count() - queued_before));
    if (stats_.active()) RecordReceived(queued_before);
  }
  if (!status.ok()) {
    Fail(200, std::move(status));
  } else if (single_request() && inbound_.count() > 1) {
    Fail(200, Status(StatusCode::kUnimplemented,
                     "received more than one request message for a method that takes one"));
  } else if (!inbound_.empty()) {
    read_waiter_.Wake();
  }
}

void ServerCall::RecordReceived(size_t first) {
  Compressor* compressor = nullptr;
  for (size_t i = first; i < inbound_.count(); ++i) {
    const Message& message = inbound_.Peek(i);
    if (message.compressed && compressor == nullptr) {
      compressor = transport_->server().compressors().Find(context_.request_encoding_);
    }
    StatsQueued(stats_.InMessage(message, compressor));
  }
}

void ServerCall::OnRemoteEnd() {
  remote_closed_ = true;
  if (stats_.active()) StatsQueued(stats_.HalfClose());
  if (phase_ == Phase::kRunning || (phase_ == Phase::kReady && !single_request())) {
    if (inbound_.HasPartial()) {
      Fail(200, Status(StatusCode::kInternal, "request stream ended inside a message"));
    }
    read_waiter_.Wake();  // a pending Read() now sees the end
    return;
  }
  if (phase_ != Phase::kReceiving) return;
  if (inbound_.HasPartial()) {
    Fail(200, Status(StatusCode::kInternal, "request stream ended inside a message"));
  } else if (inbound_.empty()) {
    Fail(200, Status(StatusCode::kUnimplemented, "received no request message"));
  } else {
    StartHandler();
  }
}

void ServerCall::StartHandler() {
  phase_ = Phase::kReady;
  Defer(kDeferredStart);
}

void ServerCall::Defer(uint8_t work) {
  deferred_ |= work;
  if (!queued_) {
    queued_ = true;
    transport_->Defer(this);
  }
}

void ServerCall::RunDeferred() {
  queued_ = false;
  const uint8_t work = std::exchange(deferred_, 0);
  if (stats_.has_queued()) stats_.Flush();
  if ((work & kDeferredStart) != 0 && phase_ == Phase::kReady) {
    if (method_->kind() == RpcKind::kUnary) {
      RunUnary();
    } else {
      RunStream();
    }
  }
  if ((work & kDeferredCancel) != 0 && handler_running_) EmitCancel();
  MaybeRelease();
}

void ServerCall::EmitCancel() {
  // Cancellation handlers are the handler's code (whatever it awaits installed them).
  try {
    cancel_signal_.emit(asio::cancellation_type::terminal);
  } catch (...) {
    LogUserException("a cancellation handler of " + context_.method_);
  }
}

Status ServerCall::RunInterceptorsStart() {
  for (const auto& interceptor : transport_->server().interceptors()) {
    ++interceptors_started_;
    Status status;
    try {
      status = interceptor->OnCallStart(context_);
    } catch (...) {
      status = StatusForUserException("a server interceptor's OnCallStart", context_.method_);
    }
    if (!status.ok()) return status;
  }
  return Status();
}

void ServerCall::RunInterceptorsEnd(Status& status) {
  const auto& interceptors = transport_->server().interceptors();
  while (interceptors_started_ > 0) {
    --interceptors_started_;
    try {
      interceptors[interceptors_started_]->OnCallEnd(context_, status);
    } catch (...) {
      status = StatusForUserException("a server interceptor's OnCallEnd", context_.method_);
    }
  }
}

void ServerCall::RunUnary() {
  phase_ = Phase::kRunning;
  Message request = inbound_.Pop(&transport_->session(), stream_id_);
  Status status = RunInterceptorsStart();
  if (!status.ok()) {
    request.body.Free();  // rejected before the parse: its buffers go back now
    FinishUnary(std::move(status));
    return;
  }
  request_message_ = method_->NewRequest(&arena_);
  context_.request_compressed_ = request.compressed;
  const ServerImpl& server = transport_->server();
  status = DecodeMessage(std::move(request), context_.request_encoding_, server.compressors(),
                         server.options().max_receive_message_size, server.pool(),
                         /*server=*/true, method_->request_payload(), *request_message_,
                         context_.request_payload_);
  if (!status.ok()) {
    FinishUnary(std::move(status));
    return;
  }
  response_message_ = method_->NewResponse(&arena_);
  context_.run_async_ = false;
  std::optional<Awaitable<Status>> coroutine;
  try {
    status = method_->RunUnary(context_, *request_message_, *response_message_);
    if (context_.run_async_) {
      coroutine.emplace(method_->RunUnaryAsync(context_, *request_message_, *response_message_));
    }
  } catch (...) {
    status = StatusForUserException("the handler", context_.method_);
    coroutine.reset();
  }
  if (!coroutine) {
    FinishUnary(std::move(status));
    return;
  }
  // The coroutine form: it runs on this reactor, and the call's cancellation signal aborts
  // whatever it awaits when the call is cancelled.
  handler_running_ = true;
  awaiting_handler_ = false;
  transport_->HandlerStarted();
  asio::co_spawn(transport_->connection().io_context(), std::move(*coroutine),
                 asio::bind_cancellation_slot(
                     cancel_signal_.slot(), [this](std::exception_ptr error, Status result) {
                       handler_running_ = false;
                       transport_->HandlerFinished();
                       if (error) result = StatusForHandlerException(error);
                       FinishUnary(std::move(result));
                     }));
}

Status ServerCall::StatusForHandlerException(const std::exception_ptr& error) {
  // A cancelled call's result is discarded; what its handler threw on the way out (Asio's
  // operation_aborted, typically) is no error worth reporting.
  if (context_.cancelled_) return Status(StatusCode::kCancelled, "call cancelled");
  try {
    std::rethrow_exception(error);
  } catch (...) {
    return StatusForUserException("the handler", context_.method_);
  }
}

void ServerCall::FinishUnary(Status status) {
  RunInterceptorsEnd(status);
  CallStats::Batch stats_batch(stats_);  // headers, message and trailers reported together
  if (phase_ == Phase::kFinished) {
    // Cancelled while the handler ran: nobody is listening any more.
    arena_.Reset();
    request_message_ = response_message_ = nullptr;
    MaybeRelease();
    return;
  }
  BufferSlice response;
  if (status.ok()) {
    const ServerOptions& options = transport_->server().options();
    status = EncodeMessage(*response_message_, method_->response_payload(),
                           std::move(context_.response_payload_), ResponseCompressor(),
                           options.min_compress_size, options.max_send_message_size,
                           transport_->server().pool(), response);
  }
  context_.request_payload_.Free();
  context_.response_payload_.Free();
  arena_.Reset();
  request_message_ = response_message_ = nullptr;
  if (status.ok() && SendHeadersIfNeeded()) {
    if (stats_.active()) StatsQueued(stats_.OutMessage(response, ResponseCompressor()));
    transport_->channelz().MessageSent();
    out_.Push(std::move(response));
    SendStatus(Status());
  } else {
    response.Free();
    SendStatus(status.ok() ? Status(StatusCode::kInternal, "invalid response metadata")
                           : std::move(status));
  }
  MaybeRelease();
}

bool ServerCall::SendHeadersIfNeeded() {
  if (headers_sent_) return true;
  headers_.Clear();
  headers_.AddStatic(":status", "200");
  headers_.AddStatic("content-type", "application/grpc");
  if (Compressor* compressor = ResponseCompressor()) {
    headers_.AddStatic("grpc-encoding", compressor->name());
  }
  headers_.AddStatic("grpc-accept-encoding", transport_->server().compressors().accept_encoding());
  if (!AppendMetadata(context_.initial_metadata_, headers_, scratch_).ok()) return false;
  transport_->session().SubmitResponse(stream_id_, headers_, &out_);
  headers_sent_ = true;
  if (stats_.active()) StatsQueued(stats_.Headers(/*out=*/true, &context_.initial_metadata_));
  return true;
}

Compressor* ServerCall::ResponseCompressor() {
  if (!headers_sent_) {
    const std::string& encoding = context_.response_encoding_;
    response_compressor_ =
        encoding.empty() || !AcceptsEncoding(context_.client_accept_encoding_, encoding)
            ? nullptr
            : transport_->server().compressors().Find(encoding);
  }
  return response_compressor_;
}

void ServerCall::SendInitialMetadata() {
  if (phase_ == Phase::kFinished || headers_sent_) return;
  if (SendHeadersIfNeeded()) Flush();
}

void ServerCall::SendStatus(Status status, bool drop_queued) {
  if (status_sent_ || stream_closed_) {
    phase_ = Phase::kFinished;
    return;
  }
  Http2Session& session = transport_->session();
  // Initial metadata the handler set goes out as response headers even when the call fails, as
  // libgrpc++ and grpc-go send it: clients read it there, not among the trailers.
  if (!headers_sent_ && !context_.initial_metadata_.empty()) SendHeadersIfNeeded();
  if (stats_.active()) {
    final_status_ = status;
    StatsQueued(stats_.Trailers(/*out=*/true, status, &context_.trailing_metadata_,
                                /*trailers_only=*/!headers_sent_));
    // With the client's side already ended, nothing more can happen to the call: kEnd goes
    // with the trailers (where grpc-go's server reports it too), and the stream's close later
    // releases the call without another stats pass.
    if (remote_closed_) StatsQueued(stats_.End(final_status_));
  }
  if (!headers_sent_) {
    // Trailers-only: one HEADERS frame carrying the HTTP status, the gRPC status and the
    // trailing metadata.
    headers_.Clear();
    headers_.AddStatic(":status", "200");
    headers_.AddStatic("content-type", "application/grpc");
    headers_.AddStatic("grpc-accept-encoding",
                       transport_->server().compressors().accept_encoding());
    AppendStatus(status, headers_, scratch_);
    AppendMetadata(context_.trailing_metadata_, headers_, scratch_).IgnoreError();
    session.SubmitTrailersOnly(stream_id_, headers_);
    headers_sent_ = true;
  } else {
    if (drop_queued) out_.Reset();
    HeaderBlock& trailers = out_.trailers();
    trailers.Clear();
    AppendStatus(status, trailers, scratch_);
    AppendMetadata(context_.trailing_metadata_, trailers, scratch_).IgnoreError();
    if (drop_queued) {
      session.SubmitTrailers(stream_id_, trailers);
    } else {
      out_.Finish();
      session.Resume(stream_id_, &out_);
    }
  }
  sent_ok_ = status.ok();
  status_sent_ = true;
  phase_ = Phase::kFinished;
  DisarmDeadline();
  Flush();
}

void ServerCall::Fail(int http_status, Status status) {
  inbound_.Clear();
  if (http_status != 200 && !headers_sent_ && !stream_closed_ &&
      (!saw_method_post_ || !saw_grpc_content_type_)) {
    // Not a gRPC request at all (a browser, curl, a plain HTTP/2 client): an ordinary HTTP
    // answer, the reason as a short text body and the gRPC status in trailers. The request
    // is not reset after the answer (RFC 9113 §8.1 makes that optional): the stream stays
    // half-closed until the client ends its side, so the client's later frames on it are
    // still checked against the stream's state. A gRPC client never sends such a request.
    char buf[4];
    headers_.Clear();
    headers_.Add(":status", HttpStatusText(http_status, buf));
    headers_.AddStatic("content-type", "text/plain; charset=utf-8");
    const std::string body = std::string(status.message()) + "\n";
    out_.Push(BufferSlice(Buffer::Copy(std::as_bytes(std::span(body)), transport_->server().pool())));
    AppendStatus(status, out_.trailers(), scratch_);
    out_.Finish();
    Http2Session& session = transport_->session();
    session.KeepOpenAfterResponse(stream_id_);
    session.SubmitResponse(stream_id_, headers_, &out_);
    headers_sent_ = true;
    status_sent_ = true;
    phase_ = Phase::kFinished;
    Flush();
  } else if (http_status != 200 && !headers_sent_ && !stream_closed_) {
    // A gRPC request with a broken header: an HTTP error status, still with a grpc-status so
    // gRPC clients report something meaningful.
    char buf[4];
    headers_.Clear();
    headers_.Add(":status", HttpStatusText(http_status, buf));
    headers_.AddStatic("content-type", "application/grpc");
    AppendStatus(status, headers_, scratch_);
    transport_->session().SubmitTrailersOnly(stream_id_, headers_);
    if (stats_.active()) {
      final_status_ = status;
      StatsQueued(stats_.Trailers(/*out=*/true, status, nullptr, /*trailers_only=*/true));
    }
    headers_sent_ = true;
    status_sent_ = true;
    phase_ = Phase::kFinished;
    Flush();
  } else {
    SendStatus(std::move(status));
  }
  if (handler_running_) Cancel(StatusCode::kCancelled);
}

void ServerCall::Cancel(StatusCode why) {
  context_.cancelled_ = true;
  read_waiter_.Wake();
  write_waiter_.Wake();
  if (handler_running_) {
    if (InsideHttp2Session()) {
      Defer(kDeferredCancel);
    } else {
      EmitCancel();
    }
  }
  if (why == StatusCode::kDeadlineExceeded) {
    // The client gave up on the call by now: what is still queued for it is dropped and the
    // status goes out at once, as in grpc-core. Queued behind messages, it would wait for the
    // peer's window, and a peer that stopped reading would keep the stream and its buffers.
    SendStatus(Status(StatusCode::kDeadlineExceeded, "deadline exceeded"), /*drop_queued=*/true);
  } else if (why == StatusCode::kUnavailable) {
    // The server's grace period ended: the client learns why (and the stream is reset after
    // the trailers), rather than seeing its connection vanish.
    SendStatus(Status(StatusCode::kUnavailable, "server shutting down"), /*drop_queued=*/true);
  }
  phase_ = Phase::kFinished;
}

void ServerCall::AbortForShutdown() {
  if (stream_closed_ || released_) return;
  if (phase_ == Phase::kFinished) return;  // its status is on the way
  Cancel(StatusCode::kUnavailable);
  MaybeRelease();
}

void ServerCall::ArmDeadline() {
  deadline_armed_ = true;
  const uint64_t generation = ++deadline_generation_;
  deadline_timer_.expires_at(context_.deadline_);
  transport_->AddPendingOp();
  ++deadline_waits_;
  deadline_timer_.async_wait([this, generation](const asio::error_code& ec) {
    ServerTransport& transport = *transport_;
    --deadline_waits_;
    // The object may serve another call by now; only the latest arming counts.
    if (generation == deadline_generation_) {
      deadline_armed_ = false;
      if (!ec && !released_ && phase_ != Phase::kFinished) OnDeadline();
    }
    transport.RemovePendingOp();
  });
}

void ServerCall::DisarmDeadline() {
  if (deadline_armed_) {
    deadline_armed_ = false;
    deadline_timer_.cancel();
  }
}

void ServerCall::OnDeadline() {
  Cancel(StatusCode::kDeadlineExceeded);
  MaybeRelease();
}

void ServerCall::OnStreamClosed(uint32_t error_code) {
  stream_closed_ = true;
  if (awaiting_handler_) {
    // No handler starts once the stream is gone: the slot is free now, not after the step.
    awaiting_handler_ = false;
    transport_->AdmissionEnded();
  }
  stream_reset_ = error_code != kHttp2NoError;
  if (phase_ != Phase::kFinished) {
    // The client reset the stream (or the connection broke) before we answered.
    Cancel(StatusCode::kCancelled);
  }
  DisarmDeadline();
  inbound_.Clear();
  out_.Reset();
  MaybeRelease();
}

void ServerCall::OnConnectionLost() {
  if (!stream_closed_) OnStreamClosed(kHttp2Cancel);
}

void ServerCall::OnDataFramed(size_t /*bytes*/) {
  if (out_.queued_bytes() < kWriteQuota) write_waiter_.Wake();
}

void ServerCall::Flush() { transport_->connection().ScheduleFlush(); }

void ServerCall::MaybeRelease() {
  if (released_ || !stream_closed_ || handler_running_ || queued_) return;
  if (stats_.active()) {
    if (!stats_.ended()) {
      if (status_sent_) {
        stats_.End(final_status_);  // not a temporary copy
      } else {
        stats_.End(Status(StatusCode::kCancelled, "call cancelled"));
      }
    }
    if (stats_.has_queued()) {
      if (InsideHttp2Session()) {
        Defer(kDeferredStats);  // released once the end was delivered, after the step
        return;
      }
      stats_.Flush();  // also inside a Batch: nothing may be reported after the release
    }
  }
  released_ = true;
  context_.request_payload_.Free();  // the received buffers go back now, not at the next call
  context_.response_payload_.Free();
  if (awaiting_handler_) {
    awaiting_handler_ = false;
    transport_->AdmissionEnded();
  }
  if (channelz_started_) {
    channelz::SocketNode& channelz = transport_->channelz();
    channelz.calls.Ended(status_sent_ && sent_ok_);
    channelz.StreamEnded(status_sent_ && !stream_reset_);
  }
  transport_->ReleaseCall(this);
}

void ServerCall::RunStream() {
  phase_ = Phase::kRunning;
  Status status = RunInterceptorsStart();
  if (!status.ok()) {
    FinishStream(std::move(status));
    return;
  }
  std::optional<Awaitable<Status>> coroutine;
  try {
    coroutine.emplace(method_->RunStream(context_, *this));
  } catch (...) {
    FinishStream(StatusForUserException("the handler", context_.method_));
    return;
  }
  handler_running_ = true;
  awaiting_handler_ = false;
  transport_->HandlerStarted();
  asio::co_spawn(transport_->connection().io_context(),
                 RunWithoutThrowIfCancelled(std::move(*coroutine)),
                 asio::bind_cancellation_slot(
                     cancel_signal_.slot(), [this](std::exception_ptr error, Status result) {
                       handler_running_ = false;
                       transport_->HandlerFinished();
                       if (error) result = StatusForHandlerException(error);
                       FinishStream(std::move(result));
                     }));
}

void ServerCall::FinishStream(Status status) {
  RunInterceptorsEnd(status);
  CallStats::Batch stats_batch(stats_);
  inbound_.Clear();
  if (phase_ != Phase::kFinished) {
    if (!status.ok() || SendHeadersIfNeeded()) {
      SendStatus(std::move(status));
    } else {
      SendStatus(Status(StatusCode::kInternal, "invalid response metadata"));
    }
  }
  arena_.Reset();
  MaybeRelease();
}

Awaitable<bool> ServerCall::Read(google::protobuf::MessageLite* message) {
  for (;;) {
    if (phase_ == Phase::kFinished) co_return false;
    if (!inbound_.empty()) {
      Message next = inbound_.Pop(&transport_->session(), stream_id_);
      Flush();  // the window credit goes out
      context_.request_compressed_ = next.compressed;
      const ServerImpl& server = transport_->server();
      Status status = DecodeMessage(
          std::move(next), context_.request_encoding_, server.compressors(),
          server.options().max_receive_message_size, server.pool(), /*server=*/true,
          method_->request_payload(), *message, context_.request_payload_);
      if (!status.ok()) {
        Fail(200, std::move(status));
        co_return false;
      }
      co_return true;
    }
    if (remote_closed_) co_return false;
    co_await read_waiter_.Wait();
  }
}

Awaitable<bool> ServerCall::WriteOutgoing(OutgoingMessage message, WriteOptions options) {
  while (phase_ != Phase::kFinished && out_.queued_bytes() >= kWriteQuota) {
    co_await write_waiter_.Wait();
  }
  if (phase_ == Phase::kFinished) co_return false;
  BufferSlice bytes;
  const ServerOptions& server_options = transport_->server().options();
  Compressor* compressor = options.no_compression ? nullptr : ResponseCompressor();
  BufferPool& pool = transport_->server().pool();
  Status status =
      message.prepared != nullptr
          ? EncodePrepared(*message.prepared, compressor, server_options.min_compress_size,
                           server_options.max_send_message_size, pool, bytes)
          : EncodeMessage(*message.message, method_->response_payload(),
                          std::move(context_.response_payload_), compressor,
                          server_options.min_compress_size, server_options.max_send_message_size,
                          pool, bytes);
  if (!status.ok()) {
    Fail(200, std::move(status));
    co_return false;
  }
  CallStats::Batch stats_batch(stats_);  // headers and message reported together
  if (!SendHeadersIfNeeded()) {
    Fail(200, Status(StatusCode::kInternal, "invalid response metadata"));
    co_return false;
  }
  if (stats_.active()) StatsQueued(stats_.OutMessage(bytes, compressor));
  transport_->channelz().MessageSent();
  out_.Push(std::move(bytes));
  transport_->session().Resume(stream_id_, &out_);
  Flush();
  co_return true;
}

}  // namespace internal
}  // namespace rill
