#include "src/rpc/server_transport.h"

#include <asio/post.hpp>
#include <random>

#include "src/rpc/server_call.h"
#include "src/rpc/server_impl.h"

namespace rill::internal {
namespace {

// Identifies the PING that follows the shutdown notice.
constexpr uint64_t kShutdownPingPayload = 0x73687574'646f776e;
// A client that does not acknowledge that PING (an nghttp2 client with no open streams stops
// answering once it saw a GOAWAY) gets the final GOAWAY after this long anyway.
constexpr std::chrono::seconds kShutdownAckTimeout{5};
// A connection without calls for this long gives its call objects back.
constexpr std::chrono::seconds kCallTrimDelay{1};

Http2Connection::Options ConnectionOptions(const ServerOptions& o,
                                           std::shared_ptr<TlsContext> tls) {
  Http2Connection::Options options;
  options.tls = std::move(tls);
  options.http2.server = true;
  options.http2.max_concurrent_streams = o.max_concurrent_streams;
  if (o.initial_stream_window != 0) options.http2.initial_stream_window = o.initial_stream_window;
  // A window the user chose is static; otherwise it follows the bandwidth-delay product.
  options.dynamic_window = o.initial_stream_window == 0 && o.initial_connection_window == 0;
  if (o.initial_connection_window != 0) {
    options.http2.initial_connection_window = o.initial_connection_window;
  }
  options.http2.max_header_list_size = o.max_header_list_size;
  options.read_block_size = o.read_block_size;
  options.write_buffer_size = o.write_buffer_size;
  options.handshake_timeout = o.handshake_timeout;
  options.keepalive_time = std::max(o.keepalive_time, std::chrono::milliseconds(1000));
  options.settings_ack_timeout = o.settings_ack_timeout;
  options.keepalive_timeout = o.keepalive_timeout;
  options.min_ping_interval = o.keepalive_min_ping_interval;
  options.pings_without_streams = o.permit_keepalive_without_calls;
  options.http2.reset_burst = o.early_reset_burst;
  options.http2.reset_rate = o.early_reset_rate;
  return options;
}

ServerCall* CallOf(void* stream) { return static_cast<ServerCall*>(stream); }

}  // namespace

ServerTransport::ServerTransport(ServerImpl& server, Http2Connection::Socket socket,
                                 std::shared_ptr<TlsContext> tls)
    : server_(server),
      connection_(std::move(socket), ConnectionOptions(server.options(), std::move(tls)), this,
                  server.pool(), this),
      trim_timer_(connection_.io_context()),
      lifetime_timer_(connection_.io_context()),
      notice_timer_(connection_.io_context()) {
  connection_.AttachChannelz(&channelz_);
  channelz_.name = channelz_.remote_name;
  channelz::Registry::Get().Register(channelz_, &server.channelz_node());
}

ServerTransport::ServerTransport(ServerImpl& server, PipeEnd pipe, asio::io_context& io_context)
    : server_(server),
      connection_(std::move(pipe), io_context, ConnectionOptions(server.options(), nullptr), this,
                  server.pool(), this),
      trim_timer_(connection_.io_context()),
      lifetime_timer_(connection_.io_context()),
      notice_timer_(connection_.io_context()) {
  connection_.AttachChannelz(&channelz_);
  channelz_.name = connection_.peer();
  channelz_.remote_name = connection_.peer();
  channelz::Registry::Get().Register(channelz_, &server.channelz_node());
}

ServerTransport::~ServerTransport() = default;

void ServerTransport::Start() {
  stats_.Begin(server_.stats_handlers(), /*client=*/false, connection_.peer());
  connection_.Start();
  const ServerOptions& options = server_.options();
  const auto now = std::chrono::steady_clock::now();
  idle_since_ = now;
  if (options.max_connection_age.count() > 0) {
    // ±10 % jitter, as grpc-go and libgrpc++ do.
    std::minstd_rand rng(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(this)) ^
                         static_cast<uint32_t>(now.time_since_epoch().count()));
    const double factor = std::uniform_real_distribution<double>(0.9, 1.1)(rng);
    age_limit_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           options.max_connection_age * factor);
  }
  ArmIdleTimer();
}

void ServerTransport::ArmIdleTimer() {
  const ServerOptions& options = server_.options();
  auto when = age_shutdown_ ? std::chrono::steady_clock::time_point::max() : age_limit_;
  if (options.max_connection_idle.count() > 0 && active_calls_ == 0 && !shutdown_notice_sent_) {
    when = std::min(when, idle_since_ + options.max_connection_idle);
  }
  if (age_shutdown_ && options.max_connection_age_grace.count() > 0) {
    when = std::min(when, age_limit_ + options.max_connection_age_grace);
  }
  if (when == std::chrono::steady_clock::time_point::max() || connection_.closed()) return;
  AddPendingOp();
  lifetime_timer_.expires_at(when);
  lifetime_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) OnLifetimeTimer();
    RemovePendingOp();
  });
}

