// Stats handlers on both sides of rill ↔ rill calls: every event in order for unary and each
// streaming kind, for calls that succeed, fail, are cancelled or run out of time; payload views
// a handler keeps hold the exact bytes and go back to the pool once it lets go; handlers never
// run inside the HTTP/2 session and an exception from one harms nothing.
#include "rill/stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/mem/buffer_slice.h"
#include "rill/metadata.h"
#include "rill/server_context.h"
#include "rill/status.h"
#include "src/http2/http2_session.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"
#include "tests/testing/leak_check.h"

namespace rill::test {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// What one handler saw of one call.
struct CallRecord {
  bool client = false;
  std::string method;
  std::vector<std::string> events;
  StatusCode end_code = StatusCode::kOk;
  std::vector<StatusCode> trailer_codes;
  std::vector<bool> trailers_only;
  std::vector<std::pair<std::string, std::string>> in_header_metadata;
  std::string peer;
  int64_t timeout_ns = -1;
  std::vector<std::string> out_payloads;  // materialized at the event
  std::vector<std::string> in_payloads;
  std::vector<BufferSlice> kept;  // views kept for the whole call (and after)
  std::vector<size_t> wire_sizes;
  bool compressed_seen = false;
  bool ended = false;
  bool inside_session = false;  // an event arrived inside an HTTP/2 session step
};

class RecordingHandler final : public StatsHandler {
 public:
  explicit RecordingHandler(bool keep_payloads = false) : keep_payloads_(keep_payloads) {}

  void* TagCall(const CallInfo& info) override {
    std::lock_guard lock(mu_);
    CallRecord& record = records_.emplace_back();
    record.client = info.client;
    record.method = std::string(info.method);
    return &record;
  }

  void HandleCall(void* tag, const CallEvent& event) override {
    auto* record = static_cast<CallRecord*>(tag);
    std::lock_guard lock(mu_);
    if (internal::InsideHttp2Session()) record->inside_session = true;
    record->events.emplace_back(CallEventTypeName(event.type));
    switch (event.type) {
      case CallEventType::kInHeaders:
      case CallEventType::kOutHeaders:
        if (event.client == (event.type == CallEventType::kOutHeaders)) {
          record->peer = std::string(event.peer);
          record->timeout_ns = event.timeout.count();
        }
        if (event.type == CallEventType::kInHeaders && event.metadata != nullptr) {
          for (const auto& [k, v] : *event.metadata) {
            record->in_header_metadata.emplace_back(std::string(k), std::string(v));
          }
        }
        break;
      case CallEventType::kOutMessage:
      case CallEventType::kInMessage: {
        const bool out = event.type == CallEventType::kOutMessage;
        std::string bytes = event.payload != nullptr ? event.payload->Materialize() : "<none>";
        EXPECT_EQ(bytes.size(), event.uncompressed_size);
        EXPECT_EQ(event.wire_size, event.compressed_size + 5);
        if (event.compressed) record->compressed_seen = true;
        record->wire_sizes.push_back(event.wire_size);
        (out ? record->out_payloads : record->in_payloads).push_back(std::move(bytes));
        if (keep_payloads_ && event.payload != nullptr) {
          record->kept.push_back(event.payload->Ref());
        }
        break;
      }
      case CallEventType::kOutTrailers:
      case CallEventType::kInTrailers:
        record->trailer_codes.push_back(event.status->code());
        record->trailers_only.push_back(event.trailers_only);
        break;
      case CallEventType::kEnd:
        record->end_code = event.status->code();
        record->ended = true;
        EXPECT_LE(event.begin_time, event.time);
        cv_.notify_all();
        break;
      case CallEventType::kBegin:
      case CallEventType::kHalfClose:
        break;
    }
  }

  void* TagConnection(const ConnectionInfo& info) override {
    std::lock_guard lock(mu_);
    connection_events_.push_back(std::string(info.client ? "client" : "server") + " tag");
    return nullptr;
  }
  void HandleConnection(void*, const ConnectionEvent& event) override {
    std::lock_guard lock(mu_);
    connection_events_.push_back(std::string(event.client ? "client" : "server") +
                                 (event.type == ConnectionEventType::kBegin ? " begin" : " end"));
  }

