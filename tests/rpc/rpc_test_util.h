// Helpers shared by the rill ↔ rill integration tests: a server on a loopback TCP port or a Unix
// socket, channels to it, and a way to run client coroutines from a test thread.
//
//   rill::test::TestServerSetup setup;
//   setup.services.push_back(&service);
//   auto server = rill::test::TestServer::Start(rill::test::Transport::kTcp, setup);
//   ASSERT_NE(server, nullptr);
//   auto channel = server->NewChannel();
//   grpc::testing::TestService::Stub stub(channel);
//   ...
//   channel.reset();          // channels and servers end inside the test (leak check)
//   server.reset();
//
// Thread safety: thread-compatible; used from the test thread.
#ifndef RILL_TESTS_RPC_RPC_TEST_UTIL_H_
#define RILL_TESTS_RPC_RPC_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/testing/messages.pb.h"
#include "rill/awaitable.h"
#include "rill/channel.h"
#include "rill/interceptor.h"
#include "rill/metadata.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/stats.h"

namespace rill::test {

enum class Transport { kTcp, kUnix };

// "Tcp" / "Unix", for parameterized test names:
//   INSTANTIATE_TEST_SUITE_P(Transports, MyTest, kAllTransports, TransportParamName);
std::string TransportName(Transport transport);
std::string TransportParamName(const ::testing::TestParamInfo<Transport>& info);
inline const auto kAllTransports = ::testing::Values(Transport::kTcp, Transport::kUnix);

// Long enough for anything that must complete on a loaded machine; only a hang reaches it.
inline constexpr std::chrono::seconds kMustCompleteTimeout{30};

struct TestServerSetup {
  std::vector<Service*> services;
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
  std::vector<std::shared_ptr<StatsHandler>> stats_handlers;
  ServerOptions options;
  BufferPool* pool = nullptr;  // null: DefaultBufferPool() (the test's leak-checking pool)
  size_t reactor_count = 1;
  ReactorPool* reactors = nullptr;  // when set, the server runs on these (reactor_count unused)
  // TCP: listen on this port (0 picks one). Unix: listen on this path (empty makes one).
  int port = 0;
  std::string unix_path;
};

class TestServer {
 public:
  // Starts a server; adds a test failure and returns null when it cannot.
  static std::unique_ptr<TestServer> Start(Transport transport, const TestServerSetup& setup);
  ~TestServer();

  [[nodiscard]] rill::Server& server() { return *server_; }
  // The channel target that reaches this server ("127.0.0.1:port" or "unix:/path").
  [[nodiscard]] const std::string& target() const { return target_; }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] const std::string& unix_path() const { return unix_path_; }
  [[nodiscard]] Transport transport() const { return transport_; }

  // A channel to this server; adds a test failure and returns null when it cannot be made.
  std::shared_ptr<Channel> NewChannel(ChannelOptions options = {}) const;

  // Shuts the server down (as Server::Shutdown) and destroys it.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));

 private:
  TestServer() = default;
  std::unique_ptr<rill::Server> server_;
  std::string target_;
  std::string unix_path_;
  int port_ = 0;
  Transport transport_ = Transport::kTcp;
};

// A fresh Unix socket path under the system temp directory.
std::string NewUnixSocketPath();

// Runs `awaitable` on `io` and waits for its result on the calling thread (not a reactor
// thread).
template <typename T>
T RunOn(asio::io_context& io, Awaitable<T> awaitable) {
  std::future<T> result = asio::co_spawn(io, std::move(awaitable), asio::use_future);
  return result.get();
}

// Posts a no-op to `io` several times and waits for each, so that events already visible to its
// reactor (a socket that became readable, say) have been handled when it returns.
void DrainReactor(asio::io_context& io);

// One-shot flag a handler raises and a test waits for (bounded by kMustCompleteTimeout).
class Notification {
 public:
  void Notify();
  [[nodiscard]] bool HasBeenNotified();
  // True once notified; false if kMustCompleteTimeout passed first.
  bool WaitForNotification();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// A copy of a Metadata's entries (the handler's context dies with the call).
using MetadataEntries = std::vector<std::pair<std::string, std::string>>;
MetadataEntries CopyEntries(const Metadata& metadata);
// Every value of `key` in `entries`, in order.
std::vector<std::string> ValuesOf(const MetadataEntries& entries, std::string_view key);

// Messages of an exact serialized size (the size limits count serialized bytes), made by
// filling the payload body. Sizes 1, 3 and 4 cannot be made this way; the functions abort on
// them. A request may also ask for a response size (counted in its own size).
grpc::testing::SimpleRequest RequestOfSize(size_t serialized_size, int32_t response_size = 0);
grpc::testing::SimpleResponse ResponseOfSize(size_t serialized_size);

}  // namespace rill::test

#endif  // RILL_TESTS_RPC_RPC_TEST_UTIL_H_
