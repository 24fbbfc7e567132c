// Hedging per the service config (gRFC A6 hedgingPolicy), rill ↔ rill on loopback: which
// attempts the servers see (and which they see cancelled), which attempt's answer the call gets,
// and what stops further attempts (a fatal status, pushback, throttling, the deadline). Over
// round_robin the attempts of one call go to different servers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <charconv>
#include <future>
#include <map>
#include <memory>
#include <mutex>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/interceptor.h"
#include "rill/server_context.h"
#include "rill/stats.h"
#include "tests/testing/calls.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;

int ParseOr(std::string_view text, int fallback) {
  int value = fallback;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// What the servers saw of each call ("x-call-id"), over all of them. Thread-safe.
class AttemptLog {
 public:
  void Started(const std::string& id, std::string previous) {
    std::lock_guard lock(mu_);
    calls_[id].previous.push_back(std::move(previous));
  }
  void Cancelled(const std::string& id) {
    std::lock_guard lock(mu_);
    ++calls_[id].cancelled;
  }
  int started(const std::string& id) {
    std::lock_guard lock(mu_);
    return static_cast<int>(calls_[id].previous.size());
  }
  int cancelled(const std::string& id) {
    std::lock_guard lock(mu_);
    return calls_[id].cancelled;
  }
  // The grpc-previous-rpc-attempts values the attempts carried ("-": none), sorted.
  std::vector<std::string> previous(const std::string& id) {
    std::lock_guard lock(mu_);
    std::vector<std::string> values = calls_[id].previous;
    std::sort(values.begin(), values.end());
    return values;
  }

 private:
  struct Call {
    std::vector<std::string> previous;
    int cancelled = 0;
  };
  std::mutex mu_;
  std::map<std::string, Call> calls_;
};

// UnaryCall follows the call's "x-plan", one comma-separated action per attempt (the attempt's
// number is its grpc-previous-rpc-attempts, 0 without it; an attempt past the plan answers):
//   wait         waits a minute and records whether the call was cancelled meanwhile
//   ok           answers username "attempt N" and trailer x-attempt: N
//   C or CpMS    fails with status code C (and grpc-retry-pushback-ms: MS)
// Every action but wait runs only once the call's earlier attempts reached a server, so that
// what happens to them is observable. EmptyCall counts the calls each server answers.
class HedgeService final : public TestService::Service {
 public:
  explicit HedgeService(std::shared_ptr<AttemptLog> log = std::make_shared<AttemptLog>())
      : log(std::move(log)) {}

  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    empty_calls.fetch_add(1);
    return Status();
  }

  Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response) override {
    const Metadata& md = context.client_metadata();
    const std::string id(md.Get("x-call-id").value_or(""));
    const std::optional<std::string_view> previous = md.Get("grpc-previous-rpc-attempts");
    const int attempt = previous ? ParseOr(*previous, -1) : 0;
    const std::string action = ActionOf(md.Get("x-plan").value_or(""), attempt);
    attempts.fetch_add(1);
    log->Started(id, previous ? std::string(*previous) : "-");
    asio::steady_timer timer(context.io_context());
    asio::error_code ec;
    if (action == "wait") {
      timer.expires_after(std::chrono::minutes(1));
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (context.IsCancelled()) log->Cancelled(id);
      co_return Status(StatusCode::kAborted, "a waiting attempt was not cancelled");
    }
    for (int i = 0; i < 4000 && log->started(id) <= attempt; ++i) {
      timer.expires_after(milliseconds(5));
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (action == "ok") {
      context.AddTrailingMetadata("x-attempt", std::to_string(attempt));
      response.set_username("attempt " + std::to_string(attempt));
      co_return Status();
    }
    const size_t p = action.find('p');
    if (p != std::string::npos) {
      context.AddTrailingMetadata("grpc-retry-pushback-ms", action.substr(p + 1));
    }
    co_return Status(static_cast<StatusCode>(ParseOr(action.substr(0, p), 2)),
                     "attempt " + std::to_string(attempt) + " failed");
  }

  std::shared_ptr<AttemptLog> log;
  std::atomic<int> attempts{0};  // UnaryCall attempts this server saw
  std::atomic<int> empty_calls{0};

 private:
  static std::string ActionOf(std::string_view plan, int attempt) {
    for (int i = 0; i < attempt && !plan.empty(); ++i) {
      const size_t comma = plan.find(',');
      plan = comma == std::string_view::npos ? std::string_view() : plan.substr(comma + 1);
    }
    const std::string action(plan.substr(0, plan.find(',')));
    return action.empty() ? "ok" : action;
  }
};

