// A rill server for probing HTTP/2 conformance from outside with a tool that speaks plain
// HTTP/2 (GET and POST requests to "/", raw frames): grpc.testing.TestService with UnaryCall
// and EmptyCall, on a loopback TCP port.
//
//   h2spec_target --port=0
//
// Prints `listening on <port>` on stdout once it accepts connections and runs until SIGINT or
// SIGTERM. Requests that are not gRPC get rill's ordinary answer (405 or 415 with a short
// text body and the gRPC status in trailers), which is what such a tool exercises.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grpc/testing/test.rill.h"
#include "rill/server.h"
#include "tests/testing/serve_until_stopped.h"

namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;

class TargetService final : public grpc::testing::TestService::Service {
 public:
  rill::Status UnaryCall(rill::ServerContext&, const SimpleRequest& request,
                         SimpleResponse& response) override {
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(std::max(0, std::min(request.response_size(), 1 << 20))), 'r');
    return rill::Status();
  }
  rill::Status EmptyCall(rill::ServerContext&, const Empty&, Empty&) override {
    return rill::Status();
  }
};

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--port=")) {
      port = std::atoi(argv[i] + 7);
    } else {
      std::fprintf(stderr, "usage: %s [--port=N]\n", argv[0]);
      return 2;
    }
  }
  const rill::test::StopSignals stop;

  TargetService service;
  int bound = 0;
  rill::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), &bound).RegisterService(&service);
  auto server = builder.Build();
  return rill::test::ServeUntilStopped(server, bound, stop);
}
