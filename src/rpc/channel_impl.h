// ChannelImpl: a client channel: its resolver, load-balancing policy, subchannels and calls.
//
// The channel is IDLE until its first call (or a request to connect). Leaving IDLE starts the
// resolver; each result goes to the load-balancing policy, which connects subchannels (one per
// address) and reports the channel's state. Calls go to the connection the policy picks; while
// there is none they wait in a queue, which is retried at every state change: calls fail
// UNAVAILABLE in TRANSIENT_FAILURE unless they wait for ready. Connections that fail or receive
// GOAWAY ask for re-resolution, at most once per min_resolution_interval.
//
// Ownership (docs/ownership.md): RefCounted. The user's Channel holds one reference, each
// streaming call's user object another, and the reactor side one of its own: everything the
// channel runs on its reactor (connections, calls, timers, posted work) holds its gate, and the
// reactor side lets go of its reference once Close() was called and the gate drained. Close()
// returns at once; a stream the user still holds keeps the channel (and its reactor) alive
// until it is dropped. An owned reactor thread is joined by whoever drops the last reference,
// or left to end by itself when that happens on a reactor thread.
//
// A user's Channel is one ChannelImpl, or several "shards" of one (ChannelShards, for
// ChannelOptions::reactor_shards), each a complete channel on a reactor of its own that shares
// only the retry throttle and a K-th of the retry buffer budget with the others, and reports its
// state changes to the set.
//
// Thread safety: StartUnary(), StartStream(), WaitForConnected(), Connect(), GetState(),
// WaitForStateChange(), NotifyOnStateChange(), Close(), StartClose() and AwaitClosed() may be
// called from any thread; everything else runs on the channel's reactor.
#ifndef RILL_SRC_RPC_CHANNEL_IMPL_H_
#define RILL_SRC_RPC_CHANNEL_IMPL_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "rill/channel.h"
#include "rill/client_call.h"
#include "rill/credentials.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "src/base/channelz.h"
#include "src/base/gate.h"
#include "src/base/ref_counted.h"
#include "rill/resolver.h"
#include "src/rpc/compressor_set.h"
#include "src/rpc/load_balancer.h"
#include "src/rpc/retry_throttle.h"
#include "src/rpc/service_config.h"

namespace rill {

// How the call paths (channel.cc, client_stream.cc) reach a Channel's implementation.
class ChannelAccess {
 public:
  static internal::ChannelImpl& Impl(Channel& channel) { return channel.impl(); }
  // The user's Channel over `impl`, which it takes the first reference of.
  static std::shared_ptr<Channel> Wrap(internal::ChannelImpl* impl) {
    return std::shared_ptr<Channel>(new Channel(impl));
  }
};

}  // namespace rill

namespace rill::internal {

class ClientCall;
class ClientTransport;
class InProcessAcceptor;
class PipeEnd;
class Subchannel;
class TlsContext;

// Hears a shard's connectivity changes (ChannelShards): called on the shard's reactor, inside
// its code, so it must only take a short lock and post.
class ShardStateListener {
 public:
  virtual ~ShardStateListener() = default;
  virtual void OnShardState(size_t shard, ConnectivityState state) = 0;
};

// What makes a ChannelImpl one of the shards of a user's Channel (rill/channel.h,
// ChannelOptions::reactor_shards) rather than the whole of it.
struct ShardSetup {
  // The reactor the shard runs on; null: as ChannelOptions::reactors says.
  asio::io_context* reactor = nullptr;
  size_t index = 0;
  size_t count = 1;
  // Told of every state change; null for a lone channel.
  std::shared_ptr<ShardStateListener> listener;
  // The throttle the shards share (made by the first one); null: the shard makes its own if
  // the service config asks for one.
  std::shared_ptr<RetryThrottle> retry_throttle;
};

class ChannelImpl : public RefCounted<ChannelImpl>, private LoadBalancer::Helper {
 public:
  // A channel to `target` (rill/resolver.h), or INVALID_ARGUMENT for a malformed target or an
  // unknown load-balancing policy. The caller owns the first reference.
  static StatusOr<ChannelImpl*> Create(std::string_view target, ChannelOptions options,
                                       std::shared_ptr<ChannelCredentials> credentials,
                                       ShardSetup shard = {});
  // An in-process channel: connections go to `acceptor`'s server through memory.
  static ChannelImpl* CreateInProcess(ChannelOptions options,
                                      std::shared_ptr<InProcessAcceptor> acceptor);
  virtual ~ChannelImpl();
  void OnLastUnref() { delete this; }

