// A rill client calling a rill server through nginx (Debian's nginx-light) as a gRPC reverse
// proxy (`grpc_pass`), as many deployments run it: every kind of call, metadata both ways
// (binary values too), deadlines and cancellation reaching the server, statuses with messages
// and details, messages up to the receive limit, long streams, many calls at once on one
// channel, and what a client sees when the backend or nginx is gone.
//
// nginx is a peer here: without /usr/sbin/nginx (or the nginx $RILL_NGINX names) these tests
// skip, or fail under RILL_REQUIRE_PEERS=1. tests/nginx/nginx_process.cc holds the
// configuration and why each setting differs from nginx's defaults.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "interop_checks/unary_checks.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/server.h"
#include "tests/interop/test_service.h"
#include "tests/interop/unary_checks_service.h"
#include "tests/nginx/nginx_process.h"
#include "tests/testing/fixture.h"
#include "tests/testing/require_peer.h"
#include "tests/testing/streamer.h"

namespace rill::test {
namespace {

using interop::PatternPayload;
using interop::PayloadHash;
using interop_checks::CheckRequest;
using interop_checks::CheckResponse;
using interop_checks::ObserveRequest;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kNginxPeer = "nginx (Debian's nginx-light, /usr/sbin/nginx; or $RILL_NGINX)";
// The default receive limit of both ends.
constexpr size_t kReceiveLimit = 4 * 1024 * 1024;
// How long a server handler may take to see the end of a call it could not know about directly.
constexpr milliseconds kObserveTimeout{10000};

std::string CallId() {
  static std::atomic<int> next{0};
  return "call-" + std::to_string(next.fetch_add(1));
}

// Every byte value, for binary metadata and details.
std::string EveryByte() {
  std::string bytes;
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  return bytes;
}

// Protobuf wire format by hand (the test needs no google.rpc.Status class): a length-delimited
// field and a varint field.
std::string Varint(uint64_t value) {
  std::string out;
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
  return out;
}
std::string BytesField(int number, const std::string& bytes) {
  return Varint(static_cast<uint64_t>(number) << 3 | 2) + Varint(bytes.size()) + bytes;
}
// A serialized google.rpc.Status{code, message, details: [Any{type_url, every byte value}]}.
std::string StatusDetails(int code, const std::string& message) {
  const std::string any = BytesField(1, "type.googleapis.com/interop_checks.CheckResponse") +
                          BytesField(2, EveryByte());
  return Varint(1 << 3) + Varint(static_cast<uint64_t>(code)) + BytesField(2, message) +
         BytesField(3, any);
}

// A rill server (grpc.testing.TestService, interop_checks.UnaryChecks and the streaming tests'
// Streamer), nginx in front of it, and a rill channel to nginx. Everything ends inside the test.
class NginxProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RILL_REQUIRE_PEER(NginxProcess::Available(), kNginxPeer);
    ASSERT_NO_FATAL_FAILURE(StartBackend());
    auto nginx = NginxProcess::Start(backend_target());
    ASSERT_TRUE(nginx.ok()) << nginx.status();
    nginx_ = std::move(*nginx);
    channel_ = NewChannel(*nginx_);
    ASSERT_NE(channel_, nullptr);
    test_stub_ = std::make_unique<grpc::testing::TestService::Stub>(channel_);
    checks_stub_ = std::make_unique<interop_checks::UnaryChecks::Stub>(channel_);
    streamer_stub_ = std::make_unique<st::Streamer::Stub>(channel_);
  }

  void TearDown() override {
    test_stub_.reset();
    checks_stub_.reset();
    streamer_stub_.reset();
    channel_.reset();
    // nginx first: it holds connections to the backend.
    if (nginx_ != nullptr && HasFailure())
      std::printf("nginx's log:\n%s", nginx_->ErrorLog().c_str());
    nginx_.reset();
    StopBackend();
  }

