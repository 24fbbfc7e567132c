#include "src/rpc/in_process_acceptor.h"

#include "src/rpc/server_impl.h"

namespace rill::internal {

StatusOr<PipeEnd> InProcessAcceptor::Connect() {
  auto [client, server] = InMemoryPipe::Create();
  std::lock_guard lock(mu_);
  if (server_ == nullptr || server_->shutting_down()) {
    return Status(StatusCode::kUnavailable, "the in-process server is shut down");
  }
  server_->AcceptInProcess(std::move(server));
  return std::move(client);
}

void InProcessAcceptor::Stop() {
  std::lock_guard lock(mu_);
  server_ = nullptr;
}

}  // namespace rill::internal
