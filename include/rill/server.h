// rill::Server and rill::ServerBuilder.
//
//   GreeterImpl greeter;                     // derives from helloworld::Greeter::Service
//   int port = 0;
//   auto server = rill::ServerBuilder()
//                     .AddListeningPort("0.0.0.0:50051", &port)
//                     .RegisterService(&greeter)
//                     .Build();
//   if (!server.ok()) return Fail(server.status());
//   (*server)->Wait();                       // until Shutdown() from another thread
//
// In-process: server->InProcessChannel() is a channel to this server that carries its calls
// through memory, without a socket (see InProcessChannel() below).
//
// A TLS port: AddListeningPort("0.0.0.0:50443", tls_credentials, &port) (rill/credentials.h);
// plaintext and TLS ports may be mixed on one server.
//
// Addresses: "host:port", "[::]:port", "0.0.0.0:0" (port 0 picks a free port, reported through
// `selected_port`), "unix:/path/to.sock".
//
// Thread safety: thread-safe.
#ifndef RILL_SERVER_H_
#define RILL_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status_or.h"

namespace rill {

class BufferPool;
class Channel;
struct ChannelOptions;
class Compressor;
class ServerCredentials;
class ReactorPool;
class Service;
class ServerInterceptor;
class StatsHandler;

namespace internal {
class ServerImpl;
}  // namespace internal

struct ServerOptions {
  // Largest request message accepted (judged from the message prefix, before buffering, and
  // again after decompression); a larger one fails the call with RESOURCE_EXHAUSTED.
  size_t max_receive_message_size = 4 * 1024 * 1024;
  // Largest response message sent; a larger one fails the call with RESOURCE_EXHAUSTED.
  size_t max_send_message_size = SIZE_MAX;
  // Streams a client may open at once on one connection (advertised in SETTINGS).
  uint32_t max_concurrent_streams = 1000;
  // Handlers (coroutine handlers and streaming handlers: inline handlers return before the next
  // stream is read) running at once on one connection, and on the whole server (0: no limit).
  // A reset stream keeps its handler's slot until the handler returned, so a client that opens
  // and resets streams cannot make the server run more than this. A stream that would exceed a
  // limit is refused (RST_STREAM REFUSED_STREAM: the client may retry it; it never reached
  // the application) and counts as protocol noise: a connection that keeps at it is closed with
  // GOAWAY(ENHANCE_YOUR_CALM).
  // A server-wide cap of 1,000 keeps what a few hostile connections can make the server hold to
  // ~10 MiB (a running handler and its stream cost several KiB); it is not the default, since
  // a busy server's legitimate calls would be refused past it (and clients that do not retry
  // REFUSED_STREAM fail them UNAVAILABLE). The server-wide count is one shared counter.
  uint32_t max_running_handlers_per_connection = 1000;
  uint32_t max_running_handlers = 0;
  // Rapid-reset budget, per connection. A stream the client resets (RST_STREAM) before its
  // handler started, or while its handler runs and less than `early_reset_window` after the
  // stream opened, is an early reset; a connection may have `early_reset_burst` of them at once
  // plus `early_reset_rate` per second. The early reset that overdraws the budget closes the
  // connection with GOAWAY(ENHANCE_YOUR_CALM, "too_many_resets"); streams the GOAWAY covers
  // still finish. A client that cancels its calls as it pleases stays far below it: 1,000
  // calls a second, each cancelled at once, keep their connection. A reset after the response
  // was sent never counts. early_reset_burst 0: no budget.
  uint32_t early_reset_burst = 2000;
  uint32_t early_reset_rate = 1000;
  std::chrono::milliseconds early_reset_window{10};
  // Largest request header block accepted; a larger one fails that call with
  // RESOURCE_EXHAUSTED while the connection lives on.
  uint32_t max_header_list_size = 16 * 1024;
  // HTTP/2 flow control windows we advertise. With both 0 (the default) they follow the
  // bandwidth-delay product: streams start at the protocol's 64 KiB and the connection at 4 MiB
  // (it is credited as bytes arrive, so it bounds no memory). Set, they are static (a 0 among them
  // then means 64 KiB for streams, 4 MiB for the connection). Either way a stream receiving a
  // message larger than its window is given room for the whole message at once, which the
  // message size limit bounds.
  uint32_t initial_stream_window = 0;
  uint32_t initial_connection_window = 0;
  // A connection that has not sent its HTTP/2 preface by then is closed.
  std::chrono::milliseconds handshake_timeout{20000};
  // Graceful shutdown gives in-flight calls this long before cancelling them.
  std::chrono::milliseconds shutdown_grace{5000};
  // Bytes of the first read from a socket (one pooled block per read). A read that fills its
  // block doubles the next one, up to 8 times this; reads that come back mostly empty halve it.
  size_t read_block_size = 32 * 1024;
  // Bytes gathered into one write syscall at most (the write batch); 0: every HTTP/2 frame is
  // written on its own. Default 256 KiB. Frames are never split, so the frame that crosses the
  // limit still goes whole into that write.
  size_t write_buffer_size = 256 * 1024;
  // Response messages smaller than this are sent uncompressed even when the call compresses.
  size_t min_compress_size = 0;

