// TLS rill ↔ rill over loopback: unary and streaming calls, mutual TLS, the peer's identity on
// the server, verification failures as the client sees them, certificate reloading, and bad
// handshakes (each with a defined end while the server keeps serving others).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/call_credentials.h"
#include "rill/client_context.h"
#include "rill/credentials.h"
#include "rill/log.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::HasSubstr;

std::string CertPath(const std::string& name) {
  return std::string(RILL_TLS_TEST_CERTS) + "/" + name;
}

std::string ReadCert(const std::string& name) {
  StatusOr<std::string> pem = ReadFileToString(CertPath(name));
  EXPECT_TRUE(pem.ok()) << pem.status();
  return pem.ok() ? *pem : std::string();
}

// Expects `status` to carry `code` and a message naming each of `reasons`.
void ExpectFailure(const Status& status, StatusCode code,
                   std::initializer_list<const char*> reasons) {
  EXPECT_EQ(status.code(), code) << status;
  for (const char* reason : reasons) {
    EXPECT_THAT(std::string(status.message()), HasSubstr(reason));
  }
}

TlsKeyPair Pair(const std::string& name) {
  StatusOr<TlsKeyPair> pair = TlsKeyPair::FromFiles(CertPath(name + ".pem"), CertPath(name + ".key"));
  EXPECT_TRUE(pair.ok()) << pair.status();
  return pair.ok() ? *pair : TlsKeyPair{};
}

// Echoes sizes; records the peer identity of the last call.
class IdentityService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    {
      std::lock_guard lock(mu_);
      identity_ = context.peer_identity();
      authority_ = std::string(context.authority());
      const auto token = context.client_metadata().Get("authorization");
      authorization_ = token ? std::string(*token) : std::string();
    }
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(request.response_size()), 'r');
    return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext&, FullDuplexServerStream& stream) override {
    return AnswerEachRequest(&stream, 'd');
  }

  PeerIdentity identity() {
    std::lock_guard lock(mu_);
    return identity_;
  }
  std::string authority() {
    std::lock_guard lock(mu_);
    return authority_;
  }
  std::string authorization() {
    std::lock_guard lock(mu_);
    return authorization_;
  }

 private:
  std::mutex mu_;
  PeerIdentity identity_;
  std::string authority_;
  std::string authorization_;
};

class TlsTest : public ::testing::Test {
 protected:
  // Starts a server with a TLS port (and a plaintext one) using `options`.
  void StartServer(const ServerTlsOptions& options, ServerOptions server_options = {}) {
    auto credentials = ServerCredentials::Tls(options);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    credentials_ = *credentials;
    auto server = ServerBuilder()
                      .AddListeningPort("127.0.0.1:0", credentials_, &tls_port_)
                      .AddListeningPort("127.0.0.1:0", &plain_port_)
                      .RegisterService(&service_)
                      .SetOptions(server_options)
                      .SetReactorCount(1)
                      .Build();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void StartServer() { StartServer({.key_pair = Pair("server")}); }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::milliseconds(0));
    server_.reset();
  }

  std::string TlsTarget() const { return "localhost:" + std::to_string(tls_port_); }

  static std::shared_ptr<Channel> TlsChannel(const std::string& target,
                                             ChannelTlsOptions options) {
    auto credentials = ChannelCredentials::Tls(options);
    EXPECT_TRUE(credentials.ok()) << credentials.status();
    if (!credentials.ok()) return nullptr;
    auto channel = Channel::Create(target, *credentials);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *channel : nullptr;
  }
  std::shared_ptr<Channel> TlsChannel(ChannelTlsOptions options) const {
    return TlsChannel(TlsTarget(), std::move(options));
  }
  std::shared_ptr<Channel> TrustingChannel() const {
    return TlsChannel({.root_certificates = ReadCert("ca.pem")});
  }

  // A UnaryCall asking for `response_size` bytes, with `credentials` and a deadline `timeout` from
  // now; INTERNAL when the call ends OK with a response of another size.
  static Status Unary(const std::shared_ptr<Channel>& channel, int response_size = 3,
                      std::shared_ptr<CallCredentials> credentials = nullptr,
                      std::chrono::milliseconds timeout = kMustComplete) {
    TestService::Stub stub(channel);
    ClientContext context;
    context.set_credentials(std::move(credentials));
    context.set_timeout(timeout);
    SimpleRequest request;
    request.set_response_size(response_size);
    SimpleResponse response;
    Status status = stub.UnaryCall(context, request, &response);
    if (status.ok() && response.payload().body().size() != static_cast<size_t>(response_size)) {
      return Status(StatusCode::kInternal, "wrong response size");
    }
    return status;
  }

  // The server still serves a well-behaved TLS client.
  void ExpectServing() {
    auto channel = TrustingChannel();
    const Status status = Unary(channel);
    EXPECT_TRUE(status.ok()) << "the server stopped serving: " << status;
  }

  IdentityService service_;
  std::shared_ptr<ServerCredentials> credentials_;
  std::unique_ptr<Server> server_;
  int tls_port_ = 0;
  int plain_port_ = 0;
};

