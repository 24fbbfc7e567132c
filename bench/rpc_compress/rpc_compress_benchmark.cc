// Unary round trips with message compression, rill and libgrpc++ 1.51 side by side: grpc-go's
// RPCCompressor comparison (gzip against a copy-only "nop" compressor) measured through a real
// loopback TCP connection instead of on the compressor alone.
//
//   {rill,grpcpp}/{gzip,nop,identity}/{1KiB,10KiB,512000B}
//
// One op is a blocking unary BenchmarkService/UnaryCall from the benchmark thread: a
// SimpleRequest whose payload is SIZE zero bytes (grpc-go's benchmark payload) asking for a
// response of SIZE zero bytes. With a compressor, both directions are compressed: rill's server
// answers in the request's encoding by default; libgrpc++'s server is told to compress through
// the request's response_compressed field.
//
//   gzip      rill: set_compression("gzip"); libgrpc++: set_compression_algorithm(GZIP) on both
//             ends.
//   nop       rill only: a compressor named "nop" that copies its input into a pooled buffer
//             (grpc-go's nop compressor copies too). rill sends a message uncompressed when the
//             compressor did not make it smaller, so with "nop" each message is copied once on
//             the sending side and travels with the compressed flag off; the receiver has
//             nothing to decompress. libgrpc++ has no pluggable compressor, so its row is
//             uncompressed (identity), the baseline the nop run is set against.
//   identity  no compression, both.
//
// Counters per op: cpu_us/op (CPU time of the whole process: client, server and libgrpc++'s
// threads), allocs/op and bytes/op (every malloc of the process, through rill_alloc_hook). Time
// is wall time per round trip. After the runs a table sets rill against libgrpc++ (ratio =
// rill / libgrpc++). On a shared machine the CPU figure is the steadier one.
//
// libgrpc++'s server is its asynchronous completion-queue API (the fastest it has) with one
// polling thread; its client is the blocking stub.
//
// Threads: with --pin=1 (the default on two or more CPUs) rill's server reactor runs on CPU 0,
// its client reactor and the benchmark thread on CPU 1; libgrpc++'s server is built on a thread
// pinned to CPU 0 (its threads inherit that), its completion queue is polled on CPU 0, and its
// client runs on the benchmark thread (CPU 1).
//
//   taskset -c 0,1 build/release/bench/rpc_compress/rpc_compress_benchmark
//       --benchmark_min_time=1 --benchmark_repetitions=3          (one command line)
#include <benchmark/benchmark.h>
#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "grpc/testing/benchmark_service.grpc.pb.h"
#include "grpc/testing/benchmark_service.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/compression.h"
#include "rill/mem/buffer.h"
#include "rill/mem/buffer_slice.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"

