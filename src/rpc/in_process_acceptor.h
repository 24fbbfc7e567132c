// InProcessAcceptor: how an in-process channel reaches its server (Server::InProcessChannel).
//
// The server creates one and every in-process channel shares it. A connection attempt makes an
// InMemoryPipe, hands one end to the server (which serves it on one of its reactors as it would
// an accepted socket) and returns the other to the channel. Once the server's shutdown began
// (Stop()), attempts fail with UNAVAILABLE, so a channel may outlive its server safely.
//
// Thread safety: thread-safe.
#ifndef RILL_SRC_RPC_IN_PROCESS_ACCEPTOR_H_
#define RILL_SRC_RPC_IN_PROCESS_ACCEPTOR_H_

#include <mutex>

#include "rill/status_or.h"
#include "src/transport/in_memory_pipe.h"

namespace rill::internal {

class ServerImpl;

class InProcessAcceptor {
 public:
  explicit InProcessAcceptor(ServerImpl* server) : server_(server) {}
  InProcessAcceptor(const InProcessAcceptor&) = delete;
  InProcessAcceptor& operator=(const InProcessAcceptor&) = delete;

  // A new connection to the server: the channel's end of it, or UNAVAILABLE once the server
  // stopped accepting. The server's end starts on a server reactor (asynchronously).
  [[nodiscard]] StatusOr<PipeEnd> Connect();
  // The server stops accepting; returns once no Connect() is inside the server any more.
  void Stop();

 private:
  std::mutex mu_;
  ServerImpl* server_;  // guarded by mu_; null once stopped
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_IN_PROCESS_ACCEPTOR_H_
