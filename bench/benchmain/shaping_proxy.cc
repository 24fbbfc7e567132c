#include "bench/benchmain/shaping_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <deque>
#include <filesystem>
#include <future>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "rill/awaitable.h"

namespace rill::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Protocol = asio::generic::stream_protocol;
using Socket = Protocol::socket;
using Endpoint = Protocol::endpoint;
using Acceptor = asio::basic_socket_acceptor<Protocol>;
constexpr auto kNoThrow = asio::experimental::as_tuple(asio::use_awaitable);

constexpr std::size_t kMaxChunk = 64 * 1024;
// Queue bound of a direction without a bandwidth limit (with one, congestion bounds it).
constexpr std::size_t kMaxQueuedBytes = 64 << 20;

// Time a chunk occupies a link of `kbps` kilobits per second (grpc-go's Network.pktTime).
Clock::duration PacketTime(std::size_t bytes, std::int64_t kbps) {
  if (kbps <= 0) return Clock::duration::zero();
  const auto ns = static_cast<std::int64_t>(bytes) * 1'000'000'000 / (kbps * (1024 / 8));
  return std::chrono::nanoseconds(ns);
}

StatusOr<Endpoint> ResolveUpstream(std::string_view upstream) {
  if (upstream.starts_with("unix:")) {
    std::string_view path = upstream.substr(5);
    if (path.starts_with("//")) path.remove_prefix(2);
    return Endpoint(asio::local::stream_protocol::endpoint(std::string(path)));
  }
  const std::size_t colon = upstream.rfind(':');
  if (colon == std::string_view::npos) {
    return rill::Status(rill::StatusCode::kInvalidArgument,
                        "upstream must be host:port: " + std::string(upstream));
  }
  std::string host(upstream.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  asio::error_code ec;
  auto results = resolver.resolve(host, std::string(upstream.substr(colon + 1)), ec);
  if (ec || results.empty()) {
    return rill::Status(rill::StatusCode::kUnavailable,
                        "cannot resolve " + std::string(upstream) + ": " + ec.message());
  }
  return Endpoint(results.begin()->endpoint());
}

void SetNoDelay(Socket& socket) {
  const int family = socket.local_endpoint().data()->sa_family;
  if (family == AF_INET || family == AF_INET6) {
    asio::error_code ignored;
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
  }
}

struct Chunk {
  std::vector<char> data;
  std::size_t size = 0;
  Clock::time_point due;
};

// One direction of a proxied connection: chunks read from `from`, waiting to be written to `to`.
struct Direction {
  Direction(Socket* from_socket, Socket* to_socket, asio::io_context& io)
      : from(from_socket), to(to_socket), reader_timer(io), writer_timer(io) {}

  Socket* from;
  Socket* to;
  std::deque<Chunk> queue;
  std::vector<Chunk> spare;  // Written chunks, reused so that steady state does not allocate.
  std::size_t queued_bytes = 0;
  Clock::time_point link_free{};  // When the simulated link has sent everything queued.
  bool reader_done = false;
  // Sleeps, and events: a waiter sets expiry to max and the other side cancels it.
  asio::steady_timer reader_timer;
  asio::steady_timer writer_timer;
};

}  // namespace

struct ShapingProxy::Impl {
  // One proxied connection. Owned by the coroutines serving it (shared_ptr parameters);
  // registered in `links` so that shutdown can close it.
  struct Link {
    Link(Impl* owner, Socket client_socket)
        : impl(owner),
          client(std::move(client_socket)),
          server(owner->io),
          up(&client, &server, owner->io),
          down(&server, &client, owner->io) {
      impl->links.insert(this);
    }
    ~Link() { impl->links.erase(this); }

    void Close() {
      closed = true;
      asio::error_code ignored;
      client.close(ignored);
      server.close(ignored);
      for (Direction* d : {&up, &down}) {
        d->reader_timer.cancel();
        d->writer_timer.cancel();
      }
    }

    Impl* impl;
    Socket client;
    Socket server;
    Direction up;    // client -> server
    Direction down;  // server -> client
    bool closed = false;
  };

  Impl(Endpoint upstream_endpoint, Conditions shape)
      : upstream(std::move(upstream_endpoint)), conditions(shape), acceptor(io) {}

  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  Endpoint upstream;
  Conditions conditions;
  Acceptor acceptor;
  std::string target;
  std::string unix_path;  // Removed on shutdown.
  std::unordered_set<Link*> links;
  std::thread thread;
};

