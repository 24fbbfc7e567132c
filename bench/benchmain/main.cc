// benchmain: rill's counterpart of grpc-go's benchmark/benchmain. Client and server run in one
// process over grpc.testing.BenchmarkService; every combination of the list-valued flags is run
// for each selected workload, and each run prints grpc-go's result block on stdout.
//
//   benchmain -workloads=unary -reqSizeBytes=1 -respSizeBytes=1 -maxConcurrentCalls=100
//             -benchtime=5s -resultFile=/tmp/r.json
//   benchmain -workloads=all -networkMode=LAN -recvBufferPool=all
//   benchmain -workloads=unary -server=127.0.0.1:50051      # client only, any server
//
// Flags are grpc-go's, spelled as in Go (-name=value, -name value or --name=value). rill's own
// figures for each run (CPU per RPC of each side, pool counters, copied bytes) go to stderr as
// one `rill_extras` line, so stdout stays parsable as grpc-go's output.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "bench/benchmain/benchmark_service.h"
#include "bench/benchmain/client.h"
#include "bench/benchmain/go_flags.h"
#include "bench/benchmain/nop_compressor.h"
#include "bench/benchmain/shaping_proxy.h"
#include "bench/benchmain/thread_cpu.h"
#include "bench/stats/result_file.h"
#include "bench/stats/stats.h"
#include "rill/binary_log.h"
#include "rill/credentials.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "rill/metrics.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/services/channelz.h"
#include "rill/stats.h"

namespace rill::bench {
namespace {

using std::chrono::nanoseconds;
using Clock = std::chrono::steady_clock;

// The flag values as typed; Parse() turns them into a Config.
struct Flags {
  std::string workloads = "all";
  std::string benchtime = "1s";
  std::string max_concurrent_calls = "1,8,64,512";
  std::string req_size_bytes;
  std::string resp_size_bytes;
  std::string req_payload_curve_files;
  std::string resp_payload_curve_files;
  int connections = 1;
  std::string compression = "off";
  std::string network_mode;
  std::string latency = "0s,40ms";
  std::string kbps = "0,10240";
  std::string mtu = "0";
  bool bufconn = false;
  bool enable_keepalive = false;
  std::string preloader = "off";
  std::string trace = "off";
  std::string channelz = "off";
  std::string sleep_between_rpcs = "0s";
  std::string recv_buffer_pool = "simple";
  std::string shared_write_buffer = "on";
  std::string client_read_buffer_size = "-1";
  std::string client_write_buffer_size = "-1";
  std::string server_read_buffer_size = "-1";
  std::string server_write_buffer_size = "-1";
  std::string result_file;
  std::string mem_profile;
  int mem_profile_rate = 512 * 1024;
  std::string cpu_profile;
  // rill's own.
  std::string cpus;
  std::string reactors = "1";
  std::string server;
  std::string tls_ca_file;
  std::string lb_policy;
  std::size_t channel_shards = 1;
  bool payload_buffers = true;
  // Observability on the in-process server, to measure what it costs.
  bool stats_handler = false;
  std::string binary_log;
  bool metrics = false;
};

struct Config {
  FeatureValues values;
  bool unary = false;
  bool streaming = false;
  bool unconstrained = false;
  std::vector<int> server_cpus;
  std::vector<int> client_cpus;
  std::size_t server_reactors = 1;
  std::size_t client_reactors = 1;
  std::string server;  // Empty: serve in this process.
  std::string tls_ca_file;  // Non-empty: the client connects to `server` over TLS.
  std::string lb_policy;    // Non-empty: the channels' load-balancing policy.
  std::size_t channel_shards = 1;  // ChannelOptions::reactor_shards of the client's channels.
  bool payload_buffers = true;      // bodies outside protobuf (WorkloadParams)
  bool stats_handler = false;
  std::string binary_log;
  bool metrics = false;
  std::string result_file;
  std::vector<std::string> notes;  // Printed to stderr before the first run.
};

constexpr char kDefaultSizes[] = "1,1024,1048576";

// A stats handler that reads every event, and every message's bytes, the way a real one would
// (sizes, the first byte of each payload); its sums only keep the work from being optimized out.
class ReadingStatsHandler final : public rill::StatsHandler {
 public:
  void HandleCall(void*, const rill::CallEvent& event) override {
    std::uint64_t sum = static_cast<std::uint64_t>(event.type) + event.wire_size +
                        event.uncompressed_size + event.method.size();
    if (event.payload != nullptr && !event.payload->empty()) {
      sum += static_cast<std::uint8_t>(event.payload->buffer(0).data()[0]);
    }
    if (event.metadata != nullptr) sum += event.metadata->size();
    if (event.status != nullptr) sum += static_cast<std::uint64_t>(event.status->code());
    t_sum += sum;  // per thread, as a handler keeping per-call state in its tag would
  }

