// Payloads carried outside protobuf (rill/payload_field.h) through generated stubs, rill ↔ rill
// over loopback TCP: the bytes arrive intact as views of the received buffers and never enter a
// protobuf string, the wire stays ordinary protobuf (a side that does not use payloads sees a
// normal message), and compression, streams and size limits apply to the whole message.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/mem/buffer_pool.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"

namespace rill::test {
namespace {

using grpc::testing::Payload;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr PayloadField kRequestBody{SimpleRequest::kPayloadFieldNumber, Payload::kBodyFieldNumber};
constexpr PayloadField kResponseBody{SimpleResponse::kPayloadFieldNumber,
                                     Payload::kBodyFieldNumber};
constexpr PayloadField kStreamRequestBody{StreamingOutputCallRequest::kPayloadFieldNumber,
                                          Payload::kBodyFieldNumber};
constexpr PayloadField kStreamResponseBody{StreamingOutputCallResponse::kPayloadFieldNumber,
                                           Payload::kBodyFieldNumber};

std::string Pattern(size_t size, int seed = 0) {
  std::string s(size, '\0');
  for (size_t i = 0; i < size; ++i) s[i] = static_cast<char>(i * 131 + seed);
  return s;
}

// FNV-1a of the bytes of `slice`, read in place (no copy to count).
uint64_t HashOf(const BufferSlice& slice) {
  uint64_t hash = 14695981039346656037u;
  for (const Buffer& buffer : slice) {
    for (std::byte b : buffer.span()) hash = (hash ^ static_cast<uint8_t>(b)) * 1099511628211u;
  }
  return hash;
}

uint64_t HashOf(const std::string& bytes) {
  uint64_t hash = 14695981039346656037u;
  for (char c : bytes) hash = (hash ^ static_cast<uint8_t>(c)) * 1099511628211u;
  return hash;
}

BufferSlice SliceOf(const std::string& bytes) {
  return BufferSlice(Buffer::Copy(bytes, DefaultBufferPool()));
}

// What a handler saw of one request.
struct Seen {
  size_t message_body = 0;  // bytes of request.payload().body()
  size_t payload_size = 0;
  uint64_t payload_hash = 0;  // HashOf the payload
  int type = 0;

  [[nodiscard]] bool PayloadIs(const std::string& bytes) const {
    return payload_size == bytes.size() && payload_hash == HashOf(bytes);
  }
};

// Echoes each request's payload as its response's, without a copy; a request without one is
// answered with `response_size` pattern bytes. The response message keeps the request's payload
// type and names the payload size in `username`.
class PayloadService final : public grpc::testing::TestService::Service {
 public:
  PayloadService() {
    CarryPayload("UnaryCall", kRequestBody, kResponseBody);
    CarryPayload("FullDuplexCall", kStreamRequestBody, kStreamResponseBody);
  }

  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    Record(context, request.payload());
    BufferSlice payload = context.TakeRequestPayload();
    if (payload.empty() && request.response_size() > 0) {
      payload = SliceOf(Pattern(static_cast<size_t>(request.response_size()), 5));
    }
    response.set_username(std::to_string(payload.size()));
    response.mutable_payload()->set_type(request.payload().type());
    context.SetResponsePayload(std::move(payload));
    return Status();
  }

  Awaitable<Status> FullDuplexCall(
      ServerContext& context,
      ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>& stream)
      override {
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      Record(context, request.payload());
      StreamingOutputCallResponse response;
      response.mutable_payload()->set_type(request.payload().type());
      context.SetResponsePayload(context.TakeRequestPayload());
      if (!co_await stream.Write(response)) break;
    }
    co_return Status();
  }

  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Record(const ServerContext& context, const Payload& payload) {
    std::lock_guard lock(mu_);
    seen_.push_back({payload.body().size(), context.request_payload().size(),
                     HashOf(context.request_payload()), payload.type()});
  }

  std::mutex mu_;
  std::vector<Seen> seen_;
};

// The same service as a user writes it without payloads: bodies in the messages.
class MessageService final : public grpc::testing::TestService::Service {
 public:
  Status UnaryCall(ServerContext&, const SimpleRequest& request,
                   SimpleResponse& response) override {
    {
      std::lock_guard lock(mu_);
      bodies_.push_back(request.payload().body());
    }
    *response.mutable_payload() = request.payload();
    return Status();
  }
  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

class PayloadTest : public ServerTest<PayloadService> {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
    ASSERT_NO_FATAL_FAILURE(Connect());
  }

