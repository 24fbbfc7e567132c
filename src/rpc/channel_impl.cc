#include "src/rpc/channel_impl.h"

#include <algorithm>
#include <asio/post.hpp>

#include "rill/log.h"
#include "src/rpc/client_call.h"
#include "src/rpc/client_transport.h"
#include "src/rpc/codec.h"
#include "src/rpc/in_process_acceptor.h"
#include "src/rpc/resolvers.h"
#include "src/rpc/subchannel.h"
#include "src/transport/address.h"
#include "src/transport/tls_context.h"

namespace rill::internal {
namespace {

constexpr std::string_view kRillUserAgent = "rill-cpp/0.1.0";

asio::io_context& ReactorFor(const ChannelOptions& options, asio::io_context* chosen,
                             std::unique_ptr<ReactorPool>& owned) {
  if (chosen != nullptr) return *chosen;
  if (options.reactors != nullptr) return options.reactors->Next();
  owned = std::make_unique<ReactorPool>(ReactorPool::Options{.threads = 1, .cpus = {}});
  return owned->reactor(0);
}

}  // namespace

// Hands a resolver's results (from any thread) to the channel's reactor until the channel
// closes.
class ChannelImpl::ResolverSink final : public ResolverListener {
 public:
  explicit ResolverSink(ChannelImpl* channel) : channel_(channel) {}

  void OnResult(ResolverResult result) override {
    std::lock_guard lock(mu_);
    if (channel_ == nullptr) return;
    asio::post(channel_->io_context(), [channel = channel_, result = std::move(result),
                                        holder = channel_->gate().Enter()]() mutable {
      channel->OnResolverResult(std::move(result));
    });
  }

  // On the reactor, before the channel's gate closes: later results go nowhere.
  void Detach() {
    std::lock_guard lock(mu_);
    channel_ = nullptr;
  }