 private:
  static thread_local std::uint64_t t_sum;
};
thread_local std::uint64_t ReadingStatsHandler::t_sum = 0;

// The CPUs this process may run on, in order.
std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
  }
  return cpus;
}

// "a:b" into {"a", "b"}; "a" into {"a", "a"}.
std::pair<std::string, std::string> SplitSides(const std::string& text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) return {text, text};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

rill::StatusOr<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  if (text.empty()) return cpus;
  auto list = ParseIntList(text);
  if (!list.ok()) return list.status();
  for (std::int64_t cpu : *list) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return rill::Status(rill::StatusCode::kInvalidArgument,
                          "no such CPU: " + std::to_string(cpu));
    }
    cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

template <typename T>
void Dedupe(std::vector<T>& v) {
  std::vector<T> out;
  for (const T& x : v) {
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  v = std::move(out);
}

rill::Status Invalid(const std::string& message) {
  return rill::Status(rill::StatusCode::kInvalidArgument, message);
}

// grpc-go's processFlags, plus rill's flags.
rill::StatusOr<Config> Parse(const Flags& flags) {
  Config config;
  FeatureValues& v = config.values;

  if (flags.workloads == "unary") {
    config.unary = true;
  } else if (flags.workloads == "streaming") {
    config.streaming = true;
  } else if (flags.workloads == "unconstrained") {
    config.unconstrained = true;
  } else if (flags.workloads == "all") {
    config.unary = config.streaming = config.unconstrained = true;
  } else {
    return Invalid("-workloads: want unary, streaming, unconstrained or all");
  }

  std::optional<nanoseconds> bench_time = ParseGoDuration(flags.benchtime);
  if (!bench_time || bench_time->count() <= 0) {
    return Invalid("-benchtime: want a positive duration");
  }
  v.bench_time = *bench_time;
  if (flags.connections < 1) return Invalid("-connections: want at least 1");
  v.connections = flags.connections;
  v.use_buf_conn = flags.bufconn;
  v.enable_keepalive = flags.enable_keepalive;

  if (!flags.req_payload_curve_files.empty() || !flags.resp_payload_curve_files.empty()) {
    return Invalid(
        "-reqPayloadCurveFiles/-respPayloadCurveFiles are not supported (grpc-go's "
        "benchmain also refuses them next to its always-set -preloader)");
  }

  auto ints = [](const std::string& name, const std::string& text,
                 std::vector<std::int64_t>& out) -> rill::Status {
    auto list = ParseIntList(text);
    if (!list.ok()) return Invalid("-" + name + ": " + std::string(list.status().message()));
    out = std::move(*list);
    return rill::Status();
  };
  auto toggles = [](const std::string& name, const std::string& text,
                    std::vector<bool>& out) -> rill::Status {
    auto list = ParseToggle(text);
    if (!list.ok()) return Invalid("-" + name + ": " + std::string(list.status().message()));
    out = std::move(*list);
    return rill::Status();
  };
  for (rill::Status s : {
           ints("maxConcurrentCalls", flags.max_concurrent_calls, v.max_concurrent_calls),
           ints("reqSizeBytes", flags.req_size_bytes.empty() ? kDefaultSizes : flags.req_size_bytes,
                v.req_size_bytes),
           ints("respSizeBytes",
                flags.resp_size_bytes.empty() ? kDefaultSizes : flags.resp_size_bytes,
                v.resp_size_bytes),
           ints("clientReadBufferSize", flags.client_read_buffer_size, v.client_read_buffer_size),
           ints("clientWriteBufferSize", flags.client_write_buffer_size,
                v.client_write_buffer_size),
           ints("serverReadBufferSize", flags.server_read_buffer_size, v.server_read_buffer_size),
           ints("serverWriteBufferSize", flags.server_write_buffer_size,
                v.server_write_buffer_size),
           toggles("trace", flags.trace, v.enable_trace),
           toggles("channelz", flags.channelz, v.enable_channelz),
           toggles("preloader", flags.preloader, v.enable_preloader),
           toggles("sharedWriteBuffer", flags.shared_write_buffer, v.shared_write_buffer),
       }) {
    if (!s.ok()) return s;
  }
  for (std::int64_t n : v.max_concurrent_calls) {
    if (n < 1) return Invalid("-maxConcurrentCalls: want values of at least 1");
  }
  for (const auto* sizes : {&v.req_size_bytes, &v.resp_size_bytes}) {
    for (std::int64_t n : *sizes) {
      if (n < 0 || n > (1 << 30)) return Invalid("-reqSizeBytes/-respSizeBytes: out of range");
    }
  }
  auto sleeps = ParseDurationList(flags.sleep_between_rpcs);
  if (!sleeps.ok()) return Invalid("-sleepBetweenRPCs: " + std::string(sleeps.status().message()));
  v.sleep_between_rpcs = std::move(*sleeps);

  // Network: a preset replaces -latency, -kbps and -mtu.
  if (flags.network_mode.empty() || flags.network_mode == "none") {
    v.network_mode = "none";
    auto latencies = ParseDurationList(flags.latency);
    if (!latencies.ok()) return Invalid("-latency: " + std::string(latencies.status().message()));
    v.latencies = std::move(*latencies);
    if (rill::Status s = ints("kbps", flags.kbps, v.kbps); !s.ok()) return s;
    if (rill::Status s = ints("mtu", flags.mtu, v.mtu); !s.ok()) return s;
  } else {
    v.network_mode = flags.network_mode;
    using std::chrono::milliseconds;
    if (flags.network_mode == "Local") {
      v.latencies = {nanoseconds(0)};
      v.kbps = {0};
      v.mtu = {0};
    } else if (flags.network_mode == "LAN") {
      v.latencies = {milliseconds(2)};
      v.kbps = {100 * 1024};
      v.mtu = {1500};
    } else if (flags.network_mode == "WAN") {
      v.latencies = {milliseconds(30)};
      v.kbps = {20 * 1024};
      v.mtu = {1500};
    } else if (flags.network_mode == "Longhaul") {
      v.latencies = {milliseconds(200)};
      v.kbps = {1000 * 1024};
      v.mtu = {9000};
    } else {
      return Invalid("-networkMode: want none, Local, LAN, WAN or Longhaul");
    }
  }

  // Compression.
  if (flags.compression == "all") {
    v.compressor_modes = {"nop", "gzip", "off"};
  } else if (flags.compression == "off" || flags.compression == "gzip" ||
             flags.compression == "nop") {
    v.compressor_modes = {flags.compression};
  } else {
    return Invalid("-compression: want off, gzip, nop or all");
  }
  for (const std::string& mode : v.compressor_modes) {
    if (mode == "nop") {
      config.notes.push_back(
          "-compression=nop: rill sends a message uncompressed when compressing does not shrink "
          "it, so nop costs one copy on the sending side and none on the receiving side");
    }
  }
  Dedupe(config.notes);

  if (flags.recv_buffer_pool == "all") {
    v.recv_buffer_pools = {"nil", "simple"};
  } else if (flags.recv_buffer_pool == "nil" || flags.recv_buffer_pool == "simple") {
    v.recv_buffer_pools = {flags.recv_buffer_pool};
  } else {
    return Invalid("-recvBufferPool: want nil, simple or all");
  }

  // Accepted for compatibility; say what they do here.
  if (v.enable_trace != std::vector<bool>{false}) {
    config.notes.push_back("-trace: rill has no x/net/trace; accepted, no effect");
  }
  if (v.enable_channelz == std::vector<bool>{false, true} ||
      v.enable_channelz == std::vector<bool>{true, false}) {
    config.notes.push_back(
        "-channelz: once a run served channelz, timestamps stay recorded for the rest of the "
        "process (rill::channelz::Enable() is process-wide); compare separate processes");
  }
  if (v.enable_preloader != std::vector<bool>{false} && config.unary) {
    config.notes.push_back("-preloader: applies to the streaming workloads; unary ignores it");
  }
  if (v.shared_write_buffer != std::vector<bool>{true}) {
    config.notes.push_back(
        "-sharedWriteBuffer: rill's write batch always works like grpc-go's shared write buffer "
        "(its staging block comes from the pool when a connection writes and goes back once "
        "written); off runs the same, as in grpc-go since 1.81");
  }
  if (!flags.mem_profile.empty() || !flags.cpu_profile.empty()) {
    config.notes.push_back(
        "-memProfile/-cpuProfile: Go runtime profiles; use perf or heaptrack on benchmain "
        "instead. Accepted, no effect");
  }
  if (flags.bufconn && !flags.server.empty()) {
    return Invalid("-bufconn: the client and the server must share the process (no --server)");
  }

  // rill's flags.
  config.server = flags.server;
  config.tls_ca_file = flags.tls_ca_file;
  config.lb_policy = flags.lb_policy;
  config.channel_shards = flags.channel_shards;
  config.payload_buffers = flags.payload_buffers;
  config.stats_handler = flags.stats_handler;
  config.binary_log = flags.binary_log;
  config.metrics = flags.metrics;
  {
    const auto [server_text, client_text] = SplitSides(flags.reactors);
    auto server_n = ParseIntList(server_text);
    auto client_n = ParseIntList(client_text);
    if (!server_n.ok() || !client_n.ok() || server_n->size() != 1 || client_n->size() != 1 ||
        (*server_n)[0] < 0 || (*client_n)[0] < 0) {
      return Invalid("-reactors: want N or SERVER:CLIENT");
    }
    config.server_reactors = static_cast<std::size_t>((*server_n)[0]);
    config.client_reactors = static_cast<std::size_t>((*client_n)[0]);
    if (config.client_reactors == 0) {
      config.client_reactors = std::max(1u, std::thread::hardware_concurrency());
    }
  }
  if (flags.cpus == "none") {
    // Unpinned.
  } else if (flags.cpus.empty()) {
    const std::vector<int> allowed = AllowedCpus();
    if (!allowed.empty()) {
      config.server_cpus = {allowed[0]};
      config.client_cpus = {allowed.size() >= 2 ? allowed[1] : allowed[0]};
    }
  } else {
    const auto [server_text, client_text] = SplitSides(flags.cpus);
    auto server_cpus = ParseCpuList(server_text);
    auto client_cpus = ParseCpuList(client_text);
    if (!server_cpus.ok()) return Invalid("-cpus: " + std::string(server_cpus.status().message()));
    if (!client_cpus.ok()) return Invalid("-cpus: " + std::string(client_cpus.status().message()));
    config.server_cpus = std::move(*server_cpus);
    config.client_cpus = std::move(*client_cpus);
  }
  config.result_file = flags.result_file;
  return config;
}

// Restores the built-in default pool when a run ends.
struct DefaultPoolGuard {
  DefaultPoolGuard() = default;
  DefaultPoolGuard(const DefaultPoolGuard&) = delete;
  DefaultPoolGuard& operator=(const DefaultPoolGuard&) = delete;
  ~DefaultPoolGuard() { rill::SetDefaultBufferPool(nullptr); }
};

std::string JoinCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return "any";
  std::string out;
  for (int cpu : cpus) out += (out.empty() ? "" : ",") + std::to_string(cpu);
  return out;
}

