// Subchannel: a channel's connections to one resolved address.
//
// States (gRPC's subchannel connectivity): IDLE until its load-balancing policy asks for a
// connection; CONNECTING while the TCP connect (and TLS handshake) runs, bounded by the
// channel's min_connect_timeout; READY while it has a connection that takes new calls;
// TRANSIENT_FAILURE after a failed attempt, for one backoff delay (gRPC's connection-backoff
// spec: initial, ×multiplier, ±jitter, capped), after which it is IDLE again and the policy
// decides whether to retry. A READY connection that receives GOAWAY or breaks takes the
// subchannel back to IDLE; its calls finish on it while new ones go elsewhere. Each change is
// reported to the channel (ChannelImpl::OnSubchannelState).
//
// Ownership: the channel owns its subchannels (one per distinct address, shared by the
// policies that use it, counted by AddUse/DropUse). A subchannel nobody uses any more stops
// connecting; the channel destroys it once its last connection is gone.
//
// Thread safety: reactor-confined (the channel's reactor).
#ifndef RILL_SRC_RPC_SUBCHANNEL_H_
#define RILL_SRC_RPC_SUBCHANNEL_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rill/channel.h"
#include "rill/load_balancing.h"
#include "rill/status.h"
#include "src/base/channelz.h"

namespace rill::internal {

class ChannelImpl;
class ClientTransport;
class PipeEnd;

// The state as channelz reports it.
rill::channelz::ConnectivityState ChannelzState(ConnectivityState state);

class Subchannel final : public LbSubchannel {
 public:
  using Endpoint = asio::generic::stream_protocol::endpoint;

  Subchannel(ChannelImpl& channel, Endpoint endpoint);
  ~Subchannel();
  Subchannel(const Subchannel&) = delete;
  Subchannel& operator=(const Subchannel&) = delete;

  [[nodiscard]] ChannelImpl& channel() const noexcept { return channel_; }
  [[nodiscard]] const Endpoint& endpoint() const noexcept { return endpoint_; }
  // "ipv4:127.0.0.1:5000" and the like.
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // "127.0.0.1:5000" and the like (the resolver's form).
  [[nodiscard]] const std::string& address() const noexcept override { return address_; }
  [[nodiscard]] ConnectivityState state() const noexcept override { return state_; }
  // Why the last connection attempt failed (TRANSIENT_FAILURE).
  [[nodiscard]] const Status& failure() const noexcept override { return failure_; }
  // The connection new calls go to; non-null exactly when READY.
  [[nodiscard]] ClientTransport* ready_transport() const noexcept {
    return state_ == ConnectivityState::kReady ? transport_ : nullptr;
  }
  [[nodiscard]] channelz::ChannelNode& channelz() noexcept { return channelz_; }

  // Starts connecting when IDLE; otherwise does nothing.
  void RequestConnection() override;

  // Use counting by the channel's policies; at zero the subchannel stops connecting, and its
  // connections close once their calls are done.
  void AddUse() noexcept { ++uses_; }
  void DropUse();
  [[nodiscard]] bool unused() const noexcept { return uses_ == 0; }
  // Nothing is left: no use, no connection, no attempt.
  [[nodiscard]] bool finished() const noexcept { return uses_ == 0 && transports_.empty(); }

  // The channel closes: connections end (their calls CANCELLED), attempts and timers stop.
  void Shutdown(const Status& reason);

  // From the subchannel's connections (ClientTransport).
  void OnTransportReady(ClientTransport* transport);
  void OnTransportGoaway(ClientTransport* transport);
  void OnTransportDone(ClientTransport* transport, const Status& reason);

 private:
  void SetState(ConnectivityState state);
  // Ends the attempt and the backoff under way; the ready connection takes no new calls here.
  void StopConnecting();
  void OnConnected(asio::generic::stream_protocol::socket socket);
  void OnConnected(PipeEnd pipe);
  void StartTransport(std::unique_ptr<ClientTransport> transport);
  void OnConnectFailed(const Status& status);
  std::chrono::milliseconds NextBackoff();

  ChannelImpl& channel_;
  const Endpoint endpoint_;
  const std::string name_;
  const std::string address_;
  channelz::ChannelNode channelz_{/*subchannel=*/true};  // before the connections
  ConnectivityState state_ = ConnectivityState::kIdle;
  Status failure_;
  int uses_ = 0;
  bool shut_down_ = false;

  ClientTransport* transport_ = nullptr;  // ready or handshaking
  std::vector<std::unique_ptr<ClientTransport>> transports_;  // every live connection
  std::unique_ptr<asio::generic::stream_protocol::socket> connecting_socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer backoff_timer_;
  std::chrono::milliseconds current_backoff_{0};
  uint64_t attempt_ = 0;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_SUBCHANNEL_H_
