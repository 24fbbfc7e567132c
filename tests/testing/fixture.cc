#include "tests/testing/fixture.h"

#include <unistd.h>

#include <asio/post.hpp>
#include <atomic>
#include <filesystem>

namespace rill::test {

std::string TransportName(Transport transport) {
  switch (transport) {
    case Transport::kTcp:
      return "Tcp";
    case Transport::kUnix:
      return "Unix";
    case Transport::kInProcess:
      return "InProcess";
  }
  return "?";
}

std::string TransportParamName(const ::testing::TestParamInfo<Transport>& info) {
  return TransportName(info.param);
}

std::string NewUnixSocketPath() {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  return (dir / ("rill-test-" + std::to_string(::getpid()) + "-" +
                 std::to_string(counter.fetch_add(1)) + ".sock"))
      .string();
}

std::unique_ptr<TestServer> TestServer::Start(Transport transport, const TestServerSetup& setup) {
  std::unique_ptr<TestServer> server(new TestServer());
  server->transport_ = transport;
  ServerBuilder builder;
  int port = 0;
  if (transport == Transport::kTcp) {
    builder.AddListeningPort("127.0.0.1:" + std::to_string(setup.port), &port);
  } else if (transport == Transport::kUnix) {
    server->unix_path_ = setup.unix_path.empty() ? NewUnixSocketPath() : setup.unix_path;
    builder.AddListeningPort("unix:" + server->unix_path_);
  }
  for (Service* service : setup.services) builder.RegisterService(service);
  for (const auto& interceptor : setup.interceptors) builder.AddInterceptor(interceptor);
  for (const auto& handler : setup.stats_handlers) builder.AddStatsHandler(handler);
  builder.SetOptions(setup.options);
  builder.SetReactorCount(setup.reactor_count);
  if (setup.reactors != nullptr) builder.SetReactors(setup.reactors);
  if (setup.pool != nullptr) builder.SetBufferPool(setup.pool);
  if (setup.compressors) {
    builder.ClearCompressors();
    for (const auto& compressor : *setup.compressors) builder.RegisterCompressor(compressor);
  }
  auto built = builder.Build();
  if (!built.ok()) {
    ADD_FAILURE() << "cannot start the server: " << built.status();
    return nullptr;
  }
  server->server_ = std::move(*built);
  server->port_ = port;
  server->target_ = transport == Transport::kTcp    ? "127.0.0.1:" + std::to_string(port)
                    : transport == Transport::kUnix ? "unix:" + server->unix_path_
                                                    : std::string("inprocess");
  return server;
}

TestServer::~TestServer() { Stop(); }

void TestServer::Stop(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(grace);
  server_.reset();
}

void TestServer::StopNow() {
  if (server_ == nullptr) return;
  server_->ShutdownNow();
  server_.reset();
}

std::shared_ptr<Channel> TestServer::NewChannel(ChannelOptions options) const {
  if (transport_ == Transport::kInProcess) return server_->InProcessChannel(options);
  auto channel = Channel::Create(target_, std::move(options));
  if (!channel.ok()) {
    ADD_FAILURE() << "cannot create a channel to " << target_ << ": " << channel.status();
    return nullptr;
  }
  return std::move(*channel);
}

void DrainReactor(asio::io_context& io) {
  // A posted handler may run before the reactor polls the sockets once more; a few rounds make
  // sure a poll happened and its handlers ran.
  for (int i = 0; i < 4; ++i) {
    std::promise<void> done;
    asio::post(io, [&done] { done.set_value(); });
    done.get_future().wait();
  }
}

bool WaitUntil(const std::function<bool()>& predicate, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void Notification::Notify() {
  std::lock_guard lock(mu_);
  notified_ = true;
  cv_.notify_all();
}

bool Notification::HasBeenNotified() {
  std::lock_guard lock(mu_);
  return notified_;
}

bool Notification::WaitForNotification() {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, kMustComplete, [this] { return notified_; });
}

}  // namespace rill::test
