// rill::Awaitable<T>: the coroutine type of rill's asynchronous handlers and stubs.
//
// It is Asio's awaitable, so a handler can co_await rill calls, Asio timers and sockets alike.
//
//   rill::Awaitable<rill::Status> SayHelloAsync(rill::ServerContext& ctx,
//                                               const HelloRequest& req, HelloReply& reply) {
//     asio::steady_timer timer(ctx.io_context(), std::chrono::milliseconds(5));
//     co_await timer.async_wait(asio::use_awaitable);
//     reply.set_message("Hello " + req.name());
//     co_return rill::Status();
//   }
#ifndef RILL_AWAITABLE_H_
#define RILL_AWAITABLE_H_

#include <asio/awaitable.hpp>
#include <asio/use_awaitable.hpp>

namespace rill {

template <typename T>
using Awaitable = asio::awaitable<T>;

}  // namespace rill

#endif  // RILL_AWAITABLE_H_
