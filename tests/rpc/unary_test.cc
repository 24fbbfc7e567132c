// Unary calls rill ↔ rill through generated stubs, over loopback TCP and a Unix socket: the
// three completion styles, metadata in both directions, statuses, and message size limits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr size_t kDefaultLimit = 4 * 1024 * 1024;

// Binary metadata with the bytes base64 must carry intact.
const std::string kBinaryValue("\x00\xff\x01\x00\xfe\xff", 6);
// Status details are opaque bytes (a serialized google.rpc.Status in practice).
const std::string kDetails("\x08\x05\x12\x00\xff\x00", 6);

// UnaryCall answers with a response of request.response_size() serialized bytes, or with
// request.response_status() when set. Metadata keys starting with "x-echo-initial-" come back as
// initial metadata, "x-echo-trailing-" as trailing metadata. Status details come from the
// "x-details-bin" metadata value. Records what the handler saw.
class EchoService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    {
      std::lock_guard lock(mu_);
      metadata_ = CopyEntries(context.client_metadata());
      method_ = std::string(context.method());
      authority_ = std::string(context.authority());
      peer_ = std::string(context.peer());
      request_size_ = request.ByteSizeLong();
      request_body_ = request.payload().body();
    }
    calls_.fetch_add(1);
    for (const auto& [key, value] : context.client_metadata()) {
      if (key.starts_with("x-echo-initial-")) context.AddInitialMetadata(key, value);
      if (key.starts_with("x-echo-trailing-")) context.AddTrailingMetadata(key, value);
    }
    if (request.has_response_status()) {
      std::string details;
      if (auto d = context.client_metadata().Get("x-details-bin")) details = std::string(*d);
      return Status(StatusCodeFromInt(request.response_status().code()),
                    request.response_status().message(), std::move(details));
    }
    response = ResponseOfSize(static_cast<size_t>(request.response_size()));
    return Status();
  }

  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    calls_.fetch_add(1);
    return Status();
  }

  // Sends the response headers early, then adds more initial metadata (too late to be sent),
  // waits a little and answers with request.response_status() when set.
  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    context.AddInitialMetadata("x-early", "sent");
    context.SendInitialMetadata();
    context.AddInitialMetadata("x-late", "never sent");
    context.AddTrailingMetadata("x-trailing", "sent");
    asio::steady_timer timer(context.io_context(), std::chrono::milliseconds(5));
    co_await timer.async_wait(asio::use_awaitable);
    if (request.has_response_status()) {
      co_return Status(StatusCodeFromInt(request.response_status().code()),
                       request.response_status().message());
    }
    co_return Status();
  }

  // What the last call carried (copies, taken under the lock the handlers write under).
  MetadataEntries metadata() { return Locked(metadata_); }
  std::string method() { return Locked(method_); }
  std::string authority() { return Locked(authority_); }
  std::string peer() { return Locked(peer_); }
  size_t request_size() { return Locked(request_size_); }
  std::string request_body() { return Locked(request_body_); }
  int calls() const { return calls_.load(); }

 private:
  template <typename T>
  T Locked(const T& field) {
    std::lock_guard lock(mu_);
    return field;
  }

  std::mutex mu_;
  MetadataEntries metadata_;
  std::string method_;
  std::string authority_;
  std::string peer_;
  size_t request_size_ = 0;
  std::string request_body_;
  std::atomic<int> calls_{0};
};

class UnaryTest : public ServiceTest<EchoService> {
 protected:
  // Starts the server with `setup` and connects stub_ to it over a channel with `options`.
  void SetUpStub(TestServerSetup setup = {}, ChannelOptions options = {}) {
    StartServer(std::move(setup));
    Connect(std::move(options));
  }
};

SimpleRequest AskingForResponseOf(size_t size) {
  SimpleRequest request;
  request.set_response_size(static_cast<int32_t>(size));
  return request;
}

// A good call on `stub` after a failed one: the channel and the connection survived.
void ExpectGoodCall(TestService::Stub& stub) {
  SimpleResponse response;
  const Status status = CallUnary(stub, AskingForResponseOf(10), &response);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.ByteSizeLong(), 10u);
}