  // Waits until `n` calls ended; returns a copy of every record (kept views stay here).
  std::vector<CallRecord*> WaitForEnded(size_t n) {
    std::unique_lock lock(mu_);
    const bool done = cv_.wait_for(lock, kMustComplete, [&] {
      size_t ended = 0;
      for (const auto& r : records_) ended += r.ended ? 1 : 0;
      return ended >= n;
    });
    EXPECT_TRUE(done) << "calls did not end";
    std::vector<CallRecord*> out;
    for (auto& r : records_) out.push_back(&r);
    return out;
  }
  CallRecord* Find(bool client) {
    std::lock_guard lock(mu_);
    for (auto& r : records_) {
      if (r.client == client) return &r;
    }
    return nullptr;
  }
  void ReleaseKept() {
    std::lock_guard lock(mu_);
    for (auto& r : records_) r.kept.clear();
  }
  std::vector<std::string> connection_events() {
    std::lock_guard lock(mu_);
    return connection_events_;
  }

 private:
  const bool keep_payloads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<CallRecord> records_;
  std::vector<std::string> connection_events_;
};

// Unary: a response of request.response_size() bytes or the requested status; with
// fill_server_stats, a coroutine that waits out the deadline. Streaming methods as in interop.
class Service final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    if (request.fill_server_id()) return detail::RunAsyncHandler(context);
    if (request.has_response_status()) {
      return Status(StatusCodeFromInt(request.response_status().code()),
                    request.response_status().message());
    }
    context.AddInitialMetadata("x-initial", "i");
    context.AddTrailingMetadata("x-trailing", "t");
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(request.response_size()), 'r');
    return Status();
  }
  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest&,
                                   SimpleResponse&) override {
    asio::steady_timer timer(context.io_context(), std::chrono::seconds(20));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    co_return Status(StatusCode::kCancelled, "woken");
  }

  Awaitable<Status> StreamingInputCall(ServerContext&,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    return SumRequestPayloads(&reader, &response);
  }

  Awaitable<Status> StreamingOutputCall(ServerContext&, const StreamingOutputCallRequest& request,
                                        ServerWriter<StreamingOutputCallResponse>& writer) override {
    return WriteRequestedResponses(&request, &writer, 'o');
  }

  Awaitable<Status> FullDuplexCall(ServerContext&, FullDuplexServerStream& stream) override {
    return AnswerEachRequest(&stream, 'd');
  }
};

StreamingOutputCallRequest AskFor(std::initializer_list<int32_t> sizes) {
  StreamingOutputCallRequest request;
  for (int32_t size : sizes) request.add_response_parameters()->set_size(size);
  return request;
}

class StatsTest : public ServerTest<Service> {
 protected:
  void Start(bool keep_payloads = false) {
    server_stats_ = std::make_shared<RecordingHandler>(keep_payloads);
    client_stats_ = std::make_shared<RecordingHandler>(keep_payloads);
    TestServerSetup setup;
    setup.stats_handlers.push_back(server_stats_);
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp, setup));
    ChannelOptions options;
    options.stats_handlers.push_back(client_stats_);
    OpenChannel(options);
  }
  // The one call each side saw, once both ended.
  std::pair<CallRecord*, CallRecord*> OneCall() {
    client_stats_->WaitForEnded(1);
    server_stats_->WaitForEnded(1);
    CallRecord* client = client_stats_->Find(true);
    CallRecord* server = server_stats_->Find(false);
    EXPECT_NE(client, nullptr);
    EXPECT_NE(server, nullptr);
    if (client != nullptr) {
      EXPECT_FALSE(client->inside_session);
    }
    if (server != nullptr) {
      EXPECT_FALSE(server->inside_session);
    }
    return {client, server};
  }

  std::shared_ptr<RecordingHandler> server_stats_;
  std::shared_ptr<RecordingHandler> client_stats_;
};