namespace {

using Link = ShapingProxy::Impl::Link;

rill::Awaitable<void> WaitForSignal(asio::steady_timer& timer) {
  timer.expires_at(Clock::time_point::max());
  co_await timer.async_wait(kNoThrow);
}

rill::Awaitable<void> ReadSide(std::shared_ptr<Link> link, Direction* d,
                               ShapingProxy::Conditions c) {
  const std::size_t capacity =
      c.mtu > 0 ? std::min<std::size_t>(static_cast<std::size_t>(c.mtu), kMaxChunk) : kMaxChunk;
  const Clock::duration latency = std::max<Clock::duration>(
      Clock::duration::zero(), std::chrono::duration_cast<Clock::duration>(c.latency));
  while (!link->closed) {
    if (c.kbps > 0) {
      // grpc-go: a writer sleeps while the link is busy for more than `latency` ahead.
      const Clock::duration congestion = d->link_free - Clock::now() - latency;
      if (congestion > Clock::duration::zero()) {
        d->reader_timer.expires_after(congestion);
        co_await d->reader_timer.async_wait(kNoThrow);
        continue;
      }
    } else if (d->queued_bytes >= kMaxQueuedBytes) {
      co_await WaitForSignal(d->reader_timer);
      continue;
    }
    Chunk chunk;
    if (!d->spare.empty()) {
      chunk = std::move(d->spare.back());
      d->spare.pop_back();
    }
    chunk.data.resize(capacity);
    auto [ec, n] =
        co_await d->from->async_read_some(asio::buffer(chunk.data.data(), capacity), kNoThrow);
    if (ec) break;
    const Clock::time_point now = Clock::now();
    d->link_free = std::max(d->link_free, now) + PacketTime(n, c.kbps);
    chunk.size = n;
    chunk.due = d->link_free + latency;
    d->queued_bytes += n;
    d->queue.push_back(std::move(chunk));
    d->writer_timer.cancel();
  }
  d->reader_done = true;
  d->writer_timer.cancel();
}

rill::Awaitable<void> WriteSide(std::shared_ptr<Link> link, Direction* d) {
  while (!link->closed) {
    if (d->queue.empty()) {
      if (d->reader_done) {
        asio::error_code ignored;
        d->to->shutdown(asio::socket_base::shutdown_send, ignored);
        break;
      }
      co_await WaitForSignal(d->writer_timer);
      continue;
    }
    Chunk& front = d->queue.front();
    if (front.due > Clock::now()) {
      d->writer_timer.expires_at(front.due);
      co_await d->writer_timer.async_wait(kNoThrow);
      continue;
    }
    auto [ec, n] =
        co_await asio::async_write(*d->to, asio::buffer(front.data.data(), front.size), kNoThrow);
    if (ec) {
      link->Close();
      break;
    }
    d->queued_bytes -= front.size;
    d->spare.push_back(std::move(front));
    d->queue.pop_front();
    d->reader_timer.cancel();
  }
}

rill::Awaitable<void> Serve(ShapingProxy::Impl* impl, Socket client) {
  auto link = std::make_shared<Link>(impl, std::move(client));
  auto [ec] = co_await link->server.async_connect(impl->upstream, kNoThrow);
  if (ec || link->closed) co_return;  // Dropping the link closes the client's socket.
  SetNoDelay(link->client);
  SetNoDelay(link->server);
  // Detached: each coroutine holds the link; shutdown closes every registered link, which
  // ends them, and the proxy's thread runs until they all have.
  asio::co_spawn(impl->io, ReadSide(link, &link->up, impl->conditions), asio::detached);
  asio::co_spawn(impl->io, WriteSide(link, &link->up), asio::detached);
  asio::co_spawn(impl->io, ReadSide(link, &link->down, impl->conditions), asio::detached);
  asio::co_spawn(impl->io, WriteSide(link, &link->down), asio::detached);
}

rill::Awaitable<void> AcceptLoop(ShapingProxy::Impl* impl) {
  while (true) {
    auto [ec, socket] = co_await impl->acceptor.async_accept(kNoThrow);
    if (ec) {
      if (!impl->acceptor.is_open()) co_return;
      continue;
    }
    // Detached: see Serve().
    asio::co_spawn(impl->io, Serve(impl, std::move(socket)), asio::detached);
  }
}

}  // namespace

rill::StatusOr<std::unique_ptr<ShapingProxy>> ShapingProxy::Start(std::string_view upstream,
                                                                  bool unix_listener,
                                                                  Conditions conditions) {
  StatusOr<Endpoint> upstream_endpoint = ResolveUpstream(upstream);
  if (!upstream_endpoint.ok()) return upstream_endpoint.status();
  auto impl = std::make_unique<Impl>(std::move(*upstream_endpoint), conditions);

  asio::error_code ec;
  Endpoint listen;
  if (unix_listener) {
    static std::atomic<int> counter{0};
    impl->unix_path = (std::filesystem::temp_directory_path() /
                       ("rill-shaping-proxy-" + std::to_string(getpid()) + "-" +
                        std::to_string(counter.fetch_add(1)) + ".sock"))
                          .string();
    std::filesystem::remove(impl->unix_path, ec);
    listen = Endpoint(asio::local::stream_protocol::endpoint(impl->unix_path));
  } else {
    listen = Endpoint(asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  }
  impl->acceptor.open(listen.protocol(), ec);
  if (!ec) impl->acceptor.bind(listen, ec);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return rill::Status(rill::StatusCode::kUnavailable, "shaping proxy: " + ec.message());
  }
  if (unix_listener) {
    impl->target = "unix:" + impl->unix_path;
  } else {
    const Endpoint bound = impl->acceptor.local_endpoint();
    const auto* in = reinterpret_cast<const sockaddr_in*>(bound.data());
    impl->target = "127.0.0.1:" + std::to_string(ntohs(in->sin_port));
  }

  Impl* raw = impl.get();
  // Detached: the accept loop ends when the destructor closes the acceptor.
  asio::co_spawn(raw->io, AcceptLoop(raw), asio::detached);
  raw->thread = std::thread([raw] {
    pthread_setname_np(pthread_self(), "shaping-proxy");
    raw->io.run();
  });
  return std::unique_ptr<ShapingProxy>(new ShapingProxy(std::move(impl)));
}

ShapingProxy::ShapingProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ShapingProxy::~ShapingProxy() {
  Impl* impl = impl_.get();
  asio::post(impl->io, [impl] {
    asio::error_code ignored;
    impl->acceptor.close(ignored);
    // Close() may not erase from `links` (the links die later, in their coroutines).
    for (Link* link : impl->links) link->Close();
    impl->guard.reset();
  });
  impl->thread.join();
  if (!impl->unix_path.empty()) {
    std::error_code ignored;
    std::filesystem::remove(impl->unix_path, ignored);
  }
}

const std::string& ShapingProxy::target() const { return impl_->target; }

}  // namespace rill::bench