namespace rill::bench {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

constexpr size_t kSizes[] = {1024, 10 * 1024, 512000};
constexpr int kServerCpu = 0;
constexpr int kClientCpu = 1;
constexpr int kWarmupCalls = 20;

bool g_pin = true;

void PinCurrentThread(int cpu) {
  if (!g_pin) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

std::string SizeName(size_t size) {
  return size % 1024 == 0 && size <= 64 * 1024 ? std::to_string(size / 1024) + "KiB"
                                               : std::to_string(size) + "B";
}

// grpc-go's nop compressor: copies. Thread-safe (stateless).
class NopCompressor final : public Compressor {
 public:
  [[nodiscard]] std::string_view name() const override { return "nop"; }
  rill::Status Compress(const BufferSlice& input, BufferPool& pool, BufferSlice& out) override {
    Copy(input, pool, out);
    return rill::Status();
  }
  rill::Status Decompress(const BufferSlice& input, BufferPool& pool, size_t limit,
                          BufferSlice& out) override {
    if (input.size() > limit) {
      return rill::Status(StatusCode::kResourceExhausted, "message larger than the limit");
    }
    Copy(input, pool, out);
    return rill::Status();
  }

 private:
  static void Copy(const BufferSlice& input, BufferPool& pool, BufferSlice& out) {
    if (input.empty()) return;
    Buffer copy = Buffer::Allocate(input.size(), pool);
    (void)input.CopyTo(std::span<std::byte>(copy.mutable_data(), input.size()));
    out.Append(std::move(copy));
  }
};

// ---------------------------------------------------------------------------------------------
// rill.

class RillService final : public grpc::testing::BenchmarkService::Service {
 public:
  rill::Status UnaryCall(ServerContext& /*context*/, const SimpleRequest& request,
                         SimpleResponse& response) override {
    response.mutable_payload()->mutable_body()->resize(
        static_cast<size_t>(request.response_size()));
    return rill::Status();
  }
};

ReactorPool::Options ReactorsOn(int cpu) {
  ReactorPool::Options options;
  options.threads = 1;
  if (g_pin) options.cpus = {cpu};
  return options;
}

// A rill server and a channel to it. Members are destroyed in reverse: stub, channel, server,
// then the reactors they ran on.
class RillEnv {
 public:
  RillEnv() : server_reactors_(ReactorsOn(kServerCpu)), client_reactors_(ReactorsOn(kClientCpu)) {
    int port = 0;
    ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", &port)
        .RegisterService(&service_)
        .SetReactors(&server_reactors_)
        .RegisterCompressor(std::make_shared<NopCompressor>());
    auto server = builder.Build();
    if (!server.ok()) {
      std::fprintf(stderr, "rill server: %s\n", server.status().ToString().c_str());
      std::abort();
    }
    server_ = std::move(*server);
    ChannelOptions options;
    options.reactors = &client_reactors_;
    options.compressors.push_back(std::make_shared<NopCompressor>());
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(port), options);
    if (!channel.ok()) std::abort();
    channel_ = std::move(*channel);
    stub_ = std::make_unique<grpc::testing::BenchmarkService::Stub>(channel_);
  }
  ~RillEnv() {
    stub_.reset();
    channel_.reset();
    server_->Shutdown(std::chrono::milliseconds(100));
    server_.reset();
  }

  // One round trip; false when it failed or the response is not what was asked for.
  bool Call(const std::string& compressor, const SimpleRequest& request, SimpleResponse& response,
            bool* response_compressed) {
    ClientContext context;
    if (compressor != "identity") context.set_compression(compressor);
    const rill::Status status = stub_->UnaryCall(context, request, &response);
    if (response_compressed != nullptr) *response_compressed = context.response_compressed();
    return status.ok() &&
           response.payload().body().size() == static_cast<size_t>(request.response_size());
  }

 private:
  ReactorPool server_reactors_;
  ReactorPool client_reactors_;
  RillService service_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::BenchmarkService::Stub> stub_;
};

// ---------------------------------------------------------------------------------------------
// libgrpc++: the asynchronous completion-queue server (its fastest API, as in
// tests/peers/cpp/bench_server.cc), polled by one thread, and a blocking client stub.

using GrpcppAsyncService = grpc::testing::grpcpp::BenchmarkService::AsyncService;

// One UnaryCall at a time; its address is the tag of every operation it starts. Reactor-confined
// (only the polling thread touches it after construction).
class GrpcppUnaryHandler {
 public:
  GrpcppUnaryHandler(GrpcppAsyncService* service, grpc::ServerCompletionQueue* queue)
      : service_(service), queue_(queue) {
    AwaitCall();
  }

  // Continues after the operation started last completed with `ok`.
  void Proceed(bool ok) {
    if (!finishing_) {
      if (!ok) return;  // the server is shutting down: no new call
      if (request_.response_compressed().value()) {
        context_->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      }
      response_.mutable_payload()->mutable_body()->assign(
          static_cast<size_t>(request_.response_size()), '\0');
      finishing_ = true;
      responder_->Finish(response_, grpc::Status::OK, this);
      return;
    }
    AwaitCall();
  }

 private:
  void AwaitCall() {
    finishing_ = false;
    responder_.reset();
    context_.emplace();
    responder_.emplace(&*context_);
    service_->RequestUnaryCall(&*context_, &request_, &*responder_, queue_, queue_, this);
  }

  GrpcppAsyncService* service_;
  grpc::ServerCompletionQueue* queue_;
  bool finishing_ = false;
  std::optional<grpc::ServerContext> context_;
  std::optional<grpc::ServerAsyncResponseWriter<SimpleResponse>> responder_;
  SimpleRequest request_;
  SimpleResponse response_;
};

class GrpcppEnv {
 public:
  GrpcppEnv() {
    // libgrpc's own threads start now and inherit this thread's CPU.
    PinCurrentThread(kServerCpu);
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    queue_ = builder.AddCompletionQueue();
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port == 0) std::abort();
    // Two handlers, so that a call is always awaited while the other one finishes.
    for (int i = 0; i < 2; ++i) {
      handlers_.push_back(std::make_unique<GrpcppUnaryHandler>(&service_, queue_.get()));
    }
    poller_ = std::thread([queue = queue_.get()] {
      PinCurrentThread(kServerCpu);
      void* tag = nullptr;
      bool ok = false;
      while (queue->Next(&tag, &ok)) static_cast<GrpcppUnaryHandler*>(tag)->Proceed(ok);
    });
    PinCurrentThread(kClientCpu);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                   grpc::InsecureChannelCredentials());
    channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10));
    stub_ = grpc::testing::grpcpp::BenchmarkService::NewStub(channel_);
  }
  ~GrpcppEnv() {
    stub_.reset();
    channel_.reset();
    // No call is in flight: the awaited calls complete with ok = false, the queue drains and
    // the poller returns.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    queue_->Shutdown();
    poller_.join();
    server_->Wait();
  }

  bool Call(const std::string& compressor, const SimpleRequest& request, SimpleResponse& response) {
    grpc::ClientContext context;
    if (compressor == "gzip") context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    const grpc::Status status = stub_->UnaryCall(&context, request, &response);
    return status.ok() &&
           response.payload().body().size() == static_cast<size_t>(request.response_size());
  }

 private:
  GrpcppAsyncService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<GrpcppUnaryHandler>> handlers_;
  std::thread poller_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::testing::grpcpp::BenchmarkService::Stub> stub_;
};

