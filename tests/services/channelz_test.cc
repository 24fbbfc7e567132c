// grpc.channelz.v1.Channelz served by rill and asked by rill's client: the counters of a server,
// its connections, a channel, its subchannel and its connection match the calls the test made
// (successes, failures, messages, streams), addresses name the real sockets, TLS connections
// show their cipher and certificates, listings page by id, and unknown ids are NOT_FOUND.
//
// The workload is grpc.health.v1.Health on a server of its own: Check of a known service
// succeeds (one message each way), of an unknown one fails with NOT_FOUND (one message in).
// The channelz service runs on a second server, so its own calls count elsewhere.
#include "rill/services/channelz.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpc/channelz/v1/channelz.rill.h"
#include "grpc/health/v1/health.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/credentials.h"
#include "rill/server.h"
#include "rill/services/health.h"

namespace rill {
namespace {

namespace cz = ::grpc::channelz::v1;
using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

constexpr auto kTimeout = std::chrono::seconds(30);  // only a hang reaches it

std::string CertPath(const std::string& name) {
  return std::string(RILL_TLS_TEST_CERTS) + "/" + name;
}

std::string Read(const std::string& name) {
  StatusOr<std::string> text = ReadFileToString(CertPath(name));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

// The DER bytes of a PEM certificate.
std::string Der(const std::string& pem) {
  const std::string begin = "-----BEGIN CERTIFICATE-----";
  const std::string end = "-----END CERTIFICATE-----";
  const size_t from = pem.find(begin);
  const size_t to = pem.find(end);
  if (from == std::string::npos || to == std::string::npos) return {};
  std::string base64;
  for (size_t i = from + begin.size(); i < to; ++i) {
    if (pem[i] != '\n' && pem[i] != '\r') base64 += pem[i];
  }
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : base64) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return out;
}

// Counters settle a moment after the client saw its call end (the server counts a call once
// its stream is released): asks until `check` holds.
bool Eventually(const std::function<bool()>& check) {
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (check()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return check();
}

// A server serving health (the workload) on a port of its own.
struct Workload {
  std::shared_ptr<HealthService> health;
  std::unique_ptr<Server> server;
  int port = 0;

  explicit Workload(std::shared_ptr<ServerCredentials> credentials = nullptr) {
    ServerBuilder builder;
    if (credentials) {
      builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port);
    } else {
      builder.AddListeningPort("127.0.0.1:0", &port);
    }
    builder.SetReactorCount(1);
    health = AddHealthService(builder);
    auto built = builder.Build();
    EXPECT_TRUE(built.ok()) << built.status();
    if (built.ok()) server = std::move(*built);
  }
  ~Workload() {
    if (server) server->Shutdown(std::chrono::milliseconds(0));
  }
  [[nodiscard]] std::string target() const { return "127.0.0.1:" + std::to_string(port); }
};

// Check `service` (empty: the server) through `channel`; true on OK.
bool Check(const std::shared_ptr<Channel>& channel, const std::string& service) {
  Health::Stub stub(channel);
  ClientContext context;
  context.set_timeout(kTimeout);
  HealthCheckRequest request;
  request.set_service(service);
  HealthCheckResponse response;
  return stub.Check(context, request, &response).ok();
}

class ChannelzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", &port_).SetReactorCount(1);
    AddChannelzService(builder);
    auto server = builder.Build();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(port_));
    ASSERT_TRUE(channel.ok());
    stub_ = std::make_unique<cz::Channelz::Stub>(*channel);
  }

  void TearDown() override {
    stub_.reset();
    if (server_) server_->Shutdown(std::chrono::milliseconds(0));
  }

  template <typename Request, typename Response>
  Status Ask(Status (cz::Channelz::Stub::*method)(ClientContext&, const Request&, Response*),
             const Request& request, Response* response) {
    ClientContext context;
    context.set_timeout(kTimeout);
    return ((*stub_).*method)(context, request, response);
  }

  // The server whose listening socket has `port`; 0 when there is none.
  int64_t ServerWithPort(int port) {
    int64_t start = 0;
    for (;;) {
      cz::GetServersRequest request;
      request.set_start_server_id(start);
      cz::GetServersResponse response;
      if (!Ask(&cz::Channelz::Stub::GetServers, request, &response).ok()) return 0;
      for (const auto& server : response.server()) {
        for (const auto& listen : server.listen_socket()) {
          if (GetSocket(listen.socket_id()).local().tcpip_address().port() == port) {
            return server.ref().server_id();
          }
        }
        start = server.ref().server_id() + 1;
      }
      if (response.end()) return 0;
    }
  }

  // The channel whose target is `target`; 0 when there is none.
  int64_t ChannelWithTarget(const std::string& target) {
    int64_t start = 0;
    for (;;) {
      cz::GetTopChannelsRequest request;
      request.set_start_channel_id(start);
      cz::GetTopChannelsResponse response;
      if (!Ask(&cz::Channelz::Stub::GetTopChannels, request, &response).ok()) return 0;
      for (const auto& channel : response.channel()) {
        if (channel.data().target() == target) return channel.ref().channel_id();
        start = channel.ref().channel_id() + 1;
      }
      if (response.end()) return 0;
    }
  }

  // A lookup by id that must succeed: the request gets `id` through `set_id`.
  template <typename Response, typename Request>
  Response Lookup(Status (cz::Channelz::Stub::*method)(ClientContext&, const Request&, Response*),
                  void (Request::*set_id)(int64_t), int64_t id) {
    Request request;
    (request.*set_id)(id);
    Response response;
    EXPECT_TRUE(Ask(method, request, &response).ok());
    return response;
  }
  cz::Server GetServer(int64_t id) {
    return Lookup<cz::GetServerResponse>(&cz::Channelz::Stub::GetServer,
                                         &cz::GetServerRequest::set_server_id, id)
        .server();
  }
  cz::Socket GetSocket(int64_t id) {
    return Lookup<cz::GetSocketResponse>(&cz::Channelz::Stub::GetSocket,
                                         &cz::GetSocketRequest::set_socket_id, id)
        .socket();
  }
  cz::Channel GetChannel(int64_t id) {
    return Lookup<cz::GetChannelResponse>(&cz::Channelz::Stub::GetChannel,
                                          &cz::GetChannelRequest::set_channel_id, id)
        .channel();
  }
  cz::Subchannel GetSubchannel(int64_t id) {
    return Lookup<cz::GetSubchannelResponse>(&cz::Channelz::Stub::GetSubchannel,
                                             &cz::GetSubchannelRequest::set_subchannel_id, id)
        .subchannel();
  }

  // Every socket of a server, through pages of `page_size`; `pages` counts the responses.
  std::vector<int64_t> ServerSockets(int64_t server_id, int64_t page_size, int* pages = nullptr) {
    std::vector<int64_t> ids;
    int64_t start = 0;
    for (int n = 1;; ++n) {
      cz::GetServerSocketsRequest request;
      request.set_server_id(server_id);
      request.set_start_socket_id(start);
      request.set_max_results(page_size);
      cz::GetServerSocketsResponse response;
      EXPECT_TRUE(Ask(&cz::Channelz::Stub::GetServerSockets, request, &response).ok());
      if (page_size > 0) {
        EXPECT_LE(response.socket_ref_size(), page_size);
      }
      for (const auto& ref : response.socket_ref()) {
        if (!ids.empty()) {
          EXPECT_GT(ref.socket_id(), ids.back());
        }
        ids.push_back(ref.socket_id());
        start = ref.socket_id() + 1;
      }
      if (response.end() || response.socket_ref_size() == 0) {
        if (pages != nullptr) *pages = n;
        return ids;
      }
    }
  }

  int port_ = 0;
  std::unique_ptr<Server> server_;
  std::unique_ptr<cz::Channelz::Stub> stub_;
};

