// Where rill must behave as the gRPC and HTTP/2 specs (and mature implementations) do, and
// API misuse that must fail clearly: initial metadata of a failed call goes out as headers;
// credentials are never put in HPACK's dynamic table; a builder builds once; Metadata takes
// views of itself; a server can be shut down from one of its own handlers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/metadata.h"
#include "rill/server.h"
#include "rill/server_context.h"
#include "tests/http2/raw_h2_client.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using ::testing::Contains;
using ::testing::IsSupersetOf;
using ::testing::Not;

constexpr std::string_view kUnaryPath = "/grpc.testing.TestService/UnaryCall";

// Sets initial metadata, then fails (inline and as a coroutine); sends sensitive metadata back.
class MetadataService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    if (context.client_metadata().Contains("x-sensitive")) {
      context.AddInitialMetadata("set-cookie", "session=abc");
      context.AddTrailingMetadata("authorization", "Bearer back");
      context.AddTrailingMetadata("x-token-bin", std::string("\x01\x02", 2));
      context.AddTrailingMetadata("x-plain", "visible");
      return Status();
    }
    context.AddInitialMetadata("x-initial", "early");
    context.AddTrailingMetadata("x-trailing", "late");
    return Status(StatusCode::kFailedPrecondition, "failed after setting metadata");
  }

  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    context.AddInitialMetadata("x-initial", "early");
    context.AddTrailingMetadata("x-trailing", "late");
    co_return Status(StatusCode::kFailedPrecondition, "failed after setting metadata");
  }

  // Shuts its own server down, then answers.
  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    if (context.client_metadata().Contains("x-wait")) {
      server->Wait();  // must not deadlock: returns at once on a reactor thread
    }
    server->Shutdown(std::chrono::seconds(5));
    shutdown_returned.Notify();
    return Status();
  }

  Server* server = nullptr;
  Notification shutdown_returned;
};

class SpecFidelityTest : public ServerTest<MetadataService> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
    service_.server = &server_->server();
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
  }
};

// A handler that set initial metadata and then failed: the metadata goes out as response
// headers, the status in trailers (as libgrpc++ and grpc-go do), not in a trailers-only block.
TEST_F(SpecFidelityTest, InitialMetadataOfAFailedCallIsSentAsHeaders) {
  for (const char* path :
       {"/grpc.testing.TestService/UnaryCall", "/grpc.testing.TestService/CacheableUnaryCall"}) {
    SCOPED_TRACE(path);
    auto client = RawH2Client::Connect("127.0.0.1", server_->port());
    ASSERT_NE(client, nullptr);
    const int32_t id = client->OpenStream(GrpcRequestHeaders(path));
    client->SendData(id, GrpcMessage(SimpleRequest().SerializeAsString()), /*end_stream=*/true);
    ASSERT_TRUE(client->WaitForClose(id));
    const RawStream& s = client->stream(id);
    ASSERT_EQ(s.header_blocks.size(), 2u);
    EXPECT_EQ(s.Header("x-initial"), "early");
    EXPECT_EQ(s.Header("grpc-status"), std::nullopt);
    EXPECT_EQ(s.Trailer("grpc-status"), "9");
    EXPECT_EQ(s.Trailer("x-trailing"), "late");
    EXPECT_EQ(s.Trailer("x-initial"), std::nullopt);
  }
  // And rill's own client reads them where they belong.
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ClientContext ctx;
  SimpleResponse response;
  const Status status = stub.UnaryCall(ctx, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctx.initial_metadata().Get("x-initial"), "early");
  EXPECT_EQ(ctx.trailing_metadata().Get("x-trailing"), "late");
  EXPECT_EQ(ctx.trailing_metadata().Get("x-initial"), std::nullopt);
}

TEST_F(SpecFidelityTest, ServerNeverIndexesSensitiveMetadata) {
  auto client = RawH2Client::Connect("127.0.0.1", server_->port());
  ASSERT_NE(client, nullptr);
  RawHeaderList headers = GrpcRequestHeaders(std::string(kUnaryPath));
  headers.push_back({"x-sensitive", "1"});
  const int32_t id = client->OpenStream(headers);
  client->SendData(id, GrpcMessage(SimpleRequest().SerializeAsString()), /*end_stream=*/true);
  ASSERT_TRUE(client->WaitForClose(id));
  const RawStream& s = client->stream(id);
  ASSERT_EQ(s.header_blocks.size(), 2u);
  EXPECT_THAT(s.header_blocks[0].never_indexed, Contains("set-cookie"));
  EXPECT_THAT(s.header_blocks[1].never_indexed, IsSupersetOf({"authorization", "x-token-bin"}));
  EXPECT_THAT(s.header_blocks[1].never_indexed, Not(Contains("x-plain")));
}

