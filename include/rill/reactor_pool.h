// rill::ReactorPool: the threads rill runs on.
//
// A reactor is one thread running one Asio io_context. Connections live on one reactor for their
// whole life, with their streams and handlers, so the RPC path needs no locks and no thread hops.
// A server and the channels it uses for outgoing calls can share one pool, so a handler awaiting
// a downstream call stays on its thread.
//
//   rill::ReactorPool reactors({.threads = 2, .cpus = {0, 1}});
//   builder.SetReactors(&reactors);
//   options.reactors = &reactors;
//
// Thread safety: thread-safe.
#ifndef RILL_REACTOR_POOL_H_
#define RILL_REACTOR_POOL_H_

#include <cstddef>
#include <memory>
#include <vector>

namespace asio {
class io_context;
}  // namespace asio

namespace rill {

class ReactorPool;

namespace internal {
void ReleaseReactorPool(std::unique_ptr<ReactorPool> pool);
}  // namespace internal

class ReactorPool {
 public:
  struct Options {
    // Number of reactor threads; 0 means one per core.
    size_t threads = 0;
    // When non-empty, reactor i is pinned to cpus[i % cpus.size()].
    std::vector<int> cpus;
  };

  // Starts the threads.
  explicit ReactorPool(Options options);
  ReactorPool() : ReactorPool(Options{}) {}
  // Stops the threads after the work they hold has finished (servers and channels using the pool
  // must be destroyed first).
  ~ReactorPool();
  ReactorPool(const ReactorPool&) = delete;
  ReactorPool& operator=(const ReactorPool&) = delete;

  [[nodiscard]] size_t size() const noexcept;
  [[nodiscard]] asio::io_context& reactor(size_t i) noexcept;
  // Round-robin choice for a new connection.
  [[nodiscard]] asio::io_context& Next() noexcept;
  // The reactor running on the calling thread, or null when called from another thread.
  [[nodiscard]] static asio::io_context* Current() noexcept;

 private:
  friend void internal::ReleaseReactorPool(std::unique_ptr<ReactorPool> pool);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill

#endif  // RILL_REACTOR_POOL_H_
