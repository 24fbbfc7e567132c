#include "src/rpc/channel_impl.h"

#include <asio/connect.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>

#include "rill/log.h"
#include "src/rpc/client_call.h"
#include "src/rpc/client_transport.h"
#include "src/rpc/codec.h"
#include "src/rpc/in_process_acceptor.h"
#include "src/transport/tls_context.h"

namespace rill::internal {
namespace {

constexpr std::string_view kRillUserAgent = "rill-cpp/0.1.0";

asio::io_context& ReactorFor(const ChannelOptions& options, std::unique_ptr<ReactorPool>& owned) {
  if (options.reactors != nullptr) return options.reactors->Next();
  owned = std::make_unique<ReactorPool>(ReactorPool::Options{.threads = 1, .cpus = {}});
  return owned->reactor(0);
}

}  // namespace

ChannelImpl::OwnedReactors::~OwnedReactors() { ReleaseReactorPool(std::move(pool)); }

ChannelImpl::ChannelImpl(std::string target, Address address, ChannelOptions options,
                         std::shared_ptr<ChannelCredentials> credentials)
    : target_(std::move(target)),
      address_(std::move(address)),
      options_(std::move(options)),
      io_context_(&ReactorFor(options_, owned_.pool)),
      pool_(options_.buffer_pool != nullptr ? options_.buffer_pool : &DefaultBufferPool()),
      compressors_(options_.compressors),
      credentials_(std::move(credentials)),
      resolver_(*io_context_),
      connect_timer_(*io_context_),
      backoff_timer_(*io_context_),
      reactor_ref_(this) {
  keepalive_time_ = options_.keepalive_time;
  std::string_view name_override;
  if (credentials_ != nullptr && credentials_->secure()) {
    tls_ = CredentialsAccess::Context(*credentials_);
    name_override = credentials_->server_name_override();
    tls_verify_name_ = !name_override.empty()                  ? std::string(name_override)
                       : address_.kind == Address::Kind::kUnix ? std::string("localhost")
                                                               : address_.host;
  }
  authority_ = !options_.authority.empty() ? options_.authority
               : !name_override.empty()    ? std::string(name_override)
                                           : address_.Authority();
  user_agent_ = options_.user_agent_prefix.empty()
                    ? std::string(kRillUserAgent)
                    : options_.user_agent_prefix + " " + std::string(kRillUserAgent);
  channelz_.name = target_;
  channelz_.target = target_;
  subchannel_.name = target_;
  subchannel_.target = target_;
  channelz::Registry::Get().Register(channelz_);
  channelz::Registry::Get().Register(subchannel_, &channelz_);
}

ChannelImpl::~ChannelImpl() = default;

void ChannelImpl::Close(bool wait) {
  {
    std::lock_guard lock(close_mu_);
    closer_waits_ = wait;
  }
  asio::post(*io_context_, [this, holder = gate_.Enter()] { CloseOnReactor(); });
  if (!wait) return;
  std::unique_lock lock(close_mu_);
  close_cv_.wait(lock, [this] { return drained_; });
  lock.unlock();
  reactor_ref_.reset();  // never the last: the caller still holds its own
}

void ChannelImpl::CloseOnReactor() {
  SetState(State::kShutdown);
  asio::error_code ignored;
  resolver_.cancel();
  connect_timer_.cancel();
  backoff_timer_.cancel();
  if (connecting_socket_) connecting_socket_->close(ignored);
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) call->Fail(Status(StatusCode::kCancelled, "channel closed"));
  // Closing a connection ends its calls with CANCELLED (ClientCall::OnConnectionLost).
  for (const auto& transport : transports_) {
    transport->Close(Status(StatusCode::kCancelled, "channel closed"));
  }
  transport_ = nullptr;
  // Once nothing runs on the reactor for this channel any more, its own reference goes, from a
  // fresh handler (the last hold may be released deep inside a call's code).
  gate_.Close([this] {
    asio::post(*io_context_, [this] {
      std::unique_lock lock(close_mu_);
      drained_ = true;
      if (closer_waits_) {
        close_cv_.notify_all();
        return;  // the closer drops reactor_ref_
      }
      lock.unlock();
      reactor_ref_.reset();
    });
  });
}

void ChannelImpl::SetState(State state) {
  state_ = state;
  using rill::channelz::ConnectivityState;
  const ConnectivityState shown = state == State::kIdle         ? ConnectivityState::kIdle
                                  : state == State::kConnecting ? ConnectivityState::kConnecting
                                  : state == State::kReady      ? ConnectivityState::kReady
                                  : state == State::kBackoff ? ConnectivityState::kTransientFailure
                                                             : ConnectivityState::kShutdown;
  channelz_.SetState(shown);
  subchannel_.SetState(shown);
  std::lock_guard lock(state_mu_);
  published_state_ = state;
  state_cv_.notify_all();
}

