// Streaming calls rill ↔ rill: client, server and bidirectional streams, empty streams, a server
// that finishes before the client half-closed, and cancellation from either side reaching the
// other side's handler or reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/calls.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// How a streaming handler's reading ended.
struct ReadEnd {
  int messages = 0;        // messages read
  bool cancelled = false;  // IsCancelled() when Read() returned false
  bool ended = false;
};

// The grpc.testing streaming methods with the interop semantics, recording how each handler's
// reads ended. A request's response_status ends the call with that status at once.
class StreamingService final : public TestService::Service {
 public:
  Awaitable<Status> StreamingInputCall(ServerContext& context,
                                       ServerReader<StreamingInputCallRequest>& reader,
                                       StreamingInputCallResponse& response) override {
    handler_started.Notify();
    StreamingInputCallRequest request;
    int32_t total = 0;
    int messages = 0;
    while (co_await reader.Read(&request)) {
      total += static_cast<int32_t>(request.payload().body().size());
      ++messages;
    }
    EndReading(messages, context.IsCancelled());
    response.set_aggregated_payload_size(total);
    co_return Status();
  }

  Awaitable<Status> StreamingOutputCall(
      ServerContext& context, const StreamingOutputCallRequest& request,
      ServerWriter<StreamingOutputCallResponse>& writer) override {
    handler_started.Notify();
    for (const auto& parameters : request.response_parameters()) {
      if (parameters.interval_us() > 0) {
        asio::steady_timer timer(context.io_context(),
                                 std::chrono::microseconds(parameters.interval_us()));
        asio::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
          EndReading(0, context.IsCancelled());
          co_return Status(StatusCode::kCancelled, "cancelled while waiting");
        }
      }
      StreamingOutputCallResponse response;
      response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(parameters.size()),
                                                         'o');
      if (!co_await writer.Write(response)) {
        EndReading(0, context.IsCancelled());
        co_return Status(StatusCode::kCancelled, "the call ended while writing");
      }
    }
    if (request.has_response_status()) {
      co_return Status(StatusCodeFromInt(request.response_status().code()),
                       request.response_status().message());
    }
    co_return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    handler_started.Notify();
    StreamingOutputCallRequest request;
    int messages = 0;
    while (co_await stream.Read(&request)) {
      ++messages;
      if (request.has_response_status()) {
        // Finishes while the client may still be sending.
        EndReading(messages, context.IsCancelled());
        co_return Status(StatusCodeFromInt(request.response_status().code()),
                         request.response_status().message());
      }
      for (const auto& parameters : request.response_parameters()) {
        StreamingOutputCallResponse response;
        response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(parameters.size()),
                                                           'd');
        if (!co_await stream.Write(response)) {
          EndReading(messages, context.IsCancelled());
          co_return Status(StatusCode::kCancelled, "the call ended while writing");
        }
      }
    }
    EndReading(messages, context.IsCancelled());
    co_return Status();
  }

  Awaitable<Status> HalfDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    std::vector<int32_t> sizes;
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      for (const auto& parameters : request.response_parameters()) {
        sizes.push_back(parameters.size());
      }
    }
    for (int32_t size : sizes) {
      StreamingOutputCallResponse response;
      response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(size), 'h');
      if (!co_await stream.Write(response)) co_return Status(StatusCode::kCancelled, "ended");
    }
    co_return Status();
  }

  ReadEnd read_end() {
    std::lock_guard lock(mu_);
    return read_end_;
  }

  Notification handler_started;
  Notification reading_ended;

 private:
  void EndReading(int messages, bool cancelled) {
    {
      std::lock_guard lock(mu_);
      read_end_ = ReadEnd{messages, cancelled, true};
    }
    reading_ended.Notify();
  }

  std::mutex mu_;
  ReadEnd read_end_;
};

StreamingOutputCallRequest AskFor(std::initializer_list<int32_t> sizes) {
  StreamingOutputCallRequest request;
  for (int32_t size : sizes) request.add_response_parameters()->set_size(size);
  return request;
}

using DuplexStream = ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;

// Asks for a response of `size` bytes on `stream` and reads it (into `response` when given).
[[nodiscard]] bool Exchange(DuplexStream& stream, int32_t size,
                            StreamingOutputCallResponse* response = nullptr) {
  StreamingOutputCallResponse ignored;
  return stream.BlockingWrite(AskFor({size})) &&
         stream.BlockingRead(response != nullptr ? response : &ignored);
}

