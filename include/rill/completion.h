// rill::detail::Completion<void(Args...)>: a move-only, type-erased Asio completion handler that
// keeps what the handler carries.
//
// rill's asynchronous operations accept any Asio completion token (a callback,
// asio::use_awaitable, asio::use_future, a handler with bound executor, allocator or
// cancellation slot, ...). The operation stores the handler in a Completion, which:
//   - keeps small handlers inline (no allocation); a larger one is stored in memory from the
//     handler's associated allocator;
//   - exposes the handler's associated cancellation slot, so that the operation can install
//     what cancels it (rill cancels the whole RPC, with CANCELLED);
//   - when invoked, runs the handler on its associated executor: inline when that executor is
//     the one already running (or when the handler has none), otherwise by dispatching to it,
//     with the handler's allocator; the slot is cleared there first, on the thread that owns it;
//   - is an exception boundary: an exception the handler throws is logged (rill/log.h) and goes
//     no further, so a throwing callback never takes a reactor down.
//
// Thread safety: thread-compatible; invoked at most once.
#ifndef RILL_COMPLETION_H_
#define RILL_COMPLETION_H_

#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/dispatch.hpp>
#include <cstddef>
#include <memory>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "rill/detail/check.h"

namespace rill::detail {

// Logs an exception a completion handler threw (call inside a catch block).
void CompletionThrew() noexcept;

template <typename Signature>
class Completion;

template <typename... Args>
class Completion<void(Args...)> {
 public:
  static constexpr size_t kInlineSize = 96;

  Completion() noexcept = default;

  template <typename Handler,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<Handler>, Completion>>>
  explicit Completion(Handler&& handler)
      : slot_(asio::get_associated_cancellation_slot(handler)) {
    using H = std::decay_t<Handler>;
    if constexpr (sizeof(H) <= kInlineSize && alignof(H) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<H>) {
      new (storage_) H(std::forward<Handler>(handler));
      ops_ = &kInlineOps<H>;
    } else {
      using Block = HeapBlock<H>;
      typename Block::Alloc alloc(asio::get_associated_allocator(handler));
      Block* block = std::allocator_traits<typename Block::Alloc>::allocate(alloc, 1);
      new (block) Block{std::forward<Handler>(handler)};
      *reinterpret_cast<Block**>(storage_) = block;
      ops_ = &kHeapOps<H>;
    }
  }

  Completion(Completion&& other) noexcept
      : ops_(other.ops_), slot_(std::exchange(other.slot_, {})) {
    if (ops_ != nullptr) ops_->move(storage_, other.storage_);
    other.ops_ = nullptr;
  }
  Completion& operator=(Completion&& other) noexcept {
    if (this != &other) {
      Reset();
      ops_ = other.ops_;
      slot_ = std::exchange(other.slot_, {});
      if (ops_ != nullptr) ops_->move(storage_, other.storage_);
      other.ops_ = nullptr;
    }
    return *this;
  }
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion() { Reset(); }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  // The handler's cancellation slot (unconnected when it has none). An operation installs its
  // cancellation there while it is outstanding; call only on the initiating thread.
  [[nodiscard]] asio::cancellation_slot cancellation_slot() const noexcept { return slot_; }

  // Runs the handler (once) with `args` on its associated executor.
  void operator()(Args... args) {
    RILL_CHECK_MSG(ops_ != nullptr, "completion invoked twice or never set");
    const Ops* ops = ops_;
    ops_ = nullptr;
    ops->invoke(storage_, std::exchange(slot_, {}), std::forward<Args>(args)...);
  }

 private:
  struct Ops {
    void (*invoke)(void* storage, asio::cancellation_slot slot, Args&&... args);
    void (*move)(void* dst, void* src) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  template <typename H>
  struct HeapBlock {
    using Alloc = typename std::allocator_traits<
        asio::associated_allocator_t<H>>::template rebind_alloc<HeapBlock>;
    H handler;
  };

  // What runs on the handler's executor. It names the handler's allocator as a nested
  // allocator_type rather than through asio::bind_allocator: a binder specialises
  // associated_executor, and asio::dispatch then wraps every delivery in a work_dispatcher
  // (outstanding work counted on the io_context, two more type-erased executions), which a
  // coroutine's every resumption would pay for.
  template <typename H>
  struct Invoke {
    using allocator_type = asio::associated_allocator_t<H>;

    H handler;
    asio::cancellation_slot slot;
    std::tuple<std::decay_t<Args>...> args;

    allocator_type get_allocator() const noexcept {
      return asio::get_associated_allocator(handler);
    }

    void operator()() {
      // The operation is over: nothing may cancel it any more. Cleared here, on the
      // handler's executor, where whoever emits into the slot runs.
      if (slot.is_connected()) slot.clear();
      try {
        std::apply(std::move(handler), std::move(args));
      } catch (...) {
        CompletionThrew();
      }
    }
  };

  template <typename H>
  static void Deliver(H&& handler, asio::cancellation_slot slot, Args&&... args) {
    auto executor = asio::get_associated_executor(handler);
    static_assert(!asio::detail::is_work_dispatcher_required<Invoke<std::decay_t<H>>,
                                                             decltype(executor)>::value);
    asio::dispatch(executor, Invoke<std::decay_t<H>>{std::move(handler), slot,
                                                     std::tuple<std::decay_t<Args>...>(
                                                         std::forward<Args>(args)...)});
  }

  template <typename H>
  static constexpr Ops kInlineOps = {
      [](void* s, asio::cancellation_slot slot, Args&&... args) {
        H* h = std::launder(static_cast<H*>(s));
        H local(std::move(*h));
        h->~H();
        Deliver(std::move(local), slot, std::forward<Args>(args)...);
      },
      [](void* dst, void* src) noexcept {
        H* h = std::launder(static_cast<H*>(src));
        new (dst) H(std::move(*h));
        h->~H();
      },
      [](void* s) noexcept { std::launder(static_cast<H*>(s))->~H(); },
  };

  template <typename H>
  static void FreeBlock(HeapBlock<H>* block) noexcept {
    typename HeapBlock<H>::Alloc alloc(asio::get_associated_allocator(block->handler));
    block->~HeapBlock<H>();
    std::allocator_traits<typename HeapBlock<H>::Alloc>::deallocate(alloc, block, 1);
  }

  template <typename H>
  static constexpr Ops kHeapOps = {
      [](void* s, asio::cancellation_slot slot, Args&&... args) {
        auto* block = *static_cast<HeapBlock<H>**>(s);
        H local(std::move(block->handler));
        FreeBlock(block);
        Deliver(std::move(local), slot, std::forward<Args>(args)...);
      },
      [](void* dst, void* src) noexcept {
        *static_cast<HeapBlock<H>**>(dst) = *static_cast<HeapBlock<H>**>(src);
      },
      [](void* s) noexcept { FreeBlock(*static_cast<HeapBlock<H>**>(s)); },
  };

  void Reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
    slot_ = {};
  }

  alignas(std::max_align_t) unsigned char storage_[kInlineSize];
  const Ops* ops_ = nullptr;
  asio::cancellation_slot slot_;
};

}  // namespace rill::detail

#endif  // RILL_COMPLETION_H_