TEST_F(ChannelzTest, CountersMatchTheCallsMade) {
  Workload workload;
  ASSERT_TRUE(workload.server);
  auto channel = Channel::Create(workload.target());
  ASSERT_TRUE(channel.ok());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(Check(*channel, ""));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Check(*channel, "no.such.Service"));

  // The server: 8 calls, 5 succeeded, 3 failed, on one connection.
  const int64_t server_id = ServerWithPort(workload.port);
  ASSERT_NE(server_id, 0);
  ASSERT_TRUE(Eventually([&] {
    const cz::ServerData data = GetServer(server_id).data();
    return data.calls_succeeded() + data.calls_failed() == 8;
  }));
  const cz::Server server = GetServer(server_id);
  EXPECT_EQ(server.data().calls_started(), 8);
  EXPECT_EQ(server.data().calls_succeeded(), 5);
  EXPECT_EQ(server.data().calls_failed(), 3);
  EXPECT_TRUE(server.data().has_last_call_started_timestamp());
  ASSERT_EQ(server.listen_socket_size(), 1);
  const cz::Socket listen = GetSocket(server.listen_socket(0).socket_id());
  EXPECT_EQ(listen.local().tcpip_address().port(), workload.port);
  EXPECT_EQ(listen.local().tcpip_address().ip_address(), std::string("\x7f\0\0\x01", 4));

  const std::vector<int64_t> sockets = ServerSockets(server_id, 0);
  ASSERT_EQ(sockets.size(), 1u);
  const cz::Socket accepted = GetSocket(sockets[0]);
  EXPECT_EQ(accepted.data().streams_started(), 8);
  EXPECT_EQ(accepted.data().streams_succeeded(), 8);  // failed calls still end their streams
  EXPECT_EQ(accepted.data().streams_failed(), 0);
  EXPECT_EQ(accepted.data().messages_received(), 8);
  EXPECT_EQ(accepted.data().messages_sent(), 5);
  EXPECT_TRUE(accepted.data().has_last_remote_stream_created_timestamp());
  EXPECT_TRUE(accepted.data().has_last_message_received_timestamp());
  EXPECT_TRUE(accepted.data().has_last_message_sent_timestamp());
  EXPECT_TRUE(accepted.data().has_local_flow_control_window());
  EXPECT_TRUE(accepted.data().has_remote_flow_control_window());
  EXPECT_EQ(accepted.local().tcpip_address().port(), workload.port);
  EXPECT_FALSE(accepted.has_security());

  // The client: the channel and its subchannel count the same calls; its connection is the
  // other end of the accepted one.
  const int64_t channel_id = ChannelWithTarget(workload.target());
  ASSERT_NE(channel_id, 0);
  const cz::Channel client = GetChannel(channel_id);
  EXPECT_EQ(client.data().state().state(), cz::ChannelConnectivityState::READY);
  EXPECT_EQ(client.data().calls_started(), 8);
  EXPECT_EQ(client.data().calls_succeeded(), 5);
  EXPECT_EQ(client.data().calls_failed(), 3);
  EXPECT_TRUE(client.data().has_last_call_started_timestamp());
  ASSERT_EQ(client.subchannel_ref_size(), 1);
  const cz::Subchannel subchannel = GetSubchannel(client.subchannel_ref(0).subchannel_id());
  EXPECT_EQ(subchannel.data().calls_started(), 8);
  EXPECT_EQ(subchannel.data().calls_succeeded(), 5);
  EXPECT_EQ(subchannel.data().calls_failed(), 3);
  ASSERT_EQ(subchannel.socket_ref_size(), 1);
  const cz::Socket connection = GetSocket(subchannel.socket_ref(0).socket_id());
  EXPECT_EQ(connection.data().streams_started(), 8);
  EXPECT_EQ(connection.data().streams_succeeded(), 8);
  EXPECT_EQ(connection.data().messages_sent(), 8);
  EXPECT_EQ(connection.data().messages_received(), 5);
  EXPECT_TRUE(connection.data().has_last_local_stream_created_timestamp());
  EXPECT_EQ(connection.remote().tcpip_address().port(), workload.port);
  EXPECT_EQ(connection.local().tcpip_address().port(), accepted.remote().tcpip_address().port());
  EXPECT_EQ(accepted.remote_name(),
            "ipv4:127.0.0.1:" + std::to_string(connection.local().tcpip_address().port()));

  // A closed connection leaves the listing; the server's totals keep its calls.
  channel->reset();
  ASSERT_TRUE(Eventually([&] { return ServerSockets(server_id, 0).empty(); }));
  EXPECT_EQ(GetServer(server_id).data().calls_started(), 8);
  EXPECT_EQ(GetServer(server_id).data().calls_succeeded(), 5);
  EXPECT_EQ(ChannelWithTarget(workload.target()), 0);
}