  [[nodiscard]] const std::string& target() const noexcept { return target_; }
  [[nodiscard]] const ChannelOptions& options() const noexcept { return options_; }
  [[nodiscard]] BufferPool& pool() const noexcept { return *pool_; }
  [[nodiscard]] asio::io_context& io_context() const noexcept { return *io_context_; }
  [[nodiscard]] const std::string& authority() const noexcept { return authority_; }
  [[nodiscard]] bool secure() const noexcept { return tls_ != nullptr; }
  [[nodiscard]] const std::shared_ptr<TlsContext>& tls() const noexcept { return tls_; }
  // The name the server's certificate must be valid for.
  [[nodiscard]] const std::string& tls_verify_name() const noexcept { return tls_verify_name_; }
  [[nodiscard]] const std::string& user_agent() const noexcept { return user_agent_; }
  [[nodiscard]] const CompressorSet& compressors() const noexcept { return compressors_; }
  [[nodiscard]] bool OnReactor() const noexcept { return ReactorPool::Current() == io_context_; }
  // The channel as channelz shows it (its subchannels are listed under it); the counters are
  // written on the reactor.
  [[nodiscard]] channelz::ChannelNode& channelz() noexcept { return channelz_; }
  // Null unless this is an in-process channel.
  [[nodiscard]] const std::shared_ptr<InProcessAcceptor>& in_process() const noexcept {
    return in_process_;
  }
  [[nodiscard]] std::minstd_rand& rng() noexcept { return rng_; }
  // The service config's entry for a method ("/pkg.Service/Method"), or null. Lives as long
  // as the channel.
  [[nodiscard]] const MethodConfig* MethodConfigFor(std::string_view path) const {
    return service_config_ ? service_config_->Find(path) : nullptr;
  }
  // The channel-wide budget for requests held for retries (gRPC's 16 MiB): a call that does
  // not fit is not retried per policy.
  // A channel of K shards gives each shard a K-th of it.
  bool ReserveRetryBuffer(size_t bytes) noexcept {
    if (retry_buffer_bytes_ + bytes > retry_buffer_limit_) return false;
    retry_buffer_bytes_ += bytes;
    return true;
  }
  void ReleaseRetryBuffer(size_t bytes) noexcept { retry_buffer_bytes_ -= bytes; }
  // Null unless the service config asks for retry throttling. Thread-safe.
  [[nodiscard]] RetryThrottle* retry_throttle() const noexcept { return retry_throttle_.get(); }
  [[nodiscard]] const std::shared_ptr<RetryThrottle>& shared_retry_throttle() const noexcept {
    return retry_throttle_;
  }

  // Starts a unary call (from any thread). The request is serialized before this returns.
  void StartUnary(const MethodDescriptor& method, ClientContext& context,
                  const google::protobuf::MessageLite& request,
                  google::protobuf::MessageLite* response, detail::UnaryCompletion done);
  // Starts a streaming call (from any thread); the core is usable at once, operations queue
  // until the stream exists.
  std::unique_ptr<ClientStreamCore> StartStream(const MethodDescriptor& method,
                                                ClientContext& context);

  // Blocks until connected or the deadline passes; false at once on a reactor thread.
  bool WaitForConnected(std::chrono::steady_clock::time_point deadline);
  // Starts connecting (if IDLE) and keeps the wish until READY; returns at once.
  void Connect();
  // Connectivity (rill/channel.h).
  ConnectivityState GetState(bool try_to_connect);
  bool WaitForStateChange(ConnectivityState last_observed,
                          std::chrono::steady_clock::time_point deadline);
  void NotifyOnStateChange(ConnectivityState last_observed,
                           std::chrono::steady_clock::time_point deadline,
                           detail::Completion<void(bool)> done);

  // The user's Channel is gone: every call still running is cancelled (CANCELLED), connections
  // are closed, queued calls fail. With `wait` (never on a reactor thread) returns once that is
  // done on the reactor, so that nothing of the channel runs any more except what streams the
  // user still holds need; otherwise at once. Either way the caller then drops its reference.
  void Close(bool wait);
  // Close() in two halves, for closing several channels at once: StartClose(true) for each,
  // then AwaitClosed() for each (never on a reactor thread).
  void StartClose(bool closer_waits);
  void AwaitClosed();

  // Reactor side.
  [[nodiscard]] Gate& gate() noexcept { return gate_; }
  [[nodiscard]] bool closed() const noexcept { return state_ == ConnectivityState::kShutdown; }
  // A pooled call object for a unary call (its one reference is the caller's).
  ClientCall* AcquireCall();
  // A unary call's last reference went: back to the pool.
  void RecycleCall(ClientCall* call);
  // A call is in the channel's hands (its deadline runs).
  void OnCallAdmitted() noexcept { ++active_calls_; }
  // A call's work on the reactor is over (it completed and let go of the gate).
  void OnCallDone(ClientCall* call);
  // Routes an admitted call to the connection the policy picks, or queues it until there is
  // one (or fails it, in TRANSIENT_FAILURE without wait-for-ready).
  void Dispatch(ClientCall* call);
  // From the subchannels.
  void OnSubchannelState(Subchannel& subchannel);
  // The subchannel has no use and no connection left: it is destroyed (from a fresh handler).
  void OnSubchannelFinished(Subchannel* subchannel);
  // The server said our keepalive pings come too often: halve their rate.
  void OnTooManyPings() { keepalive_time_ *= 2; }
  [[nodiscard]] std::chrono::milliseconds keepalive_time() const noexcept {
    return keepalive_time_;
  }

