#include "tests/rpc/rpc_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <asio/post.hpp>
#include <atomic>
#include <cstdio>
#include <filesystem>

#include "rill/detail/check.h"

namespace rill::test {

std::string TransportName(Transport transport) {
  return transport == Transport::kTcp ? "Tcp" : "Unix";
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
  } else {
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
  auto built = builder.Build();
  if (!built.ok()) {
    ADD_FAILURE() << "cannot start the server: " << built.status();
    return nullptr;
  }
  server->server_ = std::move(*built);
  server->port_ = port;
  server->target_ = transport == Transport::kTcp ? "127.0.0.1:" + std::to_string(port)
                                                 : "unix:" + server->unix_path_;
  return server;
}

TestServer::~TestServer() { Stop(); }

void TestServer::Stop(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(grace);
  server_.reset();
}

std::shared_ptr<Channel> TestServer::NewChannel(ChannelOptions options) const {
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
  return cv_.wait_for(lock, kMustCompleteTimeout, [this] { return notified_; });
}

MetadataEntries CopyEntries(const Metadata& metadata) {
  MetadataEntries out;
  for (const auto& [key, value] : metadata) out.emplace_back(key, value);
  return out;
}

std::vector<std::string> ValuesOf(const MetadataEntries& entries, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries) {
    if (k == key) out.push_back(v);
  }
  return out;
}

namespace {

// Fills the payload body of `message` so that it serializes to `target` bytes. Where a varint
// boundary makes that size unreachable, `adjust` adds a small field first and the search is
// repeated.
template <typename Message>
Message OfSize(Message message, size_t target, std::string* (*body)(Message&),
               void (*adjust)(Message&)) {
  if (target == message.ByteSizeLong()) return message;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const size_t start = target > 16 ? target - 16 : 0;
    for (size_t n = start; n <= target; ++n) {
      body(message)->assign(n, 'x');
      if (message.ByteSizeLong() == target) return message;
    }
    adjust(message);
  }
  RILL_CHECK_MSG(false, "no message of the requested size");
  return message;
}

}  // namespace

grpc::testing::SimpleRequest RequestOfSize(size_t serialized_size, int32_t response_size) {
  grpc::testing::SimpleRequest request;
  request.set_response_size(response_size);
  return OfSize<grpc::testing::SimpleRequest>(
      std::move(request), serialized_size,
      [](grpc::testing::SimpleRequest& m) { return m.mutable_payload()->mutable_body(); },
      [](grpc::testing::SimpleRequest& m) { m.set_fill_username(true); });
}

grpc::testing::SimpleResponse ResponseOfSize(size_t serialized_size) {
  return OfSize<grpc::testing::SimpleResponse>(
      grpc::testing::SimpleResponse(), serialized_size,
      [](grpc::testing::SimpleResponse& m) { return m.mutable_payload()->mutable_body(); },
      [](grpc::testing::SimpleResponse& m) { m.set_hostname("h"); });
}

}  // namespace rill::test