// A message size limit: a call of `at_limit` succeeds (with its response size), one of
// `over_limit` (sent with `over_limit_metadata`) ends RESOURCE_EXHAUSTED, and the channel
// still works after. With `unreached`, the oversized call must not have run its handler.
void ExpectLimitHolds(TestService::Stub& stub, const SimpleRequest& at_limit,
                      const SimpleRequest& over_limit, const EchoService* unreached = nullptr,
                      const MetadataEntries& over_limit_metadata = {}) {
  SimpleResponse response;
  const Status status = CallUnary(stub, at_limit, &response);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.ByteSizeLong(), static_cast<size_t>(at_limit.response_size()));
  const int calls_before = unreached != nullptr ? unreached->calls() : 0;
  const Status over = CallUnary(stub, over_limit, nullptr, over_limit_metadata);
  EXPECT_EQ(over.code(), StatusCode::kResourceExhausted) << over;
  if (unreached != nullptr) {
    EXPECT_EQ(unreached->calls(), calls_before) << "the oversized call reached the handler";
  }
  ExpectGoodCall(stub);
}

TEST_P(UnaryTest, BlockingCallReturnsTheResponse) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;

  ClientContext context;
  SimpleRequest request = RequestOfSize(100);
  request.set_response_size(200);
  SimpleResponse response;
  const Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.ByteSizeLong(), 200u);
  EXPECT_EQ(service_.method(), "/grpc.testing.TestService/UnaryCall");
  if (GetParam() == Transport::kTcp) {
    EXPECT_THAT(std::string(context.peer()), HasSubstr("127.0.0.1:"));
    EXPECT_THAT(service_.peer(), HasSubstr("127.0.0.1:"));
    EXPECT_EQ(service_.authority(), server_->target());
  } else if (GetParam() == Transport::kUnix) {
    EXPECT_THAT(std::string(context.peer()), StartsWith("unix:"));
  } else {
    EXPECT_EQ(std::string(context.peer()), "inprocess");
    EXPECT_EQ(service_.peer(), "inprocess");
    EXPECT_EQ(service_.authority(), "inprocess");
  }
}

TEST_P(UnaryTest, EmptyMessagesBothWays) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  ClientContext context;
  Empty request;
  Empty response;
  const Status status = stub.EmptyCall(context, request, &response);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(service_.calls(), 1);
}

Awaitable<Status> UnaryCallAwaitable(TestService::Stub* stub, ClientContext* context,
                                     SimpleRequest request, SimpleResponse* response) {
  co_return co_await stub->UnaryCall(*context, request, response, asio::use_awaitable);
}

TEST_P(UnaryTest, AwaitableCallFromAnotherReactor) {
  StartServer();
  // The channel's reactor posts the completion to client_reactors: it is joined (destroyed)
  // first, so that it has left that post before client_reactors goes.
  ReactorPool client_reactors({.threads = 1, .cpus = {}});
  ReactorPool channel_reactors({.threads = 1, .cpus = {}});
  ChannelOptions options;
  options.reactors = &channel_reactors;
  auto channel = NewChannel(options);
  TestService::Stub stub(channel);

  ClientContext context;
  SimpleRequest request;
  request.set_response_size(3000);
  SimpleResponse response;
  const Status status = RunOn(client_reactors.reactor(0),
                              UnaryCallAwaitable(&stub, &context, request, &response));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.ByteSizeLong(), 3000u);
  channel.reset();
}

TEST_P(UnaryTest, AwaitableCallOnTheChannelsOwnReactor) {
  StartServer();
  ReactorPool reactors({.threads = 1, .cpus = {}});
  ChannelOptions options;
  options.reactors = &reactors;
  auto channel = NewChannel(options);
  TestService::Stub stub(channel);

  for (int i = 0; i < 3; ++i) {
    ClientContext context;
    SimpleRequest request;
    request.set_response_size(100 * i);
    SimpleResponse response;
    const Status status =
        RunOn(reactors.reactor(0), UnaryCallAwaitable(&stub, &context, request, &response));
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(response.ByteSizeLong(), 100u * i);
  }
  channel.reset();
}

TEST_P(UnaryTest, CallbackCompletionRunsOnce) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  ClientContext context;
  const SimpleRequest request = AskingForResponseOf(5000);
  SimpleResponse response;
  std::promise<Status> done;
  std::atomic<int> completions{0};
  stub_->UnaryCall(context, request, &response, [&done, &completions](Status status) {
    completions.fetch_add(1);
    done.set_value(std::move(status));
  });
  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(kMustComplete), std::future_status::ready);
  const Status status = future.get();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.ByteSizeLong(), 5000u);
  stub_.reset();
  channel_.reset();  // every completion has run once the channel is gone
  EXPECT_EQ(completions.load(), 1);
}

