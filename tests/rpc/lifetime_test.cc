// Lifetimes a user can get wrong without noticing: channels destroyed while streams from them
// are alive, or from their own completions; stream objects dropped on a reactor thread; request
// messages that die right after the call that took them; blocking calls on reactor threads.
// Each must end in a defined outcome, never a hang, a spin or a read of freed memory.
#include <gtest/gtest.h>

#include <asio/post.hpp>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/reactor_pool.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::seconds;

constexpr seconds kPrompt{10};

class LifetimeService final : public TestService::Service {
 public:
  // Echoes the request body.
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    Record(request.payload().body());
    response.mutable_payload()->set_body(request.payload().body());
    return Status();
  }

  // One response per response_parameters entry, each carrying the request's body; then OK.
  Awaitable<Status> StreamingOutputCall(
      ServerContext& context, const StreamingOutputCallRequest& request,
      ServerWriter<StreamingOutputCallResponse>& writer) override {
    Record(request.payload().body());
    StreamingOutputCallResponse response;
    response.mutable_payload()->set_body(request.payload().body());
    for (int i = 0; i < request.response_parameters_size(); ++i) {
      if (!co_await writer.Write(response)) break;
    }
    co_return Status();
  }

  // Echoes each message until the client half-closes or the call ends.
  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      Record(request.payload().body());
      read_one.Notify();
      StreamingOutputCallResponse response;
      response.mutable_payload()->set_body(request.payload().body());
      if (!co_await stream.Write(response)) break;
    }
    if (context.IsCancelled()) saw_cancel.Notify();
    co_return Status();
  }

  std::vector<std::string> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }

  Notification read_one;
  Notification saw_cancel;

 private:
  void Record(const std::string& body) {
    std::lock_guard lock(mu_);
    bodies_.push_back(body);
  }

  std::mutex mu_;
  std::vector<std::string> bodies_;
};

// Holds a reactor busy until released: everything posted to it meanwhile waits.
class ReactorBlocker {
 public:
  explicit ReactorBlocker(asio::io_context& io) {
    // The reactor side shares the promises: the blocker may be gone before it wakes.
    asio::post(io, [state = state_] {
      state->entered.set_value();
      state->release.get_future().wait();
    });
    state_->entered.get_future().wait();
  }
  ~ReactorBlocker() { Release(); }
  void Release() {
    if (!released_) {
      released_ = true;
      state_->release.set_value();
    }
  }