  void StartBackend() {
    auto server = ServerBuilder()
                      .AddListeningPort("127.0.0.1:0", &backend_port_)
                      .RegisterService(&test_service_)
                      .RegisterService(&checks_)
                      .RegisterService(&streamer_)
                      .SetReactorCount(2)
                      .Build();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void StopBackend() {
    if (server_ != nullptr) server_->Shutdown(milliseconds(100));
    server_.reset();
  }
  std::string backend_target() const { return "127.0.0.1:" + std::to_string(backend_port_); }

  static std::shared_ptr<Channel> NewChannel(const NginxProcess& nginx) {
    auto channel = Channel::Create(nginx.target());
    EXPECT_TRUE(channel.ok()) << channel.status();
    if (!channel.ok()) return nullptr;
    EXPECT_TRUE((*channel)->WaitForConnected(Channel::Clock::now() + kMustComplete));
    return *channel;
  }

  // One Check with a deadline (a stalled call fails instead of hanging the test).
  Status Check(const CheckRequest& request, CheckResponse* response, ClientContext& context) {
    if (context.deadline() == ClientContext::Clock::time_point::max()) {
      context.set_timeout(seconds(60));
    }
    return checks_stub_->Check(context, request, response);
  }
  Status Check(const CheckRequest& request, CheckResponse* response) {
    ClientContext context;
    return Check(request, response, context);
  }

  interop::TestServiceImpl test_service_;
  interop::UnaryChecksService checks_;
  StreamerService streamer_;
  int backend_port_ = 0;
  std::unique_ptr<Server> server_;
  std::unique_ptr<NginxProcess> nginx_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<grpc::testing::TestService::Stub> test_stub_;
  std::unique_ptr<interop_checks::UnaryChecks::Stub> checks_stub_;
  std::unique_ptr<st::Streamer::Stub> streamer_stub_;
};

// ---------------------------------------------------------------------------------------------
// The four kinds of call.

TEST_F(NginxProxyTest, Unary) {
  CheckRequest request;
  request.set_payload(PatternPayload(1000));
  request.set_response_payload_size(2000);
  CheckResponse response;
  const Status status = Check(request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.request_payload_size(), 1000);
  EXPECT_EQ(response.request_payload_hash(), PayloadHash(request.payload()));
  EXPECT_EQ(response.payload(), PatternPayload(2000));

  ClientContext context;
  context.set_timeout(seconds(60));
  grpc::testing::Empty empty;
  const Status empty_status = test_stub_->EmptyCall(context, grpc::testing::Empty(), &empty);
  EXPECT_TRUE(empty_status.ok()) << empty_status;
}

// The sizes of gRPC's interop cases (client_streaming, ping_pong).
constexpr int kInteropSizes[] = {27182, 8, 1828, 45904};

TEST_F(NginxProxyTest, ClientStreaming) {
  ClientContext context;
  context.set_timeout(seconds(60));
  grpc::testing::StreamingInputCallResponse response;
  auto writer = test_stub_->StreamingInputCall(context, &response);
  for (int size : kInteropSizes) {
    grpc::testing::StreamingInputCallRequest request;
    request.mutable_payload()->set_body(std::string(static_cast<size_t>(size), 'c'));
    ASSERT_TRUE(writer->BlockingWrite(request)) << size;
  }
  ASSERT_TRUE(writer->BlockingWritesDone());
  const Status status = writer->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.aggregated_payload_size(), 74922);
}

TEST_F(NginxProxyTest, ServerStreaming) {
  ClientContext context;
  context.set_timeout(seconds(60));
  grpc::testing::StreamingOutputCallRequest request;
  for (int size : {31415, 9, 2653, 58979}) request.add_response_parameters()->set_size(size);
  auto reader = test_stub_->StreamingOutputCall(context, request);
  grpc::testing::StreamingOutputCallResponse response;
  std::vector<size_t> sizes;
  while (reader->BlockingRead(&response)) sizes.push_back(response.payload().body().size());
  const Status status = reader->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(sizes, (std::vector<size_t>{31415, 9, 2653, 58979}));
}