  // Connections served at once (0: no limit); a connection accepted past it is closed at once.
  uint32_t max_connections = 0;
  // A connection without an open stream for this long is shut down gracefully (0: never).
  std::chrono::milliseconds max_connection_idle{0};
  // A connection older than this (±10 %, so that a fleet's connections do not all go at once)
  // is shut down gracefully; calls still open `max_connection_age_grace` later are cancelled
  // (0: never, and no limit on the grace).
  std::chrono::milliseconds max_connection_age{0};
  std::chrono::milliseconds max_connection_age_grace{0};
  // A client that has not acknowledged the server's SETTINGS by then is closed with
  // GOAWAY(SETTINGS_TIMEOUT) (0: no limit).
  std::chrono::milliseconds settings_ack_timeout{20000};

  // Keepalive: a connection silent for `keepalive_time` gets a PING, and is closed if nothing
  // arrives within `keepalive_timeout`.
  std::chrono::milliseconds keepalive_time{std::chrono::hours(2)};
  std::chrono::milliseconds keepalive_timeout{20000};
  // Enforcement of clients' pings: one sooner than this after the previous (2 h when the client
  // has no open stream, unless `permit_keepalive_without_calls`) is a strike, and the third
  // strike closes the connection with GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings").
  std::chrono::milliseconds keepalive_min_ping_interval{std::chrono::minutes(5)};
  bool permit_keepalive_without_calls = false;
};

// Something that serves alongside the services (health, reflection and the like) and needs to
// know the server's services or its shutdown. Added with ServerBuilder::AddPlugin(); the server
// keeps it alive until the server is destroyed, after its last handler returned.
//
// Both hooks are user code: an exception they throw is logged and goes no further.
class ServerPlugin {
 public:
  virtual ~ServerPlugin() = default;
  // Build() calls it on its own thread, before any port is bound, with every service registered
  // on the builder (in registration order).
  virtual void OnBuild(const std::vector<Service*>& services) { static_cast<void>(services); }
  // Shutdown() (or the destructor) calls it once when the shutdown begins, before the server
  // stops accepting and sends GOAWAY, on the thread that shuts down (a thread of the server's
  // own when Shutdown() was called on a reactor). In-flight calls are still running.
  virtual void OnShutdown() {}
};

class Server {
 public:
  // Must not run on a reactor thread (a failed check says so).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Stops accepting, sends GOAWAY, lets in-flight calls finish for up to `grace`, then cancels
  // what is left and closes every connection. Returns when all handlers have finished; called
  // on a reactor thread (from a handler, say), where waiting could deadlock, it starts the
  // shutdown and returns at once. Idempotent; also run by the destructor with the configured
  // grace.
  void Shutdown(std::chrono::milliseconds grace);
  void Shutdown();
  // Closes everything now, cancelling in-flight calls.
  void ShutdownNow() { Shutdown(std::chrono::milliseconds(0)); }
  // Blocks until Shutdown() completed. On a reactor thread it would deadlock: it logs an error
  // and returns at once.
  void Wait();

