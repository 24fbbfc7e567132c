// rill::Channel: a client's connection to a service: the servers its target names.
//
//   auto channel = rill::Channel::Create("localhost:50051");
//   helloworld::Greeter::Stub stub(channel);
//
//   // TLS (rill/credentials.h): the server's certificate must be valid for "localhost".
//   auto creds = rill::ChannelCredentials::Tls({.root_certificates = ca_pem});
//   auto secure = rill::Channel::Create("localhost:50443", *creds);
//
//   // Spread calls over every address a name resolves to.
//   rill::ChannelOptions options;
//   options.load_balancing_policy = "round_robin";
//   auto spread = rill::Channel::Create("dns:///backends.internal:50051", options);
//
// Targets (rill/resolver.h): "host:port" and "dns:///host:port" (resolved off the reactor, again
// when a connection fails or gets GOAWAY), "ipv4:" and "ipv6:" address lists, "unix:/path",
// "unix-abstract:name", and schemes of the resolvers given in ChannelOptions::resolvers.
// Load balancing: "pick_first" (the default: the first address that connects takes every
// call), "round_robin" (each call to the next connected address), or a policy of one's own
// (rill/load_balancing.h).
//
// Connectivity (gRPC's states): a channel is IDLE until its first call (or GetState(true)),
// CONNECTING while it resolves and connects, READY when calls have a connection,
// TRANSIENT_FAILURE when every attempt failed (calls fail UNAVAILABLE at once, or wait with
// wait-for-ready), SHUTDOWN once destroyed. Each address reconnects with exponential backoff
// (1 s initial, ×1.6, jitter 0.2, at most 120 s). Calls made while no connection is ready wait
// for one until their deadline.
//
// Lifetime: destroying the Channel (its last shared_ptr, often held by stubs) cancels every
// call still running on it (they complete with CANCELLED) and returns at once, on any thread,
// including the channel's own reactor and inside one of its completions. A stream object the
// user still holds keeps what it needs alive and reports the end (Read() false, Finish()
// CANCELLED).
//
// Threads: a channel runs its connections and calls on one reactor (rill/reactor_pool.h), or,
// with ChannelOptions::reactor_shards, on several: it is then made of that many shards, each on
// a reactor of its own with its own connections to every address, and each call runs on one of
// them (the calling thread's own reactor when it is one of them, otherwise the next in turn).
// Connectivity is then that of the best shard (READY if any is READY, else CONNECTING, else
// TRANSIENT_FAILURE; IDLE when all are).
//
// Thread safety: thread-safe. Calls may be started from any thread; they run on the channel's
// reactor (or one of its shards' reactors).
#ifndef RILL_CHANNEL_H_
#define RILL_CHANNEL_H_

#include <asio/async_result.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/completion.h"
#include "rill/status_or.h"

namespace rill {

class BufferPool;
class CallCredentials;
class ChannelCredentials;
class ClientInterceptor;
class Compressor;
class ResolverFactory;
class StatsHandler;

// gzip, deflate and zstd (rill/compression.h).
std::vector<std::shared_ptr<Compressor>> DefaultCompressors();
class ReactorPool;
class LoadBalancingPolicyFactory;

namespace internal {
class ChannelImpl;
class ChannelShards;
}  // namespace internal

enum class ConnectivityState : uint8_t {
  kIdle,
  kConnecting,
  kReady,
  kTransientFailure,
  kShutdown,
};

// "IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE", "SHUTDOWN".
std::string_view ToString(ConnectivityState state) noexcept;

struct ChannelOptions {
  // Where the channel's connection runs. Null: the channel starts one reactor thread of its own.
  ReactorPool* reactors = nullptr;
  // Calls of this channel run on this many reactors of `reactors` (at most the pool's size),
  // each with its own connections to every address, so that one channel's calls use several
  // cores. 0: one per reactor of the pool. Without a pool, each of them starts a reactor thread
  // of its own (and 0 means 1). A resolver factory (`resolvers`) makes one resolver per
  // reactor. The default, 1, runs every call on one reactor (as an in-process channel always
  // does).
  size_t reactor_shards = 1;
  // Blocks for received and sent messages. Null: DefaultBufferPool().
  BufferPool* buffer_pool = nullptr;

