// ServerImpl: the server's shared state — method table, options, listeners, live connections —
// and its shutdown sequence.
//
// Thread safety: thread-safe. The method table and options are immutable after Start(); the
// connection set is guarded by a mutex (touched once per connection, never per call).
#ifndef RILL_SRC_RPC_SERVER_IMPL_H_
#define RILL_SRC_RPC_SERVER_IMPL_H_

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rill/channel.h"
#include "rill/credentials.h"
#include "rill/interceptor.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/service.h"
#include "rill/stats.h"
#include "src/base/channelz.h"
#include "src/rpc/compressor_set.h"
#include "src/transport/address.h"
#include "src/transport/in_memory_pipe.h"
#include "src/transport/listener.h"

namespace rill::internal {

class InProcessAcceptor;
class ServerTransport;

struct ServerConfig {
  struct Port {
    std::string address;
    int* selected_port = nullptr;
    std::shared_ptr<ServerCredentials> credentials;  // null: plaintext
  };
  std::vector<Port> ports;
  std::vector<Service*> services;
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
  // Destroyed with the configuration, the server's first member: after every handler returned.
  std::vector<std::shared_ptr<ServerPlugin>> plugins;
  std::vector<std::shared_ptr<StatsHandler>> stats_handlers;
  std::vector<std::shared_ptr<Compressor>> compressors = CompressorSet::BuiltIns();
  ServerOptions options;
  ReactorPool* reactors = nullptr;
  size_t reactor_count = 0;
  BufferPool* pool = nullptr;
};

class ServerImpl {
 public:
  explicit ServerImpl(ServerConfig config);
  ~ServerImpl();

  // Builds the method table, binds every port and starts accepting.
  Status Start();
  void Shutdown(std::chrono::milliseconds grace);
  void Wait();

  [[nodiscard]] const detail::MethodHandler* FindMethod(std::string_view path) const;
  [[nodiscard]] const ServerOptions& options() const noexcept { return config_.options; }
  [[nodiscard]] BufferPool& pool() const noexcept { return *pool_; }
  [[nodiscard]] const std::vector<std::shared_ptr<ServerInterceptor>>& interceptors() const {
    return config_.interceptors;
  }
  // Null when none is installed (the call paths test only that).
  [[nodiscard]] const std::vector<std::shared_ptr<StatsHandler>>* stats_handlers() const {
    return config_.stats_handlers.empty() ? nullptr : &config_.stats_handlers;
  }
  [[nodiscard]] const std::vector<int>& ports() const noexcept { return bound_ports_; }
  [[nodiscard]] const CompressorSet& compressors() const noexcept { return compressors_; }
  // The server's channelz node: its connections register under it.
  [[nodiscard]] channelz::ServerNode& channelz_node() noexcept { return channelz_; }

  // A connection is done and nothing refers to its transport: destroys it. Called on the
  // transport's reactor, from a fresh handler.
  void OnTransportDone(ServerTransport* transport);
  // Handlers running on every connection (ServerOptions::max_running_handlers). Counted only
  // when that limit is set: the counter is shared by every reactor, a contended cache line.
  void OnHandlerStarted() noexcept {
    if (config_.options.max_running_handlers != 0) {
      running_handlers_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  void OnHandlerFinished() noexcept {
    if (config_.options.max_running_handlers != 0) {
      running_handlers_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  // A new stream was refused at a handler cap (the server's when `server_wide`, else its
  // connection's). Counted, and logged at most once per kRefusalLogInterval with the count
  // since the last line: refusals fail calls of clients that do not retry them.
  void OnRefusedAtCap(bool server_wide) noexcept;
  [[nodiscard]] uint64_t refused_at_cap() const noexcept {
    return refused_total_.load(std::memory_order_relaxed);
  }
  [[nodiscard]] bool AtHandlerLimit() const noexcept {
    return config_.options.max_running_handlers != 0 &&
           running_handlers_.load(std::memory_order_relaxed) >=
               config_.options.max_running_handlers;
  }
  // Serves one end of an in-memory pipe as a new connection, on one of the server's reactors
  // (posted; the end is dropped, and the peer reads end-of-stream, when the server is shutting
  // down or at max_connections by then).
  void AcceptInProcess(PipeEnd pipe);
  // A channel connected to this server in memory (Server::InProcessChannel).
  std::shared_ptr<Channel> InProcessChannel(const ChannelOptions& options);

  [[nodiscard]] bool shutting_down() const noexcept {
    return shutting_down_.load(std::memory_order_acquire);
  }

 private:
  // `credentials`: the port's (null for plaintext).
  void Accept(Listener::Socket socket, const ServerCredentials* credentials);
  // Listeners off, GOAWAY, the grace period, then cancel; returns when every connection is
  // gone. Runs on the thread that called Shutdown(), or on shutdown_thread_.
  void RunShutdown(std::chrono::milliseconds grace);
  // Runs `step` on `transport`'s reactor, unless the transport has finished and deleted itself
  // by then (work posted with a bare pointer could outlive it). Called with mu_ held.
  void PostToTransportLocked(ServerTransport* transport, void (ServerTransport::*step)());

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

  ServerConfig config_;
  BufferPool* pool_;
  CompressorSet compressors_;
  std::unique_ptr<ReactorPool> owned_reactors_;
  ReactorPool* reactors_ = nullptr;
  std::unordered_map<std::string, const detail::MethodHandler*, StringHash, std::equal_to<>>
      methods_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  channelz::ServerNode channelz_;
  std::vector<std::unique_ptr<channelz::SocketNode>> listen_nodes_;
  std::vector<int> bound_ports_;
  std::shared_ptr<InProcessAcceptor> in_process_;  // shared with the in-process channels

  std::mutex mu_;
  std::condition_variable cv_;
  // Live transports and their reactors, so that work can be posted to a transport without
  // touching it (it may be deleting itself on its reactor). Guarded by mu_.
  std::unordered_map<ServerTransport*, std::unique_ptr<ServerTransport>> transports_;
  size_t posted_to_transports_ = 0;                  // guarded by mu_; not yet run
  bool shutdown_done_ = false;                       // guarded by mu_
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint32_t> running_handlers_{0};
  static constexpr std::chrono::seconds kRefusalLogInterval{10};
  std::atomic<uint64_t> refused_total_{0};
  std::atomic<uint64_t> refused_server_wide_unlogged_{0};
  std::atomic<uint64_t> refused_per_connection_unlogged_{0};
  std::atomic<int64_t> refusal_logged_at_{INT64_MIN};  // steady_clock ticks
  std::thread shutdown_thread_;  // a shutdown asked for on a reactor thread runs here
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_SERVER_IMPL_H_