// Half-closes `stream`, which must then end OK with no further response.
void ExpectHalfCloseEndsTheCall(DuplexStream& stream) {
  ASSERT_TRUE(stream.BlockingWritesDone());
  StreamingOutputCallResponse response;
  EXPECT_FALSE(stream.BlockingRead(&response));
  const Status status = stream.BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

class StreamingTest : public ServiceTest<StreamingService> {
 protected:
  // Connected before any deadline starts running (DeadlineEndsABidiStreamOnBothSides).
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer());
    Connect();
  }
};

TEST_P(StreamingTest, ClientStreaming) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub_->StreamingInputCall(context, &response);
  // A message of 0 bytes (no payload at all) counts like any other.
  ASSERT_TRUE(writer->BlockingWrite(StreamingInputCallRequest()));
  ASSERT_NO_FATAL_FAILURE(ExpectClientStreamAggregates(
      *writer, response, {0, 1, 1000, 1024, 5000, 64 * 1024, 100 * 1024, 3}));
  EXPECT_EQ(service_.read_end().messages, 9);
}

TEST_P(StreamingTest, ClientStreamingWithNoMessages) {
  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub_->StreamingInputCall(context, &response);
  const Status status = writer->BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.aggregated_payload_size(), 0);
  EXPECT_EQ(service_.read_end().messages, 0);
}

TEST_P(StreamingTest, ServerStreaming) {
  ExpectServerStreamOfSizes(*stub_, {0, 10, 1023, 1024, 1025, 70 * 1024, 7});
}

TEST_P(StreamingTest, ServerStreamingWithNoMessages) {
  ClientContext context;
  const StreamingOutputCallRequest request;  // must outlive the call: it is sent asynchronously
  auto reader = stub_->StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  EXPECT_FALSE(reader->BlockingRead(&response));
  const Status status = reader->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

// 8 MiB in messages just over the 64 KiB stream window, through the server's write quota: each
// message needs the window raised while it arrives.
void ReadManyLargeMessages(TestService::Stub& stub) {
  ClientContext context;
  context.set_timeout(kMustComplete);  // a flow-control stall fails instead of hanging
  StreamingOutputCallRequest request;
  for (int i = 0; i < 128; ++i) request.add_response_parameters()->set_size(64 * 1024);
  auto reader = stub.StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  int received = 0;
  while (reader->BlockingRead(&response)) {
    EXPECT_EQ(response.payload().body().size(), 64u * 1024);
    ++received;
  }
  EXPECT_EQ(received, 128);
  const Status status = reader->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status << " after " << received << " messages";
}

TEST_P(StreamingTest, ServerStreamingManyLargeMessagesWithFlowControl) {
  ReadManyLargeMessages(*stub_);
}

TEST_P(StreamingTest, ServerStreamingManyLargeMessagesWithStaticWindows) {
  ChannelOptions options;
  options.initial_stream_window = 65535;  // a window the user chose: no dynamic resizing
  auto channel = server_->NewChannel(options);
  TestService::Stub stub(channel);
  ReadManyLargeMessages(stub);
}

TEST_P(StreamingTest, ServerStreamingEndsWithAnErrorAfterMessages) {
  ClientContext context;
  StreamingOutputCallRequest request = AskFor({5, 6});
  request.mutable_response_status()->set_code(static_cast<int>(StatusCode::kDataLoss));
  request.mutable_response_status()->set_message("lost the rest");
  auto reader = stub_->StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(reader->BlockingRead(&response));
  EXPECT_EQ(response.payload().body().size(), 5u);
  // Once the status is known, everything the server sent before it has arrived; a message that
  // came before an error status is still the reader's to read, as with an OK status.
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "lost the rest");
  ASSERT_TRUE(reader->BlockingRead(&response)) << "the message sent before the error was dropped";
  EXPECT_EQ(response.payload().body().size(), 6u);
  EXPECT_FALSE(reader->BlockingRead(&response));
}

TEST_P(StreamingTest, ServerStreamingEndsOkAfterMessages) {
  ClientContext context;
  const StreamingOutputCallRequest request = AskFor({5, 6});
  auto reader = stub_->StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(reader->BlockingRead(&response));
  const Status status = reader->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  ASSERT_TRUE(reader->BlockingRead(&response));
  EXPECT_EQ(response.payload().body().size(), 6u);
  EXPECT_FALSE(reader->BlockingRead(&response));
}

TEST_P(StreamingTest, BidiPingPong) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  for (int i = 0; i < 50; ++i) {
    const int32_t size = (i * 997) % 20000;
    ASSERT_TRUE(stream->BlockingWrite(AskFor({size}))) << i;
    StreamingOutputCallResponse response;
    ASSERT_TRUE(stream->BlockingRead(&response)) << i;
    EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(size));
  }
  ExpectHalfCloseEndsTheCall(*stream);
  EXPECT_EQ(service_.read_end().messages, 50);
}