TEST_F(TlsTest, UnaryCallOverTlsShowsTheConnectionToTheHandler) {
  StartServer();
  auto channel = TrustingChannel();
  const Status status = Unary(channel, 100000);
  ASSERT_TRUE(status.ok()) << status;
  const PeerIdentity identity = service_.identity();
  EXPECT_TRUE(identity.secure);
  EXPECT_THAT(identity.tls_version, AnyOf("TLSv1.3", "TLSv1.2"));
  EXPECT_FALSE(identity.cipher.empty());
  EXPECT_FALSE(identity.certificate_verified);  // no client certificate was asked for
  EXPECT_EQ(service_.authority(), TlsTarget());
}

TEST_F(TlsTest, PlaintextAndTlsPortsServeSideBySide) {
  StartServer();
  auto plain = Channel::Create("127.0.0.1:" + std::to_string(plain_port_));
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(Unary(*plain).ok());
  EXPECT_FALSE(service_.identity().secure);
  ASSERT_TRUE(Unary(TrustingChannel()).ok());
  EXPECT_TRUE(service_.identity().secure);
}

TEST_F(TlsTest, StreamingLargeMessagesOverTls) {
  StartServer();
  auto channel = TrustingChannel();
  TestService::Stub stub(channel);
  ClientContext context;
  context.set_timeout(kMustComplete);
  auto stream = stub.FullDuplexCall(context);
  const std::vector<int32_t> sizes = {0, 1, 9, 1023, 16 * 1024, 70 * 1024, 1024 * 1024};
  for (int round = 0; round < 3; ++round) {
    StreamingOutputCallRequest request;
    for (int32_t size : sizes) request.add_response_parameters()->set_size(size);
    request.mutable_payload()->mutable_body()->assign(512 * 1024, 'q');
    ASSERT_TRUE(stream->BlockingWrite(request));
    StreamingOutputCallResponse response;
    for (int32_t size : sizes) {
      ASSERT_TRUE(stream->BlockingRead(&response)) << size;
      ASSERT_EQ(response.payload().body().size(), static_cast<size_t>(size));
    }
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(TlsTest, ServerNameOverrideIsVerifiedAndSentAsAuthority) {
  StartServer();
  auto channel = TlsChannel("127.0.0.1:" + std::to_string(tls_port_),
                            {.root_certificates = ReadCert("ca.pem"),
                             .server_name_override = "foo.test.google.fr"});
  const Status status = Unary(channel);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(service_.authority(), "foo.test.google.fr");
}

TEST_F(TlsTest, WrongNameFailsVerification) {
  StartServer();
  auto channel = TlsChannel({.root_certificates = ReadCert("ca.pem"),
                             .server_name_override = "elsewhere.example"});
  ExpectFailure(Unary(channel), StatusCode::kUnavailable,
                {"certificate verify failed", "hostname mismatch"});
  ExpectServing();
}

TEST_F(TlsTest, WrongCaGivesUnavailableNamingTheVerificationFailure) {
  StartServer();
  auto channel = TlsChannel({.root_certificates = ReadCert("other_ca.pem")});
  ExpectFailure(Unary(channel), StatusCode::kUnavailable,
                {"certificate verify failed", "unable to get local issuer certificate"});
  ExpectServing();
}

TEST_F(TlsTest, ExpiredServerCertificateIsRefused) {
  StartServer({.key_pair = Pair("expired")});
  auto channel = TrustingChannel();
  ExpectFailure(Unary(channel), StatusCode::kUnavailable, {"certificate has expired"});
}

TEST_F(TlsTest, MutualTlsShowsTheClientCertificate) {
  StartServer({.key_pair = Pair("server"),
               .client_ca_certificates = ReadCert("ca.pem"),
               .client_certificate_policy = ClientCertificatePolicy::kRequireAndVerify});
  auto channel =
      TlsChannel({.root_certificates = ReadCert("ca.pem"), .key_pair = Pair("client")});
  const Status status = Unary(channel);
  ASSERT_TRUE(status.ok()) << status;
  const PeerIdentity identity = service_.identity();
  EXPECT_TRUE(identity.certificate_verified);
  EXPECT_THAT(identity.subject, HasSubstr("CN=rill test client"));
  EXPECT_THAT(identity.dns_names, Contains("client.test.rill"));
  EXPECT_THAT(identity.uris, Contains("spiffe://test.rill/client"));

  // Without a certificate the server refuses the handshake.
  auto anonymous = TrustingChannel();
  const Status refused = Unary(anonymous);
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused;
}

TEST_F(TlsTest, RequestedClientCertificateIsOptional) {
  StartServer({.key_pair = Pair("server"),
               .client_ca_certificates = ReadCert("ca.pem"),
               .client_certificate_policy = ClientCertificatePolicy::kRequest});
  ASSERT_TRUE(Unary(TrustingChannel()).ok());
  EXPECT_FALSE(service_.identity().certificate_verified);
  ASSERT_TRUE(
      Unary(TlsChannel({.root_certificates = ReadCert("ca.pem"), .key_pair = Pair("client")}))
          .ok());
  EXPECT_TRUE(service_.identity().certificate_verified);
}

TEST_F(TlsTest, ReloadAppliesToNewHandshakesOnly) {
  StartServer();
  auto before = TrustingChannel();
  ASSERT_TRUE(Unary(before).ok());
  ASSERT_TRUE(credentials_->Reload(Pair("expired")).ok());
  EXPECT_TRUE(Unary(before).ok()) << "a live connection keeps its certificate";
  const Status refused = Unary(TrustingChannel());
  EXPECT_THAT(std::string(refused.message()), HasSubstr("certificate has expired")) << refused;
  ASSERT_TRUE(credentials_->Reload(Pair("server")).ok());
  EXPECT_TRUE(Unary(TrustingChannel()).ok());
  // A bad pair is refused and the current one stays.
  EXPECT_FALSE(credentials_->Reload(TlsKeyPair{ReadCert("server.pem"), ReadCert("client.key")}).ok());
  EXPECT_TRUE(Unary(TrustingChannel()).ok());
}

TEST_F(TlsTest, PlaintextClientOnTlsPortFails) {
  StartServer();
  ChannelOptions options;
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(tls_port_), options);
  ASSERT_TRUE(channel.ok());
  const Status status = Unary(*channel);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status;
  ExpectServing();
}

TEST_F(TlsTest, TlsClientOnPlaintextPortFails) {
  StartServer();
  auto channel = TlsChannel("localhost:" + std::to_string(plain_port_),
                            {.root_certificates = ReadCert("ca.pem")});
  ExpectFailure(Unary(channel), StatusCode::kUnavailable, {"TLS"});
  ExpectServing();
}

// A raw TLS client on a blocking socket, driven by hand, for handshakes rill would never make.
class RawClient {
 public:
  explicit RawClient(int port, const unsigned char* alpn = nullptr, size_t alpn_len = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    if (alpn != nullptr) SSL_CTX_set_alpn_protos(ctx_, alpn, static_cast<unsigned>(alpn_len));
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
  }
  ~RawClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool Handshake() { return SSL_connect(ssl_) == 1; }
  // The bytes of a ClientHello, made by a second engine over memory BIOs.
  static std::string ClientHelloBytes() {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    static constexpr unsigned char kH2[] = {2, 'h', '2'};
    SSL_CTX_set_alpn_protos(ctx, kH2, sizeof(kH2));
    SSL* ssl = SSL_new(ctx);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, in, out);
    SSL_connect(ssl);
    char* data = nullptr;
    const long len = BIO_get_mem_data(out, &data);
    std::string hello(data, static_cast<size_t>(len));
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return hello;
  }
  void SendRaw(const std::string& bytes) {
    EXPECT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // True when the server closed the connection (EOF or reset) within the timeout; everything
  // it sent before is skipped.
  bool WaitForClose(std::chrono::milliseconds timeout = kMustComplete) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char sink[4096];
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const ssize_t n = ::recv(fd_, sink, sizeof(sink), 0);
      if (n <= 0) return true;
    }
    return false;
  }

 private:
  int fd_;
  SSL_CTX* ctx_;
  SSL* ssl_;
};

