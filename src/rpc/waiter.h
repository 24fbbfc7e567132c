// Waiter: where a coroutine on a reactor parks until an event wakes it.
//
//   while (queue.empty()) co_await waiter.Wait();   // in the coroutine
//   waiter.Wake();                                   // in the event handler
//
// Wake() resumes the coroutine from a fresh handler (never inside the caller's stack), so event
// code can wake coroutines without being re-entered by them.
//
// A wake costs no heap allocation: a reactor serving many streams queues many wakes per turn,
// more than Asio's per-thread recycling keeps, so the wake operation lives in a HandlerSlot
// inside the Waiter. At most one wake is queued at a time (Wake() calls before it runs fold into
// it), so one slot suffices; Asio frees it before the handler runs, so the resumed coroutine can
// park and be woken again at once.
//
// Lifetime: a queued wake refers to its Waiter, so the Waiter must outlive it. A wake is queued
// only while a coroutine is parked here; an owner that lives at least as long as the coroutines
// waiting on it (ServerCall: it is released only after its handler finished) meets this. If the
// reactor is destroyed with the wake still queued, the parked coroutine is destroyed with it, as
// it would be with any handler the reactor drops.
//
// Thread safety: reactor-confined. At most one coroutine waits at a time.
#ifndef RILL_SRC_RPC_WAITER_H_
#define RILL_SRC_RPC_WAITER_H_

#include <asio/async_result.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/use_awaitable.hpp>
#include <utility>

#include "rill/completion.h"
#include "rill/detail/check.h"
#include "src/rpc/handler_slot.h"

namespace rill::internal {

class Waiter {
 public:
  explicit Waiter(asio::io_context& io) : io_(&io) {}
  ~Waiter() { RILL_DCHECK_MSG(!slot_.in_use(), "Waiter destroyed with a wake queued"); }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // Parks the calling coroutine until Wake(). Completes on the reactor's executor, from a
  // handler of its own; at most one may be outstanding; not cancellable (the waker decides).
  [[nodiscard]] auto Wait() {
    return asio::async_initiate<decltype(asio::use_awaitable), void()>(
        [this](auto handler) {
          RILL_DCHECK_MSG(!pending_, "two coroutines wait on one Waiter");
          pending_ = detail::Completion<void()>(std::move(handler));
        },
        asio::use_awaitable);
  }

  // Queues the resumption of the parked coroutine, if any, and returns. Does nothing when no
  // coroutine is parked or its wake is already queued.
  void Wake() {
    if (!pending_ || slot_.in_use()) return;
    asio::post(*io_, slot_.Bind(WakeHandler(this)));
  }

  // A coroutine is parked and no wake is queued for it.
  [[nodiscard]] bool waiting() const noexcept {
    return static_cast<bool>(pending_) && !slot_.in_use();
  }

 private:
  // The posted handler. Move-only: exactly one copy is live, and if the reactor destroys it
  // without running it, it destroys the parked coroutine, which nothing else would resume.
  class WakeHandler {
   public:
    explicit WakeHandler(Waiter* waiter) noexcept : waiter_(waiter) {}
    WakeHandler(WakeHandler&& other) noexcept : waiter_(std::exchange(other.waiter_, nullptr)) {}
    WakeHandler& operator=(WakeHandler&&) = delete;
    ~WakeHandler() {
      if (waiter_ != nullptr) waiter_->pending_ = detail::Completion<void()>();
    }

    void operator()() {
      // The coroutine may finish and take the Waiter's owner with it: nothing touches the
      // Waiter after the resumption.
      Waiter* waiter = std::exchange(waiter_, nullptr);
      if (waiter->pending_) waiter->pending_();
    }

   private:
    Waiter* waiter_;
  };

  asio::io_context* io_;
  detail::Completion<void()> pending_;
  // Room for the wake operation (Asio's operation header and a bound WakeHandler); in use while
  // a wake is queued.
  HandlerSlot<64> slot_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_WAITER_H_