// A service config hedging grpc.testing.TestService/UnaryCall; `rest` adds top-level fields.
std::string HedgingConfig(int max_attempts, std::string_view delay,
                          std::string_view non_fatal_codes, std::string_view rest = "") {
  return std::string(R"({"methodConfig": [{
    "name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
    "hedgingPolicy": {"maxAttempts": )") +
         std::to_string(max_attempts) + R"(, "hedgingDelay": ")" + std::string(delay) +
         R"(", "nonFatalStatusCodes": [)" + std::string(non_fatal_codes) + "]}}]" +
         std::string(rest) + "}";
}

ChannelOptions WithConfig(std::string config) {
  ChannelOptions options;
  options.service_config = std::move(config);
  return options;
}

// One hedged call's outcome, as its user sees it.
struct Outcome {
  Status status;
  std::string username;
  std::string attempt_trailer;  // x-attempt
};

Outcome CallWithPlan(TestService::Stub& stub, const std::string& id, const std::string& plan,
                     milliseconds timeout = std::chrono::seconds(30)) {
  ClientContext context;
  context.set_timeout(timeout);
  context.AddMetadata("x-call-id", id);
  context.AddMetadata("x-plan", plan);
  SimpleRequest request;
  SimpleResponse response;
  Outcome outcome;
  outcome.status = stub.UnaryCall(context, request, &response);
  outcome.username = response.username();
  outcome.attempt_trailer = TrailerOf(context, "x-attempt");
  return outcome;
}

class HedgingTest : public ServerTest<HedgeService> {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp)); }

  std::unique_ptr<TestService::Stub> StubWith(std::string config) {
    channels_.push_back(NewChannel(WithConfig(std::move(config))));
    return std::make_unique<TestService::Stub>(channels_.back());
  }
  void TearDown() override {
    channels_.clear();
    ServerTest<HedgeService>::TearDown();
  }

  AttemptLog& log() { return *service_.log; }
  // Waits until the server saw `n` attempts of `id` cancelled.
  bool CancelledAttempts(const std::string& id, int n) {
    return WaitUntil([&] { return log().cancelled(id) >= n; }) && log().cancelled(id) == n;
  }

  std::vector<std::shared_ptr<Channel>> channels_;
};

TEST_F(HedgingTest, DelayZeroSendsEveryAttemptAndTheFirstAnswerWins) {
  auto stub = StubWith(HedgingConfig(3, "0s", ""));
  const Outcome outcome = CallWithPlan(*stub, "race", "wait,wait,ok");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.username, "attempt 2");
  EXPECT_EQ(outcome.attempt_trailer, "2");  // the winner's metadata, only
  EXPECT_TRUE(CancelledAttempts("race", 2)) << log().cancelled("race");
  EXPECT_THAT(log().previous("race"), ElementsAre("-", "1", "2"));
  EXPECT_EQ(service_.attempts.load(), 3);
}

TEST_F(HedgingTest, AnAnswerBeforeTheDelayMeansOneAttempt) {
  auto stub = StubWith(HedgingConfig(3, "100s", ""));
  const Outcome outcome = CallWithPlan(*stub, "fast", "ok");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.username, "attempt 0");
  channels_.clear();  // a hedge still to come would have had to go by now
  EXPECT_EQ(log().started("fast"), 1);
}

TEST_F(HedgingTest, ASlowAttemptIsHedgedAfterTheDelay) {
  auto stub = StubWith(HedgingConfig(3, "0.2s", ""));
  const Outcome outcome = CallWithPlan(*stub, "slow", "wait,ok");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.username, "attempt 1");
  EXPECT_TRUE(CancelledAttempts("slow", 1));
  channels_.clear();
  EXPECT_THAT(log().previous("slow"), ElementsAre("-", "1"));
}