TEST_F(StatsTest, UnaryEventsInOrderOnBothSides) {
  Start();
  ClientContext context;
  context.AddMetadata("x-request", "q");
  context.set_timeout(std::chrono::seconds(30));
  SimpleRequest request;
  request.set_response_size(10);
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(client->method, "/grpc.testing.TestService/UnaryCall");
  EXPECT_EQ(server->method, "/grpc.testing.TestService/UnaryCall");
  EXPECT_THAT(client->events, ElementsAre("begin", "out_headers", "out_message", "half_close",
                                          "in_headers", "in_message", "in_trailers", "end"));
  EXPECT_THAT(server->events, ElementsAre("begin", "in_headers", "in_message", "half_close",
                                          "out_headers", "out_message", "out_trailers", "end"));
  EXPECT_THAT(server->in_header_metadata,
              ::testing::Contains(std::pair<std::string, std::string>("x-request", "q")));
  EXPECT_THAT(client->in_header_metadata,
              ElementsAre(std::pair<std::string, std::string>("x-initial", "i")));
  EXPECT_GT(server->timeout_ns, 0);
  EXPECT_GT(client->timeout_ns, 0);
  EXPECT_FALSE(server->peer.empty());
  EXPECT_FALSE(client->peer.empty());
  EXPECT_EQ(client->out_payloads, server->in_payloads);
  EXPECT_EQ(client->in_payloads, server->out_payloads);
  ASSERT_EQ(server->in_payloads.size(), 1u);
  EXPECT_EQ(server->in_payloads[0], request.SerializeAsString());
  EXPECT_EQ(client->in_payloads[0], response.SerializeAsString());
  EXPECT_THAT(server->trailers_only, ElementsAre(false));
  EXPECT_EQ(client->end_code, StatusCode::kOk);
  EXPECT_EQ(server->end_code, StatusCode::kOk);
}

TEST_F(StatsTest, FailedUnaryIsTrailersOnly) {
  Start();
  ClientContext context;
  const SimpleRequest request = RequestForStatus(StatusCode::kNotFound);
  SimpleResponse response;
  EXPECT_EQ(stub_->UnaryCall(context, request, &response).code(), StatusCode::kNotFound);
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events,
              ElementsAre("begin", "out_headers", "out_message", "half_close", "in_trailers",
                          "end"));
  EXPECT_THAT(server->events, ElementsAre("begin", "in_headers", "in_message", "half_close",
                                          "out_trailers", "end"));
  EXPECT_THAT(server->trailers_only, ElementsAre(true));
  EXPECT_THAT(client->trailers_only, ElementsAre(true));
  EXPECT_THAT(client->trailer_codes, ElementsAre(StatusCode::kNotFound));
  EXPECT_EQ(client->end_code, StatusCode::kNotFound);
  EXPECT_EQ(server->end_code, StatusCode::kNotFound);
}

TEST_F(StatsTest, DeadlineExceededUnary) {
  Start();
  ClientContext context;
  context.set_timeout(std::chrono::milliseconds(200));
  SimpleRequest request;
  request.set_fill_server_id(true);  // the coroutine that outlives the deadline
  SimpleResponse response;
  EXPECT_EQ(stub_->UnaryCall(context, request, &response).code(),
            StatusCode::kDeadlineExceeded);
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  // Whether the server's DEADLINE_EXCEEDED trailers reach the client before its own timer
  // fires is a race; either way the call ends with DEADLINE_EXCEEDED.
  std::vector<std::string> client_events = client->events;
  std::erase(client_events, "in_trailers");
  EXPECT_THAT(client_events,
              ElementsAre("begin", "out_headers", "out_message", "half_close", "end"));
  EXPECT_EQ(client->end_code, StatusCode::kDeadlineExceeded);
  std::vector<std::string> server_events = server->events;
  std::erase(server_events, "out_trailers");
  EXPECT_THAT(server_events,
              ElementsAre("begin", "in_headers", "in_message", "half_close", "end"));
  EXPECT_THAT(server->end_code, ::testing::AnyOf(StatusCode::kDeadlineExceeded,
                                                 StatusCode::kCancelled));
}

