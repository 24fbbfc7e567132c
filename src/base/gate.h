// Gate: a count of the work an owner has started (timers, posted handlers, connections, calls)
// and a way to learn when all of it has finished after the owner stopped starting more.
//
//   Gate gate;
//   timer.async_wait([holder = gate.Enter(), this](auto ec) { ... });   // work holds the gate
//   ...
//   gate.Close([this] { FinishShutdown(); });   // runs once nothing holds the gate any more
//
// A Holder is one unit of work: moving it moves the unit, destroying it ends the unit. The
// drain callback runs exactly once, from Close() if nothing is held then, otherwise from the
// destruction of the last Holder (so it runs on the thread that finished the last work; callers
// that need a fresh stack post from it).
//
// Thread safety: thread-safe counting (Enter and Holder destruction from any thread); Close()
// once, from the owner.
#ifndef RILL_SRC_BASE_GATE_H_
#define RILL_SRC_BASE_GATE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

#include "rill/detail/check.h"

namespace rill::internal {

class Gate {
 public:
  class Holder {
   public:
    Holder() noexcept = default;
    Holder(Holder&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Holder& operator=(Holder&& other) noexcept {
      if (this != &other) {
        Release();
        gate_ = std::exchange(other.gate_, nullptr);
      }
      return *this;
    }
    Holder(const Holder&) = delete;
    Holder& operator=(const Holder&) = delete;
    ~Holder() { Release(); }

    void Release() noexcept {
      if (Gate* g = std::exchange(gate_, nullptr)) g->Leave();
    }
    explicit operator bool() const noexcept { return gate_ != nullptr; }

   private:
    friend class Gate;
    explicit Holder(Gate* gate) noexcept : gate_(gate) {}
    Gate* gate_ = nullptr;
  };

  Gate() = default;
  ~Gate() { RILL_DCHECK_MSG(count_.load() <= kClosedBit, "Gate destroyed while held"); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // One more unit of work. Allowed after Close() too (work finishing other work, say); the
  // drain waits for it as well.
  [[nodiscard]] Holder Enter() noexcept {
    count_.fetch_add(1, std::memory_order_relaxed);
    return Holder(this);
  }

  // No more work is expected; `on_drained` runs once nothing holds the gate.
  void Close(std::function<void()> on_drained) {
    RILL_DCHECK_MSG(!closed(), "Gate closed twice");
    on_drained_ = std::move(on_drained);
    if (count_.fetch_add(kClosedBit, std::memory_order_acq_rel) == 0) Drained();
  }

  [[nodiscard]] bool closed() const noexcept {
    return count_.load(std::memory_order_acquire) >= kClosedBit;
  }
  [[nodiscard]] int64_t held() const noexcept {
    return count_.load(std::memory_order_acquire) % kClosedBit;
  }

 private:
  static constexpr int64_t kClosedBit = int64_t{1} << 40;

  void Leave() noexcept {
    if (count_.fetch_sub(1, std::memory_order_acq_rel) == kClosedBit + 1) Drained();
  }
  void Drained() {
    std::function<void()> fn = std::move(on_drained_);
    if (fn) fn();
  }

  std::atomic<int64_t> count_{0};
  std::function<void()> on_drained_;
};

}  // namespace rill::internal

#endif  // RILL_SRC_BASE_GATE_H_