TEST_P(UnaryTest, ManyConcurrentCallsOnOneChannel) {
  TestServerSetup setup;
  setup.reactor_count = 2;
  ASSERT_NO_FATAL_FAILURE(SetUpStub(setup));
  TestService::Stub& stub = *stub_;

  constexpr int kCalls = 64;
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    std::promise<Status> done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    call->request = RequestOfSize(static_cast<size_t>(i) * 700 + 100, i * 900);
    calls.push_back(std::move(call));
  }
  for (auto& call : calls) {
    stub.UnaryCall(call->context, call->request, &call->response,
                   [c = call.get()](Status status) { c->done.set_value(std::move(status)); });
  }
  for (int i = 0; i < kCalls; ++i) {
    auto future = calls[i]->done.get_future();
    ASSERT_EQ(future.wait_for(kMustComplete), std::future_status::ready);
    const Status status = future.get();
    EXPECT_TRUE(status.ok()) << i << ": " << status;
    EXPECT_EQ(calls[i]->response.ByteSizeLong(), static_cast<size_t>(i) * 900);
  }
}

TEST_P(UnaryTest, SequentialCallsReuseTheConnection) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  std::string first_peer;
  for (int i = 0; i < 200; ++i) {
    ClientContext context;
    SimpleRequest request = RequestOfSize(static_cast<size_t>(i % 7) * 1000 + 100, i * 10);
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << i << ": " << status;
    ASSERT_EQ(response.ByteSizeLong(), static_cast<size_t>(i) * 10);
    if (i == 0) first_peer = service_.peer();
    EXPECT_EQ(service_.peer(), first_peer) << "the channel opened a second connection";
  }
}

TEST_P(UnaryTest, CustomMetadataReachesTheHandler) {
  ChannelOptions options;
  options.user_agent_prefix = "my-app/1.2";
  ASSERT_NO_FATAL_FAILURE(SetUpStub({}, options));
  TestService::Stub& stub = *stub_;

  ClientContext context;
  context.AddMetadata("x-ascii", "hello, world ~!");
  context.AddMetadata("x-data-bin", kBinaryValue);
  context.AddMetadata("x-empty-bin", "");
  context.AddMetadata("x-repeated", "one");
  context.AddMetadata("x-repeated", "two");
  context.AddMetadata("x-repeated", "three");
  context.AddMetadata("x-repeated-bin", std::string("\x00", 1));
  context.AddMetadata("x-repeated-bin", std::string("\xff\xff", 2));
  SimpleRequest request;
  SimpleResponse response;
  const Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;

  const MetadataEntries seen = service_.metadata();
  EXPECT_THAT(ValuesOf(seen, "x-ascii"), ElementsAre("hello, world ~!"));
  EXPECT_THAT(ValuesOf(seen, "x-data-bin"), ElementsAre(kBinaryValue));
  EXPECT_THAT(ValuesOf(seen, "x-empty-bin"), ElementsAre(""));
  EXPECT_THAT(ValuesOf(seen, "x-repeated"), ElementsAre("one", "two", "three"));
  EXPECT_THAT(ValuesOf(seen, "x-repeated-bin"),
              ElementsAre(std::string("\x00", 1), std::string("\xff\xff", 2)));
  const std::vector<std::string> user_agent = ValuesOf(seen, "user-agent");
  ASSERT_EQ(user_agent.size(), 1u);
  EXPECT_THAT(user_agent[0], StartsWith("my-app/1.2 rill-cpp/"));
  // Reserved and pseudo headers are not metadata.
  for (const auto& [key, value] : seen) {
    EXPECT_FALSE(key.starts_with(":")) << key;
    EXPECT_NE(key, "content-type");
    EXPECT_NE(key, "te");
    EXPECT_NE(key, "grpc-timeout");
  }
}

TEST_P(UnaryTest, InitialAndTrailingMetadataReachTheClient) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;

  ClientContext context;
  context.AddMetadata("x-echo-initial-a", "alpha");
  context.AddMetadata("x-echo-initial-bin", kBinaryValue);
  context.AddMetadata("x-echo-trailing-b", "beta");
  context.AddMetadata("x-echo-trailing-b", "gamma");
  context.AddMetadata("x-echo-trailing-bin", kBinaryValue);
  SimpleRequest request;
  request.set_response_size(50);
  SimpleResponse response;
  const Status status = stub.UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;

  const MetadataEntries initial = CopyEntries(context.initial_metadata());
  const MetadataEntries trailing = CopyEntries(context.trailing_metadata());
  EXPECT_THAT(ValuesOf(initial, "x-echo-initial-a"), ElementsAre("alpha"));
  EXPECT_THAT(ValuesOf(initial, "x-echo-initial-bin"), ElementsAre(kBinaryValue));
  EXPECT_THAT(ValuesOf(initial, "x-echo-trailing-b"), ElementsAre());
  EXPECT_THAT(ValuesOf(trailing, "x-echo-trailing-b"), ElementsAre("beta", "gamma"));
  EXPECT_THAT(ValuesOf(trailing, "x-echo-trailing-bin"), ElementsAre(kBinaryValue));
  EXPECT_THAT(ValuesOf(trailing, "x-echo-initial-a"), ElementsAre());
  // The status is not metadata.
  EXPECT_THAT(ValuesOf(trailing, "grpc-status"), ElementsAre());
  EXPECT_THAT(ValuesOf(initial, "content-type"), ElementsAre());
}