// rill's figures for one run, measured between the run's StartRun and EndRun.
struct Extras {
  // `server_reactors` is null when the server runs elsewhere.
  Extras(ReactorPool* server_reactors, ReactorPool& client_reactors, BufferPool* buffer_pool)
      : client_cpu(client_reactors), pool(buffer_pool) {
    if (server_reactors != nullptr) server_cpu.emplace(*server_reactors);
  }

  std::optional<ThreadCpuClocks> server_cpu;
  ThreadCpuClocks client_cpu;
  BufferPool* pool;
  nanoseconds server_cpu_start{0};
  nanoseconds client_cpu_start{0};
  nanoseconds server_cpu_used{0};
  nanoseconds client_cpu_used{0};
  Clock::time_point window_start;
  Clock::duration window{0};
  BufferPoolStats pool_start;
  BufferPoolStats pool_end;
  std::uint64_t peak_blocks_out = 0;
  std::uint64_t copied_start = 0;
  std::uint64_t copied = 0;
  double ops = 0;

  void Start() {
    pool_start = pool->Stats();
    peak_blocks_out = pool_start.blocks_out;
    copied_start = rill::CopiedPayloadBytes();
    if (server_cpu) server_cpu_start = server_cpu->Now();
    client_cpu_start = client_cpu.Now();
    window_start = Clock::now();
  }
  void Sample() { peak_blocks_out = std::max(peak_blocks_out, pool->Stats().blocks_out); }
  void End(const RunCounts& counts, bool unconstrained) {
    window = Clock::now() - window_start;
    client_cpu_used = client_cpu.Now() - client_cpu_start;
    if (server_cpu) server_cpu_used = server_cpu->Now() - server_cpu_start;
    copied = rill::CopiedPayloadBytes() - copied_start;
    pool_end = pool->Stats();
    peak_blocks_out = std::max(peak_blocks_out, pool_end.blocks_out);
    ops = unconstrained ? static_cast<double>((counts.send_ops + counts.recv_ops) / 2)
                        : static_cast<double>(counts.total_ops);
  }

