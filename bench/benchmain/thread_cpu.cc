#include "bench/benchmain/thread_cpu.h"

#include <pthread.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <future>
#include <optional>

namespace rill::bench {

ThreadCpuClocks::ThreadCpuClocks(ReactorPool& pool) {
  for (std::size_t i = 0; i < pool.size(); ++i) {
    std::promise<std::optional<clockid_t>> clock;
    std::future<std::optional<clockid_t>> result = clock.get_future();
    asio::post(pool.reactor(i), [&clock] {
      clockid_t id{};
      clock.set_value(pthread_getcpuclockid(pthread_self(), &id) == 0 ? std::optional<clockid_t>(id)
                                                                      : std::nullopt);
    });
    if (std::optional<clockid_t> id = result.get()) clocks_.push_back(*id);
  }
}

std::chrono::nanoseconds ThreadCpuClocks::Now() const {
  std::chrono::nanoseconds total{0};
  for (clockid_t id : clocks_) {
    timespec ts{};
    if (clock_gettime(id, &ts) == 0) {
      total += std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
    }
  }
  return total;
}

}  // namespace rill::bench
