// Smoke tests with @grpc/grpc-js, both ways:
//   - its interop client (tests/peers/node/interop_client.js) runs the four compression cases
//     against a rill server in this process. grpc-js cannot tell whether a response was
//     compressed, so the server side is checked here instead: the compressed requests reached
//     the handlers as compressed, and the server compressed its responses;
//   - rill's client sends gzip- and deflate-compressed requests to its interop server
//     (interop_server.js), which checks each message's compressed flag (expect_compressed). A
//     grpc-js server cannot compress responses, so that direction has nothing more to test.
//
// The full matrix is tests/interop's; this only proves, cheaply, that compression works both
// ways between grpc-js and rill. Skipped when node or the peer's node_modules are missing, failed
// instead under RILL_REQUIRE_PEERS (RILL_NODE_PEER_DIR names the peer's directory).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/testing/compression_service.h"
#include "tests/testing/require_peer.h"

namespace rill::test {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome RunCommand(const std::string& command) {
  Outcome outcome;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return outcome;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) outcome.output.append(buffer, n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

// The grpc-js peer's directory, or empty when it cannot run here.
std::string NodePeerDir() {
  const char* dir = std::getenv("RILL_NODE_PEER_DIR");
  if (dir == nullptr ||
      !std::filesystem::exists(std::string(dir) + "/node_modules/@grpc/grpc-js")) {
    return "";
  }
  if (RunCommand("node --version").exit_code != 0) return "";
  return dir;
}

// interop_server.js as a child process, stopped (SIGTERM) and reaped on destruction.
class NodeServer {
 public:
  // Starts it and waits for its "listening on <port>" line; false on failure.
  bool Start(const std::string& dir) {
    int out[2];
    if (pipe(out) != 0) return false;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const std::string script = dir + "/interop_server.js";
      execlp("node", "node", script.c_str(), "--port=0", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    FILE* stdout_of_child = fdopen(out[0], "r");
    char line[256];
    while (std::fgets(line, sizeof(line), stdout_of_child) != nullptr) {
      if (std::sscanf(line, "listening on %d", &port_) == 1) break;
    }
    // The rest of its output is not needed; closing our end is harmless (it prints no more).
    std::fclose(stdout_of_child);
    return port_ > 0;
  }
  ~NodeServer() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      waitpid(pid_, &status, 0);
    }
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST(NodeSmokeTest, RillClientCompressesToGrpcJsServer) {
  const std::string dir = NodePeerDir();
  RILL_REQUIRE_PEER(!dir.empty(), "node, or @grpc/grpc-js in $RILL_NODE_PEER_DIR/node_modules");
  NodeServer server;
  ASSERT_TRUE(server.Start(dir));
  CounterMap counters = CountingBuiltIns();
  ChannelOptions options;
  options.compressors = AsCompressors(counters);
  auto created = Channel::Create("127.0.0.1:" + std::to_string(server.port()), options);
  ASSERT_TRUE(created.ok()) << created.status();
  std::shared_ptr<Channel> channel = std::move(*created);
  grpc::testing::TestService::Stub stub(channel);
  for (const std::string encoding : {"gzip", "deflate"}) {
    SCOPED_TRACE(encoding);
    {
      // Unary: the server refuses the call unless the request arrived compressed.
      ClientContext context;
      PrepareContext(context, encoding);
      grpc::testing::SimpleRequest request = ZerosRequest(20000, 30000);
      request.mutable_expect_compressed()->set_value(true);
      grpc::testing::SimpleResponse response;
      const rill::Status status = stub.UnaryCall(context, request, &response);
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(response.payload().body().size(), 30000u);
      EXPECT_TRUE(AllZeros(response.payload().body()));
    }
    {
      // Client streaming: compressed, opted out, compressed.
      ClientContext context;
      PrepareContext(context, encoding);
      grpc::testing::StreamingInputCallResponse response;
      auto writer = stub.StreamingInputCall(context, &response);
      for (int i = 0; i < 3; ++i) {
        grpc::testing::StreamingInputCallRequest request;
        request.mutable_payload()->set_body(std::string(10000, '\0'));
        request.mutable_expect_compressed()->set_value(i != 1);
        WriteOptions write_options;
        write_options.no_compression = i == 1;
        ASSERT_TRUE(writer->BlockingWrite(request, write_options));
      }
      const rill::Status status = writer->BlockingFinish();
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(response.aggregated_payload_size(), 30000);
    }
    EXPECT_EQ(counters[encoding]->compress_calls(), 3);
  }
}

TEST(NodeSmokeTest, GrpcJsCompressionCasesAgainstRill) {
  const std::string dir = NodePeerDir();
  RILL_REQUIRE_PEER(!dir.empty(), "node, or @grpc/grpc-js in $RILL_NODE_PEER_DIR/node_modules");

  CompressionFixture fixture;
  ASSERT_TRUE(fixture.Start());
  const std::string cases =
      "client_compressed_unary,server_compressed_unary,client_compressed_streaming,"
      "server_compressed_streaming";
  const Outcome outcome =
      RunCommand("timeout 120 node " + dir + "/interop_client.js" +
                 " --server_host=127.0.0.1 --server_port=" + std::to_string(fixture.port()) +
                 " --test_case=" + cases);
  EXPECT_EQ(outcome.exit_code, 0) << outcome.output;
  for (const char* name : {"client_compressed_unary", "server_compressed_unary",
                           "client_compressed_streaming", "server_compressed_streaming"}) {
    EXPECT_NE(outcome.output.find(std::string("PASS ") + name), std::string::npos)
        << name << ":\n"
        << outcome.output;
  }
  // client_compressed_unary sends one gzip request, client_compressed_streaming one gzip message
  // (the others are the uncompressed probes and opt-outs, which the service itself judged).
  EXPECT_EQ(fixture.service().compressed_requests_seen(), 2);
  EXPECT_EQ(fixture.server_counter("gzip")->decompress_calls(), 2);
  // Compressed responses, which grpc-js decoded (the cases check the payloads): the two gzip
  // requests are answered in kind, server_compressed_unary asks for one compressed response and
  // server_compressed_streaming for one of its two.
  EXPECT_EQ(fixture.server_counter("gzip")->compress_calls(), 4);
  fixture.Stop();
}

}  // namespace
}  // namespace rill::test
