// ChannelImpl: a client channel's connection management and call dispatch.
//
// One channel keeps at most one ready connection (a ClientTransport) to its target. It connects
// on the first call, trying every address the target resolves to (families interleaved), queues
// calls until the connection is ready, fails them (or keeps them, with wait_for_ready) when a
// connection attempt fails, and reconnects with exponential backoff. A connection that received
// GOAWAY finishes its calls while new calls go to a new connection.
//
// Ownership (docs/ownership.md): RefCounted. The user's Channel holds one reference, each
// streaming call's user object another, and the reactor side one of its own: everything the
// channel runs on its reactor (connections, calls, timers, posted work) holds its gate, and the
// reactor side lets go of its reference once Close() was called and the gate drained. Close()
// returns at once; a stream the user still holds keeps the channel (and its reactor) alive
// until it is dropped. An owned reactor thread is joined by whoever drops the last reference,
// or left to end by itself when that happens on a reactor thread.
//
// Thread safety: StartUnary(), StartStream(), WaitForConnected() and Close() may be called from
// any thread; everything else runs on the channel's reactor.
#ifndef RILL_SRC_RPC_CHANNEL_IMPL_H_
#define RILL_SRC_RPC_CHANNEL_IMPL_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
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
#include "src/rpc/compressor_set.h"
#include "src/transport/address.h"

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
class TlsContext;

class ChannelImpl : public RefCounted<ChannelImpl> {
 public:
  // The caller owns the first reference (RefPtr::Adopt).
  ChannelImpl(std::string target, Address address, ChannelOptions options,
              std::shared_ptr<ChannelCredentials> credentials);
  ~ChannelImpl();
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
  // The channel and its one subchannel (the connections to its target) as channelz shows them;
  // their counters are written on the reactor.
  [[nodiscard]] channelz::ChannelNode& channelz() noexcept { return channelz_; }
  [[nodiscard]] channelz::ChannelNode& channelz_subchannel() noexcept { return subchannel_; }

  // Makes this an in-process channel: connections go to `acceptor`'s server through memory
  // instead of to the target's address. Called once, right after construction.
  void ConnectInProcess(std::shared_ptr<InProcessAcceptor> acceptor) {
    in_process_ = std::move(acceptor);
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

  // The user's Channel is gone: every call still running is cancelled (CANCELLED), connections
  // are closed, queued calls fail. With `wait` (never on a reactor thread) returns once that is
  // done on the reactor, so that nothing of the channel runs any more except what streams the
  // user still holds need; otherwise at once. Either way the caller then drops its reference.
  void Close(bool wait);

  // Reactor side.
  [[nodiscard]] Gate& gate() noexcept { return gate_; }
  [[nodiscard]] bool closed() const noexcept { return state_ == State::kShutdown; }
  // A pooled call object for a unary call (its one reference is the caller's).
  ClientCall* AcquireCall();
  // A unary call's last reference went: back to the pool.
  void RecycleCall(ClientCall* call);
  // A call's work on the reactor is over (it completed and let go of the gate).
  void OnCallDone(ClientCall* call);
  // Routes an admitted call to the ready connection, or queues it until there is one.
  void Dispatch(ClientCall* call);
  void OnTransportGoaway(ClientTransport* transport);
  // A TLS connection finished its handshake: calls may go to it.
  void OnTransportReady(ClientTransport* transport);
  void OnTransportDone(ClientTransport* transport, const Status& reason);
  // The server said our keepalive pings come too often: halve their rate.
  void OnTooManyPings() { keepalive_time_ *= 2; }
  [[nodiscard]] std::chrono::milliseconds keepalive_time() const noexcept {
    return keepalive_time_;
  }

 private:
  enum class State : uint8_t { kIdle, kConnecting, kReady, kBackoff, kShutdown };

  // Joins (or abandons, on a reactor thread) an owned reactor pool; declared first, so it is
  // destroyed after every member that uses the pool's io_context.
  struct OwnedReactors {
    std::unique_ptr<ReactorPool> pool;
    ~OwnedReactors();
  };

  void SetState(State state);
  void Connect();
  void ConnectNext(uint64_t attempt, size_t index);
  void OnConnected(asio::generic::stream_protocol::socket socket);
  void OnConnected(PipeEnd pipe);
  void StartTransport(std::unique_ptr<ClientTransport> transport);
  void OnConnectFailed(const Status& status);
  void ScheduleReconnect();
  std::chrono::milliseconds NextBackoff();
  void CloseOnReactor();

  OwnedReactors owned_;
  // Before the connections, which register under subchannel_.
  channelz::ChannelNode channelz_{/*subchannel=*/false};
  channelz::ChannelNode subchannel_{/*subchannel=*/true};
  const std::string target_;
  const Address address_;
  ChannelOptions options_;
  asio::io_context* io_context_;
  BufferPool* pool_;
  std::string authority_;
  std::string user_agent_;
  CompressorSet compressors_;
  std::shared_ptr<ChannelCredentials> credentials_;
  std::shared_ptr<TlsContext> tls_;  // null: plaintext
  std::shared_ptr<InProcessAcceptor> in_process_;  // null: connect to address_
  std::string tls_verify_name_;

  // Published connectivity, for WaitForConnected().
  std::mutex state_mu_;
  std::condition_variable state_cv_;
  State published_state_ = State::kIdle;  // guarded by state_mu_

  // Reactor-confined state.
  State state_ = State::kIdle;
  ClientTransport* transport_ = nullptr;  // the connection new calls go to (ready or connecting)
  std::vector<std::unique_ptr<ClientTransport>> transports_;  // every live connection
  std::vector<ClientCall*> waiting_;                          // calls waiting for a connection
  std::vector<std::unique_ptr<ClientCall>> calls_;            // every pooled call object
  std::vector<ClientCall*> free_calls_;
  asio::ip::tcp::resolver resolver_;
  std::vector<asio::generic::stream_protocol::endpoint> endpoints_;  // of the current attempt
  std::unique_ptr<asio::generic::stream_protocol::socket> connecting_socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer backoff_timer_;
  std::chrono::milliseconds current_backoff_{0};
  std::minstd_rand rng_{std::random_device{}()};
  uint64_t connect_attempt_ = 0;
  bool want_connection_ = false;  // WaitForConnected() asked: reconnect without calls waiting
  Status last_failure_;
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