void ServerTransport::OnLifetimeTimer() {
  if (connection_.closed()) return;
  const ServerOptions& options = server_.options();
  const auto now = std::chrono::steady_clock::now();
  if (age_shutdown_) {
    if (options.max_connection_age_grace.count() > 0 &&
        now >= age_limit_ + options.max_connection_age_grace) {
      ForceClose();
      return;
    }
  } else if (now >= age_limit_) {
    age_shutdown_ = true;
    BeginShutdown();
  } else if (options.max_connection_idle.count() > 0 && active_calls_ == 0 &&
             now >= idle_since_ + options.max_connection_idle) {
    BeginShutdown();
    return;
  }
  ArmIdleTimer();
}

void ServerTransport::BeginShutdown() {
  if (connection_.closed() || shutdown_notice_sent_) return;
  // Two steps (RFC 9113 §6.8): a GOAWAY with the largest stream id tells the client to stop
  // opening streams without refusing those already on their way; the PING's ACK proves the
  // client has seen it, and then the GOAWAY with the last stream id processed follows. Once
  // the open streams finish, the session wants neither read nor write and the connection
  // closes itself.
  shutdown_notice_sent_ = true;
  session().SubmitShutdownNotice(kShutdownPingPayload);
  connection_.ScheduleFlush();
  AddPendingOp();
  notice_timer_.expires_after(kShutdownAckTimeout);
  notice_timer_.async_wait([this](const asio::error_code& ec) {
    if (!ec) SendFinalGoaway();
    RemovePendingOp();
  });
}

void ServerTransport::SendFinalGoaway() {
  if (final_goaway_sent_ || connection_.closed()) return;
  final_goaway_sent_ = true;
  notice_timer_.cancel();
  session().SubmitGoaway(kHttp2NoError, "server shutting down");
  connection_.ScheduleFlush();  // a no-op inside a session step, which flushes at its end
}

void ServerTransport::OnPingAck(uint64_t payload) {
  if (payload == kShutdownPingPayload) SendFinalGoaway();
}

void ServerTransport::ForceClose() {
  if (connection_.closed()) return;
  // The grace period is over: every call still open gets its status and a reset, the final
  // GOAWAY goes out, and the connection closes once that is written (or soon after, if the
  // peer does not read).
  for (const auto& call : calls_) call->AbortForShutdown();
  SendFinalGoaway();
  connection_.CloseAfterFlush(Status(StatusCode::kUnavailable, "server shut down"),
                              std::chrono::seconds(1));
}

void ServerTransport::OnStreamBegin(int32_t stream_id) {
  const ServerOptions& options = server_.options();
  if (session().calmed()) {
    // Past the glitch budget: the GOAWAY is queued, nothing new reaches the application.
    session().Reset(stream_id, kHttp2RefusedStream);
    return;
  }
  const bool connection_full =
      running_handlers_ + admitted_ >= options.max_running_handlers_per_connection;
  if (connection_full || server_.AtHandlerLimit()) {
    // Admission is judged by work: too many handlers still run (reset streams' included).
    session().Reset(stream_id, kHttp2RefusedStream);
    server_.OnRefusedAtCap(/*server_wide=*/!connection_full);
    session().Glitch();
    return;
  }
  ServerCall* call;
  if (!free_calls_.empty()) {
    call = free_calls_.back();
    free_calls_.pop_back();
  } else {
    calls_.push_back(std::make_unique<ServerCall>(*this));
    call = calls_.back().get();
  }
  ++active_calls_;
  ++calls_begun_;
  ++admitted_;
  // The server-wide count, like the connection's, holds admitted calls from here: one read
  // carrying many streams must not pass the limit before their handlers start.
  server_.OnHandlerStarted();
  call->Begin(stream_id);
  session().SetStreamData(stream_id, call);
}

void ServerTransport::OnHeader(int32_t, void* stream, HeadersKind, std::string_view name,
                               std::string_view value) {
  if (stream != nullptr) CallOf(stream)->OnHeader(name, value);
}

void ServerTransport::OnHeadersEnd(int32_t, void* stream, HeadersKind, bool end_stream) {
  if (stream != nullptr) CallOf(stream)->OnHeadersEnd(end_stream);
}

void ServerTransport::OnData(int32_t stream_id, void* stream, Buffer payload) {
  if (stream != nullptr) CallOf(stream)->OnData(std::move(payload));
}

