// Drives a server whose user code throws on a third of its calls (rill_faulty_server) from
// libgrpc++: unary calls (inline and coroutine handlers) and bidi streams from four threads on
// one channel. Every call must end OK or UNKNOWN — UNKNOWN for the calls that threw, OK with
// the right payload for the rest — and both must occur.
//
//   peer_cpp_faulty_server_client --server_host=127.0.0.1 --server_port=50051 --calls=300
//
// Prints `statuses: OK=<n> UNKNOWN=<m> ...` and exits 0 when the outcome is as above.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.grpc.pb.h"
#include "tests/peers/cpp/peer_flags.h"

namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

struct Tally {
  std::mutex mu;
  std::map<int, int> codes;
  std::atomic<int> wrong{0};
  void Note(const grpc::Status& status) {
    std::lock_guard lock(mu);
    ++codes[status.error_code()];
  }
};

void SetDeadline(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

void Unary(TestService::Stub& stub, bool coroutine, int i, Tally& tally) {
  grpc::ClientContext context;
  SetDeadline(context);
  SimpleRequest request;
  request.mutable_payload()->set_body("call " + std::to_string(i));
  SimpleResponse response;
  const grpc::Status status = coroutine ? stub.CacheableUnaryCall(&context, request, &response)
                                        : stub.UnaryCall(&context, request, &response);
  tally.Note(status);
  if (status.ok() && response.payload().body() != request.payload().body()) ++tally.wrong;
}

void Stream(TestService::Stub& stub, int i, Tally& tally) {
  grpc::ClientContext context;
  SetDeadline(context);
  auto stream = stub.FullDuplexCall(&context);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  for (int m = 0; m < 3; ++m) {
    request.mutable_payload()->set_body("stream " + std::to_string(i) + " message " +
                                        std::to_string(m));
    if (!stream->Write(request) || !stream->Read(&response)) break;
    if (response.payload().body() != request.payload().body()) ++tally.wrong;
  }
  stream->WritesDone();
  while (stream->Read(&response)) {
  }
  tally.Note(stream->Finish());
}

}  // namespace

int main(int argc, char** argv) {
  peer::PeerFlags flags({{"server_host", "127.0.0.1"}, {"server_port", "0"}, {"calls", "300"}});
  if (!flags.Parse(argc, argv)) return 2;
  auto channel = grpc::CreateChannel(
      flags.Get("server_host") + ":" + flags.Get("server_port"),
      grpc::InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  const int calls = flags.GetInt("calls");
  Tally tally;
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < calls; i = next++) {
        switch (i % 3) {
          case 0:
            Unary(*stub, /*coroutine=*/false, i, tally);
            break;
          case 1:
            Unary(*stub, /*coroutine=*/true, i, tally);
            break;
          default:
            Stream(*stub, i, tally);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::string summary;
  bool others = false;
  for (const auto& [code, n] : tally.codes) {
    const char* name = code == 0 ? "OK" : code == 2 ? "UNKNOWN" : nullptr;
    if (name == nullptr) others = true;
    summary += " " + (name != nullptr ? std::string(name) : "code" + std::to_string(code)) + "=" +
               std::to_string(n);
  }
  std::printf("statuses:%s%s\n", summary.c_str(),
              tally.wrong > 0 ? (" wrong_payloads=" + std::to_string(tally.wrong)).c_str() : "");
  const bool ok = !others && tally.wrong == 0 && tally.codes[0] > 0 && tally.codes[2] > 0;
  return ok ? 0 : 1;
}