 private:
  std::mutex mu_;
  ChannelImpl* channel_;  // guarded by mu_
};

struct ChannelImpl::StateWatcher {
  explicit StateWatcher(asio::io_context& io_context) : timer(io_context) {}
  ConnectivityState last_observed = ConnectivityState::kIdle;
  asio::steady_timer timer;
  detail::Completion<void(bool)> done;
};

ChannelImpl::OwnedReactors::~OwnedReactors() { ReleaseReactorPool(std::move(pool)); }

ChannelImpl::ChannelImpl(std::string target, ChannelOptions options,
                         std::shared_ptr<ChannelCredentials> credentials, ShardSetup shard)
    : target_(std::move(target)),
      options_(std::move(options)),
      io_context_(&ReactorFor(options_, shard.reactor, owned_.pool)),
      pool_(options_.buffer_pool != nullptr ? options_.buffer_pool : &DefaultBufferPool()),
      compressors_(options_.compressors),
      credentials_(std::move(credentials)),
      resolution_timer_(*io_context_),
      idle_timer_(*io_context_),
      reactor_ref_(this) {
  shard_ = std::move(shard);
  if (shard_.count > 1) retry_buffer_limit_ = kMaxRetryBufferBytes / shard_.count;
  keepalive_time_ = options_.keepalive_time;
  user_agent_ = options_.user_agent_prefix.empty()
                    ? std::string(kRillUserAgent)
                    : options_.user_agent_prefix + " " + std::string(kRillUserAgent);
  channelz_.name = shard_.count > 1 ? target_ + " (shard " + std::to_string(shard_.index + 1) +
                                          " of " + std::to_string(shard_.count) + ")"
                                    : target_;
  channelz_.target = target_;
  channelz::Registry::Get().Register(channelz_);
}

ChannelImpl::~ChannelImpl() = default;

StatusOr<ChannelImpl*> ChannelImpl::Create(std::string_view target, ChannelOptions options,
                                           std::shared_ptr<ChannelCredentials> credentials,
                                           ShardSetup shard) {
  auto* impl = new ChannelImpl(std::string(target), std::move(options), std::move(credentials),
                               std::move(shard));
  Status status = impl->Init(target);
  if (!status.ok()) {
    impl->Close(/*wait=*/ReactorPool::Current() == nullptr);
    impl->Unref();
    return status;
  }
  return impl;
}

ChannelImpl* ChannelImpl::CreateInProcess(ChannelOptions options,
                                          std::shared_ptr<InProcessAcceptor> acceptor) {
  auto* impl = new ChannelImpl("inprocess", std::move(options), /*credentials=*/nullptr);
  impl->in_process_ = std::move(acceptor);
  impl->lb_policy_ = "pick_first";
  impl->lb_ = MakeLoadBalancer(impl->lb_policy_, *impl, *impl->io_context_);
  impl->sink_ = std::make_shared<ResolverSink>(impl);
  // One placeholder address: the subchannel connects through the acceptor instead.
  impl->resolver_ = MakeFixedResolver({"unix:/inprocess"}, impl->sink_);
  impl->authority_ = !impl->options_.authority.empty() ? impl->options_.authority : "inprocess";
  return impl;
}

Status ChannelImpl::Init(std::string_view target) {
  std::string policy = options_.load_balancing_policy;
  if (!options_.service_config.empty()) {
    std::vector<std::string> more_policies;
    for (const auto& factory : options_.load_balancing_policies) {
      if (factory != nullptr) more_policies.emplace_back(factory->name());
    }
    StatusOr<ServiceConfig> config = ServiceConfig::Parse(options_.service_config, more_policies);
    if (!config.ok()) {
      return Status(StatusCode::kInvalidArgument,
                    "bad service config: " + std::string(config.status().message()));
    }
    service_config_ = std::move(*config);
    if (!service_config_->load_balancing_policy().empty()) {
      policy = service_config_->load_balancing_policy();
    }
    if (service_config_->retry_throttling()) {
      retry_throttle_ = shard_.retry_throttle != nullptr
                            ? shard_.retry_throttle
                            : std::make_shared<RetryThrottle>(*service_config_->retry_throttling());
    }
  }
  lb_policy_ = policy;
  lb_ = MakeLoadBalancer(policy, *this, *io_context_, options_.load_balancing_policies);
  if (lb_ == nullptr) {
    return Status(StatusCode::kInvalidArgument,
                  "unknown load-balancing policy \"" + policy + "\"");
  }
  sink_ = std::make_shared<ResolverSink>(this);
  StatusOr<TargetResolver> resolved =
      MakeTargetResolver(target, options_.resolvers, *io_context_, sink_);
  if (!resolved.ok()) return resolved.status();
  resolver_ = std::move(resolved->resolver);
  std::string_view name_override;
  if (credentials_ != nullptr && credentials_->secure()) {
    tls_ = CredentialsAccess::Context(*credentials_);
    name_override = credentials_->server_name_override();
    tls_verify_name_ = !name_override.empty() ? std::string(name_override) : resolved->tls_name;
  }
  authority_ = !options_.authority.empty() ? options_.authority
               : !name_override.empty()    ? std::string(name_override)
                                           : resolved->authority;
  return Status();
}

void ChannelImpl::Close(bool wait) {
  StartClose(wait);
  if (wait) AwaitClosed();
}

void ChannelImpl::StartClose(bool closer_waits) {
  {
    std::lock_guard lock(close_mu_);
    closer_waits_ = closer_waits;
  }
  asio::post(*io_context_, [this, holder = gate_.Enter()] { CloseOnReactor(); });
}

void ChannelImpl::AwaitClosed() {
  std::unique_lock lock(close_mu_);
  close_cv_.wait(lock, [this] { return drained_; });
  lock.unlock();
  reactor_ref_.reset();  // never the last: the caller still holds its own
}

void ChannelImpl::CloseOnReactor() {
  SetState(ConnectivityState::kShutdown);
  if (sink_ != nullptr) sink_->Detach();
  resolver_.reset();
  resolution_timer_.cancel();
  idle_timer_.cancel();
  std::vector<ClientCall*> waiting;
  waiting.swap(waiting_);
  for (ClientCall* call : waiting) call->Fail(Status(StatusCode::kCancelled, "channel closed"));
  if (lb_ != nullptr) lb_->Shutdown();
  // Closing a connection ends its calls with CANCELLED (ClientCall::OnConnectionLost).
  for (const auto& subchannel : subchannels_) {
    subchannel->Shutdown(Status(StatusCode::kCancelled, "channel closed"));
  }
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

void ChannelImpl::SetState(ConnectivityState state) {
  if (state == state_) return;
  state_ = state;
  channelz_.SetState(ChannelzState(state));
  {
    std::lock_guard lock(state_mu_);
    published_state_ = state;
    state_cv_.notify_all();
  }
  if (shard_.listener != nullptr) shard_.listener->OnShardState(shard_.index, state);
  // Watchers hear of it from fresh handlers: this may run inside a connection's callbacks.
  std::list<std::unique_ptr<StateWatcher>> watchers;
  watchers.swap(watchers_);
  for (auto& watcher : watchers) {
    asio::post(*io_context_, [done = std::move(watcher->done), holder = gate_.Enter()]() mutable {
      done(true);
    });
  }
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
  Status encoded = EncodeMessage(request, ClientPayloadAccess::request_field(context),
                                 ClientPayloadAccess::TakeRequest(context), compressor,
                                 options_.min_compress_size, options_.max_send_message_size,
                                 *pool_, bytes);
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
  // (Never once closed: the timer would hold the closing channel's gate.)
  if (--active_calls_ == 0 && options_.idle_timeout.count() > 0 && !closed()) {
    idle_since_ = std::chrono::steady_clock::now();
    if (!idle_timer_armed_) ArmIdleTimer();
  }
}

void ChannelImpl::ArmIdleTimer() {
  // One timer for the whole idle period: calls that come and go meanwhile only move
  // idle_since_, and the timer waits again for what is left.
  idle_timer_armed_ = true;
  idle_timer_.expires_at(idle_since_ + options_.idle_timeout);
  idle_timer_.async_wait([this, holder = gate_.Enter()](const asio::error_code& ec) {
    idle_timer_armed_ = false;
    if (ec || closed() || active_calls_ > 0) return;
    if (std::chrono::steady_clock::now() < idle_since_ + options_.idle_timeout) {
      ArmIdleTimer();
      return;
    }
    EnterIdle();
  });
}

void ChannelImpl::EnterIdle() {
  if (state_ == ConnectivityState::kIdle || want_connection_) return;
  // A fresh policy without addresses: its predecessor's subchannels close their connections,
  // and the next call resolves the target again.
  lb_->Shutdown();
  lb_ = MakeLoadBalancer(lb_policy_, *this, *io_context_, options_.load_balancing_policies);
  have_addresses_ = false;
  SetState(ConnectivityState::kIdle);
}

void ChannelImpl::Dispatch(ClientCall* call) {
  if (call->NeedsCredentials() && !closed()) {
    call->ApplyCredentials();  // dispatches again once the plugin answered
    return;
  }
  if (closed()) {
    call->Fail(Status(StatusCode::kCancelled, "channel closed"));
    return;
  }
  if (call->hedged()) {
    call->StartHedging();  // its attempts come back here, each a call of its own
    return;
  }
  if (TryPick(call)) return;
  waiting_.push_back(call);
  if (state_ == ConnectivityState::kIdle) ExitIdle();
}

bool ChannelImpl::TryPick(ClientCall* call) {
  if (ClientTransport* transport = lb_->Pick(call->method_path())) {
    call->StartOn(*transport);
    return true;
  }
  if (state_ == ConnectivityState::kTransientFailure && !call->wait_for_ready()) {
    call->Fail(Status(StatusCode::kUnavailable, "failed to connect to " + target_ + ": " +
                                                    std::string(failure_.message())));
    return true;
  }
  return false;
}

void ChannelImpl::ProcessWaiting() {
  if (processing_waiting_) {
    reprocess_waiting_ = true;
    return;
  }
  processing_waiting_ = true;
  do {
    reprocess_waiting_ = false;
    std::vector<ClientCall*> waiting;
    waiting.swap(waiting_);
    for (ClientCall* call : waiting) {
      if (closed()) {
        call->Fail(Status(StatusCode::kCancelled, "channel closed"));
      } else if (!TryPick(call)) {
        waiting_.push_back(call);
      }
    }
  } while (reprocess_waiting_);
  processing_waiting_ = false;
}

void ChannelImpl::ExitIdle() {
  if (closed()) return;
  if (!have_addresses_) {
    SetState(ConnectivityState::kConnecting);
    Resolve();
    return;
  }
  lb_->ExitIdle();
}

void ChannelImpl::Resolve() {
  if (closed() || resolver_ == nullptr) return;
  last_resolution_ = std::chrono::steady_clock::now();
  resolver_->Resolve();
}

void ChannelImpl::RequestReresolution() {
  if (closed() || resolution_scheduled_) return;
  const auto next = last_resolution_ + options_.min_resolution_interval;
  if (std::chrono::steady_clock::now() >= next) {
    Resolve();
    return;
  }
  resolution_scheduled_ = true;
  resolution_timer_.expires_at(next);
  resolution_timer_.async_wait([this, holder = gate_.Enter()](const asio::error_code& ec) {
    resolution_scheduled_ = false;
    if (!ec) Resolve();
  });
}

void ChannelImpl::OnResolverResult(ResolverResult result) {
  if (closed()) return;
  std::vector<asio::generic::stream_protocol::endpoint> endpoints;
  if (result.status.ok()) {
    for (const std::string& address : result.addresses) {
      StatusOr<asio::generic::stream_protocol::endpoint> endpoint =
          ParseNumericEndpoint(address);
      if (!endpoint.ok()) {
        result.status = Status(StatusCode::kUnavailable,
                               "the resolver returned a bad address: " +
                                   std::string(endpoint.status().message()));
        break;
      }
      endpoints.push_back(std::move(*endpoint));
    }
  }
  if (!result.status.ok()) {
    // The addresses the policy has stay; without any, calls fail (or wait) and the name is
    // resolved again later.
    if (!have_addresses_) {
      UpdateState(ConnectivityState::kTransientFailure,
                  Status(StatusCode::kUnavailable, std::string(result.status.message())));
      RequestReresolution();
    }
    return;
  }
  have_addresses_ = true;
  lb_->UpdateAddresses(endpoints);
}

Subchannel* ChannelImpl::AcquireSubchannel(const asio::generic::stream_protocol::endpoint& endpoint) {
  for (const auto& subchannel : subchannels_) {
    if (subchannel->endpoint() == endpoint) {
      subchannel->AddUse();
      return subchannel.get();
    }
  }
  subchannels_.push_back(std::make_unique<Subchannel>(*this, endpoint));
  subchannels_.back()->AddUse();
  return subchannels_.back().get();
}

void ChannelImpl::ReleaseSubchannel(Subchannel* subchannel) {
  subchannel->DropUse();
  if (subchannel->finished()) {
    // Never destroyed inside its own callbacks, which may be what led here. It may be gone by
    // then (released twice, destroyed by the first): found by address before it is touched.
    asio::post(*io_context_, [this, subchannel, holder = gate_.Enter()] {
      const auto it = std::find_if(subchannels_.begin(), subchannels_.end(),
                                   [subchannel](const auto& s) { return s.get() == subchannel; });
      if (it != subchannels_.end() && (*it)->finished()) OnSubchannelFinished(subchannel);
    });
  }
}

void ChannelImpl::OnSubchannelFinished(Subchannel* subchannel) {
  if (closed()) return;  // the channel's destructor takes them all
  std::erase_if(subchannels_, [subchannel](const auto& s) { return s.get() == subchannel; });
}

void ChannelImpl::OnSubchannelState(Subchannel& subchannel) {
  if (closed()) return;
  lb_->OnSubchannelState(subchannel);
}

void ChannelImpl::UpdateState(ConnectivityState state, const Status& failure) {
  if (closed()) return;
  if (state == ConnectivityState::kTransientFailure) failure_ = failure;
  if (state == ConnectivityState::kReady) want_connection_ = false;
  SetState(state);
  if (state == ConnectivityState::kIdle && (!waiting_.empty() || want_connection_)) ExitIdle();
  // The queued calls are picked for again from a fresh handler: this may run inside a
  // connection's callbacks, where no call may complete.
  if (!waiting_.empty() && !waiting_posted_) {
    waiting_posted_ = true;
    asio::post(*io_context_, [this, holder = gate_.Enter()] {
      waiting_posted_ = false;
      ProcessWaiting();
    });
  }
}

ConnectivityState ChannelImpl::GetState(bool try_to_connect) {
  ConnectivityState state;
  {
    std::lock_guard lock(state_mu_);
    state = published_state_;
  }
  if (try_to_connect && state == ConnectivityState::kIdle) {
    asio::post(*io_context_, [this, holder = gate_.Enter()] {
      if (state_ != ConnectivityState::kIdle) return;
      want_connection_ = true;
      ExitIdle();
    });
  }
  return state;
}

bool ChannelImpl::WaitForStateChange(ConnectivityState last_observed,
                                     std::chrono::steady_clock::time_point deadline) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Channel::WaitForStateChange() on a reactor thread would stall it; it returns false");
    return false;
  }
  std::unique_lock lock(state_mu_);
  return state_cv_.wait_until(lock, deadline,
                              [&] { return published_state_ != last_observed; });
}

