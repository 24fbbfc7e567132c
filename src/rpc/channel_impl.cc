#include "src/rpc/channel_impl.h"

#include <asio/connect.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "src/rpc/client_call.h"
#include "src/rpc/client_transport.h"

namespace rill::internal {
namespace {

constexpr std::string_view kRillUserAgent = "rill-cpp/0.1.0";

}  // namespace

ChannelImpl::ChannelImpl(std::string target, Address address, ChannelOptions options)
    : target_(std::move(target)),
      address_(std::move(address)),
      options_(std::move(options)),
      pool_(options_.buffer_pool != nullptr ? options_.buffer_pool : &DefaultBufferPool()),
      compressors_(options_.compressors),
      resolver_(options_.reactors != nullptr ? options_.reactors->Next()
                                             : (owned_reactors_ = std::make_unique<ReactorPool>(
                                                    ReactorPool::Options{.threads = 1, .cpus = {}}),
                                                owned_reactors_->reactor(0))),
      connect_timer_(resolver_.get_executor()),
      backoff_timer_(resolver_.get_executor()) {
  io_context_ = &static_cast<asio::io_context&>(resolver_.get_executor().context());
  keepalive_time_ = options_.keepalive_time;
  authority_ = options_.authority.empty() ? address_.Authority() : options_.authority;
  user_agent_ = options_.user_agent_prefix.empty()
                    ? std::string(kRillUserAgent)
                    : options_.user_agent_prefix + " " + std::string(kRillUserAgent);
}

ChannelImpl::~ChannelImpl() {
  RILL_CHECK_MSG(!OnReactor(), "a channel must not be destroyed on its own reactor thread");
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  // Shut down on the reactor, then poll there until every connection and call is gone.
  struct Drain {
    ChannelImpl* self;
    std::mutex* mu;
    std::condition_variable* cv;
    bool* done;
    void operator()() const {
      if (self->transport_ != nullptr || !self->draining_.empty() || self->live_calls_ > 0 ||
          self->pending_ops_ > 0) {
        asio::post(*self->io_context_, *this);
        return;
      }
      std::lock_guard lock(*mu);
      *done = true;
      cv->notify_all();
    }
  };
  asio::post(*io_context_, [this, drain = Drain{this, &mu, &cv, &done}] {
    state_ = State::kShutdown;
    asio::error_code ignored;
    resolver_.cancel();
    connect_timer_.cancel();
    backoff_timer_.cancel();
    if (connecting_socket_) connecting_socket_->close(ignored);
    std::vector<ClientCall*> waiting;
    waiting.swap(waiting_);
    for (ClientCall* call : waiting) {
      call->FailBeforeStart(Status(StatusCode::kUnavailable, "channel shut down"));
    }
    if (transport_ != nullptr) transport_->Close(Status(StatusCode::kUnavailable, "channel shut down"));
    for (ClientTransport* t : draining_) t->Close(Status(StatusCode::kUnavailable, "channel shut down"));
    drain();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  // An owned reactor pool stops after this body: members are destroyed in reverse order, so the
  // timers, resolver and calls (declared after owned_reactors_) go while their io_context lives.
}

template <typename Fn>
void ChannelImpl::RunOnReactor(Fn&& fn) {
  if (OnReactor()) {
    fn();
  } else {
    asio::post(*io_context_, std::forward<Fn>(fn));
  }
}

void ChannelImpl::StartUnary(const MethodDescriptor& method, ClientContext& context,
                             const google::protobuf::MessageLite& request,
                             google::protobuf::MessageLite* response,
                             detail::UnaryCompletion done) {
  RunOnReactor([this, &method, &context, &request, response, done = std::move(done)]() mutable {
    ClientCall* call = AcquireCall();
    call->InitUnary(method, context, request, response, std::move(done));
    if (call->Prepare()) Dispatch(call);
  });
}

ClientCall* ChannelImpl::AcquireCall() {
  ++live_calls_;
  if (!free_calls_.empty()) {
    ClientCall* call = free_calls_.back();
    free_calls_.pop_back();
    return call;
  }
  calls_.push_back(std::make_unique<ClientCall>(*this));
  return calls_.back().get();
}

void ChannelImpl::ReleaseCall(ClientCall* call) {
  --live_calls_;
  // A call that completed while waiting for a connection (its deadline passed, it was
  // cancelled) leaves the queue now: the object is about to be reused or deleted, and a stale
  // entry would start it a second time.
  if (!waiting_.empty()) std::erase(waiting_, call);
  if (call->pooled) {
    free_calls_.push_back(call);
  } else {
    // A stream's call: deleted from a fresh handler (this runs inside the call's own code).
    ++pending_ops_;
    asio::post(*io_context_, [this, call] {
      --pending_ops_;
      delete call;
    });
  }
}

void ChannelImpl::Dispatch(ClientCall* call) {
  switch (state_) {
    case State::kShutdown:
      call->FailBeforeStart(Status(StatusCode::kUnavailable, "channel shut down"));
      return;
    case State::kReady:
      if (transport_ != nullptr && transport_->accepting_calls()) {
        call->StartOn(*transport_);
        return;
      }
      state_ = State::kIdle;
      transport_ = nullptr;
      break;
    case State::kBackoff:
      if (!options_.wait_for_ready) {
        call->FailBeforeStart(Status(StatusCode::kUnavailable,
                                     "failed to connect to " + target_ + ": " +
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
  state_ = State::kConnecting;
  const uint64_t attempt = ++connect_attempt_;
  connecting_socket_ = std::make_unique<asio::generic::stream_protocol::socket>(*io_context_);
  ++pending_ops_;
  connect_timer_.expires_after(options_.min_connect_timeout);
  connect_timer_.async_wait([this, attempt](const asio::error_code& ec) {
    --pending_ops_;
    if (!ec && attempt == connect_attempt_ && state_ == State::kConnecting && connecting_socket_) {
      asio::error_code ignored;
      connecting_socket_->close(ignored);  // the pending connect completes with an error
    }
  });
  auto on_connect = [this, attempt](const asio::error_code& ec) {
    --pending_ops_;
    if (attempt != connect_attempt_ || state_ != State::kConnecting) return;
    connect_timer_.cancel();
    if (ec) {
      OnConnectFailed(Status(StatusCode::kUnavailable, ec.message()));
      return;
    }
    OnConnected(std::move(*connecting_socket_));
    connecting_socket_.reset();
  };
  if (address_.kind == Address::Kind::kUnix) {
    ++pending_ops_;
    connecting_socket_->async_connect(asio::local::stream_protocol::endpoint(address_.path),
                                      on_connect);
    return;
  }
  ++pending_ops_;
  resolver_.async_resolve(
      address_.host, std::to_string(address_.port),
      [this, attempt, on_connect](const asio::error_code& ec,
                                  asio::ip::tcp::resolver::results_type results) {
        --pending_ops_;
        if (attempt != connect_attempt_ || state_ != State::kConnecting) return;
        if (ec || results.empty()) {
          connect_timer_.cancel();
          OnConnectFailed(Status(StatusCode::kUnavailable,
                                 "cannot resolve " + address_.host + ": " + ec.message()));
          return;
        }
        // TODO(cleanup): try every resolved address in turn (happy eyeballs) once name
        // resolution and load balancing exist; the first address is used for now.
        ++pending_ops_;
        connecting_socket_->async_connect(results.begin()->endpoint(), on_connect);
      });
}

void ChannelImpl::OnConnected(asio::generic::stream_protocol::socket socket) {
  transport_ = new ClientTransport(*this, std::move(socket));
  transport_->Start();
  state_ = State::kReady;
  current_backoff_ = std::chrono::milliseconds(0);
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) call->StartOn(*transport_);
}

void ChannelImpl::OnConnectFailed(const Status& status) {
  last_failure_ = status;
  connecting_socket_.reset();
  state_ = State::kBackoff;
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) {
    if (options_.wait_for_ready) {
      waiting_.push_back(call);
    } else {
      call->FailBeforeStart(Status(StatusCode::kUnavailable, "failed to connect to " + target_ +
                                                                 ": " +
                                                                 std::string(status.message())));
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
  ++pending_ops_;
  backoff_timer_.expires_after(NextBackoff());
  backoff_timer_.async_wait([this](const asio::error_code& ec) {
    --pending_ops_;
    if (ec || state_ != State::kBackoff) return;
    state_ = State::kIdle;
    if (!waiting_.empty()) Connect();
  });
}

void ChannelImpl::OnTransportGoaway(ClientTransport* transport) {
  if (transport == transport_) {
    draining_.push_back(transport);
    transport_ = nullptr;
    if (state_ == State::kReady) state_ = State::kIdle;
  }
}

void ChannelImpl::OnTransportDone(ClientTransport* transport, const Status& /*reason*/) {
  if (transport == transport_) {
    transport_ = nullptr;
    if (state_ == State::kReady) state_ = State::kIdle;
  } else {
    std::erase(draining_, transport);
  }
  // Called from the transport's own callback: delete it from a fresh handler.
  ++pending_ops_;
  asio::post(*io_context_, [this, transport] {
    --pending_ops_;
    delete transport;
  });
}

bool ChannelImpl::WaitForConnected(std::chrono::steady_clock::time_point deadline) {
  RILL_CHECK_MSG(!OnReactor(), "WaitForConnected must not run on the channel's reactor");
  for (;;) {
    std::promise<State> state;
    auto future = state.get_future();
    asio::post(*io_context_, [this, &state] {
      if (state_ == State::kIdle) Connect();
      state.set_value(state_);
    });
    if (future.get() == State::kReady) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace rill::internal
