// rill::detail::Completion<void(Args...)>: a move-only, type-erased Asio completion handler.
//
// rill's asynchronous operations accept any Asio completion token (a callback,
// asio::use_awaitable, asio::use_future, ...). The operation stores the handler in a Completion,
// which keeps small handlers inline (no allocation) and, when invoked, runs the handler on its
// associated executor: inline when that executor is the one already running (or when the
// handler has none), otherwise by dispatching to it.
//
// Thread safety: thread-compatible; invoked exactly once.
#ifndef RILL_COMPLETION_H_
#define RILL_COMPLETION_H_

#include <asio/associated_executor.hpp>
#include <asio/dispatch.hpp>
#include <cstddef>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/detail/check.h"

namespace rill::detail {

template <typename Signature>
class Completion;

template <typename... Args>
class Completion<void(Args...)> {
 public:
  static constexpr size_t kInlineSize = 96;

  Completion() noexcept = default;

  template <typename Handler,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<Handler>, Completion>>>
  explicit Completion(Handler&& handler) {
    using H = std::decay_t<Handler>;
    if constexpr (sizeof(H) <= kInlineSize && alignof(H) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<H>) {
      new (storage_) H(std::forward<Handler>(handler));
      ops_ = &kInlineOps<H>;
    } else {
      *reinterpret_cast<H**>(storage_) = new H(std::forward<Handler>(handler));
      ops_ = &kHeapOps<H>;
    }
  }

  Completion(Completion&& other) noexcept : ops_(other.ops_) {
    if (ops_ != nullptr) ops_->move(storage_, other.storage_);
    other.ops_ = nullptr;
  }
  Completion& operator=(Completion&& other) noexcept {
    if (this != &other) {
      Reset();
      ops_ = other.ops_;
      if (ops_ != nullptr) ops_->move(storage_, other.storage_);
      other.ops_ = nullptr;
    }
    return *this;
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion() { Reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  // Runs the handler (once) with `args` on its associated executor.
  void operator()(Args... args) {
    RILL_CHECK_MSG(ops_ != nullptr, "completion invoked twice or never set");
    const Ops* ops = ops_;
    ops_ = nullptr;
    ops->invoke(storage_, std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    void (*invoke)(void* storage, Args&&... args);
    void (*move)(void* dst, void* src) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  template <typename H>
  static void Deliver(H&& handler, Args&&... args) {
    auto executor = asio::get_associated_executor(handler);
    asio::dispatch(executor,
                   [h = std::move(handler), tuple = std::tuple<std::decay_t<Args>...>(
                                                std::forward<Args>(args)...)]() mutable {
                     std::apply(std::move(h), std::move(tuple));
                   });
  }

  template <typename H>
  static constexpr Ops kInlineOps = {
      [](void* s, Args&&... args) {
        H* h = std::launder(static_cast<H*>(s));
        H local(std::move(*h));
        h->~H();
        Deliver(std::move(local), std::forward<Args>(args)...);
      },
      [](void* dst, void* src) noexcept {
        H* h = std::launder(static_cast<H*>(src));
        new (dst) H(std::move(*h));
        h->~H();
      },
      [](void* s) noexcept { std::launder(static_cast<H*>(s))->~H(); },
  };

  template <typename H>
  static constexpr Ops kHeapOps = {
      [](void* s, Args&&... args) {
        H* h = *static_cast<H**>(s);
        H local(std::move(*h));
        delete h;
        Deliver(std::move(local), std::forward<Args>(args)...);
      },
      [](void* dst, void* src) noexcept { *static_cast<H**>(dst) = *static_cast<H**>(src); },
      [](void* s) noexcept { delete *static_cast<H**>(s); },
  };

  void Reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
};

}  // namespace rill::detail

#endif  // RILL_COMPLETION_H_