  // One unary call carrying `body` both ways as a payload.
  void ExpectEcho(const std::string& body, const std::string& compression = "") {
    ClientContext context;
    if (!compression.empty()) context.set_compression(compression);
    context.SetRequestPayload(kRequestBody, SliceOf(body));
    context.ReceivePayload(kResponseBody);
    SimpleRequest request;
    request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
    SimpleResponse response;
    const Status status = stub_->UnaryCall(context, request, &response);
    ASSERT_TRUE(status.ok()) << status;
    EXPECT_EQ(context.response_payload().size(), body.size());
    EXPECT_TRUE(context.response_payload().Materialize() == body);
    EXPECT_TRUE(response.payload().body().empty());  // never in a protobuf string
    EXPECT_EQ(response.payload().type(), grpc::testing::COMPRESSABLE);
    EXPECT_EQ(response.username(), std::to_string(body.size()));
    if (!compression.empty()) {
      EXPECT_EQ(context.response_compressed(), body.size() > 100);
    }
    const Seen last = service_.seen().back();
    EXPECT_EQ(last.message_body, 0u);
    EXPECT_TRUE(last.PayloadIs(body));
    EXPECT_EQ(last.type, grpc::testing::COMPRESSABLE);
  }
};

TEST_F(PayloadTest, UnaryCarriesPayloadsBothWays) {
  for (size_t size : {size_t{1}, size_t{127}, size_t{128}, size_t{70000}, size_t{1} << 20}) {
    SCOPED_TRACE(size);
    ExpectEcho(Pattern(size));
  }
}

TEST_F(PayloadTest, CompressedMessagesCarryPayloads) {
  for (const char* encoding : {"gzip", "deflate", "zstd"}) {
    SCOPED_TRACE(encoding);
    ExpectEcho(std::string(200000, 'z') + Pattern(1000), encoding);
  }
}

TEST_F(PayloadTest, LargeUnaryCopiesAtMostATenthOfItsBytes) {
  // Client and server share this process, so the counter sees both ends of both directions.
  constexpr size_t kSize = 1 << 20;
  constexpr int kCalls = kSanitized ? 4 : 20;
  const std::string body = Pattern(kSize);
  ExpectEcho(body);  // connection warm, windows grown
  const uint64_t before = CopiedPayloadBytes();
  for (int i = 0; i < kCalls; ++i) {
    ClientContext context;
    context.SetRequestPayload(kRequestBody, SliceOf(body));  // (this copy is the test's own)
    context.ReceivePayload(kResponseBody);
    SimpleResponse response;
    ASSERT_TRUE(stub_->UnaryCall(context, SimpleRequest(), &response).ok());
    ASSERT_EQ(context.response_payload().size(), kSize);
    ASSERT_EQ(HashOf(context.response_payload()), HashOf(body));
  }
  const double copied = static_cast<double>(CopiedPayloadBytes() - before) -
                        static_cast<double>(kCalls) * kSize;  // SliceOf's copies
  const double per_byte = copied / (2.0 * kCalls * kSize);
  std::printf("[ measure  ] unary 1 MiB each way: %.4f copies per payload byte\n", per_byte);
  RecordProperty("copies_per_byte", std::to_string(per_byte));
  EXPECT_LE(per_byte, 0.1);
}

TEST_F(PayloadTest, ClientWithoutPayloadsSeesOrdinaryMessages) {
  // The server takes the body out of the request and puts its payload into the response; a
  // client that names no payload field sends and receives the body in the messages.
  ClientContext context;
  SimpleRequest request;
  request.mutable_payload()->set_body(Pattern(5000, 1));
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  EXPECT_TRUE(response.payload().body() == Pattern(5000, 1));
  EXPECT_TRUE(context.response_payload().empty());
  EXPECT_EQ(service_.seen().back().message_body, 0u);
  EXPECT_TRUE(service_.seen().back().PayloadIs(Pattern(5000, 1)));
}