TEST_F(StatsTest, ClientStreamingEvents) {
  Start();
  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub_->StreamingInputCall(context, &response);
  for (int size : {1, 2000, 3}) {
    StreamingInputCallRequest request;
    request.mutable_payload()->mutable_body()->assign(static_cast<size_t>(size), 'c');
    ASSERT_TRUE(writer->BlockingWrite(request));
  }
  ASSERT_TRUE(writer->BlockingFinish().ok());
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events,
              ElementsAre("begin", "out_headers", "out_message", "out_message", "out_message",
                          "half_close", "in_headers", "in_message", "in_trailers", "end"));
  EXPECT_THAT(server->events,
              ElementsAre("begin", "in_headers", "in_message", "in_message", "in_message",
                          "half_close", "out_headers", "out_message", "out_trailers", "end"));
  EXPECT_EQ(client->out_payloads, server->in_payloads);
  EXPECT_EQ(client->in_payloads, server->out_payloads);
}

// Reads only what it asks for: kBegin and kEnd reach it always, message events here.
class SelectiveHandler final : public StatsHandler {
 public:
  explicit SelectiveHandler(CallEventMask mask) : mask_(mask) {}
  CallEventMask call_events() const override { return mask_; }
  void HandleCall(void*, const CallEvent& event) override {
    std::lock_guard lock(mu_);
    events_.emplace_back(CallEventTypeName(event.type));
    if (event.type == CallEventType::kEnd) {
      messages_sent_ = event.messages_sent;
      messages_received_ = event.messages_received;
      sent_bytes_ = event.sent_compressed_bytes;
      received_bytes_ = event.received_compressed_bytes;
      cv_.notify_all();
    }
  }
  // The events of the one call, once it ended.
  std::vector<std::string> WaitForEnd() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, kMustComplete, [&] {
      return !events_.empty() && events_.back() == "end";
    }));
    return events_;
  }
  uint32_t messages_sent_ = 0;
  uint32_t messages_received_ = 0;
  uint64_t sent_bytes_ = 0;
  uint64_t received_bytes_ = 0;

 private:
  const CallEventMask mask_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> events_;
};

TEST_F(StatsTest, HandlersSeeOnlyTheEventsTheyRead) {
  // The server has a handler that reads only kBegin and kEnd, and one that reads messages
  // too; the client only the first kind. Each sees what it asked for, and the end still
  // counts every message.
  auto bracket = std::make_shared<SelectiveHandler>(0);
  auto messages = std::make_shared<SelectiveHandler>(CallEventBit(CallEventType::kInMessage) |
                                                     CallEventBit(CallEventType::kOutMessage));
  auto client_bracket = std::make_shared<SelectiveHandler>(0);
  TestServerSetup setup;
  setup.services.push_back(&service_);
  setup.stats_handlers.push_back(bracket);
  setup.stats_handlers.push_back(messages);
  server_ = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server_, nullptr);
  ChannelOptions options;
  options.stats_handlers.push_back(client_bracket);
  channel_ = server_->NewChannel(options);
  ASSERT_NE(channel_, nullptr);
  stub_ = std::make_unique<TestService::Stub>(channel_);

  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  ASSERT_TRUE(stream->BlockingWrite(AskFor({3, 4})));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingWritesDone());
  ASSERT_TRUE(stream->BlockingFinish().ok());

  EXPECT_THAT(bracket->WaitForEnd(), ElementsAre("begin", "end"));
  EXPECT_THAT(messages->WaitForEnd(),
              ElementsAre("begin", "in_message", "out_message", "out_message", "end"));
  EXPECT_THAT(client_bracket->WaitForEnd(), ElementsAre("begin", "end"));
  EXPECT_EQ(bracket->messages_received_, 1u);
  EXPECT_EQ(bracket->messages_sent_, 2u);
  EXPECT_EQ(bracket->sent_bytes_, messages->sent_bytes_);
  EXPECT_GT(bracket->sent_bytes_, 7u);  // the two payloads and their framing
  EXPECT_EQ(client_bracket->messages_sent_, 1u);
  EXPECT_EQ(client_bracket->messages_received_, 2u);
  EXPECT_EQ(client_bracket->received_bytes_, bracket->sent_bytes_);
  EXPECT_EQ(client_bracket->sent_bytes_, bracket->received_bytes_);
}