TEST_F(NginxProxyTest, BidiPingPong) {
  ClientContext context;
  context.set_timeout(seconds(60));
  auto stream = test_stub_->FullDuplexCall(context);
  const int response_sizes[] = {31415, 9, 2653, 58979};
  for (int i = 0; i < 4; ++i) {
    grpc::testing::StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(response_sizes[i]);
    request.mutable_payload()->set_body(std::string(static_cast<size_t>(kInteropSizes[i]), 'p'));
    ASSERT_TRUE(stream->BlockingWrite(request)) << i;
    grpc::testing::StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingRead(&response)) << "no answer to request " << i;
    EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(response_sizes[i]));
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  grpc::testing::StreamingOutputCallResponse extra;
  EXPECT_FALSE(stream->BlockingRead(&extra));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

// ---------------------------------------------------------------------------------------------
// Metadata.

// About 14 KiB of metadata each way: more than nginx's default grpc_buffer_size (4 KiB) takes
// for the response headers (see nginx_process.cc).
TEST_F(NginxProxyTest, RequestMetadataReachesTheServerAndComesBackInHeadersAndTrailers) {
  const std::vector<std::pair<std::string, std::string>> sent = {
      {"x-check-ascii", "first"},
      {"x-check-bin", std::string("\x00", 1)},
      {"x-check-ascii", "second: printable ASCII !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"},
      {"x-check-bin", EveryByte()},
      {"x-check-other-bin", std::string("\xff\x00\xfe\x01", 4)},
      {"x-check-long", std::string(6000, 'l')},
      {"x-check-long-bin", std::string(6000, '\xa5')},
  };
  std::map<std::string, std::vector<std::string>> expected;
  for (const auto& [key, value] : sent) expected[key].push_back(value);

  ClientContext context;
  for (const auto& [key, value] : sent) context.AddMetadata(key, value);
  CheckRequest request;
  request.set_echo_metadata(true);
  CheckResponse response;
  const Status status = Check(request, &response, context);
  ASSERT_TRUE(status.ok()) << status;

  for (const Metadata* received : {&context.initial_metadata(), &context.trailing_metadata()}) {
    const char* where = received == &context.initial_metadata() ? "headers" : "trailers";
    for (const auto& [key, values] : expected) {
      const std::vector<std::string_view> got = received->GetAll(key);
      ASSERT_EQ(got.size(), values.size()) << key << " in the " << where;
      for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(got[i], values[i]) << key << "[" << i << "] in the " << where;
      }
    }
  }
}

TEST_F(NginxProxyTest, StreamingCallMetadataComesBackInHeadersAndTrailers) {
  const std::string trailing = EveryByte();
  ClientContext context;
  context.set_timeout(seconds(60));
  context.AddMetadata("x-grpc-test-echo-initial", "initial value");
  context.AddMetadata("x-grpc-test-echo-trailing-bin", trailing);
  auto stream = test_stub_->FullDuplexCall(context);
  grpc::testing::StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(100);
  ASSERT_TRUE(stream->BlockingWrite(request));
  grpc::testing::StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingWritesDone());
  const Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(context.initial_metadata().Get("x-grpc-test-echo-initial"), "initial value");
  EXPECT_EQ(context.trailing_metadata().Get("x-grpc-test-echo-trailing-bin"), trailing);
}

// ---------------------------------------------------------------------------------------------
// Deadlines and cancellation.

TEST_F(NginxProxyTest, DeadlineEndsASlowUnaryCallAndTheServerSeesIt) {
  CheckRequest request;
  request.set_sleep_ms(30000);
  request.set_call_id(CallId());
  ClientContext context;
  context.set_timeout(milliseconds(300));
  CheckResponse response;
  const Status status = Check(request, &response, context);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;

  const auto seen =
      checks_.log().WaitFor(request.call_id(), ObserveRequest::FINISHED, kObserveTimeout);
  ASSERT_TRUE(seen.has_value()) << "the server handler did not end after the deadline";
  EXPECT_TRUE(seen->cancelled) << "the server handler slept on past the deadline";
  // nginx passes grpc-timeout on: the server knows the deadline too.
  EXPECT_TRUE(seen->had_deadline);
}