void ChannelImpl::NotifyOnStateChange(ConnectivityState last_observed,
                                      std::chrono::steady_clock::time_point deadline,
                                      detail::Completion<void(bool)> done) {
  asio::post(*io_context_, [this, last_observed, deadline, done = std::move(done),
                            holder = gate_.Enter()]() mutable {
    if (state_ != last_observed) {
      asio::post(*io_context_, [done = std::move(done), holder = gate_.Enter()]() mutable {
        done(true);
      });
      return;
    }
    auto watcher = std::make_unique<StateWatcher>(*io_context_);
    watcher->last_observed = last_observed;
    watcher->done = std::move(done);
    StateWatcher* raw = watcher.get();
    watchers_.push_back(std::move(watcher));
    raw->timer.expires_at(deadline);
    raw->timer.async_wait([this, raw, holder = gate_.Enter()](const asio::error_code& ec) {
      if (ec) return;  // the state changed first (and the watcher is gone)
      for (auto it = watchers_.begin(); it != watchers_.end(); ++it) {
        if (it->get() != raw) continue;
        detail::Completion<void(bool)> expired = std::move(raw->done);
        watchers_.erase(it);
        expired(false);
        return;
      }
    });
  });
}

bool ChannelImpl::WaitForConnected(std::chrono::steady_clock::time_point deadline) {
  if (ReactorPool::Current() != nullptr) {
    Log(LogSeverity::kError,
        "Channel::WaitForConnected() on a reactor thread would stall it; it returns false");
    return false;
  }
  Connect();
  std::unique_lock lock(state_mu_);
  return state_cv_.wait_until(lock, deadline, [this] {
    return published_state_ == ConnectivityState::kReady ||
           published_state_ == ConnectivityState::kShutdown;
  }) && published_state_ == ConnectivityState::kReady;
}

void ChannelImpl::Connect() {
  asio::post(*io_context_, [this, holder = gate_.Enter()] {
    if (closed()) return;
    want_connection_ = true;
    if (state_ == ConnectivityState::kIdle) ExitIdle();
  });
}

}  // namespace rill::internal