  void Print(std::ostream& os, std::string_view mode, int run) const {
    auto per_op = [&](double v) { return ops > 0 ? v / ops : 0.0; };
    auto micros = [](nanoseconds d) {
      return std::chrono::duration<double, std::micro>(d).count();
    };
    const double seconds = std::chrono::duration<double>(window).count();
    char server[32] = "n/a";
    if (server_cpu) std::snprintf(server, sizeof(server), "%.3f", per_op(micros(server_cpu_used)));
    char line[512];
    std::snprintf(line, sizeof(line),
                  "rill_extras run=%d mode=%.*s window_s=%.3f qps=%.0f server_cpu_us_per_op=%s "
                  "client_cpu_us_per_op=%.3f pool_hits=%llu pool_misses=%llu "
                  "pool_peak_blocks_out=%llu copied_bytes_per_op=%.1f\n",
                  run, static_cast<int>(mode.size()), mode.data(), seconds,
                  seconds > 0 ? ops / seconds : 0.0, server, per_op(micros(client_cpu_used)),
                  static_cast<unsigned long long>(pool_end.hits - pool_start.hits),
                  static_cast<unsigned long long>(pool_end.misses - pool_start.misses),
                  static_cast<unsigned long long>(peak_blocks_out),
                  per_op(static_cast<double>(copied)));
    os << line;
  }
};

