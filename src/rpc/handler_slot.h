// HandlerSlot: memory inside an object for the one Asio operation it has queued at a time, so
// that queueing it costs no heap allocation.
//
//   HandlerSlot<128> slot_;   // a member of the object that queues the handler
//   asio::post(io, slot_.Bind(std::move(handler)));
//
// Asio allocates a queued handler's operation through the handler's associated allocator. Its
// default allocator recycles through a per-thread cache that keeps only two freed blocks, and a
// reactor serving many streams queues many handlers per turn (a completion or a wake for each
// stream that got a message), so past the second one every handler reaches operator new. The
// operation of a handler wrapped by Bind() lives in the slot instead. Asio frees the operation's
// memory before it invokes the handler, so the handler can queue its successor in the same slot.
//
// One operation holds the slot at a time. An operation allocated while the slot is taken gets
// ordinary heap memory: owners queue at most one operation per slot, so only a caller breaking
// that owner's one-outstanding contract gets there, and it still works. An operation type larger
// than the slot does not compile.
//
// Lifetime: the slot must outlive the operation queued in it, so its owner is not destroyed
// while in_use(). A reactor destroyed with the operation still queued frees it through the
// allocator, so such a reactor goes before the owner does.
//
// Thread safety: reactor-confined (the allocator is used by the reactor that runs the handler).
#ifndef RILL_SRC_RPC_HANDLER_SLOT_H_
#define RILL_SRC_RPC_HANDLER_SLOT_H_

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "rill/detail/check.h"

namespace rill::internal {

template <size_t kSize>
class HandlerSlot {
 public:
  // Hands out the slot for one operation at a time, the heap while it is taken.
  template <typename T>
  class Allocator {
   public:
    using value_type = T;

    explicit Allocator(HandlerSlot* slot) noexcept : slot_(slot) {}
    template <typename U>
    Allocator(const Allocator<U>& other) noexcept  // NOLINT(google-explicit-constructor)
        : slot_(other.slot_) {}

    T* allocate(size_t n) {
      static_assert(sizeof(T) <= kSize && alignof(T) <= alignof(std::max_align_t),
                    "the operation outgrew its HandlerSlot");
      if (n != 1 || slot_->in_use_) return std::allocator<T>().allocate(n);
      slot_->in_use_ = true;
      return static_cast<T*>(static_cast<void*>(slot_->storage_));
    }
    void deallocate(T* p, size_t n) noexcept {
      if (static_cast<void*>(p) != static_cast<void*>(slot_->storage_)) {
        std::allocator<T>().deallocate(p, n);
        return;
      }
      RILL_DCHECK_MSG(slot_->in_use_, "HandlerSlot freed twice");
      slot_->in_use_ = false;
    }

    friend bool operator==(const Allocator& a, const Allocator& b) noexcept {
      return a.slot_ == b.slot_;
    }

   private:
    template <typename U>
    friend class Allocator;

    HandlerSlot* slot_;
  };

  HandlerSlot() = default;
  ~HandlerSlot() { RILL_DCHECK_MSG(!in_use_, "HandlerSlot destroyed with an operation queued"); }
  HandlerSlot(const HandlerSlot&) = delete;
  HandlerSlot& operator=(const HandlerSlot&) = delete;

  // `handler` with this slot as its associated allocator.
  template <typename Handler>
  class Bound {
   public:
    using allocator_type = Allocator<void>;

    Bound(HandlerSlot* slot, Handler handler) : slot_(slot), handler_(std::move(handler)) {}

    [[nodiscard]] allocator_type get_allocator() const noexcept { return allocator_type(slot_); }

    template <typename... Args>
    decltype(auto) operator()(Args&&... args) {
      return handler_(std::forward<Args>(args)...);
    }

   private:
    HandlerSlot* slot_;
    Handler handler_;
  };

  // Wraps `handler` so that Asio allocates its operation here. Unlike asio::bind_allocator it
  // leaves the handler's associated executor unspecified, so asio::post runs it directly rather
  // than through a dispatcher that tracks work and dispatches it a second time.
  template <typename Handler>
  [[nodiscard]] Bound<std::decay_t<Handler>> Bind(Handler&& handler) {
    return Bound<std::decay_t<Handler>>(this, std::forward<Handler>(handler));
  }

  // An operation occupies the slot: queued, and not yet started running.
  [[nodiscard]] bool in_use() const noexcept { return in_use_; }

 private:
  bool in_use_ = false;
  alignas(std::max_align_t) std::byte storage_[kSize];
};

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_HANDLER_SLOT_H_