TEST_F(StatsTest, ServerStreamingEventsAndFailureAfterMessages) {
  Start();
  ClientContext context;
  StreamingOutputCallRequest request = AskFor({5, 6000});
  request.mutable_response_status()->set_code(static_cast<int>(StatusCode::kDataLoss));
  auto reader = stub_->StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  while (reader->BlockingRead(&response)) {
  }
  EXPECT_EQ(reader->BlockingFinish().code(), StatusCode::kDataLoss);
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events,
              ElementsAre("begin", "out_headers", "out_message", "half_close", "in_headers",
                          "in_message", "in_message", "in_trailers", "end"));
  EXPECT_THAT(server->events,
              ElementsAre("begin", "in_headers", "in_message", "half_close", "out_headers",
                          "out_message", "out_message", "out_trailers", "end"));
  EXPECT_EQ(client->end_code, StatusCode::kDataLoss);
  EXPECT_EQ(server->end_code, StatusCode::kDataLoss);
  EXPECT_EQ(client->in_payloads, server->out_payloads);
}

TEST_F(StatsTest, BidiEventsInOrder) {
  Start();
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(stream->BlockingWrite(AskFor({100 * i})));
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingRead(&response));
  }
  ASSERT_TRUE(stream->BlockingWritesDone());
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream->BlockingRead(&response));
  ASSERT_TRUE(stream->BlockingFinish().ok());
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events,
              ElementsAre("begin", "out_headers", "out_message", "in_headers", "in_message",
                          "out_message", "in_message", "out_message", "in_message",
                          "half_close", "in_trailers", "end"));
  EXPECT_THAT(server->events,
              ElementsAre("begin", "in_headers", "in_message", "out_headers", "out_message",
                          "in_message", "out_message", "in_message", "out_message",
                          "half_close", "out_trailers", "end"));
  EXPECT_EQ(client->out_payloads, server->in_payloads);
  EXPECT_EQ(client->in_payloads, server->out_payloads);
}

TEST_F(StatsTest, CancelledBidi) {
  Start();
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  ASSERT_TRUE(stream->BlockingWrite(AskFor({7})));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  context.TryCancel();
  EXPECT_EQ(stream->BlockingFinish().code(), StatusCode::kCancelled);
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events, ElementsAre("begin", "out_headers", "out_message", "in_headers",
                                          "in_message", "end"));
  EXPECT_THAT(server->events, ElementsAre("begin", "in_headers", "in_message", "out_headers",
                                          "out_message", "end"));
  EXPECT_EQ(client->end_code, StatusCode::kCancelled);
  EXPECT_EQ(server->end_code, StatusCode::kCancelled);
}

TEST_F(StatsTest, UnknownMethodEndsWithUnimplementedOnBothSides) {
  Start();
  // A method the server does not serve: the generated stub of another service.
  grpc::testing::UnimplementedService::Stub other(channel_);
  ClientContext context;
  grpc::testing::Empty request;
  grpc::testing::Empty response;
  EXPECT_EQ(other.UnimplementedCall(context, request, &response).code(),
            StatusCode::kUnimplemented);
  auto [client, server] = OneCall();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(client->events,
              ElementsAre("begin", "out_headers", "out_message", "half_close", "in_trailers",
                          "end"));
  // The request's end may or may not have arrived before the server's answer ended the call.
  std::vector<std::string> server_events = server->events;
  std::erase(server_events, "in_message");
  std::erase(server_events, "half_close");
  EXPECT_THAT(server_events, ElementsAre("begin", "in_headers", "out_trailers", "end"));
  EXPECT_EQ(server->end_code, StatusCode::kUnimplemented);
}