Status Broken(std::string_view what) { return Status(StatusCode::kInternal, what); }

Awaitable<Status> PingPongCoroutine(TestService::Stub* stub, int rounds) {
  ClientContext context;
  auto stream = stub->FullDuplexCall(context);
  for (int i = 0; i < rounds; ++i) {
    // (Built outside the co_await: GCC 12 miscompiles initializer lists inside one.)
    const StreamingOutputCallRequest request = AskFor({i * 100});
    if (!co_await stream->Write(request)) co_return Broken("write failed");
    StreamingOutputCallResponse response;
    if (!co_await stream->Read(&response)) co_return Broken("read failed");
    if (response.payload().body().size() != static_cast<size_t>(i) * 100) {
      co_return Broken("wrong size");
    }
  }
  co_await stream->WritesDone();
  StreamingOutputCallResponse response;
  if (co_await stream->Read(&response)) co_return Broken("extra message");
  co_return co_await stream->Finish();
}

TEST_P(StreamingTest, BidiPingPongFromACoroutine) {
  // The channel's reactor posts completions to `reactors`: it is joined (destroyed) first, so
  // that it has left its last post before `reactors` goes.
  ReactorPool reactors({.threads = 1, .cpus = {}});
  ReactorPool channel_reactors({.threads = 1, .cpus = {}});
  ChannelOptions options;
  options.reactors = &channel_reactors;
  auto channel = NewChannel(options);
  TestService::Stub stub(channel);
  const Status status = RunOn(reactors.reactor(0), PingPongCoroutine(&stub, 20));
  EXPECT_TRUE(status.ok()) << status;
  channel.reset();
}

TEST_P(StreamingTest, BidiWithNoMessages) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  ExpectHalfCloseEndsTheCall(*stream);
  EXPECT_EQ(service_.read_end().messages, 0);
}

TEST_P(StreamingTest, HalfDuplexRepliesAfterTheClientHalfCloses) {
  ClientContext context;
  auto stream = stub_->HalfDuplexCall(context);
  ASSERT_TRUE(stream->BlockingWrite(AskFor({1, 2})));
  ASSERT_TRUE(stream->BlockingWriteLast(AskFor({3000})));
  StreamingOutputCallResponse response;
  for (size_t size : {size_t{1}, size_t{2}, size_t{3000}}) {
    ASSERT_TRUE(stream->BlockingRead(&response));
    EXPECT_EQ(response.payload().body().size(), size);
  }
  EXPECT_FALSE(stream->BlockingRead(&response));
  EXPECT_TRUE(stream->BlockingFinish().ok());
}

TEST_P(StreamingTest, ConcurrentStreamsOnOneChannel) {
  constexpr int kStreams = 8;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int s = 0; s < kStreams; ++s) {
    threads.emplace_back([this, s, &ok] {
      ClientContext context;
      auto stream = stub_->FullDuplexCall(context);
      for (int i = 0; i < 20; ++i) {
        if (!stream->BlockingWrite(AskFor({s * 1000 + i}))) return;
        StreamingOutputCallResponse response;
        if (!stream->BlockingRead(&response)) return;
        if (response.payload().body().size() != static_cast<size_t>(s * 1000 + i)) return;
      }
      stream->BlockingWritesDone();
      if (stream->BlockingFinish().ok()) ok.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kStreams);
}

TEST_P(StreamingTest, ServerFinishesBeforeTheClientHalfCloses) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(Exchange(*stream, 10, &response));
  const StreamingOutputCallRequest stop =
      RequestForStatus<StreamingOutputCallRequest>(StatusCode::kOk);
  ASSERT_TRUE(stream->BlockingWrite(stop));
  // The server returns without waiting for the client's half-close: the client still gets the
  // status, and (the server having reset the stream with NO_ERROR) its next writes fail cleanly.
  EXPECT_FALSE(stream->BlockingRead(&response));
  const Status status = stream->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_FALSE(stream->BlockingWrite(AskFor({1})));
  EXPECT_FALSE(stream->BlockingWritesDone());
  EXPECT_EQ(service_.read_end().messages, 2);
  // The connection is fine.
  ClientContext next;
  auto again = stub_->FullDuplexCall(next);
  ASSERT_TRUE(again->BlockingWrite(AskFor({3})));
  ASSERT_TRUE(again->BlockingRead(&response));
  ASSERT_TRUE(again->BlockingWritesDone());
  EXPECT_TRUE(again->BlockingFinish().ok());
}

