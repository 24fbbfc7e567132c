#include "src/rpc/client_transport.h"

#include "src/rpc/channel_impl.h"
#include "src/rpc/client_call.h"
#include "src/rpc/subchannel.h"

namespace rill::internal {
namespace {

Http2Connection::Options ConnectionOptions(const ChannelImpl& channel) {
  const ChannelOptions& o = channel.options();
  const std::chrono::milliseconds keepalive_time = channel.keepalive_time();
  Http2Connection::Options options;
  if (channel.secure()) {
    options.tls = channel.tls();
    options.tls_verify_name = channel.tls_verify_name();
    options.handshake_timeout = o.min_connect_timeout;  // the TLS handshake is part of connecting
  }
  options.http2.server = false;
  options.read_block_size = o.read_block_size;
  options.write_buffer_size = o.write_buffer_size;
  if (keepalive_time.count() > 0) {
    options.keepalive_time = std::max(keepalive_time, std::chrono::milliseconds(10000));
    options.keepalive_timeout = o.keepalive_timeout;
    options.keepalive_without_streams = o.keepalive_without_calls;
  }
  if (o.initial_stream_window != 0) options.http2.initial_stream_window = o.initial_stream_window;
  // A window the user chose is static; otherwise it follows the bandwidth-delay product.
  options.dynamic_window = o.initial_stream_window == 0 && o.initial_connection_window == 0;
  if (o.initial_connection_window != 0) {
    options.http2.initial_connection_window = o.initial_connection_window;
  }
  return options;
}

ClientCall* CallOf(void* stream) { return static_cast<ClientCall*>(stream); }

}  // namespace

ClientTransport::ClientTransport(Subchannel& subchannel, Http2Connection::Socket socket,
                                 Gate::Holder holder)
    : subchannel_(subchannel),
      channel_(subchannel.channel()),
      connection_(std::move(socket), ConnectionOptions(channel_), this, channel_.pool(), this),
      holder_(std::move(holder)) {
  connection_.AttachChannelz(&channelz_);
  channelz_.name = channelz_.remote_name;
  channelz::Registry::Get().Register(channelz_, &subchannel.channelz());
}

ClientTransport::ClientTransport(Subchannel& subchannel, PipeEnd pipe, Gate::Holder holder)
    : subchannel_(subchannel),
      channel_(subchannel.channel()),
      connection_(std::move(pipe), channel_.io_context(), ConnectionOptions(channel_), this,
                  channel_.pool(), this),
      holder_(std::move(holder)) {
  connection_.AttachChannelz(&channelz_);
  channelz_.name = connection_.peer();
  channelz_.remote_name = connection_.peer();
  channelz::Registry::Get().Register(channelz_, &subchannel.channelz());
}

ClientTransport::~ClientTransport() = default;

void ClientTransport::Start() {
  const auto& handlers = channel_.options().stats_handlers;
  stats_.Begin(handlers.empty() ? nullptr : &handlers, /*client=*/true, connection_.peer());
  connection_.Start();
}

bool ClientTransport::StartCall(ClientCall* call) {
  if (!accepting_calls()) return false;
  call->transport_index = calls_.size();
  calls_.push_back(call);
  return true;
}

void ClientTransport::DetachCall(ClientCall* call) {
  const size_t i = call->transport_index;
  if (i >= calls_.size() || calls_[i] != call) return;
  calls_[i] = calls_.back();
  calls_[i]->transport_index = i;
  calls_.pop_back();
  if (closing_when_idle_ && calls_.empty()) {
    connection_.Close(Status(StatusCode::kUnavailable, "address no longer in use"));
  }
}

void ClientTransport::CloseWhenIdle() {
  closing_when_idle_ = true;
  if (calls_.empty()) {
    connection_.Close(Status(StatusCode::kUnavailable, "address no longer in use"));
  }
}

void ClientTransport::OnHeader(int32_t, void* stream, HeadersKind kind, std::string_view name,
                               std::string_view value) {
  if (stream != nullptr) CallOf(stream)->OnHeader(kind, name, value);
}

void ClientTransport::OnHeadersEnd(int32_t, void* stream, HeadersKind kind, bool end_stream) {
  if (stream != nullptr) CallOf(stream)->OnHeadersEnd(kind, end_stream);
}

void ClientTransport::OnData(int32_t stream_id, void* stream, Buffer payload) {
  if (stream != nullptr) {
    CallOf(stream)->OnData(std::move(payload));
  } else {
    session().Consume(stream_id, payload.size());
  }
}

void ClientTransport::OnRemoteEnd(int32_t, void* stream) {
  if (stream != nullptr) CallOf(stream)->OnRemoteEnd();
}

void ClientTransport::OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) {
  if (stream == nullptr) return;
  session().SetStreamData(stream_id, nullptr);
  CallOf(stream)->OnStreamClosed(error_code);
}

void ClientTransport::OnDataFramed(int32_t, void* stream, size_t bytes) {
  if (stream != nullptr) CallOf(stream)->OnDataFramed(bytes);
}

void ClientTransport::OnGoaway(int32_t /*last_stream_id*/, uint32_t error_code,
                               std::string_view debug_data) {
  if (error_code == kHttp2EnhanceYourCalm && debug_data == "too_many_pings") {
    channel_.OnTooManyPings();
  }
  if (goaway_) return;
  goaway_ = true;
  // Streams above last_stream_id are closed by the session (REFUSED_STREAM → UNAVAILABLE);
  // the others finish here while new calls go to a new connection.
  subchannel_.OnTransportGoaway(this);
}

void ClientTransport::Defer(ClientCall* call) {
  call->next_deferred = nullptr;
  if (deferred_tail_ != nullptr) {
    deferred_tail_->next_deferred = call;
  } else {
    deferred_head_ = call;
  }
  deferred_tail_ = call;
}

void ClientTransport::OnSessionStepDone() {
  while (deferred_head_ != nullptr) {
    ClientCall* call = deferred_head_;
    deferred_head_ = call->next_deferred;
    if (deferred_head_ == nullptr) deferred_tail_ = nullptr;
    call->next_deferred = nullptr;
    call->RunDeferred();
  }
}

void ClientTransport::OnTlsHandshakeDone() { subchannel_.OnTransportReady(this); }

void ClientTransport::OnConnectionDone(const Status& reason) {
  done_ = true;
  OnSessionStepDone();
  // Completions may start new calls; iterate over a detached list.
  std::vector<ClientCall*> calls;
  calls.swap(calls_);
  for (ClientCall* call : calls) call->OnConnectionLost(reason);
  stats_.End();
  subchannel_.OnTransportDone(this, reason);
}

}  // namespace rill::internal
