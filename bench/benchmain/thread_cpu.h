// CPU time of a ReactorPool's threads. getrusage() sums every thread of the process, and
// benchmain runs client and server in one process, so each side is measured by the CPU-time
// clocks of its own reactor threads (pthread_getcpuclockid + clock_gettime).
//
//   rill::bench::ThreadCpuClocks server_cpu(server_reactors);
//   auto before = server_cpu.Now();
//   ... run ...
//   std::chrono::nanoseconds used = server_cpu.Now() - before;
//
// Thread safety: thread-compatible. Valid while the pool's threads run.
#ifndef RILL_BENCH_BENCHMAIN_THREAD_CPU_H_
#define RILL_BENCH_BENCHMAIN_THREAD_CPU_H_

#include <time.h>

#include <chrono>
#include <vector>

#include "rill/reactor_pool.h"

namespace rill::bench {

class ThreadCpuClocks {
 public:
  // Asks every reactor of `pool` for its thread's clock; blocks until each answered. Must not
  // run on one of the pool's threads. A thread whose clock is unavailable is left out.
  explicit ThreadCpuClocks(ReactorPool& pool);

  // Sum of the CPU time (user + system) the threads have used so far.
  [[nodiscard]] std::chrono::nanoseconds Now() const;

 private:
  std::vector<clockid_t> clocks_;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_THREAD_CPU_H_