TEST_F(PayloadTest, PayloadReplacesWhatTheMessageHolds) {
  ClientContext context;
  context.SetRequestPayload(kRequestBody, SliceOf("the payload"));
  SimpleRequest request;
  request.mutable_payload()->set_body("the message's own body");
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  EXPECT_TRUE(service_.seen().back().PayloadIs("the payload"));
  EXPECT_EQ(response.payload().body(), "the payload");  // no ReceivePayload: in the message
}

TEST_F(PayloadTest, AbsentPayloadIsEmptyAndAddsNothing) {
  ClientContext context;
  context.ReceivePayload(kResponseBody);
  SimpleRequest request;
  request.set_response_size(0);
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  EXPECT_TRUE(context.response_payload().empty());
  EXPECT_EQ(response.username(), "0");
  EXPECT_EQ(service_.seen().back().payload_size, 0u);
  // A payload the server makes itself.
  ClientContext second;
  second.ReceivePayload(kResponseBody);
  request.set_response_size(3000);
  ASSERT_TRUE(stub_->UnaryCall(second, request, &response).ok());
  EXPECT_TRUE(second.response_payload().Materialize() == Pattern(3000, 5));
}

TEST_F(PayloadTest, BidiStreamCarriesAPayloadPerMessage) {
  ClientContext context;
  context.ReceivePayload(kStreamResponseBody);
  auto stream = stub_->FullDuplexCall(context);
  const size_t sizes[] = {10, 0, 100000, 1, 65536};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    SCOPED_TRACE(i);
    context.SetRequestPayload(kStreamRequestBody, SliceOf(Pattern(sizes[i], static_cast<int>(i))));
    StreamingOutputCallRequest request;
    request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
    ASSERT_TRUE(stream->BlockingWrite(request));
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingRead(&response));
    EXPECT_TRUE(context.response_payload().Materialize() ==
                Pattern(sizes[i], static_cast<int>(i)));
    EXPECT_TRUE(response.payload().body().empty());
    EXPECT_EQ(response.payload().type(), grpc::testing::COMPRESSABLE);
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  EXPECT_TRUE(stream->BlockingFinish().ok());
}

TEST_F(PayloadTest, LimitsCountThePayload) {
  // Sending: the client's limit applies to the message with its payload.
  ChannelOptions options;
  options.max_send_message_size = 1000;
  auto small_channel = NewChannel(options);
  ASSERT_NE(small_channel, nullptr);
  grpc::testing::TestService::Stub small_stub(small_channel);
  ClientContext context;
  context.SetRequestPayload(kRequestBody, SliceOf(Pattern(2000)));
  SimpleResponse response;
  Status status = small_stub.UnaryCall(context, SimpleRequest(), &response);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  // Receiving: the client's receive limit applies to the response with its payload.
  ChannelOptions receive;
  receive.max_receive_message_size = 1000;
  auto receive_channel = NewChannel(receive);
  ASSERT_NE(receive_channel, nullptr);
  grpc::testing::TestService::Stub receive_stub(receive_channel);
  ClientContext second;
  second.ReceivePayload(kResponseBody);
  SimpleRequest request;
  request.set_response_size(2000);
  status = receive_stub.UnaryCall(second, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
}

TEST(PayloadServiceTest, UnknownMethodThrows) {
  class Service final : public grpc::testing::TestService::Service {
   public:
    Service() { CarryPayload("NoSuchCall", kRequestBody, kResponseBody); }
  };
  EXPECT_THROW(Service(), std::invalid_argument);
}

class PayloadClientTest : public ServerTest<MessageService> {};

TEST_F(PayloadClientTest, ServerWithoutPayloadsSeesOrdinaryMessages) {
  ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
  ASSERT_NO_FATAL_FAILURE(Connect());
  ClientContext context;
  context.SetRequestPayload(kRequestBody, SliceOf(Pattern(300000)));
  context.ReceivePayload(kResponseBody);
  SimpleRequest request;
  request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  ASSERT_EQ(service_.bodies().size(), 1u);
  EXPECT_TRUE(service_.bodies()[0] == Pattern(300000));
  EXPECT_TRUE(context.response_payload().Materialize() == Pattern(300000));
  EXPECT_TRUE(response.payload().body().empty());
  EXPECT_EQ(response.payload().type(), grpc::testing::COMPRESSABLE);
}

}  // namespace
}  // namespace rill::test