TEST_P(UnaryTest, ErrorStatusKeepsInitialMetadataApartFromTrailers) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;

  ClientContext context;
  context.AddMetadata("x-echo-initial-a", "alpha");
  context.AddMetadata("x-echo-trailing-b", "beta");
  const SimpleRequest request = RequestForStatus(StatusCode::kNotFound, "no such thing");
  SimpleResponse response;
  const Status status = stub.UnaryCall(context, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no such thing");
  // Initial metadata the handler set goes out as response headers even though the call
  // failed (as libgrpc++ and grpc-go send it); the trailers carry the status and the trailing
  // metadata.
  const MetadataEntries initial = CopyEntries(context.initial_metadata());
  const MetadataEntries trailing = CopyEntries(context.trailing_metadata());
  EXPECT_THAT(ValuesOf(initial, "x-echo-initial-a"), ElementsAre("alpha"));
  EXPECT_THAT(ValuesOf(trailing, "x-echo-initial-a"), ElementsAre());
  EXPECT_THAT(ValuesOf(trailing, "x-echo-trailing-b"), ElementsAre("beta"));
}

TEST_P(UnaryTest, HandlerSendsInitialMetadataEarly) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    ASSERT_TRUE(stub.CacheableUnaryCall(context, request, &response).ok());
    const MetadataEntries initial = CopyEntries(context.initial_metadata());
    EXPECT_THAT(ValuesOf(initial, "x-early"), ElementsAre("sent"));
    EXPECT_THAT(ValuesOf(initial, "x-late"), ElementsAre());
    EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-trailing"),
                ElementsAre("sent"));
  }
  {
    // Headers already went out, so an error status comes in real trailers (not trailers-only):
    // initial and trailing metadata stay apart.
    ClientContext context;
    const SimpleRequest request = RequestForStatus(StatusCode::kAborted, "changed my mind");
    SimpleResponse response;
    const Status status = stub.CacheableUnaryCall(context, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kAborted);
    EXPECT_EQ(status.message(), "changed my mind");
    EXPECT_THAT(ValuesOf(CopyEntries(context.initial_metadata()), "x-early"), ElementsAre("sent"));
    EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-trailing"),
                ElementsAre("sent"));
    EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-early"), ElementsAre());
  }
}

TEST_P(UnaryTest, ContextIsReusableAfterReset) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  ClientContext context;
  for (int i = 0; i < 3; ++i) {
    context.Reset();
    context.AddMetadata("x-echo-trailing-i", std::to_string(i));
    SimpleRequest request;
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_THAT(ValuesOf(CopyEntries(context.trailing_metadata()), "x-echo-trailing-i"),
                ElementsAre(std::to_string(i)));
    EXPECT_THAT(ValuesOf(service_.metadata(), "x-echo-trailing-i"),
                ElementsAre(std::to_string(i)));
  }
}

TEST_P(UnaryTest, EveryStatusCodeWithMessageAndDetails) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;

  for (int code = 1; code <= kMaxStatusCode; ++code) {
    ClientContext context;
    context.AddMetadata("x-details-bin", kDetails);
    SimpleRequest request;
    // Needs percent-encoding: '%', non-ASCII bytes, a newline.
    const std::string message = "code " + std::to_string(code) + ": 100% sûr\nsecond line";
    request.mutable_response_status()->set_code(code);
    request.mutable_response_status()->set_message(message);
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    EXPECT_EQ(static_cast<int>(status.code()), code);
    EXPECT_EQ(status.message(), message);
    EXPECT_EQ(status.details(), kDetails) << code;
  }
  // A status code outside gRPC's range reaches the client as UNKNOWN.
  ClientContext context;
  SimpleRequest request;
  request.mutable_response_status()->set_code(42);
  SimpleResponse response;
  EXPECT_EQ(stub.UnaryCall(context, request, &response).code(), StatusCode::kUnknown);
  ExpectGoodCall(stub);
}