TEST_F(ChannelzTest, StreamingMessagesAndCancelledCallsCount) {
  Workload workload;
  ASSERT_TRUE(workload.server);
  workload.health->SetServingStatus("svc", ServingStatus::kServing);
  auto channel = Channel::Create(workload.target());
  ASSERT_TRUE(channel.ok());
  {
    // A Watch sends the current status, then one per change; the client cancels it.
    Health::Stub stub(*channel);
    ClientContext context;
    context.set_timeout(kTimeout);
    HealthCheckRequest request;
    request.set_service("svc");
    auto reader = stub.Watch(context, request);
    HealthCheckResponse response;
    ASSERT_TRUE(reader->BlockingRead(&response));
    workload.health->SetServingStatus("svc", ServingStatus::kNotServing);
    ASSERT_TRUE(reader->BlockingRead(&response));
    workload.health->SetServingStatus("svc", ServingStatus::kServing);
    ASSERT_TRUE(reader->BlockingRead(&response));
    context.TryCancel();
    while (reader->BlockingRead(&response)) {
    }
    EXPECT_EQ(reader->BlockingFinish().code(), StatusCode::kCancelled);
  }
  const int64_t server_id = ServerWithPort(workload.port);
  ASSERT_NE(server_id, 0);
  ASSERT_TRUE(Eventually([&] { return GetServer(server_id).data().calls_failed() == 1; }));
  EXPECT_EQ(GetServer(server_id).data().calls_started(), 1);
  const std::vector<int64_t> sockets = ServerSockets(server_id, 0);
  ASSERT_EQ(sockets.size(), 1u);
  const cz::Socket accepted = GetSocket(sockets[0]);
  EXPECT_EQ(accepted.data().messages_received(), 1);
  EXPECT_EQ(accepted.data().messages_sent(), 3);
  EXPECT_EQ(accepted.data().streams_failed(), 1);  // reset by the client

  const cz::Channel client = GetChannel(ChannelWithTarget(workload.target()));
  EXPECT_EQ(client.data().calls_started(), 1);
  EXPECT_EQ(client.data().calls_failed(), 1);
  const cz::Subchannel subchannel = GetSubchannel(client.subchannel_ref(0).subchannel_id());
  const cz::Socket connection = GetSocket(subchannel.socket_ref(0).socket_id());
  EXPECT_EQ(connection.data().messages_received(), 3);
  EXPECT_EQ(connection.data().messages_sent(), 1);
  EXPECT_EQ(connection.data().streams_failed(), 1);
}