TEST_F(NginxProxyTest, DeadlineEndsAServerStreamAndTheServerSeesIt) {
  ClientContext context;
  context.set_timeout(milliseconds(500));
  const st::SourceRequest request = [] {
    st::SourceRequest r = MakeSource(/*count=*/3, /*size=*/10);
    r.set_interval_ms(30000);
    return r;
  }();
  auto reader = streamer_stub_->Source(context, request);
  st::Chunk chunk;
  ASSERT_TRUE(reader->BlockingRead(&chunk));
  EXPECT_TRUE(IsChunk(chunk, 0, 10));
  EXPECT_FALSE(reader->BlockingRead(&chunk));
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;
  ASSERT_TRUE(streamer_.WaitForFinished(1));
  EXPECT_TRUE(streamer_.outcomes()[0].cancelled);
}

TEST_F(NginxProxyTest, ClientCancelReachesTheServer) {
  CheckRequest request;
  request.set_sleep_ms(30000);
  request.set_call_id(CallId());
  ClientContext context;
  context.set_timeout(seconds(60));
  CheckResponse response;
  std::promise<Status> done;
  checks_stub_->Check(context, request, &response,
                      [&done](Status status) { done.set_value(std::move(status)); });
  ASSERT_TRUE(checks_.log().WaitFor(request.call_id(), ObserveRequest::STARTED, kObserveTimeout))
      << "the call never reached the server";
  context.TryCancel();
  const Status status = done.get_future().get();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
  const auto seen =
      checks_.log().WaitFor(request.call_id(), ObserveRequest::FINISHED, kObserveTimeout);
  ASSERT_TRUE(seen.has_value()) << "the server handler did not end after the cancel";
  EXPECT_TRUE(seen->cancelled);
}

// ---------------------------------------------------------------------------------------------
// Statuses.

TEST_F(NginxProxyTest, EveryErrorStatusComesBackWithItsMessageAndDetails) {
  for (int code = 1; code <= 16; ++code) {
    SCOPED_TRACE("code " + std::to_string(code));
    const std::string message = "status " + std::to_string(code) +
                                ": 100% sure, %41 stays %41; non-ASCII: h\xc3\xa9, "
                                "\xe2\x98\xba; tab\tnewline\n";
    CheckRequest request;
    request.set_status_code(code);
    request.set_status_message(message);
    request.set_status_details(StatusDetails(code, message));
    CheckResponse response;
    const Status status = Check(request, &response);
    EXPECT_EQ(static_cast<int>(status.code()), code) << status;
    EXPECT_EQ(status.message(), message);
    EXPECT_EQ(status.details(), request.status_details());
  }
}

TEST_F(NginxProxyTest, StatusWithoutMessage) {
  CheckRequest request;
  request.set_status_code(static_cast<int>(StatusCode::kNotFound));
  CheckResponse response;
  const Status status = Check(request, &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound) << status;
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.details(), "");
}

TEST_F(NginxProxyTest, ServerStreamThatFailsAfterSomeMessages) {
  ClientContext context;
  context.set_timeout(seconds(60));
  const st::SourceRequest request = [] {
    st::SourceRequest r = MakeSource(/*count=*/10, /*size=*/1000);
    r.set_fail_after(3);
    r.set_fail_code(static_cast<int>(StatusCode::kAborted));
    return r;
  }();
  auto reader = streamer_stub_->Source(context, request);
  st::Chunk chunk;
  uint64_t count = 0;
  while (reader->BlockingRead(&chunk)) {
    EXPECT_TRUE(IsChunk(chunk, count, 1000)) << count;
    ++count;
  }
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status;
  EXPECT_EQ(count, 3u);
}

TEST_F(NginxProxyTest, UnknownMethodIsUnimplemented) {
  ClientContext context;
  context.set_timeout(seconds(60));
  grpc::testing::Empty empty;
  const Status status = test_stub_->UnimplementedCall(context, grpc::testing::Empty(), &empty);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << status;
}

// ---------------------------------------------------------------------------------------------
// Message sizes.