TEST_F(TlsTest, ClientWithoutH2IsRefusedWithALogLine) {
  StartServer();
  LogCapture logs;
  static constexpr unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  RawClient client(tls_port_, kHttp11, sizeof(kHttp11));
  EXPECT_FALSE(client.Handshake());
  EXPECT_TRUE(client.WaitForClose());
  RawClient no_alpn(tls_port_);
  EXPECT_FALSE(no_alpn.Handshake());
  EXPECT_TRUE(no_alpn.WaitForClose());
  ExpectServing();
  const auto lines = LogCapture::Lines();
  EXPECT_THAT(lines, Contains(HasSubstr("offered ALPN http/1.1 but not h2")));
  EXPECT_THAT(lines, Contains(HasSubstr("offered no ALPN protocol; h2 is required")));
}

TEST_F(TlsTest, GarbageAfterClientHelloClosesOnlyThatConnection) {
  StartServer();
  auto established = TrustingChannel();
  ASSERT_TRUE(Unary(established).ok());
  RawClient client(tls_port_);
  client.SendRaw(RawClient::ClientHelloBytes());
  client.SendRaw(std::string(2000, '\x17'));
  EXPECT_TRUE(client.WaitForClose());
  EXPECT_TRUE(Unary(established).ok());
  ExpectServing();
}