 private:
  class ResolverSink;
  struct StateWatcher;

  // Joins (or abandons, on a reactor thread) an owned reactor pool; declared first, so it is
  // destroyed after every member that uses the pool's io_context.
  struct OwnedReactors {
    std::unique_ptr<ReactorPool> pool;
    ~OwnedReactors();
  };

  ChannelImpl(std::string target, ChannelOptions options,
              std::shared_ptr<ChannelCredentials> credentials, ShardSetup shard = {});
  // Sets the resolver up and names the authority; INVALID_ARGUMENT for a bad target or policy.
  Status Init(std::string_view target);

  // LoadBalancer::Helper.
  Subchannel* AcquireSubchannel(const asio::generic::stream_protocol::endpoint& endpoint) override;
  void ReleaseSubchannel(Subchannel* subchannel) override;
  void UpdateState(ConnectivityState state, const Status& failure) override;
  void RequestReresolution() override;

  void SetState(ConnectivityState state);
  // No call for idle_timeout: connections close and the channel is IDLE again.
  void ArmIdleTimer();
  void EnterIdle();
  // Calls are waiting (or a connection was asked for): resolve, or wake the policy.
  void ExitIdle();
  void Resolve();
  void OnResolverResult(ResolverResult result);
  // Picks for the queued calls again (the policy's state or picks changed).
  void ProcessWaiting();
  // A call that has no connection yet: started, failed or left queued (false).
  bool TryPick(ClientCall* call);
  void CloseOnReactor();

  OwnedReactors owned_;
  // Before the subchannels, which register under it.
  channelz::ChannelNode channelz_{/*subchannel=*/false};
  const std::string target_;
  ChannelOptions options_;
  asio::io_context* io_context_;
  BufferPool* pool_;
  std::string authority_;
  std::string user_agent_;
  CompressorSet compressors_;
  std::shared_ptr<ChannelCredentials> credentials_;
  std::shared_ptr<TlsContext> tls_;  // null: plaintext
  std::shared_ptr<InProcessAcceptor> in_process_;  // null: connect to the resolved addresses
  std::string tls_verify_name_;
  std::optional<ServiceConfig> service_config_;
  std::shared_ptr<RetryThrottle> retry_throttle_;  // shared by the shards of one Channel
  static constexpr size_t kMaxRetryBufferBytes = 16 * 1024 * 1024;
  size_t retry_buffer_limit_ = kMaxRetryBufferBytes;
  size_t retry_buffer_bytes_ = 0;  // reactor-confined
  ShardSetup shard_;

  // Published connectivity, for GetState() and the waits.
  std::mutex state_mu_;
  std::condition_variable state_cv_;
  ConnectivityState published_state_ = ConnectivityState::kIdle;  // guarded by state_mu_

  // Reactor-confined state.
  ConnectivityState state_ = ConnectivityState::kIdle;
  Status failure_;  // why the channel is in TRANSIENT_FAILURE
  std::shared_ptr<ResolverSink> sink_;
  std::unique_ptr<Resolver> resolver_;
  bool resolving_ = false;
  bool have_addresses_ = false;  // the policy has had a result
  std::chrono::steady_clock::time_point last_resolution_{};
  asio::steady_timer resolution_timer_;
  bool resolution_scheduled_ = false;
  std::string lb_policy_;
  std::unique_ptr<LoadBalancer> lb_;
  int64_t active_calls_ = 0;  // admitted and not yet done
  asio::steady_timer idle_timer_;
  bool idle_timer_armed_ = false;
  std::chrono::steady_clock::time_point idle_since_{};
  std::vector<std::unique_ptr<Subchannel>> subchannels_;
  std::vector<ClientCall*> waiting_;                // calls waiting for a connection
  bool processing_waiting_ = false;
  bool waiting_posted_ = false;
  bool reprocess_waiting_ = false;
  std::vector<std::unique_ptr<ClientCall>> calls_;  // every pooled call object
  std::vector<ClientCall*> free_calls_;
  std::list<std::unique_ptr<StateWatcher>> watchers_;
  std::minstd_rand rng_{std::random_device{}()};
  bool want_connection_ = false;  // connecting was asked for without a call
  std::chrono::milliseconds keepalive_time_;

  Gate gate_;
  RefPtr<ChannelImpl> reactor_ref_;  // the reactor side's own reference (see above)
  // Close(wait = true): the closer waits for the drain and drops reactor_ref_ itself, so that
  // the last reference (and the join of an owned reactor) goes on its thread.
  std::mutex close_mu_;
  std::condition_variable close_cv_;
  bool closer_waits_ = false;  // guarded by close_mu_
  bool drained_ = false;       // guarded by close_mu_
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CHANNEL_IMPL_H_
