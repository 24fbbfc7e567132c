#include "src/transport/listener.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <future>

#include "rill/log.h"
#include "rill/reactor_pool.h"

namespace rill::internal {

struct Listener::State : std::enable_shared_from_this<Listener::State> {
  using Acceptor = asio::basic_socket_acceptor<asio::generic::stream_protocol>;

  State(asio::io_context& io, ReactorPool& pool, AcceptFn fn)
      : io_context(io), acceptor(io), reactors(pool), on_accept(std::move(fn)), backoff_timer(io) {}

  void AcceptNext() {
    asio::io_context& target = reactors.Next();
    acceptor.async_accept(target, [self = shared_from_this(), &target](
                                      const asio::error_code& ec, Socket socket) {
      if (self->stopped) return;
      if (!ec) {
        self->backoff = std::chrono::milliseconds(0);
        asio::post(target, [self, s = std::move(socket)]() mutable {
          self->on_accept(std::move(s));
        });
      } else if (ec == asio::error::operation_aborted) {
        return;
      } else if (IsResourceShortage(ec)) {
        // Out of file descriptors (or memory): accepting again at once would fail at once, and
        // spin. Wait, longer each time, until a connection closed somewhere.
        self->BackOff(ec);
        return;
      }
      // Other errors (ECONNABORTED: the peer gave up while queued) concern one connection.
      self->AcceptNext();
    });
  }

  static bool IsResourceShortage(const asio::error_code& ec) {
    return ec == asio::error::no_descriptors || ec.value() == ENFILE ||
           ec == asio::error::no_buffer_space || ec == asio::error::no_memory;
  }

  void BackOff(const asio::error_code& ec) {
    const bool first = backoff.count() == 0;
    backoff = first ? std::chrono::milliseconds(10)
                    : std::min(backoff * 2, std::chrono::milliseconds(1000));
    if (first) {
      Log(LogSeverity::kWarning, "accept: " + ec.message() +
                                     "; pausing new connections on " + name +
                                     " until descriptors are free (retrying with backoff)");
    }
    backoff_timer.expires_after(backoff);
    backoff_timer.async_wait([self = shared_from_this()](const asio::error_code& wait_ec) {
      if (!wait_ec && !self->stopped) self->AcceptNext();
    });
  }

  asio::io_context& io_context;
  Acceptor acceptor;
  ReactorPool& reactors;
  AcceptFn on_accept;
  std::string unix_path;
  std::string name;  // for log lines
  bool stopped = false;
  asio::steady_timer backoff_timer;
  std::chrono::milliseconds backoff{0};
};

StatusOr<std::unique_ptr<Listener>> Listener::Create(const Address& address,
                                                     ReactorPool& reactors, AcceptFn on_accept) {
  asio::io_context& io = reactors.reactor(0);
  auto state = std::make_shared<State>(io, reactors, std::move(on_accept));
  asio::error_code ec;
  asio::generic::stream_protocol::endpoint endpoint;
  if (address.kind == Address::Kind::kUnix) {
    const bool abstract = !address.path.empty() && address.path[0] == '\0';
    endpoint = asio::local::stream_protocol::endpoint(address.path);
    if (abstract) {
      state->name = "unix-abstract:" + address.path.substr(1);
    } else {
      ::unlink(address.path.c_str());  // a stale socket file from an earlier run
      state->unix_path = address.path;
      state->name = "unix:" + address.path;
    }
  } else {
    asio::ip::tcp::resolver resolver(io);
    auto results = resolver.resolve(address.host, std::to_string(address.port),
                                    asio::ip::tcp::resolver::passive, ec);
    if (ec || results.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "cannot resolve " + address.host + ": " + ec.message());
    }
    endpoint = results.begin()->endpoint();
  }
  state->acceptor.open(endpoint.protocol(), ec);
  // A child process must not inherit the listening socket (it would keep the port open, and
  // queue connections nobody serves, after the server stopped).
  if (!ec) ::fcntl(state->acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec && address.kind == Address::Kind::kTcp) {
    state->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  }
  if (!ec) state->acceptor.bind(endpoint, ec);
  if (!ec) state->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable,
                  "cannot listen on " + (address.kind == Address::Kind::kUnix
                                             ? state->name
                                             : address.Authority()) +
                      ": " + ec.message());
  }
  int port = 0;
  if (address.kind == Address::Kind::kTcp) {
    const auto local = state->acceptor.local_endpoint(ec);
    const sockaddr* sa = local.data();
    if (sa->sa_family == AF_INET) {
      port = ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
      port = ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
    }
    state->name = PeerName(local);
  }
  return std::unique_ptr<Listener>(new Listener(std::move(state), port));
}

Listener::~Listener() { Stop(); }

int Listener::native_handle() const noexcept { return state_->acceptor.native_handle(); }

const std::string& Listener::name() const noexcept { return state_->name; }

void Listener::Start() {
  asio::post(state_->io_context, [state = state_] { state->AcceptNext(); });
}

void Listener::Stop() {
  if (!state_) return;
  auto close = [state = state_] {
    state->stopped = true;
    asio::error_code ignored;
    state->acceptor.close(ignored);
    state->backoff_timer.cancel();
    if (!state->unix_path.empty()) ::unlink(state->unix_path.c_str());
  };
  if (ReactorPool::Current() == &state_->io_context) {
    close();  // already on the acceptor's reactor
  } else {
    std::promise<void> done;
    auto closed = done.get_future();
    asio::post(state_->io_context, [&close, &done] {
      close();
      done.set_value();
    });
    closed.wait();
  }
  state_.reset();
}

}  // namespace rill::internal
