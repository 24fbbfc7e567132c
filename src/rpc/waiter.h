// Waiter: where a coroutine on a reactor parks until an event wakes it.
//
//   while (queue.empty()) co_await waiter.Wait();   // in the coroutine
//   waiter.Wake();                                   // in the event handler
//
// Wake() resumes the coroutine from a fresh handler (never inside the caller's stack), so event
// code can wake coroutines without being re-entered by them.
//
// Thread safety: reactor-confined. At most one coroutine waits at a time.
#ifndef RILL_SRC_RPC_WAITER_H_
#define RILL_SRC_RPC_WAITER_H_

#include <asio/async_result.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>

#include "rill/completion.h"

namespace rill::internal {

class Waiter {
 public:
  explicit Waiter(asio::io_context& io) : io_(&io) {}

  [[nodiscard]] auto Wait() {
    return asio::async_initiate<decltype(asio::use_awaitable), void()>(
        [this](auto handler) {
          RILL_DCHECK_MSG(!pending_, "two coroutines wait on one Waiter");
          pending_ = detail::Completion<void()>(std::move(handler));
        },
        asio::use_awaitable);
  }

  void Wake() {
    if (!pending_) return;
    asio::post(*io_, [done = std::move(pending_)]() mutable { done(); });
  }

  [[nodiscard]] bool waiting() const noexcept { return static_cast<bool>(pending_); }

 private:
  asio::io_context* io_;
  detail::Completion<void()> pending_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_WAITER_H_
