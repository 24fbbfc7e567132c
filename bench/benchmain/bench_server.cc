// rill_bench_server: grpc.testing.BenchmarkService on rill as a process of its own, for
// side-by-side measurements against other servers with external load generators (h2load,
// benchmain -server=..., other implementations' clients).
//
//   rill_bench_server --port=0 --reactors=1 --cpus=0 --alloc_counter_file=/tmp/rill.allocs
//   rill_bench_server --port=0 --tls_cert_file=server.pem --tls_key_file=server.key  # TLS
//
// Serves what benchmain's in-process server serves (bench/benchmain/benchmark_service.h) and
// prints `listening on <port>` once ready. SIGINT or SIGTERM shuts it down.
//
// Allocation counts: the process counts its own heap allocations (rill_alloc_hook; an
// LD_PRELOAD counter would be shadowed by it). On SIGUSR1 it writes them to the counter file
// (--alloc_counter_file, or the ALLOC_COUNTER_FILE environment variable) in the layout of
// bench/alloc_counter, so alloc_counter_read.py reads it:
//
//   offset  0  uint64  allocs    allocation calls since the process started
//   offset  8  uint64  bytes     bytes asked for by those calls
//   offset 16  uint64  frees     0 (not counted)
//   offset 24  uint64  snapshot  incremented after each write: wait for it to change after
//                                sending SIGUSR1, then read the counters
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "bench/benchmain/benchmark_service.h"
#include "bench/benchmain/go_flags.h"
#include "rill/credentials.h"
#include "rill/mem/buffer_pool.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"

namespace {

// Writes the counters, then bumps the snapshot number. Returns false if the file cannot be
// written.
bool WriteAllocationCounts(const std::string& path, std::uint64_t snapshot) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
  if (fd < 0) return false;
  const rill::bench::AllocationTotals totals = rill::bench::AllocationCounts();
  const std::uint64_t counters[3] = {totals.allocs, totals.bytes, 0};
  bool ok = pwrite(fd, counters, sizeof(counters), 0) == static_cast<ssize_t>(sizeof(counters));
  ok = ok && pwrite(fd, &snapshot, sizeof(snapshot), 24) == static_cast<ssize_t>(sizeof(snapshot));
  close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("rill_bench_server: grpc.testing.BenchmarkService on rill");
  int port = 0;
  std::size_t reactors = 1;
  std::string cpus;
  std::string alloc_counter_file;
  std::string buffer_pool = "tiered";
  std::size_t read_block_size = 0;
  std::uint32_t max_concurrent_streams = 1000;
  std::uint32_t initial_stream_window = 0;
  std::uint32_t initial_connection_window = 0;
  app.add_option("--port", port, "TCP port (0 picks a free one)")->capture_default_str();
  app.add_option("--reactors", reactors, "Reactor threads; 0 = one per core")
      ->capture_default_str();
  app.add_option("--cpus", cpus,
                 "CPUs to pin the reactors to, a comma list (reactor i on the "
                 "i-th, round robin); empty: unpinned");
  app.add_option("--alloc_counter_file", alloc_counter_file,
                 "Where SIGUSR1 writes the allocation counters (default: $ALLOC_COUNTER_FILE)");
  app.add_option("--buffer_pool", buffer_pool,
                 "tiered (the default pool) or heap (HeapBufferPool: no pooling)")
      ->capture_default_str();
  app.add_option("--read_block_size", read_block_size,
                 "Bytes per socket read (ServerOptions::read_block_size); 0: rill's default");
  app.add_option("--max_concurrent_streams", max_concurrent_streams,
                 "MAX_CONCURRENT_STREAMS advertised")
      ->capture_default_str();
  app.add_option("--initial_stream_window", initial_stream_window,
                 "Stream flow-control window advertised (ServerOptions::initial_stream_window); "
                 "0: rill's default (64 KiB, grown to the bandwidth-delay product)");
  app.add_option("--initial_connection_window", initial_connection_window,
                 "Connection flow-control window (ServerOptions::initial_connection_window); "
                 "0: rill's default");
  std::string tls_cert_file;
  std::string tls_key_file;
  app.add_option("--tls_cert_file", tls_cert_file,
                 "Serve TLS with this certificate chain (PEM); needs --tls_key_file");
  app.add_option("--tls_key_file", tls_key_file, "The private key (PEM) of --tls_cert_file");
  CLI11_PARSE(app, argc, argv);

  std::shared_ptr<rill::ServerCredentials> credentials = rill::ServerCredentials::Insecure();
  if (!tls_cert_file.empty() || !tls_key_file.empty()) {
    auto key_pair = rill::TlsKeyPair::FromFiles(tls_cert_file, tls_key_file);
    auto made = key_pair.ok() ? rill::ServerCredentials::Tls({.key_pair = *key_pair})
                              : rill::StatusOr<std::shared_ptr<rill::ServerCredentials>>(
                                    key_pair.status());
    if (!made.ok()) {
      std::fprintf(stderr, "--tls_cert_file/--tls_key_file: %s\n",
                   made.status().ToString().c_str());
      return 2;
    }
    credentials = *made;
  }

  if (alloc_counter_file.empty()) {
    if (const char* env = std::getenv("ALLOC_COUNTER_FILE")) alloc_counter_file = env;
  }
  std::vector<int> cpu_list;
  if (!cpus.empty()) {
    auto parsed = rill::bench::ParseIntList(cpus);
    if (!parsed.ok()) {
      std::fprintf(stderr, "--cpus: %s\n", parsed.status().ToString().c_str());
      return 2;
    }
    for (std::int64_t cpu : *parsed) cpu_list.push_back(static_cast<int>(cpu));
  }
  rill::HeapBufferPool heap_pool;
  rill::BufferPool* pool = nullptr;
  if (buffer_pool == "heap") {
    rill::SetDefaultBufferPool(&heap_pool);
    pool = &heap_pool;
  } else if (buffer_pool != "tiered") {
    std::fprintf(stderr, "--buffer_pool: want tiered or heap\n");
    return 2;
  }

  // Block the signals before any thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rill::bench::BenchmarkServiceImpl service;
  rill::ReactorPool reactor_pool({.threads = reactors, .cpus = cpu_list});
  int bound = 0;
  rill::ServerBuilder builder;
  builder.AddListeningPort("0.0.0.0:" + std::to_string(port), credentials, &bound)
      .RegisterService(&service)
      .SetReactors(&reactor_pool)
      .SetBufferPool(pool);
  builder.options().max_concurrent_streams = max_concurrent_streams;
  if (read_block_size > 0) builder.options().read_block_size = read_block_size;
  builder.options().initial_stream_window = initial_stream_window;
  builder.options().initial_connection_window = initial_connection_window;
  auto server = builder.Build();
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on %d\n", bound);
  std::fflush(stdout);

  std::uint64_t snapshot = 0;
  while (true) {
    int signal = 0;
    sigwait(&signals, &signal);
    if (signal != SIGUSR1) break;
    if (alloc_counter_file.empty() || !WriteAllocationCounts(alloc_counter_file, ++snapshot)) {
      std::fprintf(stderr, "SIGUSR1: no writable allocation counter file\n");
    }
  }
  (*server)->Shutdown();
  rill::SetDefaultBufferPool(nullptr);
  return 0;
}
