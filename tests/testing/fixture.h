// A rill server and channels to it on a loopback TCP port or a Unix socket, a way to run client
// coroutines from the test thread, and the waits tests need (bounded: a hang fails, it does not
// stall ctest).
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
#ifndef RILL_TESTS_TESTING_FIXTURE_H_
#define RILL_TESTS_TESTING_FIXTURE_H_

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/awaitable.h"
#include "rill/channel.h"
#include "rill/compression.h"
#include "rill/interceptor.h"
#include "rill/reactor_pool.h"
#include "rill/server.h"
#include "rill/stats.h"

namespace rill::test {

// Long enough for anything that must complete on a loaded machine (sanitizers, two cores shared
// by several builds); only a hang reaches it.
inline constexpr std::chrono::seconds kMustComplete{120};

// Sanitizer builds run the same tests on less data (they are several times slower per byte).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// kInProcess: no listening port; channels are Server::InProcessChannel().
enum class Transport { kTcp, kUnix, kInProcess };

// "Tcp" / "Unix" / "InProcess", for parameterized test names:
//   INSTANTIATE_TEST_SUITE_P(Transports, MyTest, kAllTransports, TransportParamName);
std::string TransportName(Transport transport);
std::string TransportParamName(const ::testing::TestParamInfo<Transport>& info);
inline const auto kAllTransports = ::testing::Values(Transport::kTcp, Transport::kUnix);
// The in-process channel, for suites whose tests need no socket of their own:
//   INSTANTIATE_TEST_SUITE_P(InProcess, MyTest, kInProcessTransport, TransportParamName);
inline const auto kInProcessTransport = ::testing::Values(Transport::kInProcess);

struct TestServerSetup {
  std::vector<Service*> services;
  std::vector<std::shared_ptr<ServerInterceptor>> interceptors;
  std::vector<std::shared_ptr<StatsHandler>> stats_handlers;
  ServerOptions options;
  BufferPool* pool = nullptr;  // null: DefaultBufferPool() (the test's leak-checking pool)
  size_t reactor_count = 1;
  ReactorPool* reactors = nullptr;  // when set, the server runs on these (reactor_count unused)
  // Replace the built-in compressors when set (an empty vector leaves the server none).
  std::optional<std::vector<std::shared_ptr<Compressor>>> compressors;
  // TCP: listen on this port (0 picks one). Unix: listen on this path (empty makes one).
  int port = 0;
  std::string unix_path;
};

class TestServer {
 public:
  // Starts a server; adds a test failure and returns null when it cannot.
  static std::unique_ptr<TestServer> Start(Transport transport, const TestServerSetup& setup);
  static std::unique_ptr<TestServer> Start(const TestServerSetup& setup) {
    return Start(Transport::kTcp, setup);
  }
  ~TestServer();

  [[nodiscard]] rill::Server& server() { return *server_; }
  // The channel target that reaches this server ("127.0.0.1:port" or "unix:/path";
  // "inprocess" for kInProcess, where only NewChannel() reaches it).
  [[nodiscard]] const std::string& target() const { return target_; }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] const std::string& unix_path() const { return unix_path_; }
  [[nodiscard]] Transport transport() const { return transport_; }

  // A channel to this server; adds a test failure and returns null when it cannot be made.
  std::shared_ptr<Channel> NewChannel(ChannelOptions options = {}) const;

  // Shuts the server down (as Server::Shutdown) and destroys it.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(0));
  // Shuts the server down at once (Server::ShutdownNow: running calls are cancelled).
  void StopNow();

 private:
  TestServer() = default;
  std::unique_ptr<rill::Server> server_;
  std::string target_;
  std::string unix_path_;
  int port_ = 0;
  Transport transport_ = Transport::kTcp;
};

// A test whose server runs `service_`: StartServer() starts it, OpenChannel() adds channel_ and
// a grpc.testing.TestService stub_ over it, and Connect() does that and waits until the channel
// is connected (so that deadlines cover calls, not connection setup). TearDown ends the stub,
// the channel and the server, in that order, inside the test.
//
//   class CallTest : public ServerTest<EchoService> {
//     void SetUp() override { StartServer(Transport::kTcp); OpenChannel(); }
//   };
template <typename ServiceT, typename TestBase = ::testing::Test>
class ServerTest : public TestBase {
 protected:
  void StartServer(Transport transport, TestServerSetup setup = {}) {
    setup.services.push_back(&service_);
    server_ = TestServer::Start(transport, setup);
    ASSERT_NE(server_, nullptr);
  }
  std::shared_ptr<Channel> NewChannel(ChannelOptions options = {}) {
    return server_->NewChannel(std::move(options));
  }
  void OpenChannel(ChannelOptions options = {}) {
    ASSERT_NE(server_, nullptr);
    channel_ = NewChannel(std::move(options));
    ASSERT_NE(channel_, nullptr);
    stub_ = std::make_unique<grpc::testing::TestService::Stub>(channel_);
  }
  void Connect(ChannelOptions options = {}) {
    ASSERT_NO_FATAL_FAILURE(OpenChannel(std::move(options)));
    ASSERT_TRUE(channel_->WaitForConnected(Channel::Clock::now() + kMustComplete));
  }
  void TearDown() override {
    stub_.reset();
    channel_.reset();
    server_.reset();
  }

  ServiceT service_;
  std::unique_ptr<TestServer> server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::TestService::Stub> stub_;
};

// A ServerTest parameterized by Transport: StartServer() starts the server on GetParam().
//
//   class UnaryTest : public ServiceTest<EchoService> {};
//   TEST_P(UnaryTest, Works) { StartServer(); auto channel = NewChannel(); ... }
template <typename ServiceT>
class ServiceTest : public ServerTest<ServiceT, ::testing::TestWithParam<Transport>> {
 protected:
  void StartServer(TestServerSetup setup = {}) {
    ServerTest<ServiceT, ::testing::TestWithParam<Transport>>::StartServer(this->GetParam(),
                                                                           std::move(setup));
  }
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

// Blocks until `predicate()` holds (checked every few ms); false if `limit` passed first.
bool WaitUntil(const std::function<bool()>& predicate,
               std::chrono::milliseconds limit = kMustComplete);

// One-shot flag a handler raises and a test waits for (bounded by kMustComplete).
class Notification {
 public:
  void Notify();
  [[nodiscard]] bool HasBeenNotified();
  // True once notified; false if kMustComplete passed first.
  bool WaitForNotification();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

// Runs a step that must return (a destructor, a shutdown) on a thread of its own and reports
// whether it did before `limit`. A step that hangs cannot be abandoned safely (it holds the
// objects under test), so a hang ends the test binary with a message instead of hanging ctest
// until its timeout.
//
//   EXPECT_TRUE(FinishesWithin(std::chrono::seconds(10), [&] { channel.reset(); }));
template <typename Fn>
bool FinishesWithin(std::chrono::seconds limit, Fn&& fn) {
  std::packaged_task<void()> task(std::forward<Fn>(fn));
  std::future<void> done = task.get_future();
  std::thread thread(std::move(task));
  if (done.wait_for(limit) != std::future_status::ready) {
    std::fprintf(stderr, "%s: a step that must return did not within %lld s (hang)\n",
                 ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                 static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }
  thread.join();
  done.get();
  return true;
}

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_FIXTURE_H_