TEST_F(NginxProxyTest, MessagesJustUnderTheReceiveLimitBothWays) {
  // The serialized messages stay under the limit: a few bytes go to field tags and lengths.
  constexpr size_t kSize = kReceiveLimit - 64;
  CheckRequest request;
  request.set_payload(PatternPayload(kSize));
  request.set_response_payload_size(static_cast<int32_t>(kSize));
  CheckResponse response;
  const Status status = Check(request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.request_payload_size(), static_cast<int64_t>(kSize));
  EXPECT_EQ(response.request_payload_hash(), PayloadHash(request.payload()));
  ASSERT_EQ(response.payload().size(), kSize);
  EXPECT_TRUE(response.payload() == PatternPayload(kSize)) << "the response bytes differ";
}

TEST_F(NginxProxyTest, ResponseOverTheReceiveLimitIsResourceExhausted) {
  CheckRequest request;
  request.set_response_payload_size(static_cast<int32_t>(kReceiveLimit + 1));
  CheckResponse response;
  const Status status = Check(request, &response);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
}

// Many 64 KiB messages each way, every byte checked (each chunk's bytes depend on its number).
constexpr uint64_t kChunks = kSanitized ? 64 : 256;
constexpr uint32_t kChunkSize = 64 * 1024;

TEST_F(NginxProxyTest, LongServerStreamArrivesByteExact) {
  ClientContext context;
  context.set_timeout(seconds(120));
  const st::SourceRequest request = MakeSource(kChunks, kChunkSize);
  auto reader = streamer_stub_->Source(context, request);
  st::Chunk chunk;
  uint64_t count = 0;
  uint64_t bad = 0;
  while (reader->BlockingRead(&chunk)) {
    if (!IsChunk(chunk, count, kChunkSize)) ++bad;
    ++count;
  }
  const Status status = reader->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(count, kChunks);
  EXPECT_EQ(bad, 0u);
}

TEST_F(NginxProxyTest, LongClientStreamArrivesComplete) {
  ClientContext context;
  context.set_timeout(seconds(120));
  st::SinkReply reply;
  auto writer = streamer_stub_->Sink(context, &reply);
  st::Chunk chunk;
  for (uint64_t seq = 0; seq < kChunks; ++seq) {
    MakeChunk(seq, kChunkSize, chunk);
    ASSERT_TRUE(writer->BlockingWrite(chunk)) << seq;
  }
  ASSERT_TRUE(writer->BlockingWritesDone());
  const Status status = writer->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;  // DATA_LOSS when the chunks came out of order
  EXPECT_EQ(reply.count(), kChunks);
  EXPECT_EQ(reply.bytes(), kChunks * kChunkSize);
}

// The client writes on one thread and reads on another, so that neither direction's flow
// control waits for the other.
TEST_F(NginxProxyTest, LongBidiStreamEchoesByteExact) {
  ClientContext context;
  context.set_timeout(seconds(120));
  auto stream = streamer_stub_->Echo(context);
  std::thread writer([&stream] {
    st::Chunk chunk;
    for (uint64_t seq = 0; seq < kChunks; ++seq) {
      MakeChunk(seq, kChunkSize, chunk);
      if (!stream->BlockingWrite(chunk)) return;
    }
    stream->BlockingWritesDone();
  });
  st::Chunk chunk;
  uint64_t count = 0;
  uint64_t bad = 0;
  while (stream->BlockingRead(&chunk)) {
    if (!IsChunk(chunk, count, kChunkSize)) ++bad;
    ++count;
  }
  writer.join();
  const Status status = stream->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(count, kChunks);
  EXPECT_EQ(bad, 0u);
}

// ---------------------------------------------------------------------------------------------
// Many calls at once on one channel (one HTTP/2 connection to nginx, which opens a backend
// connection per call).