TEST_F(ChannelzTest, ServerSocketsPageThroughManyConnections) {
  Workload workload;
  ASSERT_TRUE(workload.server);
  constexpr int kConnections = 23;
  std::vector<std::shared_ptr<Channel>> channels;
  for (int i = 0; i < kConnections; ++i) {
    auto channel = Channel::Create(workload.target());
    ASSERT_TRUE(channel.ok());
    EXPECT_TRUE(Check(*channel, ""));
    channels.push_back(*channel);
  }
  const int64_t server_id = ServerWithPort(workload.port);
  ASSERT_NE(server_id, 0);

  int pages = 0;
  const std::vector<int64_t> by_five = ServerSockets(server_id, 5, &pages);
  EXPECT_EQ(by_five.size(), static_cast<size_t>(kConnections));
  EXPECT_EQ(pages, 5);  // 5 + 5 + 5 + 5 + 3, the last one marked as the end
  const std::vector<int64_t> whole = ServerSockets(server_id, 0, &pages);
  EXPECT_EQ(whole, by_five);
  EXPECT_EQ(pages, 1);
  for (int64_t id : whole) {
    const cz::Socket socket = GetSocket(id);
    EXPECT_EQ(socket.data().streams_started(), 1);
    EXPECT_EQ(socket.data().messages_received(), 1);
  }

  // A page that ends exactly where the sockets end still says whether more exist.
  cz::GetServerSocketsRequest request;
  request.set_server_id(server_id);
  request.set_start_socket_id(whole[kConnections - 5]);
  request.set_max_results(5);
  cz::GetServerSocketsResponse response;
  ASSERT_TRUE(Ask(&cz::Channelz::Stub::GetServerSockets, request, &response).ok());
  EXPECT_EQ(response.socket_ref_size(), 5);
  EXPECT_TRUE(response.end());
  request.set_start_socket_id(whole[kConnections - 6]);
  ASSERT_TRUE(Ask(&cz::Channelz::Stub::GetServerSockets, request, &response).ok());
  EXPECT_EQ(response.socket_ref_size(), 5);
  EXPECT_FALSE(response.end());

  // Top channels page the same way: every one of ours shows up once, in id order.
  std::set<int64_t> ours;
  int64_t start = 0;
  int64_t last = 0;
  for (;;) {
    cz::GetTopChannelsRequest top;
    top.set_start_channel_id(start);
    top.set_max_results(4);
    cz::GetTopChannelsResponse page;
    ASSERT_TRUE(Ask(&cz::Channelz::Stub::GetTopChannels, top, &page).ok());
    EXPECT_LE(page.channel_size(), 4);
    for (const auto& channel : page.channel()) {
      EXPECT_GT(channel.ref().channel_id(), last);
      last = channel.ref().channel_id();
      if (channel.data().target() == workload.target()) {
        EXPECT_TRUE(ours.insert(channel.ref().channel_id()).second);
      }
      start = channel.ref().channel_id() + 1;
    }
    if (page.end()) break;
  }
  EXPECT_EQ(ours.size(), static_cast<size_t>(kConnections));
}

