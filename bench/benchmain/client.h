// The client half of benchmain: connections to a grpc.testing.BenchmarkService server and
// grpc-go's three workloads on them (`benchmark/benchmain/main.go` runBenchmark,
// makeFuncUnary, makeFuncStream, runUnconstrainedBenchmark).
//
//   rill::ReactorPool reactors({.threads = 1, .cpus = {1}});
//   auto client = rill::bench::BenchmarkClient::Connect({.target = "127.0.0.1:50051",
//                                                        .connections = 1,
//                                                        .reactors = &reactors});
//   std::vector<rill::bench::LatencyRecorder*> recorders = ...;   // one per worker
//   rill::bench::RunHooks hooks{.started = ..., .ended = ...};
//   rill::Status s = (*client)->RunUnary(params, recorders, hooks);
//
// Every worker is a coroutine on its connection's reactor, so no call hops between threads.
// Each worker builds its request once and reuses it, with its ClientContext, for every call
// (grpc-go builds a fresh SimpleRequest per unary call); responses are parsed into a
// MessageArena, so that parsing allocates nothing for small messages.
//
// Thread safety: thread-compatible; run one workload at a time, from a thread that is not one
// of the client's reactors.
#ifndef RILL_BENCH_BENCHMAIN_CLIENT_H_
#define RILL_BENCH_BENCHMAIN_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/stats/stats.h"
#include "grpc/testing/benchmark_service.rill.h"
#include "rill/channel.h"
#include "rill/compression.h"
#include "rill/credentials.h"
#include "rill/prepared_message.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/status_or.h"

namespace rill::bench {

struct ClientOptions {
  // A channel target: "host:port", "unix:/path", "ipv4:HOST:PORT,HOST:PORT", ...
  std::string target;
  // When set, every connection is this server's InProcessChannel() (grpc-go's bufconn) and
  // `target` and `credentials` are not used.
  rill::Server* in_process_server = nullptr;
  int connections = 1;
  // The channels' reactors. Must be a pool no other channel has used: channel i then runs on
  // reactor i % size (ReactorPool::Next() is round robin), where its workers are spawned.
  ReactorPool* reactors = nullptr;
  // Null: DefaultBufferPool().
  BufferPool* buffer_pool = nullptr;
  // Bytes read from the socket at a time; 0 leaves rill's default.
  std::size_t read_block_size = 0;
  // Bytes gathered into one write syscall at most; 0: one HTTP/2 frame per write; negative
  // leaves rill's default (grpc-go's -clientWriteBufferSize).
  std::int64_t write_buffer_size = -1;
  // grpc-go's -enable_keepalive client side: PING after 10 s idle, 1 s timeout, also without
  // calls.
  bool keepalive = false;
  // Added to the built-in compressors (benchmain's "nop").
  std::shared_ptr<rill::Compressor> extra_compressor;
  // Null: plaintext; ChannelCredentials::Tls: every connection over TLS.
  std::shared_ptr<rill::ChannelCredentials> credentials;
  // Empty: the channel's default (pick_first).
  std::string lb_policy;
  // ChannelOptions::reactor_shards of every channel: channel i then runs on reactors i,
  // i + 1, ... (mod size), and its unary workers are spread over them, each calling from its
  // shard's own reactor. (Streaming workers stay on reactor i; their streams, started from the
  // calling thread, alternate between the shards.)
  std::size_t channel_shards = 1;
};

struct WorkloadParams {
  std::int64_t max_concurrent_calls = 1;  // Workers per connection.
  std::int64_t req_size = 1;
  std::int64_t resp_size = 1;
  std::chrono::nanoseconds bench_time = std::chrono::seconds(1);
  // Each worker sleeps a random time below this before each operation; > 0 skips the warmup.
  std::chrono::nanoseconds sleep_between_rpcs{0};
  // A grpc-encoding name for the requests, or empty for none.
  std::string compression;
  // grpc-go's -preloader (streaming and unconstrained): the request is serialized (and
  // compressed) once into a PreparedMessage that every send references, and the streams ask the
  // server, with `preload-msg-size`, to prepare its response once too.
  bool preloader = false;
  // The request and response bodies travel outside protobuf (rill/payload_field.h): the
  // request body is one pooled buffer each call or send references, the response body stays a
  // view of the received buffers. Unary, streaming and unconstrained; not with -preloader,
  // whose prepared request already holds its body.
  bool payload_buffers = true;
};

// Operations counted in a measured window.
struct RunCounts {
  std::uint64_t total_ops = 0;  // Unary and streaming.
  std::uint64_t send_ops = 0;   // Unconstrained.
  std::uint64_t recv_ops = 0;
};

// Called by the workload on the calling thread.
struct RunHooks {
  // Right after the warmup, before the measured window (Stats::StartRun goes here).
  std::function<void()> started;
  // Right after the measured window, before any teardown (Stats::EndRun goes here).
  std::function<void(const RunCounts&)> ended;
  // Every ~10 ms while the workload waits for its workers (sampling goes here).
  std::function<void()> tick;
};

class BenchmarkClient {
 public:
  // Creates the channels and waits up to 10 s for each to connect.
  static rill::StatusOr<std::unique_ptr<BenchmarkClient>> Connect(const ClientOptions& options);

  // Destroys the channels (after every call ended).
  ~BenchmarkClient();
  BenchmarkClient(const BenchmarkClient&) = delete;
  BenchmarkClient& operator=(const BenchmarkClient&) = delete;

  [[nodiscard]] std::size_t workers(const WorkloadParams& params) const {
    return connections_.size() * static_cast<std::size_t>(params.max_concurrent_calls);
  }

  // grpc-go's unary workload: 10 warmup calls per connection, then `workers()` workers each
  // timing one UnaryCall after another until bench_time has passed. `recorders` holds one
  // recorder per worker, connection-major. The first failed call fails the workload.
  rill::Status RunUnary(const WorkloadParams& params,
                        const std::vector<LatencyRecorder*>& recorders, const RunHooks& hooks);

  // grpc-go's streaming workload: one StreamingCall per worker, opened up front; an operation
  // is one ping-pong (Write, then Read), timed. Warmup as for unary. The streams are
  // half-closed and finished after the measured window.
  rill::Status RunStreaming(const WorkloadParams& params,
                            const std::vector<LatencyRecorder*>& recorders, const RunHooks& hooks);

  // grpc-go's unconstrained workload: one StreamingCall per worker with the metadata
  // `unconstrained-streaming: 1`; a sender and a receiver per stream run flat out. After 1 s of
  // warmup the counts restart and `started` runs; `ended` runs bench_time later. The streams
  // are then cancelled.
  rill::Status RunUnconstrained(const WorkloadParams& params, const RunHooks& hooks);

 private:
  struct Connection;
  BenchmarkClient();

  // The request of a preloader run, prepared for `params.compression`; empty without the
  // preloader.
  rill::StatusOr<std::optional<rill::PreparedMessage>> PrepareRequest(
      const WorkloadParams& params) const;

  std::vector<std::unique_ptr<Connection>> connections_;
};

// grpc-go's request: response_type COMPRESSABLE, response_size, and a COMPRESSABLE payload of
// `req_size` zero bytes.
grpc::testing::SimpleRequest MakeRequest(std::int64_t req_size, std::int64_t resp_size);

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_CLIENT_H_