TEST_F(NginxProxyTest, ManyConcurrentUnaryCallsOnOneChannel) {
  constexpr int kCalls = kSanitized ? 100 : 300;
  struct Call {
    ClientContext context;
    CheckRequest request;
    CheckResponse response;
    Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    call->context.set_timeout(seconds(120));
    call->request.set_payload(PatternPayload(static_cast<size_t>(100 + i * 37)));
    call->request.set_response_payload_size(1000 + i);
    // Some calls wait on the server so that many are in flight at once.
    call->request.set_sleep_ms(i % 3 == 0 ? 200 : 0);
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) {
    Call* c = call.get();
    checks_stub_->Check(c->context, c->request, &c->response, [c, &mu, &cv, &done](Status s) {
      std::lock_guard lock(mu);
      c->status = std::move(s);
      ++done;
      cv.notify_all();
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kMustComplete, [&] { return done == kCalls; }))
        << done << " of " << kCalls << " calls completed";
  }
  int failed = 0;
  for (int i = 0; i < kCalls; ++i) {
    const Call& c = *calls[static_cast<size_t>(i)];
    if (!c.status.ok()) {
      if (++failed <= 5) ADD_FAILURE() << "call " << i << ": " << c.status;
      continue;
    }
    EXPECT_EQ(c.response.request_payload_hash(), PayloadHash(c.request.payload())) << i;
    EXPECT_EQ(c.response.payload(), PatternPayload(static_cast<size_t>(1000 + i))) << i;
  }
  EXPECT_EQ(failed, 0);
}

TEST_F(NginxProxyTest, ManyConcurrentStreamsOnOneChannel) {
  constexpr int kStreams = kSanitized ? 8 : 32;
  constexpr uint64_t kRounds = 10;
  constexpr uint32_t kSize = 40000;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kStreams);
  for (int t = 0; t < kStreams; ++t) {
    threads.emplace_back([this, t, &failures] {
      ClientContext context;
      context.set_timeout(seconds(120));
      auto stream = streamer_stub_->Echo(context);
      st::Chunk chunk;
      for (uint64_t seq = 0; seq < kRounds; ++seq) {
        MakeChunk(seq, kSize, chunk);
        if (!stream->BlockingWrite(chunk)) {
          failures[t] = "write " + std::to_string(seq) + " failed";
          break;
        }
        if (!stream->BlockingRead(&chunk) || !IsChunk(chunk, seq, kSize)) {
          failures[t] = "read " + std::to_string(seq) + " failed or differs";
          break;
        }
      }
      stream->BlockingWritesDone();
      const Status status = stream->BlockingFinish();
      if (failures[t].empty() && !status.ok()) failures[t] = status.ToString();
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kStreams; ++t) EXPECT_EQ(failures[t], "") << "stream " << t;
}

// ---------------------------------------------------------------------------------------------
// When something behind the channel is gone.

TEST_F(NginxProxyTest, BackendDownIsUnavailable) {
  StopBackend();
  CheckRequest request;
  CheckResponse response;
  const Status status = Check(request, &response);
  // nginx answers 502, which gRPC maps to UNAVAILABLE.
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status;
}

// Two nginx front ends ("a" and "b") in front of one server, each naming itself to the server
// in a request header (which UnaryChecks echoes back).
class NginxFrontEnds : public ::testing::Test {
 protected:
  void SetUp() override {
    RILL_REQUIRE_PEER(NginxProcess::Available(), kNginxPeer);
    int backend_port = 0;
    auto server = ServerBuilder()
                      .AddListeningPort("127.0.0.1:0", &backend_port)
                      .RegisterService(&checks_)
                      .SetReactorCount(1)
                      .Build();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    const std::string backend = "127.0.0.1:" + std::to_string(backend_port);
    for (const char* name : {"a", "b"}) {
      NginxOptions options;
      options.request_headers.emplace_back("x-check-front-end", name);
      auto nginx = NginxProcess::Start(backend, options);
      ASSERT_TRUE(nginx.ok()) << nginx.status();
      name_of_peer_["ipv4:127.0.0.1:" + std::to_string((*nginx)->port())] = name;
      front_ends_.push_back(std::move(*nginx));
    }
    ASSERT_EQ(name_of_peer_.size(), 2U);
  }
  void TearDown() override {
    front_ends_.clear();
    if (server_ != nullptr) server_->Shutdown(milliseconds(100));
  }

  // The front end a call through `channel` went through by its header ("a", "b"), checked
  // against the peer the channel reports; or the call's error.
  std::string CallThrough(const std::shared_ptr<Channel>& channel, bool wait_for_ready = false) {
    interop_checks::UnaryChecks::Stub stub(channel);
    ClientContext context;
    context.set_timeout(seconds(30));
    context.set_wait_for_ready(wait_for_ready);
    CheckRequest request;
    request.set_echo_metadata(true);
    CheckResponse response;
    const Status status = stub.Check(context, request, &response);
    if (!status.ok()) return status.ToString();
    const std::string header(context.initial_metadata().Get("x-check-front-end").value_or("(none)"));
    const auto by_peer = name_of_peer_.find(std::string(context.peer()));
    if (by_peer == name_of_peer_.end()) {
      return "unknown peer " + std::string(context.peer()) + " (header " + header + ")";
    }
    if (by_peer->second != header) {
      return "peer " + by_peer->first + " is front end " + by_peer->second + ", header says " +
             header;
    }
    return header;
  }

  interop::UnaryChecksService checks_;
  std::unique_ptr<Server> server_;
  std::vector<std::unique_ptr<NginxProcess>> front_ends_;
  std::map<std::string, std::string> name_of_peer_;  // "ipv4:127.0.0.1:PORT" -> "a" or "b"
};

// The client reaches the server through either front end, each call goes through the front
// end its channel names, and when one front end is gone calls through it fail UNAVAILABLE
// while the other still serves.
TEST_F(NginxFrontEnds, TwoFrontEndsInFrontOfOneServer) {
  std::vector<std::shared_ptr<Channel>> channels;
  for (const auto& front_end : front_ends_) {
    auto channel = Channel::Create(front_end->target());
    ASSERT_TRUE(channel.ok()) << channel.status();
    channels.push_back(*channel);
  }
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(CallThrough(channels[0]), "a");
    EXPECT_EQ(CallThrough(channels[1]), "b");
  }
  front_ends_[0]->Stop();
  EXPECT_THAT(CallThrough(channels[0]), ::testing::StartsWith("UNAVAILABLE"));
  EXPECT_EQ(CallThrough(channels[1]), "b");
}