TEST_F(TlsTest, ClientThatStopsMidHandshakeIsClosedByTheHandshakeTimeout) {
  ServerOptions options;
  options.handshake_timeout = std::chrono::milliseconds(300);
  StartServer({.key_pair = Pair("server")}, options);
  RawClient client(tls_port_);
  client.SendRaw(RawClient::ClientHelloBytes());
  EXPECT_TRUE(client.WaitForClose());
  ExpectServing();
}

TEST_F(TlsTest, BadCredentialsAreInvalidArgument) {
  auto no_key = ServerCredentials::Tls({.key_pair = {ReadCert("server.pem"), ""}});
  EXPECT_EQ(no_key.status().code(), StatusCode::kInvalidArgument);
  auto mismatch = ServerCredentials::Tls({.key_pair = {ReadCert("server.pem"), ReadCert("client.key")}});
  EXPECT_EQ(mismatch.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatch.status().message()), HasSubstr("does not match"));
  auto no_roots = ChannelCredentials::Tls({.root_certificates = "not a certificate"});
  EXPECT_EQ(no_roots.status().code(), StatusCode::kInvalidArgument);
}

// A plugin answering from a thread of its own after `delay`, with `result`.
class ThreadedCredentials final : public CallCredentials {
 public:
  ThreadedCredentials(StatusOr<Metadata> result, std::chrono::milliseconds delay,
                      bool allow_insecure = false)
      : result_(std::move(result)), delay_(delay), allow_insecure_(allow_insecure) {}
  ~ThreadedCredentials() override {
    for (auto& thread : threads_) thread.join();
  }
  void GetMetadata(const CallCredentialsInfo& info, Done done) override {
    {
      std::lock_guard lock(mu_);
      last_service_url_ = info.service_url;
    }
    std::lock_guard lock(mu_);
    threads_.emplace_back([this, done = std::move(done)] {
      std::this_thread::sleep_for(delay_);
      done(result_);
    });
  }
  bool allow_insecure() const override { return allow_insecure_; }
  std::string last_service_url() {
    std::lock_guard lock(mu_);
    return last_service_url_;
  }