std::string UnixSocketPath() {
  static std::atomic<int> counter{0};
  return (std::filesystem::temp_directory_path() /
          ("rill-benchmain-" + std::to_string(getpid()) + "-" +
           std::to_string(counter.fetch_add(1)) + ".sock"))
      .string();
}

// One workload on one feature combination, with a fresh server and client (grpc-go makes both
// anew for every run).
rill::Status RunOne(std::string_view mode, int run, const Features& f,
                    const std::vector<bool>& shared, const Config& config, Stats& stats) {
  rill::HeapBufferPool heap_pool;
  DefaultPoolGuard restore_default_pool;
  BufferPool* pool = nullptr;
  if (f.recv_buffer_pool == "nil") {
    rill::SetDefaultBufferPool(&heap_pool);
    pool = &heap_pool;
  } else {
    rill::SetDefaultBufferPool(nullptr);
    pool = &rill::DefaultBufferPool();
  }

  BenchmarkServiceImpl service;
  std::unique_ptr<ReactorPool> server_reactors;
  std::shared_ptr<rill::BinaryLog> binary_log;  // outlives the server: writes its last entries
  std::unique_ptr<rill::Server> server;
  std::string unix_path;
  std::string target = config.server;
  const ShapingProxy::Conditions conditions{.latency = f.latency, .kbps = f.kbps, .mtu = f.mtu};
  const bool shaped = conditions.Shapes();
  if (target.empty()) {
    server_reactors = std::make_unique<ReactorPool>(
        ReactorPool::Options{.threads = config.server_reactors, .cpus = config.server_cpus});
    rill::ServerBuilder builder;
    int port = 0;
    if (f.use_buf_conn) {
      // In-process (Server::InProcessChannel) unless the shaping proxy needs a socket to
      // stand between the two: then a Unix-domain socket.
      if (shaped) {
        unix_path = UnixSocketPath();
        builder.AddListeningPort("unix:" + unix_path);
      }
    } else {
      builder.AddListeningPort("127.0.0.1:0", &port);
    }
    builder.RegisterService(&service).SetReactors(server_reactors.get()).SetBufferPool(pool);
    if (f.mode_compressor == "nop") builder.RegisterCompressor(std::make_shared<NopCompressor>());
    if (config.stats_handler) builder.AddStatsHandler(std::make_shared<ReadingStatsHandler>());
    if (!config.binary_log.empty()) {
      auto created = rill::BinaryLog::Create(config.binary_log);
      if (!created.ok()) return created.status();
      binary_log = std::move(*created);
      builder.AddStatsHandler(binary_log);
    }
    if (f.enable_channelz) rill::AddChannelzService(builder);
    if (config.metrics) {
      builder.AddStatsHandler(
          rill::MakeMetricsStatsHandler(std::make_shared<rill::MetricsRegistry>()));
    }
    rill::ServerOptions& options = builder.options();
    options.max_concurrent_streams = static_cast<std::uint32_t>(f.max_concurrent_calls + 1);
    if (f.server_read_buffer_size > 0) {
      options.read_block_size = static_cast<std::size_t>(f.server_read_buffer_size);
    }
    if (f.server_write_buffer_size >= 0) {
      options.write_buffer_size = static_cast<std::size_t>(f.server_write_buffer_size);
    }
    if (f.enable_keepalive) {
      options.keepalive_time = std::chrono::seconds(10);
      options.keepalive_timeout = std::chrono::seconds(1);
      options.keepalive_min_ping_interval = std::chrono::seconds(8);
      options.permit_keepalive_without_calls = true;
    }
    auto built = builder.Build();
    if (!built.ok()) return built.status();
    server = std::move(*built);
    target = !f.use_buf_conn ? "127.0.0.1:" + std::to_string(port)
             : shaped        ? "unix:" + unix_path
                             : std::string("inprocess");
  }

  std::unique_ptr<ShapingProxy> proxy;
  if (shaped) {
    auto started = ShapingProxy::Start(target, f.use_buf_conn, conditions);
    if (!started.ok()) return started.status();
    proxy = std::move(*started);
    target = proxy->target();
  }

  std::shared_ptr<rill::ChannelCredentials> credentials;
  if (!config.tls_ca_file.empty()) {
    if (config.server.empty()) {
      return rill::Status(rill::StatusCode::kInvalidArgument, "--tls_ca_file needs --server");
    }
    auto roots = rill::ReadFileToString(config.tls_ca_file);
    if (!roots.ok()) return roots.status();
    auto made = rill::ChannelCredentials::Tls({.root_certificates = *roots});
    if (!made.ok()) return made.status();
    credentials = std::move(*made);
  }

  ReactorPool client_reactors(
      ReactorPool::Options{.threads = config.client_reactors, .cpus = config.client_cpus});
  ClientOptions client_options{
      .target = target,
      .in_process_server = f.use_buf_conn && !shaped ? server.get() : nullptr,
      .connections = static_cast<int>(f.connections),
      .reactors = &client_reactors,
      .buffer_pool = pool,
      .read_block_size =
          f.client_read_buffer_size > 0 ? static_cast<std::size_t>(f.client_read_buffer_size) : 0,
      .write_buffer_size = f.client_write_buffer_size,
      .keepalive = f.enable_keepalive,
      .extra_compressor = f.mode_compressor == "nop" ? std::make_shared<NopCompressor>() : nullptr,
      .credentials = credentials,
      .lb_policy = config.lb_policy,
      .channel_shards = config.channel_shards,
  };
  auto client = BenchmarkClient::Connect(client_options);
  if (!client.ok()) return client.status();

  WorkloadParams params{
      .max_concurrent_calls = f.max_concurrent_calls,
      .req_size = f.req_size_bytes,
      .resp_size = f.resp_size_bytes,
      .bench_time = f.bench_time,
      .sleep_between_rpcs = f.sleep_between_rpcs,
      .compression = f.mode_compressor == "off" ? "" : f.mode_compressor,
      .preloader = f.enable_preloader,
      .payload_buffers = config.payload_buffers,
  };

  const bool unconstrained = mode == "unconstrained";
  // Recorders are made before StartRun; room for about 200k samples/s in all, at most 8M.
  std::vector<std::unique_ptr<LatencyRecorder>> recorders;
  std::vector<LatencyRecorder*> recorder_ptrs;
  if (!unconstrained) {
    const std::size_t workers = (*client)->workers(params);
    const double seconds = std::chrono::duration<double>(f.bench_time).count();
    const double total = std::min(8e6, seconds * 200e3);
    const std::size_t expected =
        1024 + static_cast<std::size_t>(total / static_cast<double>(workers));
    for (std::size_t i = 0; i < workers; ++i) {
      recorders.push_back(std::make_unique<LatencyRecorder>(stats, expected));
      recorder_ptrs.push_back(recorders.back().get());
    }
  }

  Extras extras(server_reactors.get(), client_reactors, pool);
  RunHooks hooks{
      .started =
          [&] {
            stats.StartRun(std::string(mode), f, shared);
            extras.Start();
          },
      .ended =
          [&](const RunCounts& counts) {
            if (unconstrained) {
              stats.EndUnconstrainedRun(counts.send_ops, counts.recv_ops);
            } else {
              stats.EndRun(counts.total_ops);
            }
            extras.End(counts, unconstrained);
          },
      .tick = [&] { extras.Sample(); },
  };

  rill::Status status;
  if (mode == "unary") {
    status = (*client)->RunUnary(params, recorder_ptrs, hooks);
  } else if (mode == "streaming") {
    status = (*client)->RunStreaming(params, recorder_ptrs, hooks);
  } else {
    status = (*client)->RunUnconstrained(params, hooks);
  }
  if (!status.ok()) return status;

  stats.Print(std::cout);
  std::cout.flush();
  extras.Print(std::cerr, mode, run);

  client->reset();
  recorders.clear();
  proxy.reset();
  if (server) server->Shutdown();
  if (!unix_path.empty()) {
    std::error_code ignored;
    std::filesystem::remove(unix_path, ignored);
  }
  return rill::Status();
}