std::unique_ptr<RillEnv> g_rill;
std::unique_ptr<GrpcppEnv> g_grpcpp;

// ---------------------------------------------------------------------------------------------
// The benchmark.

// CPU time of every thread of the process (client, server and libgrpc++'s own threads).
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

enum class Impl { kRill, kGrpcpp };

void BM_UnaryCall(benchmark::State& state, Impl impl, std::string compressor, size_t size) {
  SimpleRequest request;
  request.set_response_size(static_cast<int32_t>(size));
  request.mutable_payload()->mutable_body()->resize(size);
  // Tells libgrpc++'s handler to compress its response; rill's answers in kind instead.
  if (compressor == "gzip") request.mutable_response_compressed()->set_value(true);
  SimpleResponse response;

  if (impl == Impl::kRill && g_rill == nullptr) g_rill = std::make_unique<RillEnv>();
  if (impl == Impl::kGrpcpp && g_grpcpp == nullptr) g_grpcpp = std::make_unique<GrpcppEnv>();
  auto call = [&](bool* response_compressed) {
    return impl == Impl::kRill ? g_rill->Call(compressor, request, response, response_compressed)
                               : g_grpcpp->Call(compressor, request, response);
  };

  for (int i = 0; i < kWarmupCalls; ++i) {
    bool response_compressed = false;
    if (!call(&response_compressed)) {
      state.SkipWithError("a warm-up call failed");
      return;
    }
    if (impl == Impl::kRill && compressor == "gzip" && !response_compressed) {
      state.SkipWithError("the response was not compressed");
      return;
    }
  }

  const AllocationTotals before = AllocationCounts();
  const double cpu_before = ProcessCpuSeconds();
  for (auto _ : state) {
    if (!call(nullptr)) {
      state.SkipWithError("a call failed");
      break;
    }
  }
  const double cpu_after = ProcessCpuSeconds();
  const AllocationTotals after = AllocationCounts();
  state.counters["cpu_us/op"] =
      benchmark::Counter((cpu_after - cpu_before) * 1e6, benchmark::Counter::kAvgIterations);
  state.counters["allocs/op"] = benchmark::Counter(
      static_cast<double>(after.allocs - before.allocs), benchmark::Counter::kAvgIterations);
  state.counters["bytes/op"] = benchmark::Counter(static_cast<double>(after.bytes - before.bytes),
                                                  benchmark::Counter::kAvgIterations);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 *
                          static_cast<int64_t>(size));
}

struct Variant {
  Impl impl;
  const char* compressor;
};
constexpr Variant kVariants[] = {
    {Impl::kRill, "gzip"},     {Impl::kGrpcpp, "gzip"},     {Impl::kRill, "nop"},
    {Impl::kRill, "identity"}, {Impl::kGrpcpp, "identity"},
};

std::string Name(Impl impl, std::string_view compressor, size_t size) {
  return std::string(impl == Impl::kRill ? "rill" : "grpcpp") + "/" + std::string(compressor) +
         "/" + SizeName(size);
}