 private:
  StatusOr<Metadata> result_;
  std::chrono::milliseconds delay_;
  bool allow_insecure_;
  std::mutex mu_;
  std::vector<std::thread> threads_;
  std::string last_service_url_;
};

Metadata Token(std::string_view value) {
  Metadata metadata;
  metadata.Add("authorization", value);
  return metadata;
}

TEST_F(TlsTest, ChannelCallCredentialsAddMetadataToEveryCall) {
  StartServer();
  auto credentials = ChannelCredentials::Tls({.root_certificates = ReadCert("ca.pem")});
  ASSERT_TRUE(credentials.ok());
  ChannelOptions options;
  options.call_credentials = AccessTokenCredentials("s3cret");
  auto channel = Channel::Create(TlsTarget(), *credentials, options);
  ASSERT_TRUE(channel.ok());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Unary(*channel).ok());
    EXPECT_EQ(service_.authorization(), "Bearer s3cret");
  }
  // Streams get them too.
  TestService::Stub stub(*channel);
  ClientContext context;
  context.set_timeout(kMustComplete);
  auto stream = stub.FullDuplexCall(context);
  StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(10);
  ASSERT_TRUE(stream->BlockingWrite(request));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_TRUE(stream->BlockingFinish().ok());
}

TEST_F(TlsTest, AsynchronousPluginDoesNotHoldUpOtherCalls) {
  StartServer();
  auto channel = TrustingChannel();
  auto slow = std::make_shared<ThreadedCredentials>(Token("Bearer later"),
                                                    std::chrono::milliseconds(500));
  TestService::Stub stub(channel);
  ClientContext slow_context;
  slow_context.set_credentials(slow);
  slow_context.set_timeout(kMustComplete);
  SimpleRequest request;
  SimpleResponse slow_response;
  Notification slow_done;
  Status slow_status;
  stub.UnaryCall(slow_context, request, &slow_response, [&](Status status) {
    slow_status = std::move(status);
    slow_done.Notify();
  });
  // While the plugin waits, the reactor serves other calls on the same channel.
  EXPECT_TRUE(Unary(channel).ok());
  EXPECT_FALSE(slow_done.HasBeenNotified());
  ASSERT_TRUE(slow_done.WaitForNotification());
  EXPECT_TRUE(slow_status.ok()) << slow_status;
  EXPECT_EQ(service_.authorization(), "Bearer later");
  EXPECT_EQ(slow->last_service_url(), "https://" + TlsTarget() + "/grpc.testing.TestService");
}