TEST_F(StatsTest, KeptPayloadViewsHoldExactBytesAndReturnToThePool) {
  Start(/*keep_payloads=*/true);
  for (const char* encoding : {"", "gzip"}) {
    SCOPED_TRACE(encoding);
    ClientContext context;
    context.set_compression(encoding);
    SimpleRequest request;
    request.set_response_size(50000);  // pooled blocks, not small ones
    request.mutable_payload()->mutable_body()->assign(30000, 'x');
    SimpleResponse response;
    ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
    client_stats_->WaitForEnded(1);
    server_stats_->WaitForEnded(1);
  }
  auto clients = client_stats_->WaitForEnded(2);
  auto servers = server_stats_->WaitForEnded(2);
  ASSERT_EQ(clients.size(), 2u);
  ASSERT_EQ(servers.size(), 2u);
  SimpleRequest request;
  request.set_response_size(50000);
  request.mutable_payload()->mutable_body()->assign(30000, 'x');
  SimpleResponse response;
  response.mutable_payload()->mutable_body()->assign(50000, 'r');
  for (int i = 0; i < 2; ++i) {
    // Read after the calls are over, through the views the handlers kept.
    ASSERT_EQ(clients[i]->kept.size(), 2u);
    EXPECT_EQ(clients[i]->kept[0].Materialize(), request.SerializeAsString());
    EXPECT_EQ(clients[i]->kept[1].Materialize(), response.SerializeAsString());
    ASSERT_EQ(servers[i]->kept.size(), 2u);
    EXPECT_EQ(servers[i]->kept[0].Materialize(), request.SerializeAsString());
    EXPECT_EQ(servers[i]->kept[1].Materialize(), response.SerializeAsString());
  }
  EXPECT_FALSE(clients[0]->compressed_seen);
  EXPECT_TRUE(clients[1]->compressed_seen);
  EXPECT_TRUE(servers[1]->compressed_seen);
  // gzip shrinks repeated bytes: the wire carries far fewer than the payload.
  EXPECT_LT(clients[1]->wire_sizes[0], 1000u);
  EXPECT_GT(CountOutstandingBlocks().pooled, 0) << "the kept views hold pooled blocks";
  client_stats_->ReleaseKept();
  server_stats_->ReleaseKept();
  // The connections may still hold a read block for a moment (they take one per read).
  const auto deadline = std::chrono::steady_clock::now() + kMustComplete;
  while (CountOutstandingBlocks().pooled != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ExpectNoOutstandingBlocks("after the handlers released their views");
}

TEST_F(StatsTest, ConnectionEventsAndChainedHandlers) {
  auto second = std::make_shared<RecordingHandler>();
  server_stats_ = std::make_shared<RecordingHandler>();
  client_stats_ = std::make_shared<RecordingHandler>();
  TestServerSetup setup;
  setup.services.push_back(&service_);
  setup.stats_handlers = {server_stats_, second};
  server_ = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server_, nullptr);
  ChannelOptions options;
  options.stats_handlers.push_back(client_stats_);
  channel_ = server_->NewChannel(options);
  stub_ = std::make_unique<TestService::Stub>(channel_);
  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  server_stats_->WaitForEnded(1);
  second->WaitForEnded(1);
  EXPECT_EQ(server_stats_->Find(false)->events, second->Find(false)->events);
  stub_.reset();
  channel_.reset();
  server_.reset();
  EXPECT_THAT(client_stats_->connection_events(),
              ElementsAre("client tag", "client begin", "client end"));
  EXPECT_THAT(server_stats_->connection_events(),
              ElementsAre("server tag", "server begin", "server end"));
}

// Throws from every event: calls still succeed and the other handler still sees everything.
class ThrowingHandler final : public StatsHandler {
 public:
  void* TagCall(const CallInfo&) override { throw std::runtime_error("tag"); }
  void HandleCall(void*, const CallEvent&) override { throw std::runtime_error("event"); }
};

TEST_F(StatsTest, ThrowingHandlerHarmsNothing) {
  server_stats_ = std::make_shared<RecordingHandler>();
  TestServerSetup setup;
  setup.services.push_back(&service_);
  setup.stats_handlers = {std::make_shared<ThrowingHandler>(), server_stats_};
  server_ = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server_, nullptr);
  ChannelOptions options;
  options.stats_handlers.push_back(std::make_shared<ThrowingHandler>());
  channel_ = server_->NewChannel(options);
  stub_ = std::make_unique<TestService::Stub>(channel_);
  for (int i = 0; i < 3; ++i) {
    ClientContext context;
    SimpleRequest request;
    request.set_response_size(3);
    SimpleResponse response;
    ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
    EXPECT_EQ(response.payload().body(), "rrr");
  }
  server_stats_->WaitForEnded(3);
}

}  // namespace
}  // namespace rill::test
