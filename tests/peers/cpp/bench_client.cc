// A closed-loop unary client on libgrpc++'s asynchronous completion-queue API: the baseline
// for the cost of client-side load balancing.
//
//   peer_cpp_bench_client --target=ipv4:127.0.0.1:P1,127.0.0.1:P2 --lb_policy=round_robin
//                         --calls=100 --warmup_s=2 --duration_s=10
//
// One thread keeps --calls grpc.testing.BenchmarkService/UnaryCall calls in flight (1-byte
// request and response payloads); each completion starts the next call. After the warm-up it
// counts the calls completed and its own CPU time (user + system, getrusage) over the measured
// window only, and prints `rpcs=<n> seconds=<s> rpc_per_s=<r> cpu_us_per_rpc=<c>`.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "grpc/testing/benchmark_service.grpc.pb.h"
#include "grpc/testing/messages.pb.h"
#include "tests/peers/cpp/peer_flags.h"

namespace peer {
namespace {

using grpc::testing::BenchmarkService;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

struct Call {
  std::unique_ptr<grpc::ClientContext> context;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SimpleResponse>> reader;
  SimpleResponse response;
  grpc::Status status;
};

double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

int Run(int argc, char** argv) {
  PeerFlags flags({{"target", "127.0.0.1:50051"},
                   {"lb_policy", ""},
                   {"calls", "100"},
                   {"warmup_s", "2"},
                   {"duration_s", "10"}});
  if (!flags.Parse(argc, argv)) return 2;
  grpc::ChannelArguments args;
  if (!flags.Get("lb_policy").empty()) args.SetLoadBalancingPolicyName(flags.Get("lb_policy"));
  auto channel =
      grpc::CreateCustomChannel(flags.Get("target"), grpc::InsecureChannelCredentials(), args);
  auto stub = BenchmarkService::NewStub(channel);
  grpc::CompletionQueue queue;
  SimpleRequest request;
  request.set_response_size(1);
  request.mutable_payload()->set_body(std::string(1, '\0'));

  std::vector<Call> calls(static_cast<size_t>(flags.GetInt("calls")));
  auto start = [&](Call& call) {
    call.context = std::make_unique<grpc::ClientContext>();
    call.reader = stub->AsyncUnaryCall(call.context.get(), request, &queue);
    call.reader->Finish(&call.response, &call.status, &call);
  };
  for (Call& call : calls) start(call);

  using Clock = std::chrono::steady_clock;
  const auto measure_from = Clock::now() + std::chrono::seconds(flags.GetInt("warmup_s"));
  const auto measure_until = measure_from + std::chrono::seconds(flags.GetInt("duration_s"));
  bool measuring = false;
  long completed = 0;
  long failed = 0;
  double cpu_start = 0;
  Clock::time_point wall_start;
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
    auto now = Clock::now();
    if (!measuring && now >= measure_from) {
      measuring = true;
      cpu_start = CpuSeconds();
      wall_start = now;
    }
    if (now >= measure_until) break;
    Call& call = *static_cast<Call*>(tag);
    if (!ok || !call.status.ok()) ++failed;
    if (measuring) ++completed;
    start(call);
  }
  const double cpu = CpuSeconds() - cpu_start;
  const double wall = std::chrono::duration<double>(Clock::now() - wall_start).count();
  std::printf("rpcs=%ld failed=%ld seconds=%.3f rpc_per_s=%.0f cpu_us_per_rpc=%.2f\n", completed,
              failed, wall, completed / wall, completed ? cpu * 1e6 / completed : 0.0);
  std::fflush(stdout);
  // Calls still in flight are abandoned: the process exits without draining them.
  std::_Exit(failed == 0 ? 0 : 1);
}

}  // namespace
}  // namespace peer

int main(int argc, char** argv) { return peer::Run(argc, argv); }