TEST_F(HedgingTest, NonFatalCodesSendTheNextAttemptAtOnce) {
  // With a delay of 100 s only a failure can send the next attempt within the call's 30 s.
  auto stub = StubWith(HedgingConfig(3, "100s", R"("UNAVAILABLE", 10)"));
  const Outcome outcome = CallWithPlan(*stub, "flaky", "14,10,ok");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.username, "attempt 2");
  EXPECT_THAT(log().previous("flaky"), ElementsAre("-", "1", "2"));

  // All attempts fail non-fatally: the call ends with the last one's status.
  const Outcome failed = CallWithPlan(*stub, "down", "14,14,14,ok");
  EXPECT_EQ(failed.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(failed.status.message(), "attempt 2 failed");
  EXPECT_EQ(log().started("down"), 3);
}

TEST_F(HedgingTest, AFatalCodeCommitsAndCancelsTheOthers) {
  auto stub = StubWith(HedgingConfig(3, "0s", R"("UNAVAILABLE")"));
  const Outcome outcome = CallWithPlan(*stub, "fatal", "wait,wait,3");
  EXPECT_EQ(outcome.status.code(), StatusCode::kInvalidArgument) << outcome.status;
  EXPECT_EQ(outcome.status.message(), "attempt 2 failed");
  EXPECT_TRUE(CancelledAttempts("fatal", 2));

  // With a long delay, the fatal first attempt is the only one.
  auto slow_stub = StubWith(HedgingConfig(3, "100s", R"("UNAVAILABLE")"));
  EXPECT_EQ(CallWithPlan(*slow_stub, "first", "3,ok").status.code(), StatusCode::kInvalidArgument);
  channels_.clear();
  EXPECT_EQ(log().started("first"), 1);
}

TEST_F(HedgingTest, ServerPushbackDelaysOrStopsHedges) {
  auto stub = StubWith(HedgingConfig(3, "100s", R"("UNAVAILABLE")"));
  const Outcome stopped = CallWithPlan(*stub, "stop", "14p-1,ok");
  EXPECT_EQ(stopped.status.code(), StatusCode::kUnavailable);
  EXPECT_EQ(log().started("stop"), 1);

  const auto start = std::chrono::steady_clock::now();
  const Outcome delayed = CallWithPlan(*stub, "later", "14p150,ok");
  ASSERT_TRUE(delayed.status.ok()) << delayed.status;
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
  EXPECT_EQ(delayed.username, "attempt 1");
}

TEST_F(HedgingTest, ThrottlingStopsNewHedges) {
  // Tokens start at 4; a non-fatal failure takes one, and hedges need more than 2 left.
  auto stub = StubWith(HedgingConfig(4, "100s", R"("UNAVAILABLE")",
                                     R"(, "retryThrottling": {"maxTokens": 4, "tokenRatio": 1})"));
  const Outcome first = CallWithPlan(*stub, "t1", "14,14,14,14");  // 4 → 3 → 2
  EXPECT_EQ(first.status.message(), "attempt 1 failed");
  EXPECT_THAT(log().previous("t1"), ElementsAre("-", "1"));
  EXPECT_EQ(CallWithPlan(*stub, "t2", "14,ok").status.code(), StatusCode::kUnavailable);  // → 1
  EXPECT_EQ(log().started("t2"), 1);
  // Successes give tokens back (1 each): 1 → 4, and hedges resume.
  for (const char* id : {"ok1", "ok2", "ok3"})
    EXPECT_TRUE(CallWithPlan(*stub, id, "ok").status.ok());
  EXPECT_EQ(CallWithPlan(*stub, "t3", "14,ok").username, "attempt 1");
}

TEST_F(HedgingTest, TheDeadlineCancelsEveryAttempt) {
  auto stub = StubWith(HedgingConfig(2, "0s", ""));
  const Outcome outcome = CallWithPlan(*stub, "late", "wait,wait", milliseconds(300));
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeadlineExceeded) << outcome.status;
  EXPECT_TRUE(CancelledAttempts("late", 2));
}

