#include "src/rpc/subchannel.h"

#include <fcntl.h>

#include <asio/post.hpp>
#include <random>

#include "src/rpc/channel_impl.h"
#include "src/rpc/client_transport.h"
#include "src/rpc/in_process_acceptor.h"
#include "src/transport/address.h"

namespace rill::internal {

rill::channelz::ConnectivityState ChannelzState(ConnectivityState state) {
  using C = rill::channelz::ConnectivityState;
  switch (state) {
    case ConnectivityState::kIdle:
      return C::kIdle;
    case ConnectivityState::kConnecting:
      return C::kConnecting;
    case ConnectivityState::kReady:
      return C::kReady;
    case ConnectivityState::kTransientFailure:
      return C::kTransientFailure;
    case ConnectivityState::kShutdown:
      return C::kShutdown;
  }
  return C::kUnknown;
}

Subchannel::Subchannel(ChannelImpl& channel, Endpoint endpoint)
    : channel_(channel),
      endpoint_(std::move(endpoint)),
      name_(channel.in_process() ? std::string("inprocess") : PeerName(endpoint_)),
      address_(NumericAddress(endpoint_)),
      connect_timer_(channel.io_context()),
      backoff_timer_(channel.io_context()) {
  channelz_.name = name_;
  channelz_.target = name_;
  channelz::Registry::Get().Register(channelz_, &channel.channelz());
}

Subchannel::~Subchannel() = default;

void Subchannel::SetState(ConnectivityState state) {
  if (state == state_) return;
  state_ = state;
  channelz_.SetState(ChannelzState(state));
  if (!shut_down_) channel_.OnSubchannelState(*this);
}

void Subchannel::StopConnecting() {
  ++attempt_;  // handlers of the attempt under way find a newer one and do nothing
  asio::error_code ignored;
  connect_timer_.cancel();
  backoff_timer_.cancel();
  if (connecting_socket_) connecting_socket_->close(ignored);
  connecting_socket_.reset();
  transport_ = nullptr;
}

void Subchannel::DropUse() {
  if (--uses_ > 0) return;
  // Nobody picks this address any more: stop trying, and let the connections go once their
  // calls are done.
  StopConnecting();
  for (const auto& transport : transports_) transport->CloseWhenIdle();
  state_ = ConnectivityState::kIdle;
  channelz_.SetState(ChannelzState(state_));
}

void Subchannel::Shutdown(const Status& reason) {
  shut_down_ = true;
  StopConnecting();
  // Closing a connection ends its calls (ClientCall::OnConnectionLost).
  for (const auto& transport : transports_) transport->Close(reason);
  SetState(ConnectivityState::kShutdown);
}

void Subchannel::RequestConnection() {
  if (state_ != ConnectivityState::kIdle || shut_down_ || unused()) return;
  SetState(ConnectivityState::kConnecting);
  const uint64_t attempt = ++attempt_;
  if (channel_.in_process()) {
    // Completes from a fresh handler, as a socket's connect would: the caller may be a call
    // being dispatched, which a failure completes.
    asio::post(channel_.io_context(), [this, attempt, holder = channel_.gate().Enter()] {
      if (attempt != attempt_ || state_ != ConnectivityState::kConnecting) return;
      StatusOr<PipeEnd> pipe = channel_.in_process()->Connect();
      if (!pipe.ok()) {
        OnConnectFailed(pipe.status());
        return;
      }
      OnConnected(std::move(*pipe));
    });
    return;
  }
  connect_timer_.expires_after(channel_.options().min_connect_timeout);
  connect_timer_.async_wait(
      [this, attempt, holder = channel_.gate().Enter()](const asio::error_code& ec) {
        if (!ec && attempt == attempt_ && connecting_socket_) {
          asio::error_code ignored;
          connecting_socket_->close(ignored);  // the pending connect completes with an error
        }
      });
  connecting_socket_ =
      std::make_unique<asio::generic::stream_protocol::socket>(channel_.io_context());
  asio::error_code open_error;
  connecting_socket_->open(endpoint_.protocol(), open_error);
  if (open_error) {
    // Reported from a fresh handler, as a failed connect would be.
    connect_timer_.cancel();
    asio::post(channel_.io_context(), [this, attempt, message = open_error.message(),
                                       holder = channel_.gate().Enter()] {
      if (attempt != attempt_ || state_ != ConnectivityState::kConnecting) return;
      OnConnectFailed(Status(StatusCode::kUnavailable, name_ + ": " + message));
    });
    return;
  }
  // Not inherited by programs this process starts.
  ::fcntl(connecting_socket_->native_handle(), F_SETFD, FD_CLOEXEC);
  connecting_socket_->async_connect(
      endpoint_, [this, attempt, holder = channel_.gate().Enter()](const asio::error_code& ec) {
        if (attempt != attempt_ || state_ != ConnectivityState::kConnecting) return;
        connect_timer_.cancel();
        if (ec) {
          const bool timed_out = !connecting_socket_->is_open();
          OnConnectFailed(Status(StatusCode::kUnavailable,
                                 name_ + ": " + (timed_out ? "connect timed out" : ec.message())));
          return;
        }
        OnConnected(std::move(*connecting_socket_));
        connecting_socket_.reset();
      });
}

void Subchannel::OnConnected(asio::generic::stream_protocol::socket socket) {
  StartTransport(std::make_unique<ClientTransport>(*this, std::move(socket),
                                                   channel_.gate().Enter()));
}

void Subchannel::OnConnected(PipeEnd pipe) {
  StartTransport(
      std::make_unique<ClientTransport>(*this, std::move(pipe), channel_.gate().Enter()));
}

void Subchannel::StartTransport(std::unique_ptr<ClientTransport> transport) {
  transports_.push_back(std::move(transport));
  transport_ = transports_.back().get();
  transport_->Start();
  // A TLS connection is ready once its handshake is done (OnTransportReady); until then calls
  // keep waiting and a failure counts as a failed attempt (OnTransportDone).
  if (!channel_.secure()) OnTransportReady(transport_);
}

void Subchannel::OnTransportReady(ClientTransport* transport) {
  if (transport != transport_ || state_ != ConnectivityState::kConnecting) return;
  current_backoff_ = std::chrono::milliseconds(0);
  SetState(ConnectivityState::kReady);
}

void Subchannel::OnConnectFailed(const Status& status) {
  failure_ = status;
  connecting_socket_.reset();
  transport_ = nullptr;
  SetState(ConnectivityState::kTransientFailure);
  if (shut_down_ || unused()) return;
  const uint64_t attempt = attempt_;
  backoff_timer_.expires_after(NextBackoff());
  backoff_timer_.async_wait(
      [this, attempt, holder = channel_.gate().Enter()](const asio::error_code& ec) {
        if (ec || attempt != attempt_ || state_ != ConnectivityState::kTransientFailure) return;
        SetState(ConnectivityState::kIdle);
      });
}

std::chrono::milliseconds Subchannel::NextBackoff() {
  const ChannelOptions& options = channel_.options();
  if (current_backoff_.count() == 0) {
    current_backoff_ = options.initial_backoff;
  } else {
    current_backoff_ = std::min(
        options.max_backoff,
        std::chrono::milliseconds(static_cast<int64_t>(
            static_cast<double>(current_backoff_.count()) * options.backoff_multiplier)));
  }
  std::uniform_real_distribution<double> jitter(-options.backoff_jitter, options.backoff_jitter);
  return std::chrono::milliseconds(static_cast<int64_t>(
      static_cast<double>(current_backoff_.count()) * (1 + jitter(channel_.rng()))));
}

void Subchannel::OnTransportGoaway(ClientTransport* transport) {
  if (transport != transport_) return;
  transport_ = nullptr;
  if (state_ == ConnectivityState::kReady) SetState(ConnectivityState::kIdle);
}

void Subchannel::OnTransportDone(ClientTransport* transport, const Status& reason) {
  if (transport == transport_) {
    transport_ = nullptr;
    if (state_ == ConnectivityState::kReady) {
      SetState(ConnectivityState::kIdle);
    } else if (state_ == ConnectivityState::kConnecting) {
      OnConnectFailed(reason);  // the TLS handshake failed: a failed connection attempt
    }
  }
  // Called from the transport's own callback: it is destroyed from a fresh handler, and so is
  // this subchannel once nothing is left of it.
  asio::post(channel_.io_context(), [this, transport, holder = channel_.gate().Enter()] {
    std::erase_if(transports_, [transport](const auto& t) { return t.get() == transport; });
    if (finished()) channel_.OnSubchannelFinished(this);
  });
}

}  // namespace rill::internal