// One round_robin channel over both front ends ("ipv4:" with their two addresses): once each
// has answered, calls alternate between them, so 200 calls split 100/100; when one front end is
// stopped, wait-for-ready calls keep succeeding through the other.
TEST_F(NginxFrontEnds, RoundRobinOverTwoFrontEnds) {
  ChannelOptions options;
  options.load_balancing_policy = "round_robin";
  // Reconnection attempts to the stopped front end stay frequent and short.
  options.initial_backoff = milliseconds(100);
  options.max_backoff = milliseconds(500);
  auto channel = Channel::Create("ipv4:127.0.0.1:" + std::to_string(front_ends_[0]->port()) +
                                     ",127.0.0.1:" + std::to_string(front_ends_[1]->port()),
                                 options);
  ASSERT_TRUE(channel.ok()) << channel.status();

  // Both connections up: until each front end answered once.
  std::map<std::string, int> warm_up;
  for (int i = 0; i < 200 && warm_up.size() < 2; ++i) {
    const std::string through = CallThrough(*channel, /*wait_for_ready=*/true);
    ASSERT_TRUE(through == "a" || through == "b") << through;
    ++warm_up[through];
  }
  ASSERT_EQ(warm_up.size(), 2U) << "only one front end answered 200 calls";

  std::map<std::string, int> counts;
  for (int i = 0; i < 200; ++i) ++counts[CallThrough(*channel)];
  std::printf("200 round_robin calls: a %d, b %d\n", counts["a"], counts["b"]);
  EXPECT_EQ(counts["a"], 100);
  EXPECT_EQ(counts["b"], 100);
  EXPECT_EQ(counts.size(), 2U) << "some calls failed or went elsewhere";

  front_ends_[0]->Stop();
  std::map<std::string, int> after_stop;
  for (int i = 0; i < 100; ++i) ++after_stop[CallThrough(*channel, /*wait_for_ready=*/true)];
  std::printf("100 wait-for-ready calls with a stopped: b %d\n", after_stop["b"]);
  EXPECT_EQ(after_stop["b"], 100);
  EXPECT_EQ(after_stop.size(), 1U) << "some calls failed or went elsewhere";
}

}  // namespace
}  // namespace rill::test