TEST_P(UnaryTest, UnimplementedMethodsAnswerUnimplemented) {
  StartServer();
  auto channel = NewChannel();
  {
    // Generated but not overridden.
    TestService::Stub stub(channel);
    ClientContext context;
    Empty request;
    Empty response;
    const Status status = stub.UnimplementedCall(context, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
    EXPECT_THAT(std::string(status.message()), HasSubstr("UnimplementedCall"));
  }
  {
    // A service the server does not have.
    grpc::testing::UnimplementedService::Stub stub(channel);
    ClientContext context;
    Empty request;
    Empty response;
    const Status status = stub.UnimplementedCall(context, request, &response);
    EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  }
  TestService::Stub stub(channel);
  ExpectGoodCall(stub);
}

// Sizes in serialized bytes; every one must arrive intact in both directions. No protobuf
// message serializes to exactly 1 byte (a field takes a tag and a value): 2 bytes is the smallest
// non-empty one, and PayloadBodiesOfOneByteAndUp covers 1 byte of payload.
TEST_P(UnaryTest, MessageSizesUpToTheDefaultLimit) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  for (size_t size : {size_t{0}, size_t{2}, size_t{7}, size_t{1023}, size_t{1024}, size_t{1025},
                      size_t{16 * 1024}, size_t{64 * 1024}, size_t{64 * 1024 + 3},
                      size_t{1024 * 1024}, kDefaultLimit}) {
    ClientContext context;
    // The response is as large as the request.
    const SimpleRequest request = RequestOfSize(size, static_cast<int32_t>(size));
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << size << ": " << status;
    EXPECT_EQ(response.ByteSizeLong(), size);
    EXPECT_EQ(service_.request_size(), request.ByteSizeLong());
  }
}

// The payload bytes themselves arrive intact, whatever their value.
TEST_P(UnaryTest, PayloadBodiesOfOneByteAndUp) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  for (size_t size : {size_t{1}, size_t{1024}, size_t{64 * 1024}, size_t{1024 * 1024}}) {
    ClientContext context;
    SimpleRequest request;
    std::string body(size, '\0');
    for (size_t i = 0; i < size; ++i) body[i] = static_cast<char>((i * 131 + size) & 0xff);
    request.mutable_payload()->set_body(body);
    SimpleResponse response;
    const Status status = stub.UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << size << ": " << status;
    EXPECT_EQ(service_.request_body(), body) << size;
  }
}

TEST_P(UnaryTest, RequestOverTheServerLimitIsResourceExhausted) {
  ASSERT_NO_FATAL_FAILURE(SetUpStub());
  TestService::Stub& stub = *stub_;
  ExpectLimitHolds(stub, RequestOfSize(kDefaultLimit), RequestOfSize(kDefaultLimit + 1), &service_);
}

TEST_P(UnaryTest, ConfiguredServerReceiveLimit) {
  TestServerSetup setup;
  setup.options.max_receive_message_size = 64 * 1024;
  ASSERT_NO_FATAL_FAILURE(SetUpStub(setup));
  TestService::Stub& stub = *stub_;
  ExpectLimitHolds(stub, RequestOfSize(64 * 1024), RequestOfSize(64 * 1024 + 1));
}

TEST_P(UnaryTest, ResponseOverTheClientLimitIsResourceExhausted) {
  StartServer();
  for (size_t limit : {size_t{64 * 1024}, kDefaultLimit}) {
    SCOPED_TRACE(limit);
    ChannelOptions options;
    options.max_receive_message_size = limit;
    auto channel = NewChannel(options);
    TestService::Stub stub(channel);
    ExpectLimitHolds(stub, AskingForResponseOf(limit), AskingForResponseOf(limit + 1));
  }
}

TEST_P(UnaryTest, ClientSendLimitFailsLocally) {
  ChannelOptions options;
  options.max_send_message_size = 1000;
  ASSERT_NO_FATAL_FAILURE(SetUpStub({}, options));
  TestService::Stub& stub = *stub_;
  ExpectLimitHolds(stub, RequestOfSize(1000), RequestOfSize(1001), &service_);
}

TEST_P(UnaryTest, ServerSendLimitFailsTheCall) {
  TestServerSetup setup;
  setup.options.max_send_message_size = 1000;
  ASSERT_NO_FATAL_FAILURE(SetUpStub(setup));
  TestService::Stub& stub = *stub_;
  ExpectLimitHolds(stub, AskingForResponseOf(1000), AskingForResponseOf(1001), nullptr,
                   {{"x-echo-trailing-t", "kept"}});
}

INSTANTIATE_TEST_SUITE_P(Transports, UnaryTest, kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, UnaryTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