  // Largest response message accepted; a larger one fails the call with RESOURCE_EXHAUSTED.
  size_t max_receive_message_size = 4 * 1024 * 1024;
  // Largest request message sent; a larger one fails the call with RESOURCE_EXHAUSTED.
  size_t max_send_message_size = SIZE_MAX;

  // :authority for calls (default: the target's host:port).
  std::string authority;
  // Prepended to rill's own user-agent token.
  std::string user_agent_prefix;

  // Reconnection backoff.
  std::chrono::milliseconds initial_backoff{1000};
  double backoff_multiplier = 1.6;
  double backoff_jitter = 0.2;
  std::chrono::milliseconds max_backoff{120000};
  std::chrono::milliseconds min_connect_timeout{20000};
  // Calls wait for a connection instead of failing when an attempt fails (a call's context
  // may say otherwise: ClientContext::set_wait_for_ready).
  bool wait_for_ready = false;

  // "pick_first", "round_robin" or the name of one of load_balancing_policies; another name
  // fails Create() with INVALID_ARGUMENT.
  std::string load_balancing_policy = "pick_first";
  // Policies of one's own (rill/load_balancing.h), chosen by name here or by the service config.
  std::vector<std::shared_ptr<LoadBalancingPolicyFactory>> load_balancing_policies;
  // Resolvers for more target schemes (rill/resolver.h); they take precedence over the
  // built-in ones for the same scheme.
  std::vector<std::shared_ptr<ResolverFactory>> resolvers;
  // A channel without calls for this long goes IDLE: its connections close, and the next call
  // resolves the target and connects again. 0 disables it.
  std::chrono::milliseconds idle_timeout{30 * 60 * 1000};
  // The least time between two resolutions of the target (re-resolution after failures).
  std::chrono::milliseconds min_resolution_interval{30000};

  // gRPC's service config, as JSON (the grpc.service_config.ServiceConfig schema): per-method
  // "timeout" (the call's deadline is the earlier of its own and this), "waitForReady",
  // "maxRequestMessageBytes" / "maxResponseMessageBytes" (the lower of these and the limits
  // above apply), "retryPolicy" (retried attempts resend the messages from the pooled buffers
  // that hold them, no copy, up to 256 KiB per call; a stream past that commits),
  // "hedgingPolicy" (unary calls), "retryThrottling", and
  // "loadBalancingConfig" (which then replaces load_balancing_policy). A malformed config fails
  // Create() with INVALID_ARGUMENT.
  //
  //   options.service_config = R"({"methodConfig": [{
  //       "name": [{"service": "echo.Echo"}],
  //       "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
  //                       "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})";
  std::string service_config;

  // Keepalive: after this long without receiving anything the connection sends a PING and is
  // closed if nothing arrives within `keepalive_timeout`. 0 (the default) disables it; values
  // under 10 s are raised to 10 s. A server answering GOAWAY "too_many_pings" doubles it.
  std::chrono::milliseconds keepalive_time{0};
  std::chrono::milliseconds keepalive_timeout{20000};
  bool keepalive_without_calls = false;

  // Bytes of the first read from a socket (one pooled block per read). A read that fills its
  // block doubles the next one, up to 8 times this; reads that come back mostly empty halve it.
  size_t read_block_size = 32 * 1024;
  // Bytes gathered into one write syscall at most (the write batch); 0: every HTTP/2 frame is
  // written on its own. Default 256 KiB. Frames are never split, so the frame that crosses the
  // limit still goes whole into that write.
  size_t write_buffer_size = 256 * 1024;

  // HTTP/2 flow control windows we advertise. With both 0 (the default) they follow the
  // bandwidth-delay product: streams start at the protocol's 64 KiB and the connection at 4 MiB
  // (it is credited as bytes arrive, so it bounds no memory). Set, they are static (a 0 among them
  // then means 64 KiB for streams, 4 MiB for the connection). Either way a stream receiving a
  // message larger than its window is given room for the whole message at once, which the
  // message size limit bounds.
  uint32_t initial_stream_window = 0;
  uint32_t initial_connection_window = 0;

