#include "rill/service.h"

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