TEST_F(ChannelzTest, UnknownIdsAreNotFound) {
  constexpr int64_t kUnknown = int64_t{1} << 60;
  {
    cz::GetServerRequest request;
    request.set_server_id(kUnknown);
    cz::GetServerResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetServer, request, &response).code(),
              StatusCode::kNotFound);
  }
  {
    cz::GetServerSocketsRequest request;
    request.set_server_id(kUnknown);
    cz::GetServerSocketsResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetServerSockets, request, &response).code(),
              StatusCode::kNotFound);
  }
  {
    cz::GetSocketRequest request;
    request.set_socket_id(kUnknown);
    cz::GetSocketResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetSocket, request, &response).code(),
              StatusCode::kNotFound);
  }
  {
    cz::GetChannelRequest request;
    request.set_channel_id(kUnknown);
    cz::GetChannelResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetChannel, request, &response).code(),
              StatusCode::kNotFound);
  }
  {
    cz::GetSubchannelRequest request;
    request.set_subchannel_id(kUnknown);
    cz::GetSubchannelResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetSubchannel, request, &response).code(),
              StatusCode::kNotFound);
  }
  // An id of another kind is not found either: the channelz server's own id is no channel.
  const int64_t server_id = ServerWithPort(port_);
  ASSERT_NE(server_id, 0);
  {
    cz::GetChannelRequest request;
    request.set_channel_id(server_id);
    cz::GetChannelResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetChannel, request, &response).code(),
              StatusCode::kNotFound);
  }
  {
    cz::GetServersRequest request;
    request.set_max_results(-1);
    cz::GetServersResponse response;
    EXPECT_EQ(Ask(&cz::Channelz::Stub::GetServers, request, &response).code(),
              StatusCode::kInvalidArgument);
  }
}

TEST_F(ChannelzTest, TlsConnectionsShowCipherAndCertificates) {
  StatusOr<TlsKeyPair> server_pair =
      TlsKeyPair::FromFiles(CertPath("server.pem"), CertPath("server.key"));
  StatusOr<TlsKeyPair> client_pair =
      TlsKeyPair::FromFiles(CertPath("client.pem"), CertPath("client.key"));
  ASSERT_TRUE(server_pair.ok() && client_pair.ok());
  auto server_credentials = ServerCredentials::Tls(
      {.key_pair = *server_pair,
       .client_ca_certificates = Read("ca.pem"),
       .client_certificate_policy = ClientCertificatePolicy::kRequireAndVerify});
  ASSERT_TRUE(server_credentials.ok()) << server_credentials.status();
  Workload workload(*server_credentials);
  ASSERT_TRUE(workload.server);
  auto channel_credentials =
      ChannelCredentials::Tls({.root_certificates = Read("ca.pem"), .key_pair = *client_pair});
  ASSERT_TRUE(channel_credentials.ok());
  auto channel = Channel::Create(workload.target(), *channel_credentials);
  ASSERT_TRUE(channel.ok());
  ASSERT_TRUE(Check(*channel, ""));

  const std::string server_der = Der(Read("server.pem"));
  const std::string client_der = Der(Read("client.pem"));
  ASSERT_FALSE(server_der.empty());

  const int64_t server_id = ServerWithPort(workload.port);
  const std::vector<int64_t> sockets = ServerSockets(server_id, 0);
  ASSERT_EQ(sockets.size(), 1u);
  const cz::Socket accepted = GetSocket(sockets[0]);
  ASSERT_TRUE(accepted.security().has_tls());
  EXPECT_EQ(accepted.security().tls().standard_name().rfind("TLS_", 0), 0u)
      << accepted.security().tls().standard_name();
  EXPECT_EQ(accepted.security().tls().local_certificate(), server_der);
  EXPECT_EQ(accepted.security().tls().remote_certificate(), client_der);

  const cz::Channel client = GetChannel(ChannelWithTarget(workload.target()));
  const cz::Subchannel subchannel = GetSubchannel(client.subchannel_ref(0).subchannel_id());
  const cz::Socket connection = GetSocket(subchannel.socket_ref(0).socket_id());
  ASSERT_TRUE(connection.security().has_tls());
  EXPECT_EQ(connection.security().tls().standard_name(), accepted.security().tls().standard_name());
  EXPECT_EQ(connection.security().tls().local_certificate(), client_der);
  EXPECT_EQ(connection.security().tls().remote_certificate(), server_der);
}

}  // namespace
}  // namespace rill