// A one-connection HTTP/2 server on raw nghttp2 that records the request headers of its first
// stream, with the names that arrived never-indexed, and answers with a trailers-only OK.
class RecordingH2Server {
 public:
  RecordingH2Server() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 1);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RecordingH2Server() {
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
  }
  int port() const { return port_; }
  // Waits for the first request's headers.
  std::vector<std::pair<std::string, bool>> Headers() { return headers_.get_future().get(); }

 private:
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t*, size_t, uint8_t flags, void* user_data) {
    auto* self = static_cast<RecordingH2Server*>(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->hd.stream_id == 1) {
      self->fields_.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                                 (flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0);
    }
    return 0;
  }
  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto* self = static_cast<RecordingH2Server*>(user_data);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->hd.stream_id == 1 && !self->answered_) {
      self->answered_ = true;
      self->headers_.set_value(self->fields_);
      const nghttp2_nv nva[] = {
          {(uint8_t*)":status", (uint8_t*)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
          {(uint8_t*)"content-type", (uint8_t*)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
          {(uint8_t*)"grpc-status", (uint8_t*)"0", 11, 1, NGHTTP2_NV_FLAG_NONE}};
      nghttp2_submit_response(session, 1, nva, 3, nullptr);
    }
    return 0;
  }

  void Serve() {
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) {
      if (!answered_) headers_.set_value({});
      return;
    }
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, OnFrameRecv);
    nghttp2_session* session = nullptr;
    nghttp2_session_server_new(&session, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
    char buf[16384];
    for (;;) {
      const uint8_t* out = nullptr;
      ssize_t n;
      while ((n = nghttp2_session_mem_send(session, &out)) > 0) {
        if (::send(fd, out, static_cast<size_t>(n), MSG_NOSIGNAL) < 0) break;
      }
      const ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
      if (r <= 0) break;
      if (nghttp2_session_mem_recv(session, reinterpret_cast<uint8_t*>(buf),
                                   static_cast<size_t>(r)) < 0) {
        break;
      }
    }
    if (!answered_) headers_.set_value({});
    nghttp2_session_del(session);
    ::close(fd);
  }

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::vector<std::pair<std::string, bool>> fields_;
  std::promise<std::vector<std::pair<std::string, bool>>> headers_;
  bool answered_ = false;
};

TEST(SpecFidelityClient, ClientNeverIndexesCredentials) {
  RecordingH2Server server;
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(server.port()));
  ASSERT_TRUE(channel.ok());
  TestService::Stub stub(*channel);
  ClientContext ctx;
  ctx.set_timeout(kMustComplete);
  ctx.AddMetadata("authorization", "Bearer secret");
  ctx.AddMetadata("cookie", "id=1");
  ctx.AddMetadata("x-credentials-bin", std::string("\x00\x01", 2));
  ctx.AddMetadata("x-plain", "fine to index");
  Empty response;
  stub.EmptyCall(ctx, Empty(), &response).IgnoreError();  // the answer carries no message
  std::map<std::string, bool> never_indexed;
  for (const auto& [name, flag] : server.Headers()) never_indexed[name] = flag;
  EXPECT_TRUE(never_indexed["authorization"]);
  EXPECT_TRUE(never_indexed["cookie"]);
  EXPECT_TRUE(never_indexed["x-credentials-bin"]);
  EXPECT_FALSE(never_indexed["x-plain"]);
  channel->reset();
}

TEST(SpecFidelityBuilder, BuildingTwiceFails) {
  MetadataService service;
  ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0").RegisterService(&service);
  auto first = builder.Build();
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = builder.Build();
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition) << second.status();
  (*first)->Shutdown();
}

TEST(SpecFidelityMetadata, AddTakesAViewOfItself) {
  Metadata md;
  md.Add("first", std::string(100, 'a'));
  for (int i = 0; i < 64; ++i) {
    // Every value added is a view into the metadata's own storage, which grows meanwhile.
    md.Add("copy-" + std::to_string(i), *md.Get("first"));
    // Key and value both views of our own bytes.
    md.Add(md[md.size() - 1].first, md.Get("first")->substr(0, 10));
  }
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(md.GetAll("copy-" + std::to_string(i)),
              (std::vector<std::string_view>{std::string(100, 'a'), std::string(10, 'a')}));
  }
}

// Shutdown() from one of the server's own handlers starts the shutdown and returns (it cannot
// wait for the call it runs in); the call still completes within the grace period; Wait()
// from a handler returns at once instead of deadlocking.
TEST_F(SpecFidelityTest, ShutdownFromAHandlerDoesNotDeadlock) {
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  for (const bool wait_too : {false, true}) {
    SCOPED_TRACE(wait_too ? "Wait() too" : "Shutdown() only");
    if (wait_too) {
      server_.reset();
      TestServerSetup setup;
      setup.services.push_back(&service_);
      server_ = TestServer::Start(Transport::kTcp, setup);
      ASSERT_NE(server_, nullptr);
      service_.server = &server_->server();
      channel = server_->NewChannel();
    }
    TestService::Stub s(channel);
    ClientContext ctx;
    ctx.set_timeout(kMustComplete);
    if (wait_too) ctx.AddMetadata("x-wait", "1");
    Empty response;
    Status status;
    EXPECT_TRUE(FinishesWithin(std::chrono::seconds(20),
                               [&] { status = s.EmptyCall(ctx, Empty(), &response); }));
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_TRUE(FinishesWithin(std::chrono::seconds(20), [&] { server_->server().Wait(); }));
  }
  channel.reset();
}

}  // namespace
}  // namespace rill::test