  // A channel connected to this server within the process (grpc-go's bufconn, libgrpc++'s
  // InProcessChannel()): no socket, no kernel, no copy of a payload byte between the two
  // sides. HTTP/2 framing is kept: the client and the server each run their usual HTTP/2
  // connection, and the frames one side writes reach the other as references to the same
  // pooled buffers. So everything behaves as over TCP (deadlines, cancellation, metadata,
  // compression, interceptors, stats handlers, flow control, keepalive, GOAWAY), with the peer
  // named "inprocess" and the default :authority "inprocess". The server needs no listening
  // port for it. `options` apply as to Channel::Create() (its own reactor unless
  // options.reactors is set); TLS does not apply.
  //
  // Lifetime: the channel connects lazily and reconnects like any channel. When the server
  // shuts down, its in-process connections get GOAWAY like the others: running calls may
  // finish within the grace period, then are cancelled (the client sees UNAVAILABLE), and new
  // calls fail with UNAVAILABLE ("the in-process server is shut down"). The channel may outlive
  // the server: it stays usable as an object, and its calls fail with UNAVAILABLE (or wait
  // until their deadline with wait_for_ready). Destroying the channel before the server
  // cancels its calls as for any channel.
  //
  //   auto channel = server->InProcessChannel();
  //   helloworld::Greeter::Stub stub(channel);
  [[nodiscard]] std::shared_ptr<Channel> InProcessChannel(const ChannelOptions& options);
  [[nodiscard]] std::shared_ptr<Channel> InProcessChannel();

  // Ports actually bound, in AddListeningPort order (0 for Unix sockets).
  [[nodiscard]] const std::vector<int>& ports() const noexcept;

 private:
  friend class ServerBuilder;
  explicit Server(std::unique_ptr<internal::ServerImpl> impl);
  std::unique_ptr<internal::ServerImpl> impl_;
};

class ServerBuilder {
 public:
  ServerBuilder();
  ~ServerBuilder();
  ServerBuilder(ServerBuilder&&) noexcept;
  ServerBuilder& operator=(ServerBuilder&&) noexcept;

  // `selected_port`, if given, receives the bound port once Build() succeeded.
  ServerBuilder& AddListeningPort(std::string_view address, int* selected_port = nullptr);
  // A port with the given credentials (ServerCredentials::Tls for TLS). The server keeps them;
  // a Reload() on them applies to every handshake that begins afterwards.
  ServerBuilder& AddListeningPort(std::string_view address,
                                  std::shared_ptr<ServerCredentials> credentials,
                                  int* selected_port = nullptr);
  // The service must outlive the server.
  ServerBuilder& RegisterService(Service* service);
  ServerBuilder& AddInterceptor(std::shared_ptr<ServerInterceptor> interceptor);
  // Plugins are told about the services at Build() and about the shutdown, in the order added.
  ServerBuilder& AddPlugin(std::shared_ptr<ServerPlugin> plugin);
  // Observes every call and connection (rill/stats.h); several run in the order added.
  ServerBuilder& AddStatsHandler(std::shared_ptr<StatsHandler> handler);
  // Adds a compressor to the built-in ones (gzip, deflate, zstd); one with an existing name
  // replaces it.
  ServerBuilder& RegisterCompressor(std::shared_ptr<Compressor> compressor);
  // Removes every compressor (the server then accepts only uncompressed messages).
  ServerBuilder& ClearCompressors();
  ServerBuilder& SetOptions(const ServerOptions& options);
  ServerOptions& options();
  // Threads to run on. Null (default): the server starts one reactor per core.
  ServerBuilder& SetReactors(ReactorPool* reactors);
  // Start this many reactors (when no ReactorPool is given).
  ServerBuilder& SetReactorCount(size_t count);
  // Blocks for requests and responses. Null (default): DefaultBufferPool().
  ServerBuilder& SetBufferPool(BufferPool* pool);

  // Binds every address and starts serving. Fails with the first bind error,
  // INVALID_ARGUMENT for a malformed address or a method registered twice, or
  // FAILED_PRECONDITION when called a second time (a builder builds one server).
  StatusOr<std::unique_ptr<Server>> Build();

 private:
  struct Config;
  std::unique_ptr<Config> config_;
};

}  // namespace rill

#endif  // RILL_SERVER_H_