void ServerTransport::OnRemoteEnd(int32_t, void* stream) {
  if (stream != nullptr) CallOf(stream)->OnRemoteEnd();
}

void ServerTransport::OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) {
  if (stream == nullptr) return;
  session().SetStreamData(stream_id, nullptr);
  CallOf(stream)->OnStreamClosed(error_code);
}

bool ServerTransport::IsEarlyReset(int32_t, void* stream) {
  if (stream == nullptr) return false;  // refused, or its call already ended
  return CallOf(stream)->IsEarlyReset(session().now(), server_.options().early_reset_window);
}

void ServerTransport::OnDataFramed(int32_t, void* stream, size_t bytes) {
  if (stream != nullptr) CallOf(stream)->OnDataFramed(bytes);
}

void ServerTransport::ReleaseCall(ServerCall* call) {
  free_calls_.push_back(call);
  --active_calls_;
  if (active_calls_ == 0) {
    idle_since_ = std::chrono::steady_clock::now();
    if (server_.options().max_connection_idle.count() > 0 && !connection_done_) {
      lifetime_timer_.cancel();  // re-armed from the idle moment
      ArmIdleTimer();
    }
    if (!trim_armed_) ArmCallTrim();
  }
  MaybeDestroy();
}

// At most one arming per second and connection, and only once its calls are all done: a
// connection serving call after call pays one timer a second, not one per call.
void ServerTransport::ArmCallTrim() {
  if (connection_done_) return;
  trim_armed_ = true;
  calls_begun_at_arm_ = calls_begun_;
  AddPendingOp();
  trim_timer_.expires_after(kCallTrimDelay);
  trim_timer_.async_wait([this](const asio::error_code& ec) {
    trim_armed_ = false;
    if (!ec) OnCallTrimTimer();
    RemovePendingOp();
  });
}

void ServerTransport::OnCallTrimTimer() {
  if (connection_done_ || active_calls_ > 0) return;  // the next release re-arms
  if (calls_begun_ != calls_begun_at_arm_) {
    ArmCallTrim();  // calls came and went meanwhile: look again later
    return;
  }
  // No call in a second: every call object is free. Those an asynchronous operation still
  // refers to (a cancelled deadline wait whose completion has not run) are kept for next time.
  std::erase_if(free_calls_, [](ServerCall* call) { return call->disposable(); });
  std::erase_if(calls_, [](const std::unique_ptr<ServerCall>& call) {
    return call->disposable();
  });
  if (calls_.empty()) {
    calls_.shrink_to_fit();  // the vectors' own memory goes too
    free_calls_.shrink_to_fit();
  } else {
    ArmCallTrim();
  }
}

void ServerTransport::HandlerStarted() {
  --admitted_;
  ++running_handlers_;
}

void ServerTransport::AdmissionEnded() noexcept {
  --admitted_;
  server_.OnHandlerFinished();
}

void ServerTransport::HandlerFinished() {
  --running_handlers_;
  server_.OnHandlerFinished();
}

void ServerTransport::Defer(ServerCall* call) {
  call->next_deferred = nullptr;
  if (deferred_tail_ != nullptr) {
    deferred_tail_->next_deferred = call;
  } else {
    deferred_head_ = call;
  }
  deferred_tail_ = call;
}

void ServerTransport::OnSessionStepDone() {
  while (deferred_head_ != nullptr) {
    ServerCall* call = deferred_head_;
    deferred_head_ = call->next_deferred;
    if (deferred_head_ == nullptr) deferred_tail_ = nullptr;
    call->next_deferred = nullptr;
    call->RunDeferred();
  }
}

void ServerTransport::OnConnectionDone(const Status& /*reason*/) {
  connection_done_ = true;
  lifetime_timer_.cancel();
  trim_timer_.cancel();
  notice_timer_.cancel();
  // Work deferred by the last session step still runs (it may be a handler start that now
  // finds its call ended), so that every call is released.
  OnSessionStepDone();
  // Streams still open die with the connection; their calls end as cancelled.
  for (const auto& call : calls_) call->OnConnectionLost();
  stats_.End();
  MaybeDestroy();
}

void ServerTransport::MaybeDestroy() {
  if (!connection_done_ || active_calls_ > 0 || pending_ops_ > 0 || destroying_) return;
  destroying_ = true;
  // Destroying it from inside a call's callback would pull the rug from under it: the server,
  // its owner, does it from a fresh handler.
  asio::post(connection_.io_context(), [server = &server_, self = this] {
    server->OnTransportDone(self);
  });
}

}  // namespace rill::internal