  // Compressors this channel can use and accepts (grpc-accept-encoding). Defaults to the
  // built-ins: gzip, deflate and zstd.
  std::vector<std::shared_ptr<Compressor>> compressors = DefaultCompressors();
  // Request messages smaller than this are sent uncompressed even when the call compresses.
  size_t min_compress_size = 0;

  // Metadata added to every call by a plugin (rill/call_credentials.h); a context's own
  // credentials replace them for its call.
  std::shared_ptr<CallCredentials> call_credentials;

  // Run in order for every call; the first is the outermost.
  std::vector<std::shared_ptr<ClientInterceptor>> interceptors;

  // Observe every call and connection (rill/stats.h), in this order.
  std::vector<std::shared_ptr<StatsHandler>> stats_handlers;
};

class Channel {
 public:
  using Clock = std::chrono::steady_clock;

  // Never fails for a well-formed target; a malformed one gives INVALID_ARGUMENT.
  static StatusOr<std::shared_ptr<Channel>> Create(std::string_view target,
                                                   ChannelOptions options = {});
  // With credentials: ChannelCredentials::Tls() connects over TLS (calls use :scheme https),
  // Insecure() (or null) over plaintext. A TLS handshake that fails (the server's certificate
  // does not verify, say) is a failed connection attempt: calls fail with UNAVAILABLE and the
  // reason, or wait with wait_for_ready.
  static StatusOr<std::shared_ptr<Channel>> Create(
      std::string_view target, std::shared_ptr<ChannelCredentials> credentials,
      ChannelOptions options = {});
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  [[nodiscard]] const std::string& target() const noexcept;
  // Connects now rather than at the first call. Returns true once connected (with
  // reactor_shards, once every shard is), false if the deadline passed first. On a reactor
  // thread (where it would block) it returns false at once.
  bool WaitForConnected(Clock::time_point deadline);

  // The channel's state; with `try_to_connect`, an IDLE channel starts connecting.
  [[nodiscard]] ConnectivityState GetState(bool try_to_connect);
  // Blocks until the state differs from `last_observed` (true) or the deadline passed
  // (false). On a reactor thread (where it would block) it returns false at once.
  bool WaitForStateChange(ConnectivityState last_observed, Clock::time_point deadline);
  // The same without blocking: completes with true once the state differs from
  // `last_observed`, false when the deadline passed first (or the operation was cancelled
  // through the token's cancellation slot). Any Asio completion token (rill/completion.h);
  // the handler runs on its associated executor, never inside the channel's own code.
  template <typename CompletionToken>
  auto AsyncWaitForStateChange(ConnectivityState last_observed, Clock::time_point deadline,
                               CompletionToken&& token) {
    return asio::async_initiate<CompletionToken, void(bool)>(
        [this](auto handler, ConnectivityState last, Clock::time_point when) {
          NotifyOnStateChange(last, when, detail::Completion<void(bool)>(std::move(handler)));
        },
        token, last_observed, deadline);
  }

 private:
  // The call paths (rill/client_call.h) reach the implementation.
  friend class ChannelAccess;
  // The channel (or the shard) a call started on this thread runs on.
  [[nodiscard]] internal::ChannelImpl& impl() noexcept {
    return shards_ == nullptr ? *impl_ : PickShard();
  }
  [[nodiscard]] internal::ChannelImpl& PickShard() noexcept;

  explicit Channel(internal::ChannelImpl* impl);
  explicit Channel(std::unique_ptr<internal::ChannelShards> shards);
  void NotifyOnStateChange(ConnectivityState last_observed, Clock::time_point deadline,
                           detail::Completion<void(bool)> done);
  // A lone channel: one reference, dropped by the destructor. Sharded: the first shard (the
  // set holds the references).
  internal::ChannelImpl* impl_;
  std::unique_ptr<internal::ChannelShards> shards_;  // null unless sharded
};

}  // namespace rill

#endif  // RILL_CHANNEL_H_
