// Listener: accepts connections on one address and hands each accepted socket, already bound to
// the reactor chosen for it, to a callback running on that reactor.
//
// Thread safety: Start/Stop from any thread; the callback runs on the chosen reactor.
#ifndef RILL_SRC_TRANSPORT_LISTENER_H_
#define RILL_SRC_TRANSPORT_LISTENER_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>

#include "rill/status_or.h"
#include "src/transport/address.h"

namespace rill {
class ReactorPool;
}  // namespace rill

namespace rill::internal {

class Listener {
 public:
  using Socket = asio::generic::stream_protocol::socket;
  // Runs on the accepted socket's reactor.
  using AcceptFn = std::function<void(Socket socket)>;

  // Binds and listens on `address` (the acceptor runs on reactors.reactor(0)). Accepted
  // sockets are spread over the pool round-robin.
  static StatusOr<std::unique_ptr<Listener>> Create(const Address& address, ReactorPool& reactors,
                                                    AcceptFn on_accept);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  void Start();
  // Stops accepting and closes the listening socket; returns once the accept loop has ended.
  void Stop();
  [[nodiscard]] int port() const noexcept { return port_; }
  // The listening socket (valid until Stop()).
  [[nodiscard]] int native_handle() const noexcept;
  // "ipv4:0.0.0.0:5000", "unix:/path".
  [[nodiscard]] const std::string& name() const noexcept;

 private:
  struct State;
  Listener(std::shared_ptr<State> state, int port) : state_(std::move(state)), port_(port) {}
  std::shared_ptr<State> state_;
  int port_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_LISTENER_H_