TEST_P(StreamingTest, ServerErrorMidStreamReachesTheClientsReader) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  ASSERT_TRUE(Exchange(*stream, 10));

  // The client waits in Read() when the server ends the call with an error.
  std::promise<bool> read_result;
  std::thread reader([&stream, &read_result] {
    StreamingOutputCallResponse r;
    read_result.set_value(stream->BlockingRead(&r));
  });
  const StreamingOutputCallRequest abort =
      RequestForStatus<StreamingOutputCallRequest>(StatusCode::kAborted, "server gave up");
  ASSERT_TRUE(stream->BlockingWrite(abort));
  auto read = read_result.get_future();
  ASSERT_EQ(read.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_FALSE(read.get());
  reader.join();
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kAborted);
  EXPECT_EQ(status.message(), "server gave up");
}

TEST_P(StreamingTest, ClientCancelReachesTheServersReader) {
  ClientContext context;
  auto stream = stub_->FullDuplexCall(context);
  ASSERT_TRUE(Exchange(*stream, 10));
  // The handler now waits in Read().
  context.TryCancel();
  ASSERT_TRUE(service_.reading_ended.WaitForNotification())
      << "the handler's Read() did not end when the client cancelled";
  const ReadEnd end = service_.read_end();
  EXPECT_EQ(end.messages, 1);
  EXPECT_TRUE(end.cancelled);
  EXPECT_EQ(stream->BlockingFinish().code(), StatusCode::kCancelled);
  EXPECT_FALSE(stream->BlockingWrite(AskFor({1})));
}

TEST_P(StreamingTest, DestroyingTheClientStreamCancelsTheHandler) {
  {
    ClientContext context;
    auto stream = stub_->FullDuplexCall(context);
    ASSERT_TRUE(Exchange(*stream, 10));
  }  // the stream goes away mid-call
  ASSERT_TRUE(service_.reading_ended.WaitForNotification());
  EXPECT_TRUE(service_.read_end().cancelled);
}

TEST_P(StreamingTest, ClientCancelReachesAServerStreamingWriter) {
  ClientContext context;
  StreamingOutputCallRequest request;
  for (int i = 0; i < 100; ++i) {
    auto* p = request.add_response_parameters();
    p->set_size(100);
    p->set_interval_us(50'000);  // 5 s in all; the client leaves early
  }
  auto reader = stub_->StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  ASSERT_TRUE(reader->BlockingRead(&response));
  context.TryCancel();
  ASSERT_TRUE(service_.reading_ended.WaitForNotification());
  EXPECT_TRUE(service_.read_end().cancelled);
  while (reader->BlockingRead(&response)) {
  }
  EXPECT_EQ(reader->BlockingFinish().code(), StatusCode::kCancelled);
}

TEST_P(StreamingTest, DeadlineEndsABidiStreamOnBothSides) {
  ClientContext context;
  context.set_timeout(milliseconds(500));  // covers one exchange on the ready connection
  auto stream = stub_->FullDuplexCall(context);
  ASSERT_TRUE(stream->BlockingWrite(AskFor({1})));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  // Nothing more is sent: the handler waits in Read() until the deadline.
  EXPECT_FALSE(stream->BlockingRead(&response));
  EXPECT_EQ(stream->BlockingFinish().code(), StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(service_.reading_ended.WaitForNotification());
  EXPECT_TRUE(service_.read_end().cancelled);
}

TEST_P(StreamingTest, ClientStreamingServerSeesHalfCloseAfterCancelOfAnother) {
  // One cancelled client stream does not disturb another on the same connection.
  ClientContext cancelled_context;
  StreamingInputCallResponse cancelled_response;
  auto cancelled = stub_->StreamingInputCall(cancelled_context, &cancelled_response);
  StreamingInputCallRequest request;
  request.mutable_payload()->set_body(std::string(2000, 'x'));
  ASSERT_TRUE(cancelled->BlockingWrite(request));

  ClientContext context;
  StreamingInputCallResponse response;
  auto writer = stub_->StreamingInputCall(context, &response);
  ASSERT_TRUE(writer->BlockingWrite(request));
  cancelled_context.TryCancel();
  EXPECT_EQ(cancelled->BlockingFinish().code(), StatusCode::kCancelled);
  ASSERT_TRUE(writer->BlockingWrite(request));
  const Status status = writer->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.aggregated_payload_size(), 4000);
}

INSTANTIATE_TEST_SUITE_P(Transports, StreamingTest, kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, StreamingTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