 private:
  struct State {
    std::promise<void> entered;
    std::promise<void> release;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
  bool released_ = false;
};

StreamingOutputCallRequest BodyRequest(std::string body, int responses = 0) {
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(std::move(body));
  for (int i = 0; i < responses; ++i) request.add_response_parameters()->set_size(1);
  return request;
}

class LifetimeTest : public ServerTest<LifetimeService> {
 protected:
  void SetUp() override { StartServer(Transport::kTcp); }
  void TearDown() override {
    if (server_ != nullptr) server_->Stop();
  }
  // A channel to the server whose connection runs on `reactors`.
  std::shared_ptr<Channel> ChannelOn(ReactorPool& reactors) {
    ChannelOptions options;
    options.reactors = &reactors;
    return server_->NewChannel(options);
  }
};

TEST_F(LifetimeTest, DestroyingTheChannelCancelsALiveStreamAndReturns) {
  auto channel = server_->NewChannel();
  auto stub = std::make_unique<TestService::Stub>(channel);
  ClientContext ctx;
  auto stream = stub->FullDuplexCall(ctx);
  ASSERT_TRUE(stream->BlockingWrite(BodyRequest("one")));
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  ASSERT_TRUE(service_.read_one.WaitForNotification());

  EXPECT_TRUE(FinishesWithin(kPrompt, [&] {
    stub.reset();
    channel.reset();
  }));
  // The stream outlives its channel: it reports the end, and the call's status.
  EXPECT_FALSE(stream->BlockingRead(&response));
  EXPECT_FALSE(stream->BlockingWrite(BodyRequest("two")));
  const Status status = stream->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status;
  EXPECT_TRUE(service_.saw_cancel.WaitForNotification());
  stream.reset();
}

TEST_F(LifetimeTest, StreamDroppedAfterItsChannelIsCancelled) {
  auto channel = server_->NewChannel();
  TestService::Stub stub(channel);
  ClientContext ctx;
  auto stream = stub.FullDuplexCall(ctx);
  ASSERT_TRUE(stream->BlockingWrite(BodyRequest("one")));
  ASSERT_TRUE(service_.read_one.WaitForNotification());
  EXPECT_TRUE(FinishesWithin(kPrompt, [&] {
    channel.reset();
    stream.reset();  // the stub still holds the channel: dropping the stream cancels the call
  }));
  EXPECT_TRUE(service_.saw_cancel.WaitForNotification());
}

TEST_F(LifetimeTest, LastChannelReferenceDroppedInsideItsOwnCompletion) {
  auto channel = server_->NewChannel();
  auto stub = std::make_shared<TestService::Stub>(channel);
  channel.reset();
  ClientContext ctx;
  SimpleRequest request;
  request.mutable_payload()->set_body("x");
  SimpleResponse response;
  std::promise<Status> done;
  // The completion holds the only reference to the stub, and with it to the channel.
  stub->UnaryCall(ctx, request, &response,
                  [stub = std::shared_ptr(stub), &done](Status status) mutable {
                    stub.reset();
                    done.set_value(std::move(status));
                  });
  stub.reset();
  auto result = done.get_future();
  ASSERT_EQ(result.wait_for(kPrompt), std::future_status::ready);
  EXPECT_TRUE(result.get().ok());
}

TEST_F(LifetimeTest, DroppingAStreamOnAReactorDoesNotWaitForTheChannelsReactor) {
  ReactorPool channel_reactor({.threads = 1, .cpus = {}});
  ReactorPool other_reactor({.threads = 1, .cpus = {}});
  auto channel = ChannelOn(channel_reactor);
  TestService::Stub stub(channel);
  ClientContext ctx;
  auto stream = stub.FullDuplexCall(ctx);
  ASSERT_TRUE(stream->BlockingWrite(BodyRequest("one")));
  ASSERT_TRUE(service_.read_one.WaitForNotification());

  std::promise<void> dropped;
  {
    ReactorBlocker blocker(channel_reactor.reactor(0));
    asio::post(other_reactor.reactor(0), [&] {
      stream.reset();
      dropped.set_value();
    });
    const bool prompt = dropped.get_future().wait_for(kPrompt) == std::future_status::ready;
    blocker.Release();
    EXPECT_TRUE(prompt) << "~ClientReaderWriter waited for the channel's busy reactor";
  }
  EXPECT_TRUE(service_.saw_cancel.WaitForNotification());
  channel.reset();
}

TEST_F(LifetimeTest, ServerStreamingRequestIsSerializedBeforeTheCallReturns) {
  ReactorPool channel_reactor({.threads = 1, .cpus = {}});
  auto channel = ChannelOn(channel_reactor);
  TestService::Stub stub(channel);
  ClientContext ctx;
  std::unique_ptr<ClientReader<StreamingOutputCallResponse>> reader;
  {
    ReactorBlocker blocker(channel_reactor.reactor(0));
    auto request = std::make_unique<StreamingOutputCallRequest>(BodyRequest("original", 3));
    reader = stub.StreamingOutputCall(ctx, *request);
    // The caller may reuse or free its request as soon as the call returned.
    request->mutable_payload()->set_body("changed after the call returned");
    request->clear_response_parameters();
    request.reset();
  }
  StreamingOutputCallResponse response;
  int responses = 0;
  while (reader->BlockingRead(&response)) {
    EXPECT_EQ(response.payload().body(), "original");
    ++responses;
  }
  EXPECT_TRUE(reader->BlockingFinish().ok());
  EXPECT_EQ(responses, 3);
  EXPECT_EQ(service_.bodies(), std::vector<std::string>{"original"});
  reader.reset();
  channel.reset();
}

TEST_F(LifetimeTest, UnaryRequestIsSerializedBeforeTheCallReturns) {
  ReactorPool channel_reactor({.threads = 1, .cpus = {}});
  auto channel = ChannelOn(channel_reactor);
  TestService::Stub stub(channel);
  ClientContext ctx;
  SimpleResponse response;
  std::promise<Status> done;
  {
    ReactorBlocker blocker(channel_reactor.reactor(0));
    SimpleRequest request;
    request.mutable_payload()->set_body("original");
    stub.UnaryCall(ctx, request, &response,
                   [&done](Status status) { done.set_value(std::move(status)); });
    request.mutable_payload()->set_body("changed after the call returned");
  }
  EXPECT_TRUE(done.get_future().get().ok());
  EXPECT_EQ(response.payload().body(), "original");
  EXPECT_EQ(service_.bodies(), std::vector<std::string>{"original"});
  channel.reset();
}

TEST_F(LifetimeTest, StreamWriteCopiesTheMessageBeforeReturning) {
  ReactorPool channel_reactor({.threads = 1, .cpus = {}});
  auto channel = ChannelOn(channel_reactor);
  TestService::Stub stub(channel);
  ClientContext ctx;
  auto stream = stub.FullDuplexCall(ctx);
  std::promise<bool> written;
  {
    ReactorBlocker blocker(channel_reactor.reactor(0));
    auto request = std::make_unique<StreamingOutputCallRequest>(BodyRequest("original"));
    stream->Write(*request, WriteOptions{}, [&written](bool ok) { written.set_value(ok); });
    request.reset();
  }
  EXPECT_TRUE(written.get_future().get());
  StreamingOutputCallResponse response;
  ASSERT_TRUE(stream->BlockingRead(&response));
  EXPECT_EQ(response.payload().body(), "original");
  EXPECT_TRUE(stream->BlockingWritesDone());
  EXPECT_TRUE(stream->BlockingFinish().ok());
  stream.reset();
  channel.reset();
}

// A request larger than the channel's send limit fails the server-streaming call that was given
// it: Finish() says why, nothing is silently dropped.
TEST_F(LifetimeTest, ARequestTheStubCannotSendFailsTheCall) {
  ChannelOptions options;
  options.max_send_message_size = 100;
  auto channel = server_->NewChannel(options);
  TestService::Stub stub(channel);
  ClientContext ctx;
  auto reader = stub.StreamingOutputCall(ctx, BodyRequest(std::string(500, 'x'), 1));
  StreamingOutputCallResponse response;
  EXPECT_FALSE(reader->BlockingRead(&response));
  const Status status = reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status;
  reader.reset();
  channel.reset();
}

// A blocking call made on a reactor thread would stall every connection of that reactor (or
// deadlock, when the call needs it): it fails at once instead.
TEST_F(LifetimeTest, BlockingCallsOnAReactorThreadFailClearly) {
  ReactorPool reactor({.threads = 1, .cpus = {}});
  ChannelOptions options;
  options.reactors = &reactor;
  auto channel = server_->NewChannel(options);
  TestService::Stub stub(channel);
  std::promise<Status> unary;
  std::promise<Status> finish;
  asio::post(reactor.reactor(0), [&] {
    ClientContext ctx;
    SimpleRequest request;
    SimpleResponse response;
    unary.set_value(stub.UnaryCall(ctx, request, &response));
    ClientContext stream_ctx;
    auto stream = stub.FullDuplexCall(stream_ctx);
    finish.set_value(stream->BlockingFinish());
  });
  auto unary_status = unary.get_future();
  ASSERT_EQ(unary_status.wait_for(kPrompt), std::future_status::ready);
  const Status s = unary_status.get();
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
  EXPECT_NE(s.message().find("reactor"), std::string::npos) << s;
  auto finish_status = finish.get_future();
  ASSERT_EQ(finish_status.wait_for(kPrompt), std::future_status::ready);
  EXPECT_EQ(finish_status.get().code(), StatusCode::kFailedPrecondition);
  channel.reset();
}

}  // namespace
}  // namespace rill::test