void RegisterAll() {
  for (size_t size : kSizes) {
    for (const Variant& v : kVariants) {
      benchmark::RegisterBenchmark(Name(v.impl, v.compressor, size).c_str(), BM_UnaryCall, v.impl,
                                   std::string(v.compressor), size)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The side-by-side table.

class CollectingReporter final : public benchmark::ConsoleReporter {
 public:
  CollectingReporter() : ConsoleReporter(isatty(STDOUT_FILENO) ? OO_ColorTabular : OO_Tabular) {}

  struct Sample {
    double time_us = 0;
    double cpu_us = 0;
    double allocs = 0;
    double bytes = 0;
  };

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      Sample sample;
      sample.time_us = run.GetAdjustedRealTime();  // in the run's unit: microseconds
      if (auto it = run.counters.find("cpu_us/op"); it != run.counters.end()) {
        sample.cpu_us = it->second.value;
      }
      if (auto it = run.counters.find("allocs/op"); it != run.counters.end()) {
        sample.allocs = it->second.value;
      }
      if (auto it = run.counters.find("bytes/op"); it != run.counters.end()) {
        sample.bytes = it->second.value;
      }
      samples_[run.run_name.function_name].push_back(sample);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // The median of each figure over the repetitions; false when the benchmark did not run.
  bool Median(const std::string& name, Sample* out) const {
    auto it = samples_.find(name);
    if (it == samples_.end() || it->second.empty()) return false;
    auto median = [&](double Sample::*field) {
      std::vector<double> values;
      for (const Sample& s : it->second) values.push_back(s.*field);
      std::sort(values.begin(), values.end());
      const size_t n = values.size();
      return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    };
    out->time_us = median(&Sample::time_us);
    out->cpu_us = median(&Sample::cpu_us);
    out->allocs = median(&Sample::allocs);
    out->bytes = median(&Sample::bytes);
    return true;
  }

 private:
  std::map<std::string, std::vector<Sample>> samples_;
};

std::string Ratio(double a, double b) {
  if (b <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", a / b);
  return text;
}

void PrintSummary(const CollectingReporter& reporter) {
  std::printf(
      "\nrill vs libgrpc++ 1.51, unary round trip over loopback TCP (median over repetitions;\n"
      "ratio = rill / libgrpc++). wall: real time per round trip; cpu: CPU time of the whole\n"
      "process (client and server threads) per round trip; allocs, bytes: every malloc of the\n"
      "process per round trip.\n\n");
  std::printf("%-9s %-20s | %9s %9s %5s | %8s %8s %5s | %7s %7s %5s | %9s %9s %5s\n", "payload",
              "rill vs libgrpc++", "rill wall", "grpc wall", "ratio", "rill cpu", "grpc cpu",
              "ratio", "rill al", "grpc al", "ratio", "rill B", "grpc B", "ratio");
  struct Row {
    const char* rill;
    const char* grpcpp;
    const char* label;
  };
  constexpr Row kRows[] = {
      {"gzip", "gzip", "gzip vs gzip"},
      {"nop", "identity", "nop vs identity(*)"},
      {"identity", "identity", "identity vs identity"},
  };
  for (size_t size : kSizes) {
    for (const Row& row : kRows) {
      CollectingReporter::Sample r, g;
      if (!reporter.Median(Name(Impl::kRill, row.rill, size), &r) ||
          !reporter.Median(Name(Impl::kGrpcpp, row.grpcpp, size), &g)) {
        continue;
      }
      std::printf(
          "%-9s %-20s | %9.1f %9.1f %5s | %8.1f %8.1f %5s | %7.1f %7.1f %5s | %9.0f %9.0f %5s\n",
          SizeName(size).c_str(), row.label, r.time_us, g.time_us,
          Ratio(r.time_us, g.time_us).c_str(), r.cpu_us, g.cpu_us,
          Ratio(r.cpu_us, g.cpu_us).c_str(), r.allocs, g.allocs, Ratio(r.allocs, g.allocs).c_str(),
          r.bytes, g.bytes, Ratio(r.bytes, g.bytes).c_str());
    }
  }
  std::printf(
      "\n(*) libgrpc++ has no pluggable no-op compressor: rill's copy-only \"nop\" is set against\n"
      "    libgrpc++ without compression. rill sends a message uncompressed when compressing\n"
      "    did not shrink it, so \"nop\" costs rill one copy per message on the sending side.\n");
  if (!AllocationCountingEnabled()) {
    std::printf("allocation counting is compiled out in this (sanitizer) build\n");
  }
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  std::getline(loadavg, load);
  std::printf("load average at the end: %s; pinning %s\n", load.c_str(), g_pin ? "on" : "off");
}

}  // namespace
}  // namespace rill::bench

int main(int argc, char** argv) {
  // --pin=0|1, ours; the rest goes to Google Benchmark.
  rill::bench::g_pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--pin=", 6) == 0) {
      rill::bench::g_pin = std::strcmp(argv[i] + 6, "0") != 0;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  rill::bench::PinCurrentThread(rill::bench::kClientCpu);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  rill::bench::RegisterAll();
  rill::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  rill::bench::PrintSummary(reporter);
  rill::bench::g_rill.reset();
  rill::bench::g_grpcpp.reset();
  benchmark::Shutdown();
  return 0;
}