int Main(int argc, char** argv) {
  Flags flags;
  CLI::App app(
      "benchmain: rill's counterpart of grpc-go's benchmark/benchmain. Flags are spelled as in "
      "Go: -name=value, -name value or --name=value. List flags take comma-separated values and "
      "every combination is run. Results go to stdout in grpc-go's format; rill's own figures "
      "(rill_extras lines) to stderr.");
  // As with Go's flag package, a flag given twice takes its last value.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--workloads", flags.workloads, "unary, streaming, unconstrained or all")
      ->capture_default_str();
  app.add_option("--benchtime", flags.benchtime, "Measured time of each run (Go duration)")
      ->capture_default_str();
  app.add_option("--maxConcurrentCalls", flags.max_concurrent_calls,
                 "Concurrent calls (streams) per connection")
      ->capture_default_str();
  app.add_option("--reqSizeBytes", flags.req_size_bytes,
                 "Request payload bytes (default 1,1024,1048576)");
  app.add_option("--respSizeBytes", flags.resp_size_bytes,
                 "Response payload bytes (default 1,1024,1048576)");
  app.add_option("--reqPayloadCurveFiles", flags.req_payload_curve_files, "Not supported");
  app.add_option("--respPayloadCurveFiles", flags.resp_payload_curve_files, "Not supported");
  app.add_option("--connections", flags.connections, "Client connections (channels)")
      ->capture_default_str();
  app.add_option("--compression", flags.compression,
                 "off, gzip, nop (a copy-only compressor) or all")
      ->capture_default_str();
  app.add_option("--networkMode", flags.network_mode,
                 "none, Local, LAN, WAN or Longhaul: presets replacing -latency/-kbps/-mtu, "
                 "simulated by an in-process shaping proxy between client and server");
  app.add_option("--latency", flags.latency, "Simulated one-way latency (Go durations)")
      ->capture_default_str();
  app.add_option("--kbps", flags.kbps, "Simulated bandwidth in kbit/s; <= 0: unlimited")
      ->capture_default_str();
  app.add_option("--mtu", flags.mtu, "Simulated MTU; <= 0: unlimited")->capture_default_str();
  app.add_flag("--bufconn", flags.bufconn,
               "In-process channel (Server::InProcessChannel, grpc-go's bufconn) instead of "
               "TCP; with network shaping, a Unix-domain socket");
  app.add_flag("--enable_keepalive", flags.enable_keepalive,
               "Keepalive on both sides (10 s time, 1 s timeout, permitted without calls)");
  app.add_option("--preloader", flags.preloader,
                 "off, on or both: streaming sends a PreparedMessage serialized once")
      ->capture_default_str();
  app.add_option("--trace", flags.trace, "off, on or both; accepted, no effect in rill")
      ->capture_default_str();
  app.add_option("--channelz", flags.channelz,
                 "off, on or both: the in-process server serves grpc.channelz.v1 (which turns on "
                 "channelz's timestamps)")
      ->capture_default_str();
  app.add_option("--sleepBetweenRPCs", flags.sleep_between_rpcs,
                 "Random pause below this before each operation; > 0 skips the warmup")
      ->capture_default_str();
  app.add_option("--recvBufferPool", flags.recv_buffer_pool,
                 "nil (HeapBufferPool: no pooling), simple (the default TieredBufferPool) or all")
      ->capture_default_str();
  app.add_option("--sharedWriteBuffer", flags.shared_write_buffer,
                 "off, on or both; rill's write batch always works like the shared buffer")
      ->capture_default_str();
  app.add_option("--clientReadBufferSize", flags.client_read_buffer_size,
                 "Client bytes per socket read (ChannelOptions::read_block_size); < 0: default")
      ->capture_default_str();
  app.add_option("--clientWriteBufferSize", flags.client_write_buffer_size,
                 "Client bytes per write syscall at most (ChannelOptions::write_buffer_size); "
                 "0: one HTTP/2 frame per write; < 0: default")
      ->capture_default_str();
  app.add_option("--serverReadBufferSize", flags.server_read_buffer_size,
                 "Server bytes per socket read (ServerOptions::read_block_size); < 0: default")
      ->capture_default_str();
  app.add_option("--serverWriteBufferSize", flags.server_write_buffer_size,
                 "Server bytes per write syscall at most (ServerOptions::write_buffer_size); "
                 "0: one HTTP/2 frame per write; < 0: default")
      ->capture_default_str();
  app.add_option("--resultFile", flags.result_file,
                 "Write every run's results here (JSON with grpc-go's field names; read it "
                 "with benchresult)");
  app.add_option("--memProfile", flags.mem_profile, "Go only; accepted, no effect");
  app.add_option("--memProfileRate", flags.mem_profile_rate, "Go only; accepted, no effect");
  app.add_option("--cpuProfile", flags.cpu_profile, "Go only; accepted, no effect");
  app.add_option("--cpus", flags.cpus,
                 "rill: CPUs to pin to, SERVER:CLIENT, each a comma list (empty: unpinned), or "
                 "none. Default: server reactor on the first allowed CPU, client reactor on the "
                 "second (both on the first with one CPU)");
  app.add_option("--reactors", flags.reactors,
                 "rill: reactor threads, N (each side) or SERVER:CLIENT; 0 = one per core")
      ->capture_default_str();
  app.add_flag("--statsHandler", flags.stats_handler,
               "rill: the in-process server runs a stats handler that reads every event");
  app.add_option("--binaryLog", flags.binary_log,
                 "rill: the in-process server writes a binary log of every call to this file");
  app.add_flag("--metrics", flags.metrics,
               "rill: the in-process server records gRPC's per-call metrics into a registry");
  app.add_option("--server", flags.server,
                 "rill: run only the client, against the BenchmarkService server at host:port "
                 "(or unix:/path); server-side figures are then n/a");
  app.add_option("--lbPolicy", flags.lb_policy,
                 "rill: with --server, the channels' load-balancing policy (pick_first, "
                 "round_robin); --server may then list addresses: ipv4:HOST:PORT,HOST:PORT");
  app.add_option("--payloadBuffers", flags.payload_buffers,
                 "rill: request and response bodies travel outside protobuf, as pooled "
                 "buffers (rill/payload_field.h; not with -preloader); false: in the protobuf "
                 "messages")
      ->capture_default_str();
  app.add_option("--channelShards", flags.channel_shards,
                 "rill: each client channel spreads its calls over this many of the client's "
                 "reactors (ChannelOptions::reactor_shards; at most --reactors' client count, "
                 "0 = all of them), with a connection each; unary workers run on those reactors in "
                 "turn (streaming workers stay on the first, their streams alternate)")
      ->capture_default_str();
  app.add_option("--tls_ca_file", flags.tls_ca_file,
                 "rill: with --server, connect over TLS, verifying the server against this CA "
                 "bundle (PEM)");

  std::vector<std::string> args = NormalizeGoFlags(argc, argv);
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    // Go's flag package: usage on -h exits 0, any other command-line error exits 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  auto config = Parse(flags);
  if (!config.ok()) {
    std::cerr << "benchmain: " << config.status().message() << "\n";
    return 2;
  }
  for (const std::string& note : config->notes) std::cerr << "benchmain: note: " << note << "\n";
  std::cerr << "benchmain: server reactors " << config->server_reactors << " on CPUs "
            << JoinCpus(config->server_cpus) << ", client reactors " << config->client_reactors
            << " on CPUs " << JoinCpus(config->client_cpus)
            << (AllocationCountingEnabled() ? "" : "; allocation counting is off in this build")
            << "\n";

  Stats stats({.allocation_source = &AllocationCounts});
  const std::vector<bool> shared = config->values.SharedFeatureMask();
  int run = 0;
  for (const Features& f : config->values.Generate()) {
    for (const char* mode : {"unary", "streaming", "unconstrained"}) {
      const bool enabled = (mode == std::string_view("unary") && config->unary) ||
                           (mode == std::string_view("streaming") && config->streaming) ||
                           (mode == std::string_view("unconstrained") && config->unconstrained);
      if (!enabled) continue;
      if (rill::Status s = RunOne(mode, ++run, f, shared, *config, stats); !s.ok()) {
        std::cerr << "benchmain: " << mode << "-" << f.String() << ": " << s.ToString() << "\n";
        return 1;
      }
    }
  }
  if (!config->result_file.empty()) {
    if (rill::Status s = WriteResultFile(config->result_file, stats.results()); !s.ok()) {
      std::cerr << "benchmain: " << s.ToString() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace rill::bench

int main(int argc, char** argv) { return rill::bench::Main(argc, argv); }
