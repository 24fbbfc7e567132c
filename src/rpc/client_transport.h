// ClientTransport: one client connection — an Http2Connection in client mode and the calls on
// its streams. Owned by its subchannel (which destroys it once OnConnectionDone reported it
// done); holds the channel's gate meanwhile.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_RPC_CLIENT_TRANSPORT_H_
#define RILL_SRC_RPC_CLIENT_TRANSPORT_H_

#include <vector>

#include "src/base/channelz.h"
#include "src/base/gate.h"
#include "src/http2/http2_session.h"
#include "src/rpc/call_stats.h"
#include "src/transport/http2_connection.h"

namespace rill::internal {

class ChannelImpl;
class ClientCall;
class Subchannel;

class ClientTransport final : public Http2Handler, public Http2Connection::Owner {
 public:
  ClientTransport(Subchannel& subchannel, Http2Connection::Socket socket, Gate::Holder holder);
  // In-process: over one end of a pipe whose other end a server's connection holds.
  ClientTransport(Subchannel& subchannel, PipeEnd pipe, Gate::Holder holder);
  ~ClientTransport() override;

  void Start();
  // Opens a stream for `call`; false when this connection takes no new streams.
  bool StartCall(ClientCall* call);
  // The call is done with its stream (it was closed or never opened).
  void DetachCall(ClientCall* call);
  void Close(Status reason) { connection_.Close(std::move(reason)); }
  // Takes no new calls, and closes once the ones it has are done.
  void CloseWhenIdle();

  [[nodiscard]] bool accepting_calls() const noexcept {
    return !goaway_ && !closing_when_idle_ && !connection_.closed();
  }
  [[nodiscard]] Http2Connection& connection() noexcept { return connection_; }
  [[nodiscard]] Http2Session& session() noexcept { return connection_.session(); }
  [[nodiscard]] ChannelImpl& channel() noexcept { return channel_; }
  [[nodiscard]] Subchannel& subchannel() noexcept { return subchannel_; }
  [[nodiscard]] channelz::SocketNode& channelz() noexcept { return channelz_; }
  [[nodiscard]] size_t active_calls() const noexcept { return calls_.size(); }

  // Http2Handler.
  void OnStreamBegin(int32_t stream_id) override {}
  void OnHeader(int32_t stream_id, void* stream, HeadersKind kind, std::string_view name,
                std::string_view value) override;
  void OnHeadersEnd(int32_t stream_id, void* stream, HeadersKind kind, bool end_stream) override;
  void OnData(int32_t stream_id, void* stream, Buffer payload) override;
  void OnRemoteEnd(int32_t stream_id, void* stream) override;
  void OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) override;
  void OnDataFramed(int32_t stream_id, void* stream, size_t bytes) override;
  void OnGoaway(int32_t last_stream_id, uint32_t error_code,
                std::string_view debug_data) override;

  // Http2Connection::Owner.
  void OnConnectionDone(const Status& reason) override;
  void OnSessionStepDone() override;
  void OnTlsHandshakeDone() override;

  // Queues `call` to RunDeferred() once the session's current step ends (in order).
  void Defer(ClientCall* call);

 private:
  Subchannel& subchannel_;
  ChannelImpl& channel_;
  channelz::SocketNode channelz_;  // before connection_, which reports to it
  Http2Connection connection_;
  std::vector<ClientCall*> calls_;  // each call knows its index (swap-remove, no allocation)
  ClientCall* deferred_head_ = nullptr;
  ClientCall* deferred_tail_ = nullptr;
  bool goaway_ = false;
  bool closing_when_idle_ = false;
  bool done_ = false;
  ConnectionStats stats_;
  Gate::Holder holder_;  // last: released after everything above is gone
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CLIENT_TRANSPORT_H_
