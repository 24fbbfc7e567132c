// A rill server whose user code throws on a random third of its calls: a server interceptor's
// OnCallStart, the handler, or the interceptor's OnCallEnd (a ninth each). The throwing calls
// must end with UNKNOWN and everything else must be served as usual, on the same connections.
//
//   rill_faulty_server --port=0
//
// Serves grpc.testing.TestService's EmptyCall and UnaryCall (inline handlers echoing the
// payload), CacheableUnaryCall (a coroutine handler) and FullDuplexCall (echoes each message).
// Prints `listening on <port>` once it accepts calls, and at SIGINT/SIGTERM
// `served <calls> calls, threw in <n> (start <a>, handler <b>, end <c>)` before it exits.
#include <CLI/CLI.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>

#include "grpc/testing/test.rill.h"
#include "rill/interceptor.h"
#include "rill/log.h"
#include "rill/server.h"
#include "tests/testing/grpc_testing_names.h"
#include "tests/testing/serve_until_stopped.h"

namespace rill::test {
namespace {

constexpr std::string_view kThrowIn = "x-test-only-throw-in";

std::atomic<int> g_calls{0};
std::atomic<int> g_threw_start{0};
std::atomic<int> g_threw_handler{0};
std::atomic<int> g_threw_end{0};

void MaybeThrowInHandler(const rill::ServerContext& context) {
  if (context.client_metadata().Get(kThrowIn) == "handler") {
    g_threw_handler.fetch_add(1);
    throw std::runtime_error("handler failed on purpose");
  }
}

class FaultyService final : public grpc::testing::TestService::Service {
 public:
  rill::Status EmptyCall(rill::ServerContext& context, const Empty&, Empty&) override {
    MaybeThrowInHandler(context);
    return rill::Status();
  }
  rill::Status UnaryCall(rill::ServerContext& context, const SimpleRequest& request,
                         SimpleResponse& response) override {
    MaybeThrowInHandler(context);
    *response.mutable_payload() = request.payload();
    return rill::Status();
  }
  rill::Awaitable<rill::Status> CacheableUnaryCallAsync(rill::ServerContext& context,
                                                        const SimpleRequest& request,
                                                        SimpleResponse& response) override {
    asio::steady_timer timer(context.io_context(), std::chrono::microseconds(100));
    co_await timer.async_wait(asio::use_awaitable);
    MaybeThrowInHandler(context);
    *response.mutable_payload() = request.payload();
    co_return rill::Status();
  }
  rill::Awaitable<rill::Status> FullDuplexCall(
      rill::ServerContext& context,
      rill::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>& stream)
      override {
    StreamingOutputCallRequest request;
    bool first = true;
    while (co_await stream.Read(&request)) {
      if (!first) MaybeThrowInHandler(context);  // mid-stream, after a message went out
      first = false;
      StreamingOutputCallResponse response;
      *response.mutable_payload() = request.payload();
      if (!co_await stream.Write(response)) break;
    }
    co_return rill::Status();
  }
};

// Decides per call (a third of them) where it throws, and throws there when it is its turn.
class FaultyInterceptor final : public rill::ServerInterceptor {
 public:
  rill::Status OnCallStart(rill::ServerContext& context) override {
    g_calls.fetch_add(1);
    const unsigned roll = Roll() % 9;
    if (roll == 0) {
      g_threw_start.fetch_add(1);
      throw std::runtime_error("OnCallStart failed on purpose");
    }
    if (roll == 1) context.mutable_client_metadata().Set(kThrowIn, "handler");
    if (roll == 2) context.mutable_client_metadata().Set(kThrowIn, "end");
    return rill::Status();
  }
  void OnCallEnd(rill::ServerContext& context, rill::Status& status) override {
    if (context.client_metadata().Get(kThrowIn) == "end") {
      g_threw_end.fetch_add(1);
      throw std::logic_error("OnCallEnd failed on purpose");
    }
  }

 private:
  static unsigned Roll() {
    thread_local std::mt19937 rng{std::random_device{}()};
    return static_cast<unsigned>(rng());
  }
};

// The exceptions are the point here: they are counted, not logged one by one.
void QuietLog(rill::LogSeverity severity, std::string_view message) {
  if (message.find("on purpose") == std::string_view::npos) {
    std::fprintf(stderr, "rill: %.*s\n", static_cast<int>(message.size()), message.data());
  }
}

int Main(int argc, char** argv) {
  CLI::App app("rill server whose user code throws on a third of its calls");
  int port = 0;
  app.add_option("--port", port, "TCP port to listen on; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  CLI11_PARSE(app, argc, argv);
  rill::SetLogHandler(&QuietLog);

  const rill::test::StopSignals stop;

  FaultyService service;
  int bound = 0;
  auto server = rill::ServerBuilder()
                    .AddListeningPort("127.0.0.1:" + std::to_string(port), &bound)
                    .RegisterService(&service)
                    .AddInterceptor(std::make_shared<FaultyInterceptor>())
                    .Build();
  if (const int code = rill::test::ServeUntilStopped(server, bound, stop); code != 0) return code;
  const int threw = g_threw_start.load() + g_threw_handler.load() + g_threw_end.load();
  std::printf("served %d calls, threw in %d (start %d, handler %d, end %d)\n", g_calls.load(),
              threw, g_threw_start.load(), g_threw_handler.load(), g_threw_end.load());
  return 0;
}

}  // namespace
}  // namespace rill::test

int main(int argc, char** argv) { return rill::test::Main(argc, argv); }
