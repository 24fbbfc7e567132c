// Deadlines and client cancellation, rill ↔ rill: the client's status, and what the server's
// coroutine handler observes (its pending wait aborts, IsCancelled() turns true).
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
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// What a handler saw when its wait ended.
struct HandlerOutcome {
  bool wait_aborted = false;   // the timer wait completed with operation_aborted
  bool cancelled = false;      // ServerContext::IsCancelled() after the wait
  ServerContext::Clock::duration time_left{};  // deadline - now when the handler started
  bool has_deadline = false;
};

// UnaryCallAsync waits request.response_size() milliseconds on a timer (0: returns at once),
// then answers. EmptyCall (sync) counts its calls.
class SlowService final : public TestService::Service {
 public:
  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response) override {
    HandlerOutcome outcome;
    outcome.has_deadline = context.deadline() != ServerContext::Clock::time_point::max();
    if (outcome.has_deadline) outcome.time_left = context.deadline() - ServerContext::Clock::now();
    started.Notify();
    asio::steady_timer timer(context.io_context(), milliseconds(request.response_size()));
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    outcome.wait_aborted = ec == asio::error::operation_aborted;
    outcome.cancelled = context.IsCancelled();
    {
      std::lock_guard lock(mu_);
      outcome_ = outcome;
    }
    finished.Notify();
    response.set_username("done");
    co_return Status();
  }

  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    empty_calls.fetch_add(1);
    return Status();
  }

  HandlerOutcome outcome() {
    std::lock_guard lock(mu_);
    return outcome_;
  }

  Notification started;
  Notification finished;
  std::atomic<int> empty_calls{0};

 private:
  std::mutex mu_;
  HandlerOutcome outcome_;
};

class DeadlineCancelTest : public ServiceTest<SlowService> {
 protected:
  // Connected before any deadline starts running: the short deadlines below must cover one
  // request on a ready connection, not a connection setup as well.
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer());
    Connect();
  }

  void ExpectGoodCall() {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    context.set_timeout(kMustComplete);
    const Status status = stub_->UnaryCall(context, request, &response);
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_EQ(response.username(), "done");
  }
};

TEST_P(DeadlineCancelTest, DeadlineExceededReachesTheHandler) {
  ClientContext context;
  context.set_timeout(milliseconds(300));
  SimpleRequest request;
  request.set_response_size(60'000);  // the handler would wait a minute
  SimpleResponse response;
  const Status status = stub_->UnaryCall(context, request, &response);
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status;

  ASSERT_TRUE(service_.finished.WaitForNotification())
      << "the handler's wait did not end when the deadline passed";
  const HandlerOutcome outcome = service_.outcome();
  EXPECT_TRUE(outcome.wait_aborted);
  EXPECT_TRUE(outcome.cancelled);
  EXPECT_TRUE(outcome.has_deadline);
  ExpectGoodCall();
}

TEST_P(DeadlineCancelTest, HandlerSeesTheClientsDeadline) {
  ClientContext context;
  context.set_timeout(std::chrono::seconds(20));
  SimpleRequest request;
  SimpleResponse response;
  const Status status = stub_->UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  const HandlerOutcome outcome = service_.outcome();
  EXPECT_TRUE(outcome.has_deadline);
  EXPECT_GT(outcome.time_left, ServerContext::Clock::duration::zero());
  EXPECT_LE(outcome.time_left, std::chrono::seconds(20));
  EXPECT_FALSE(outcome.wait_aborted);
  EXPECT_FALSE(outcome.cancelled);
}

TEST_P(DeadlineCancelTest, NoDeadlineMeansNone) {
  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  ASSERT_TRUE(stub_->UnaryCall(context, request, &response).ok());
  EXPECT_FALSE(service_.outcome().has_deadline);
}

TEST_P(DeadlineCancelTest, ExpiredDeadlineFailsWithoutReachingTheServer) {
  ClientContext context;
  context.set_deadline(ClientContext::Clock::now() - milliseconds(1));
  Empty request;
  Empty response;
  EXPECT_EQ(stub_->EmptyCall(context, request, &response).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(service_.empty_calls.load(), 0);
  ExpectGoodCall();
}

TEST_P(DeadlineCancelTest, TryCancelFromAnotherThreadReachesTheHandler) {
  ClientContext context;
  SimpleRequest request;
  request.set_response_size(60'000);
  SimpleResponse response;
  std::promise<Status> done;
  stub_->UnaryCall(context, request, &response,
                   [&done](Status status) { done.set_value(std::move(status)); });
  ASSERT_TRUE(service_.started.WaitForNotification());

  std::thread canceller([&context] { context.TryCancel(); });
  canceller.join();

  auto future = done.get_future();
  ASSERT_EQ(future.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_EQ(future.get().code(), StatusCode::kCancelled);
  ASSERT_TRUE(service_.finished.WaitForNotification())
      << "the client's RST_STREAM did not cancel the handler";
  const HandlerOutcome outcome = service_.outcome();
  EXPECT_TRUE(outcome.wait_aborted);
  EXPECT_TRUE(outcome.cancelled);
  ExpectGoodCall();
}

TEST_P(DeadlineCancelTest, TryCancelBeforeTheCallStarts) {
  ClientContext context;
  context.TryCancel();
  Empty request;
  Empty response;
  EXPECT_EQ(stub_->EmptyCall(context, request, &response).code(), StatusCode::kCancelled);
  EXPECT_EQ(service_.empty_calls.load(), 0);
}

TEST_P(DeadlineCancelTest, TryCancelAfterCompletionChangesNothing) {
  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  const Status status = stub_->UnaryCall(context, request, &response);
  ASSERT_TRUE(status.ok()) << status;
  context.TryCancel();
  EXPECT_EQ(response.username(), "done");
  ExpectGoodCall();
}

TEST_P(DeadlineCancelTest, CancelledCallsDoNotDisturbOthers) {
  // Several slow calls cancelled by their deadlines while quick calls run on the same
  // connection.
  constexpr int kCalls = 8;
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
    std::promise<Status> done;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    const bool slow = i % 2 == 0;
    call->request.set_response_size(slow ? 60'000 : 1);
    call->context.set_timeout(slow ? milliseconds(50 + 10 * i) : milliseconds(kMustComplete));
    stub_->UnaryCall(call->context, call->request, &call->response,
                     [c = call.get()](Status status) { c->done.set_value(std::move(status)); });
    calls.push_back(std::move(call));
  }
  for (int i = 0; i < kCalls; ++i) {
    auto future = calls[i]->done.get_future();
    ASSERT_EQ(future.wait_for(kMustComplete), std::future_status::ready);
    const Status status = future.get();
    if (i % 2 == 0) {
      EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << i << ": " << status;
    } else {
      EXPECT_TRUE(status.ok()) << i << ": " << status;
    }
  }
  ExpectGoodCall();
}

INSTANTIATE_TEST_SUITE_P(Transports, DeadlineCancelTest,
                         kAllTransports, TransportParamName);
INSTANTIATE_TEST_SUITE_P(InProcess, DeadlineCancelTest, kInProcessTransport, TransportParamName);

}  // namespace
}  // namespace rill::test
