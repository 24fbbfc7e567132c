#include "rill/service.h"

#include <stdexcept>

namespace rill::detail {

// The defaults answer for a method whose kind does not use them; generated handlers override
// the ones their kind needs.

Status MethodHandler::RunUnary(ServerContext& context, const MessageLite&, MessageLite&) const {
  return RunAsyncHandler(context);
}

Awaitable<Status> MethodHandler::RunUnaryAsync(ServerContext&, const MessageLite&,
                                               MessageLite&) const {
  co_return Status(StatusCode::kUnimplemented, path_ + " is not a unary method");
}

Awaitable<Status> MethodHandler::RunStream(ServerContext&, internal::ServerStreamCore&) const {
  co_return Status(StatusCode::kUnimplemented, path_ + " is not a streaming method");
}

}  // namespace rill::detail

namespace rill {

void Service::CarryPayload(std::string_view method, const PayloadField& request,
                           const PayloadField& response) {
  for (const auto& handler : methods_) {
    const std::string& path = handler->path();
    const size_t slash = path.rfind('/');
    if (std::string_view(path).substr(slash + 1) == method) {
      handler->set_payload_fields(request, response);
      return;
    }
  }
  throw std::invalid_argument("service " + name_ + " has no method " + std::string(method));
}

}  // namespace rill
