// Intrusive shared ownership: RefCounted<T> keeps an atomic count inside the object, RefPtr<T>
// owns one reference. The object decides what happens when the last reference goes
// (T::OnLastUnref(): delete itself, go back to a pool, ...), so pooled objects and objects that
// must be destroyed on a particular thread use the same handle.
//
//   class Call : public RefCounted<Call> {
//    public:
//     void OnLastUnref() { pool_.Recycle(this); }
//   };
//   RefPtr<Call> call = RefPtr<Call>::Adopt(new Call(...));   // count 1
//   RefPtr<Call> more = call;                                  // count 2
//
// rill's ownership model (see docs/ownership.md): objects that outlive a callback — calls,
// streams, transports, channels — are held by RefPtrs or by a Gate that waits for what it owns;
// no `delete this` outside OnLastUnref, no polling drains, no destructor that blocks a reactor.
//
// Thread safety: Ref()/Unref() are thread-safe; OnLastUnref runs on the thread that dropped the
// last reference.
#ifndef RILL_SRC_BASE_REF_COUNTED_H_
#define RILL_SRC_BASE_REF_COUNTED_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "rill/detail/check.h"

namespace rill::internal {

template <typename T>
class RefCounted {
 public:
  void Ref() const noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() const noexcept {
    const int32_t before = refs_.fetch_sub(1, std::memory_order_acq_rel);
    RILL_DCHECK_MSG(before > 0, "reference count went below zero");
    if (before == 1) static_cast<T*>(const_cast<RefCounted*>(this))->OnLastUnref();
  }
  // For a pooled object taken out of its pool again.
  void ResetRefs(int32_t count) noexcept { refs_.store(count, std::memory_order_relaxed); }
  [[nodiscard]] int32_t refs_for_testing() const noexcept {
    return refs_.load(std::memory_order_relaxed);
  }

 protected:
  RefCounted() = default;
  ~RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

 private:
  mutable std::atomic<int32_t> refs_{1};
};

template <typename T>
class RefPtr {
 public:
  RefPtr() noexcept = default;
  // Takes a new reference.
  explicit RefPtr(T* object) noexcept : object_(object) {
    if (object_ != nullptr) object_->Ref();
  }
  // Takes over a reference the caller owns (a fresh object's first one).
  static RefPtr Adopt(T* object) noexcept {
    RefPtr p;
    p.object_ = object;
    return p;
  }
  RefPtr(const RefPtr& other) noexcept : RefPtr(other.object_) {}
  RefPtr(RefPtr&& other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
  RefPtr& operator=(RefPtr other) noexcept {
    std::swap(object_, other.object_);
    return *this;
  }
  ~RefPtr() { reset(); }

  void reset() noexcept {
    if (T* o = std::exchange(object_, nullptr)) o->Unref();
  }
  // Gives up ownership without dropping the reference.
  [[nodiscard]] T* release() noexcept { return std::exchange(object_, nullptr); }

  [[nodiscard]] T* get() const noexcept { return object_; }
  T* operator->() const noexcept { return object_; }
  T& operator*() const noexcept { return *object_; }
  explicit operator bool() const noexcept { return object_ != nullptr; }

 private:
  T* object_ = nullptr;
};

}  // namespace rill::internal

#endif  // RILL_SRC_BASE_REF_COUNTED_H_