void ChannelImpl::StartUnary(const MethodDescriptor& method, ClientContext& context,
                             const google::protobuf::MessageLite& request,
                             google::protobuf::MessageLite* response,
                             detail::UnaryCompletion done) {
  // Serialized here, on the caller's thread: the caller may reuse or free `request` as soon as
  // this returns. The compressor is the context's choice (Prepare() checks it exists).
  BufferSlice bytes;
  Compressor* compressor = nullptr;
  const std::string_view compression = context.compression();
  if (!compression.empty() && compression != "identity") {
    compressor = compressors_.Find(compression);
  }
  Status encoded = EncodeMessage(request, compressor, options_.min_compress_size,
                                 options_.max_send_message_size, *pool_, bytes);
  auto start = [this, &method, &context, response, bytes = std::move(bytes),
                encoded = std::move(encoded), done = std::move(done)](bool inline_start) mutable {
    ClientCall* call = AcquireCall();
    call->InitUnary(method, context, std::move(bytes), response, std::move(done));
    call->set_starting(inline_start);
    Status status = encoded.ok() ? call->Prepare() : std::move(encoded);
    call->Admit(gate_.Enter());
    if (status.ok()) {
      Dispatch(call);
    } else {
      call->Fail(std::move(status));
    }
    call->set_starting(false);
  };
  if (OnReactor()) {
    start(/*inline_start=*/true);
  } else {
    asio::post(*io_context_, [start = std::move(start), holder = gate_.Enter()]() mutable {
      start(/*inline_start=*/false);
    });
  }
}

ClientCall* ChannelImpl::AcquireCall() {
  if (!free_calls_.empty()) {
    ClientCall* call = free_calls_.back();
    free_calls_.pop_back();
    call->ResetRefs(1);
    return call;
  }
  calls_.push_back(std::make_unique<ClientCall>(*this));
  return calls_.back().get();
}

void ChannelImpl::RecycleCall(ClientCall* call) { free_calls_.push_back(call); }

void ChannelImpl::OnCallDone(ClientCall* call) {
  // A call that completed while waiting for a connection (its deadline passed, it was
  // cancelled) leaves the queue now: the object is about to be reused or deleted, and a stale
  // entry would start it again.
  if (!waiting_.empty()) std::erase(waiting_, call);
}

void ChannelImpl::Dispatch(ClientCall* call) {
  if (call->NeedsCredentials() && state_ != State::kShutdown) {
    call->ApplyCredentials();  // dispatches again once the plugin answered
    return;
  }
  switch (state_) {
    case State::kShutdown:
      call->Fail(Status(StatusCode::kCancelled, "channel closed"));
      return;
    case State::kReady:
      if (transport_ != nullptr && transport_->accepting_calls()) {
        call->StartOn(*transport_);
        return;
      }
      SetState(State::kIdle);
      transport_ = nullptr;
      break;
    case State::kBackoff:
      if (!options_.wait_for_ready) {
        call->Fail(Status(StatusCode::kUnavailable, "failed to connect to " + target_ + ": " +
                                                        std::string(last_failure_.message())));
        return;
      }
      break;
    case State::kIdle:
    case State::kConnecting:
      break;
  }
  waiting_.push_back(call);
  if (state_ == State::kIdle) Connect();
}

void ChannelImpl::Connect() {
  SetState(State::kConnecting);
  const uint64_t attempt = ++connect_attempt_;
  if (in_process_ != nullptr) {
    // Completes from a fresh handler, as a socket's connect would: the caller may be a call
    // being dispatched, which a failure completes.
    asio::post(*io_context_, [this, attempt, holder = gate_.Enter()] {
      if (attempt != connect_attempt_ || state_ != State::kConnecting) return;
      StatusOr<PipeEnd> pipe = in_process_->Connect();
      if (!pipe.ok()) {
        OnConnectFailed(pipe.status());
        return;
      }
      OnConnected(std::move(*pipe));
    });
    return;
  }
  connect_timer_.expires_after(options_.min_connect_timeout);
  connect_timer_.async_wait([this, attempt, holder = gate_.Enter()](const asio::error_code& ec) {
    if (!ec && attempt == connect_attempt_ && state_ == State::kConnecting && connecting_socket_) {
      asio::error_code ignored;
      connecting_socket_->close(ignored);  // the pending connect completes with an error
    }
  });
  endpoints_.clear();
  if (address_.kind == Address::Kind::kUnix) {
    endpoints_.push_back(asio::local::stream_protocol::endpoint(address_.path));
    ConnectNext(attempt, 0);
    return;
  }
  resolver_.async_resolve(
      address_.host, std::to_string(address_.port),
      [this, attempt, holder = gate_.Enter()](const asio::error_code& ec,
                                              asio::ip::tcp::resolver::results_type results) {
        if (attempt != connect_attempt_ || state_ != State::kConnecting) return;
        if (ec || results.empty()) {
          connect_timer_.cancel();
          OnConnectFailed(Status(StatusCode::kUnavailable,
                                 "cannot resolve " + address_.host + ": " + ec.message()));
          return;
        }
        std::vector<asio::generic::stream_protocol::endpoint> endpoints;
        for (const auto& entry : results) endpoints.emplace_back(entry.endpoint());
        endpoints_ = InterleaveFamilies(std::move(endpoints));
        ConnectNext(attempt, 0);
      });
}