TEST_F(TlsTest, PluginFailuresFailTheCallWithTheirReason) {
  StartServer();
  auto channel = TrustingChannel();
  auto denied = std::make_shared<ThreadedCredentials>(
      Status(StatusCode::kUnauthenticated, "token expired"), std::chrono::milliseconds(0));
  ExpectFailure(Unary(channel, 3, denied), StatusCode::kUnauthenticated, {"token expired"});

  auto broken = std::make_shared<ThreadedCredentials>(
      Status(StatusCode::kInternal, "token service down"), std::chrono::milliseconds(0));
  ExpectFailure(Unary(channel, 3, broken), StatusCode::kUnavailable, {"token service down"});

  struct Throwing final : CallCredentials {
    void GetMetadata(const CallCredentialsInfo&, Done) override {
      throw std::runtime_error("plugin bug");
    }
  };
  const Status status = Unary(channel, 3, std::make_shared<Throwing>());
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status;
  EXPECT_TRUE(Unary(channel).ok()) << "the channel keeps working";
}

TEST_F(TlsTest, CallCredentialsStayOffPlaintextChannelsUnlessAllowed) {
  StartServer();
  auto plain = Channel::Create("127.0.0.1:" + std::to_string(plain_port_));
  ASSERT_TRUE(plain.ok());
  ExpectFailure(Unary(*plain, 3, AccessTokenCredentials("s3cret")), StatusCode::kUnauthenticated,
                {"secure"});
  auto allowed = std::make_shared<ThreadedCredentials>(Token("Bearer plain"),
                                                       std::chrono::milliseconds(0), true);
  ASSERT_TRUE(Unary(*plain, 3, allowed).ok());
  EXPECT_EQ(service_.authorization(), "Bearer plain");
}

TEST_F(TlsTest, DeadlineWhileThePluginWaits) {
  StartServer();
  auto channel = TrustingChannel();
  auto slow = std::make_shared<ThreadedCredentials>(Token("Bearer late"),
                                                    std::chrono::milliseconds(400));
  const Status status = Unary(channel, 3, slow, std::chrono::milliseconds(50));
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;
  EXPECT_TRUE(Unary(channel).ok());
}

// A plugin that lets go of `done` without calling it fails the call at once; it does not wait
// for the deadline.
TEST_F(TlsTest, PluginThatDropsItsCallbackFailsTheCall) {
  StartServer();
  auto channel = TrustingChannel();
  struct Forgetful final : CallCredentials {
    void GetMetadata(const CallCredentialsInfo&, Done) override {}
  };
  const auto started = std::chrono::steady_clock::now();
  ExpectFailure(Unary(channel, 3, std::make_shared<Forgetful>()), StatusCode::kUnavailable,
                {"without answering"});
  EXPECT_LT(std::chrono::steady_clock::now() - started, kMustComplete);
  EXPECT_TRUE(Unary(channel).ok()) << "the channel keeps working";
}

// A plugin that keeps `done` and answers long after the call ended, from its own thread, after
// the channel is gone: the call ended at its deadline, the channel closed without waiting for
// the plugin, and the late answer touches nothing.
TEST_F(TlsTest, LateAnswerAfterTheChannelIsGoneDoesNothing) {
  StartServer();
  struct Hoarding final : CallCredentials {
    void GetMetadata(const CallCredentialsInfo&, Done done) override {
      std::lock_guard lock(mu);
      kept.push_back(std::move(done));
    }
    std::mutex mu;
    std::vector<Done> kept;
  };
  auto plugin = std::make_shared<Hoarding>();
  {
    auto channel = TrustingChannel();
    TestService::Stub stub(channel);
    for (int i = 0; i < 3; ++i) {
      ClientContext context;
      context.set_credentials(plugin);
      context.set_timeout(std::chrono::milliseconds(50));
      SimpleRequest request;
      SimpleResponse response;
      const Status status = stub.UnaryCall(context, request, &response);
      EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;
    }
  }  // the channel and stub are gone; this must not wait for the plugin
  std::thread late([&] {
    std::lock_guard lock(plugin->mu);
    for (auto& done : plugin->kept) done(Token("Bearer too late"));
    plugin->kept.clear();  // the callbacks die on this thread too
  });
  late.join();
  ExpectServing();
}

}  // namespace
}  // namespace rill::test
