#include "src/rpc/server_transport.h"

#include <asio/post.hpp>

#include "src/rpc/server_call.h"
#include "src/rpc/server_impl.h"

namespace rill::internal {
namespace {

Http2Connection::Options ConnectionOptions(const ServerOptions& o) {
  Http2Connection::Options options;
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
  options.keepalive_timeout = o.keepalive_timeout;
  options.min_ping_interval = o.keepalive_min_ping_interval;
  options.pings_without_streams = o.permit_keepalive_without_calls;
  return options;
}

ServerCall* CallOf(void* stream) { return static_cast<ServerCall*>(stream); }

}  // namespace

ServerTransport::ServerTransport(ServerImpl& server, Http2Connection::Socket socket)
    : server_(server),
      connection_(std::move(socket), ConnectionOptions(server.options()), this, server.pool(),
                  this) {}

ServerTransport::~ServerTransport() = default;

void ServerTransport::Start() { connection_.Start(); }

void ServerTransport::BeginShutdown() {
  if (connection_.closed()) return;
  // GOAWAY with the last stream id we processed: no new streams. Once the open ones finish,
  // the session wants neither read nor write and the connection closes itself.
  session().SubmitGoaway(kHttp2NoError, "server shutting down");
  connection_.ScheduleFlush();
}

void ServerTransport::ForceClose() {
  connection_.Close(Status(StatusCode::kUnavailable, "server shut down"));
}

void ServerTransport::OnStreamBegin(int32_t stream_id) {
  ServerCall* call;
  if (!free_calls_.empty()) {
    call = free_calls_.back();
    free_calls_.pop_back();
  } else {
    calls_.push_back(std::make_unique<ServerCall>(*this));
    call = calls_.back().get();
  }
  ++active_calls_;
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

void ServerTransport::OnDataFramed(int32_t, void* stream, size_t bytes) {
  if (stream != nullptr) CallOf(stream)->OnDataFramed(bytes);
}

void ServerTransport::ReleaseCall(ServerCall* call) {
  free_calls_.push_back(call);
  --active_calls_;
  MaybeDestroy();
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
  // Work deferred by the last session step still runs (it may be a handler start that now
  // finds its call ended), so that every call is released.
  OnSessionStepDone();
  // Streams still open die with the connection; their calls end as cancelled.
  for (const auto& call : calls_) call->OnConnectionLost();
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
