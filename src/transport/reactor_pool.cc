#include "rill/reactor_pool.h"

#include <pthread.h>
#include <sched.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "src/base/user_code.h"
#include "src/mem/idle_trim.h"

namespace rill {
namespace {

thread_local asio::io_context* t_current_reactor = nullptr;

// The last exception boundary: an exception that escaped a handler (rill puts its own around
// user code, so this is a bug somewhere) is logged and the reactor goes on serving.
void RunReactor(asio::io_context& ctx) {
  for (;;) {
    try {
      ctx.run();
      return;
    } catch (...) {
      internal::LogUserException("a handler on a reactor thread");
    }
  }
}

}  // namespace

// How often each reactor gives idle buffer memory back (internal::TrimIdleBufferCaches).
constexpr std::chrono::seconds kTrimInterval{1};

void ArmTrimTimer(const std::atomic<bool>* stopping, asio::steady_timer* timer) {
  if (stopping->load(std::memory_order_acquire)) return;
  timer->expires_after(kTrimInterval);
  timer->async_wait([stopping, timer](const asio::error_code& ec) {
    if (ec) return;
    internal::TrimIdleBufferCaches();
    ArmTrimTimer(stopping, timer);
  });
}

struct ReactorPool::Impl {
  using Guard = asio::executor_work_guard<asio::io_context::executor_type>;
  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<std::unique_ptr<asio::steady_timer>> trim_timers;  // one per context, on it
  std::atomic<bool> stopping{false};  // the timers stop re-arming
  std::vector<Guard> guards;

  // The trim timers hold their reactors' run() open: each is cancelled on its own thread.
  void StopTrimTimers() {
    stopping.store(true, std::memory_order_release);
    for (size_t i = 0; i < contexts.size(); ++i) {
      asio::post(*contexts[i], [timer = trim_timers[i].get()] { timer->cancel(); });
    }
  }
  std::vector<std::thread> threads;
  std::atomic<size_t> next{0};
  // Set when the pool is released from one of its own threads: the threads were detached, and
  // the last one to leave its io_context deletes this Impl.
  std::atomic<bool> abandoned{false};
  std::atomic<size_t> running{0};
};

ReactorPool::ReactorPool(Options options) : impl_(std::make_unique<Impl>()) {
  size_t n = options.threads;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  for (size_t i = 0; i < n; ++i) {
    // Concurrency hint 1: each context is run by exactly one thread.
    impl_->contexts.push_back(std::make_unique<asio::io_context>(1));
    impl_->guards.emplace_back(impl_->contexts.back()->get_executor());
    impl_->trim_timers.push_back(std::make_unique<asio::steady_timer>(*impl_->contexts.back()));
    asio::post(*impl_->contexts.back(),
               [stopping = &impl_->stopping, timer = impl_->trim_timers.back().get()] {
                 ArmTrimTimer(stopping, timer);
               });
  }
  impl_->running.store(n);
  for (size_t i = 0; i < n; ++i) {
    asio::io_context* ctx = impl_->contexts[i].get();
    const int cpu = options.cpus.empty() ? -1 : options.cpus[i % options.cpus.size()];
    Impl* impl = impl_.get();
    impl_->threads.emplace_back([impl, ctx, cpu, i] {
      if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
      }
      const std::string name = "rill-reactor-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      t_current_reactor = ctx;
      RunReactor(*ctx);
      t_current_reactor = nullptr;
      // `abandoned` was set before the work guards went, and run() returns only after that.
      if (impl->abandoned.load(std::memory_order_acquire) &&
          impl->running.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        delete impl;
      }
    });
  }
}

ReactorPool::~ReactorPool() {
  if (impl_ == nullptr) return;  // abandoned: its threads delete it
  impl_->StopTrimTimers();
  for (auto& guard : impl_->guards) guard.reset();
  for (auto& thread : impl_->threads) thread.join();
}

namespace internal {

void ReleaseReactorPool(std::unique_ptr<ReactorPool> pool) {
  if (pool == nullptr) return;
  if (ReactorPool::Current() == nullptr) {
    pool.reset();  // joins: nothing of a reactor waits here
    return;
  }
  // On a reactor thread (perhaps one of this pool's): joining could wait on ourselves or stall
  // this reactor. The threads finish their remaining work and the last one deletes the pool.
  ReactorPool::Impl* impl = pool->impl_.release();
  impl->abandoned.store(true, std::memory_order_release);
  impl->StopTrimTimers();
  for (auto& thread : impl->threads) thread.detach();
  for (auto& guard : impl->guards) guard.reset();
}

}  // namespace internal

size_t ReactorPool::size() const noexcept { return impl_->contexts.size(); }

asio::io_context& ReactorPool::reactor(size_t i) noexcept { return *impl_->contexts[i]; }

asio::io_context& ReactorPool::Next() noexcept {
  const size_t i = impl_->next.fetch_add(1, std::memory_order_relaxed);
  return *impl_->contexts[i % impl_->contexts.size()];
}

asio::io_context* ReactorPool::Current() noexcept { return t_current_reactor; }

}  // namespace rill
