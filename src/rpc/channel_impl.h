// ChannelImpl: a client channel's connection management and call dispatch.
//
// One channel keeps at most one ready connection (a ClientTransport) to its target. It connects
// on the first call, queues calls until the connection is ready, fails them (or keeps them,
// with wait_for_ready) when a connection attempt fails, and reconnects with exponential backoff.
// A connection that received GOAWAY finishes its calls while new calls go to a new connection.
//
// Thread safety: StartCall() and Shutdown() may be called from any thread; everything else runs
// on the channel's reactor.
#ifndef RILL_SRC_RPC_CHANNEL_IMPL_H_
#define RILL_SRC_RPC_CHANNEL_IMPL_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "rill/channel.h"
#include "rill/client_call.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "src/rpc/compressor_set.h"
#include "src/transport/address.h"

namespace rill::internal {

class ClientCall;
class ClientTransport;

class ChannelImpl {
 public:
  ChannelImpl(std::string target, Address address, ChannelOptions options);
  ~ChannelImpl();

  [[nodiscard]] const std::string& target() const noexcept { return target_; }
  [[nodiscard]] const ChannelOptions& options() const noexcept { return options_; }
  [[nodiscard]] BufferPool& pool() const noexcept { return *pool_; }
  [[nodiscard]] asio::io_context& io_context() const noexcept { return *io_context_; }
  [[nodiscard]] const std::string& authority() const noexcept { return authority_; }
  [[nodiscard]] const std::string& user_agent() const noexcept { return user_agent_; }
  [[nodiscard]] const CompressorSet& compressors() const noexcept { return compressors_; }
  [[nodiscard]] bool OnReactor() const noexcept { return ReactorPool::Current() == io_context_; }

  // Starts a unary call (from any thread).
  void StartUnary(const MethodDescriptor& method, ClientContext& context,
                  const google::protobuf::MessageLite& request,
                  google::protobuf::MessageLite* response, detail::UnaryCompletion done);
  // Starts a streaming call (from any thread); the core is usable at once, operations queue
  // until the stream exists.
  std::unique_ptr<ClientStreamCore> StartStream(const MethodDescriptor& method,
                                                ClientContext& context);

  // Blocks until connected or the deadline passes (not on the reactor).
  bool WaitForConnected(std::chrono::steady_clock::time_point deadline);

  // Reactor side.
  ClientCall* AcquireCall();
  // Counts a call object made elsewhere (a stream's) as live.
  void AdoptCall() { ++live_calls_; }
  void ReleaseCall(ClientCall* call);
  // Routes a call to the ready connection, or queues it until there is one.
  void Dispatch(ClientCall* call);
  void OnTransportReady(ClientTransport* transport);
  void OnTransportGoaway(ClientTransport* transport);
  void OnTransportDone(ClientTransport* transport, const Status& reason);
  // The server said our keepalive pings come too often: halve their rate.
  void OnTooManyPings() { keepalive_time_ *= 2; }
  [[nodiscard]] std::chrono::milliseconds keepalive_time() const noexcept {
    return keepalive_time_;
  }

 private:
  void Connect();
  void OnConnected(asio::generic::stream_protocol::socket socket);
  void OnConnectFailed(const Status& status);
  void ScheduleReconnect();
  std::chrono::milliseconds NextBackoff();
  // Runs `fn` on the reactor: inline when already there.
  template <typename Fn>
  void RunOnReactor(Fn&& fn);

  enum class State : uint8_t { kIdle, kConnecting, kReady, kBackoff, kShutdown };

  const std::string target_;
  const Address address_;
  ChannelOptions options_;
  std::unique_ptr<ReactorPool> owned_reactors_;
  asio::io_context* io_context_;
  BufferPool* pool_;
  std::string authority_;
  std::string user_agent_;
  CompressorSet compressors_;

  // Reactor-confined state.
  State state_ = State::kIdle;
  ClientTransport* transport_ = nullptr;  // the connection new calls go to (ready or connecting)
  std::vector<ClientTransport*> draining_;  // connections that got GOAWAY, finishing their calls
  std::vector<ClientCall*> waiting_;        // calls waiting for a connection
  std::vector<std::unique_ptr<ClientCall>> calls_;
  std::vector<ClientCall*> free_calls_;
  size_t live_calls_ = 0;
  asio::ip::tcp::resolver resolver_;
  std::unique_ptr<asio::generic::stream_protocol::socket> connecting_socket_;
  asio::steady_timer connect_timer_;
  asio::steady_timer backoff_timer_;
  std::chrono::milliseconds current_backoff_{0};
  std::minstd_rand rng_{std::random_device{}()};
  uint64_t connect_attempt_ = 0;
  int pending_ops_ = 0;
  Status last_failure_;
  std::chrono::milliseconds keepalive_time_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_CHANNEL_IMPL_H_