TEST_F(HedgingTest, TryCancelCancelsEveryAttempt) {
  auto stub = StubWith(HedgingConfig(2, "0s", ""));
  ClientContext context;
  context.AddMetadata("x-call-id", "cancel");
  context.AddMetadata("x-plan", "wait,wait");
  SimpleRequest request;
  SimpleResponse response;
  std::promise<Status> done;
  stub->UnaryCall(context, request, &response, [&](Status status) { done.set_value(status); });
  ASSERT_TRUE(WaitUntil([&] { return log().started("cancel") == 2; }));
  context.TryCancel();
  std::future<Status> result = done.get_future();
  ASSERT_EQ(result.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_EQ(result.get().code(), StatusCode::kCancelled);
  EXPECT_TRUE(CancelledAttempts("cancel", 2));
}

// What the user's side sees of a call: stats events by type, and interceptor calls.
class CallObserver final : public StatsHandler, public ClientInterceptor {
 public:
  void HandleCall(void* tag, const CallEvent& event) override {
    std::lock_guard lock(mu_);
    events_.push_back(event.type);
  }
  Status OnCallStart(ClientContext& context, std::string_view method) override {
    starts.fetch_add(1);
    return Status();
  }
  void OnCallEnd(ClientContext& context, std::string_view method, Status& status) override {
    ends.fetch_add(1);
  }
  std::vector<CallEventType> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  std::atomic<int> starts{0};
  std::atomic<int> ends{0};

 private:
  std::mutex mu_;
  std::vector<CallEventType> events_;
};

TEST_F(HedgingTest, InterceptorsAndStatsSeeOneCall) {
  auto observer = std::make_shared<CallObserver>();
  ChannelOptions options = WithConfig(HedgingConfig(3, "0s", ""));
  options.stats_handlers.push_back(observer);
  options.interceptors.push_back(observer);
  channels_.push_back(NewChannel(std::move(options)));
  TestService::Stub stub(channels_.back());
  ASSERT_TRUE(CallWithPlan(stub, "observed", "wait,wait,ok").status.ok());
  EXPECT_EQ(observer->starts.load(), 1);
  EXPECT_EQ(observer->ends.load(), 1);
  using T = CallEventType;
  EXPECT_THAT(observer->events(),
              ElementsAre(T::kBegin, T::kOutHeaders, T::kOutMessage, T::kHalfClose, T::kInHeaders,
                          T::kInTrailers, T::kEnd));
}

TEST(HedgingRoundRobinTest, HedgesLandOnDifferentServers) {
  auto log = std::make_shared<AttemptLog>();
  std::vector<std::unique_ptr<HedgeService>> services;
  std::vector<std::unique_ptr<TestServer>> servers;
  std::string target = "ipv4:";
  for (int i = 0; i < 3; ++i) {
    services.push_back(std::make_unique<HedgeService>(log));
    TestServerSetup setup;
    setup.services.push_back(services.back().get());
    servers.push_back(TestServer::Start(Transport::kTcp, setup));
    ASSERT_NE(servers.back(), nullptr);
    target += (i == 0 ? "" : ",") + servers.back()->target();
  }
  ChannelOptions options = WithConfig(HedgingConfig(3, "0s", ""));
  options.load_balancing_policy = "round_robin";
  auto channel = Channel::Create(target, options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  // Plain calls until every server is connected (round_robin picks among the ready ones).
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_TRUE(EmptyCall(stub).ok());
    return std::all_of(services.begin(), services.end(),
                       [](const auto& service) { return service->empty_calls.load() > 0; });
  }));
  const Outcome outcome = CallWithPlan(stub, "spread", "wait,wait,ok");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_EQ(outcome.username, "attempt 2");
  for (const auto& service : services) EXPECT_EQ(service->attempts.load(), 1);
  EXPECT_TRUE(WaitUntil([&] { return log->cancelled("spread") == 2; }));
}

}  // namespace
}  // namespace rill::test