// Tries endpoints_[index], then the next ones in turn until one connects.
void ChannelImpl::ConnectNext(uint64_t attempt, size_t index) {
  connecting_socket_ = std::make_unique<asio::generic::stream_protocol::socket>(*io_context_);
  connecting_socket_->async_connect(
      endpoints_[index],
      [this, attempt, index, holder = gate_.Enter()](const asio::error_code& ec) {
        if (attempt != connect_attempt_ || state_ != State::kConnecting) return;
        if (ec) {
          // The connect timer closes the socket when the whole attempt took too long: that
          // ends the attempt rather than moving on.
          const bool timed_out = !connecting_socket_->is_open();
          if (!timed_out && index + 1 < endpoints_.size()) {
            ConnectNext(attempt, index + 1);
            return;
          }
          connect_timer_.cancel();
          std::string message =
              endpoints_.size() > 1
                  ? "no address of " + address_.host + " accepted a connection (last: " +
                        ec.message() + ")"
                  : ec.message();
          OnConnectFailed(Status(StatusCode::kUnavailable, std::move(message)));
          return;
        }
        connect_timer_.cancel();
        OnConnected(std::move(*connecting_socket_));
        connecting_socket_.reset();
      });
}

void ChannelImpl::OnConnected(asio::generic::stream_protocol::socket socket) {
  StartTransport(std::make_unique<ClientTransport>(*this, std::move(socket), gate_.Enter()));
}

void ChannelImpl::OnConnected(PipeEnd pipe) {
  StartTransport(std::make_unique<ClientTransport>(*this, std::move(pipe), gate_.Enter()));
}

void ChannelImpl::StartTransport(std::unique_ptr<ClientTransport> transport) {
  transports_.push_back(std::move(transport));
  transport_ = transports_.back().get();
  transport_->Start();
  // A TLS connection is ready once its handshake is done (OnTransportReady); until then calls
  // keep waiting and a failure counts as a failed attempt (OnTransportDone).
  if (!secure()) OnTransportReady(transport_);
}

void ChannelImpl::OnTransportReady(ClientTransport* transport) {
  if (transport != transport_ || state_ != State::kConnecting) return;
  SetState(State::kReady);
  want_connection_ = false;
  current_backoff_ = std::chrono::milliseconds(0);
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) call->StartOn(*transport_);
}

void ChannelImpl::OnConnectFailed(const Status& status) {
  last_failure_ = status;
  connecting_socket_.reset();
  SetState(State::kBackoff);
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) {
    if (options_.wait_for_ready) {
      waiting_.push_back(call);
    } else {
      call->Fail(Status(StatusCode::kUnavailable,
                        "failed to connect to " + target_ + ": " + std::string(status.message())));
    }
  }
  ScheduleReconnect();
}

std::chrono::milliseconds ChannelImpl::NextBackoff() {
  if (current_backoff_.count() == 0) {
    current_backoff_ = options_.initial_backoff;
  } else {
    current_backoff_ = std::min(
        options_.max_backoff,
        std::chrono::milliseconds(static_cast<int64_t>(
            static_cast<double>(current_backoff_.count()) * options_.backoff_multiplier)));
  }
  std::uniform_real_distribution<double> jitter(-options_.backoff_jitter, options_.backoff_jitter);
  return std::chrono::milliseconds(
      static_cast<int64_t>(static_cast<double>(current_backoff_.count()) * (1 + jitter(rng_))));
}

void ChannelImpl::ScheduleReconnect() {
  backoff_timer_.expires_after(NextBackoff());
  backoff_timer_.async_wait([this, holder = gate_.Enter()](const asio::error_code& ec) {
    if (ec || state_ != State::kBackoff) return;
    SetState(State::kIdle);
    if (!waiting_.empty() || want_connection_) Connect();
  });
}

void ChannelImpl::OnTransportGoaway(ClientTransport* transport) {
  if (transport == transport_) {
    transport_ = nullptr;
    if (state_ == State::kReady) SetState(State::kIdle);
  }
}

void ChannelImpl::OnTransportDone(ClientTransport* transport, const Status& reason) {
  if (transport == transport_) {
    transport_ = nullptr;
    if (state_ == State::kReady) SetState(State::kIdle);
    // The TLS handshake failed: a failed connection attempt.
    if (state_ == State::kConnecting) OnConnectFailed(reason);
  }
  // Called from the transport's own callback: it is destroyed from a fresh handler.
  asio::post(*io_context_, [this, transport, holder = gate_.Enter()] {
    std::erase_if(transports_, [transport](const auto& t) { return t.get() == transport; });
  });
}

bool ChannelImpl::WaitForConnected(std::chrono::steady_clock::time_point deadline) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Channel::WaitForConnected() on a reactor thread would stall it; it returns false");
    return false;
  }
  asio::post(*io_context_, [this, holder = gate_.Enter()] {
    want_connection_ = true;
    if (state_ == State::kIdle) Connect();
  });
  std::unique_lock lock(state_mu_);
  return state_cv_.wait_until(lock, deadline, [this] {
    return published_state_ == State::kReady || published_state_ == State::kShutdown;
  }) && published_state_ == State::kReady;
}

}  // namespace rill::internal
