// Many threads create and destroy channels, stubs, streams and servers in random order while
// calls are in flight. Whatever the order, every call completes exactly once with a status a
// user could expect, nothing hangs, and every pooled block is back when it is over (the test
// main checks the leak-checking pool).
#include <gtest/gtest.h>

#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

constexpr int kThreads = 6;
constexpr auto kRunFor = std::chrono::seconds(6);
constexpr int kMaxActionsPerThread = 400;

// Unary: echoes, sometimes after a short wait. Bidi: echoes each message after a random wait.
class StressService final : public TestService::Service {
 public:
  Status UnaryCall(ServerContext& context, const SimpleRequest& request,
                   SimpleResponse& response) override {
    response.mutable_payload()->set_body(request.payload().body());
    return Status();
  }

  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    asio::steady_timer timer(context.io_context(), milliseconds(request.response_size() % 20));
    co_await timer.async_wait(asio::use_awaitable);
    response.mutable_payload()->set_body(request.payload().body());
    co_return Status();
  }

  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    StreamingOutputCallRequest request;
    while (co_await stream.Read(&request)) {
      asio::steady_timer timer(context.io_context(), milliseconds(request.response_type() % 5));
      co_await timer.async_wait(asio::use_awaitable);
      StreamingOutputCallResponse response;
      response.mutable_payload()->set_body(request.payload().body());
      if (!co_await stream.Write(response)) break;
    }
    co_return Status();
  }
};

bool Expected(StatusCode code) {
  return code == StatusCode::kOk || code == StatusCode::kCancelled ||
         code == StatusCode::kDeadlineExceeded || code == StatusCode::kUnavailable;
}

// The servers the threads talk to, started and stopped at random. A target stays valid after
// its server stopped: calls to it fail with UNAVAILABLE, as to any dead address.
class ServerFarm {
 public:
  explicit ServerFarm(StressService* service) : service_(service) {
    for (int i = 0; i < 2; ++i) Start();
  }

  void Start() {
    TestServerSetup setup;
    setup.services.push_back(service_);
    setup.reactor_count = 1;
    auto server = TestServer::Start(Transport::kTcp, setup);
    if (server == nullptr) return;
    std::lock_guard lock(mu_);
    targets_.push_back(server->target());
    servers_.push_back(std::move(server));
  }

  // Stops one server (chosen by `pick`), outside the lock.
  void StopOne(size_t pick) {
    std::unique_ptr<TestServer> server;
    {
      std::lock_guard lock(mu_);
      if (servers_.size() <= 1) return;
      auto it = servers_.begin() + static_cast<long>(pick % servers_.size());
      server = std::move(*it);
      servers_.erase(it);
    }
    server->Stop(milliseconds(pick % 3 == 0 ? 50 : 0));
  }

  // Mostly a live server; now and then one that stopped.
  std::string Target(size_t pick) {
    std::lock_guard lock(mu_);
    if (pick % 5 != 0 && !servers_.empty()) return servers_[pick % servers_.size()]->target();
    return targets_[pick % targets_.size()];
  }

  void StopAll() {
    std::vector<std::unique_ptr<TestServer>> servers;
    {
      std::lock_guard lock(mu_);
      servers.swap(servers_);
    }
    for (auto& s : servers) s->Stop();
  }

 private:
  StressService* service_;
  std::mutex mu_;
  std::vector<std::unique_ptr<TestServer>> servers_;
  std::vector<std::string> targets_;  // every server ever started
};

struct Counters {
  std::atomic<int> started{0};
  std::atomic<int> completed{0};
  std::atomic<int> unexpected{0};
  std::atomic<int> streams{0};
  std::mutex mu;
  std::map<StatusCode, int> codes;
  void Record(const Status& status) {
    if (!Expected(status.code())) {
      unexpected.fetch_add(1);
      ADD_FAILURE() << "unexpected status " << status;
    }
    std::lock_guard lock(mu);
    ++codes[status.code()];
  }
};

// One unary call whose state lives as long as its completion.
void StartUnary(TestService::Stub& stub, std::mt19937& rng, Counters& counters) {
  struct Call {
    ClientContext context;
    SimpleRequest request;
    SimpleResponse response;
  };
  auto call = std::make_shared<Call>();
  call->request.mutable_payload()->set_body(std::string(rng() % 2000, 'x'));
  call->request.set_response_size(static_cast<int32_t>(rng() % 100));
  if (rng() % 3 == 0) call->context.set_timeout(milliseconds(rng() % 30));
  counters.started.fetch_add(1);
  auto done = [call, &counters](Status status) {
    counters.Record(status);
    if (status.ok() && call->response.payload().body() != call->request.payload().body()) {
      counters.unexpected.fetch_add(1);
      ADD_FAILURE() << "a response that is not the request's echo";
    }
    counters.completed.fetch_add(1);
  };
  if (rng() % 2 == 0) {
    stub.UnaryCall(call->context, call->request, &call->response, done);
  } else {
    stub.CacheableUnaryCall(call->context, call->request, &call->response, done);
  }
  if (rng() % 5 == 0) call->context.TryCancel();
}

// A bidi stream: a few round trips, then finished, abandoned or cancelled.
void RunStream(TestService::Stub& stub, std::mt19937& rng, Counters& counters) {
  ClientContext context;
  context.set_timeout(milliseconds(500 + rng() % 500));
  auto stream = stub.FullDuplexCall(context);
  counters.streams.fetch_add(1);
  const int rounds = static_cast<int>(rng() % 4);
  StreamingOutputCallRequest request;
  StreamingOutputCallResponse response;
  for (int i = 0; i < rounds; ++i) {
    request.mutable_payload()->set_body(std::to_string(i));
    request.set_response_type(static_cast<grpc::testing::PayloadType>(0));
    if (!stream->BlockingWrite(request) || !stream->BlockingRead(&response)) break;
    if (response.payload().body() != std::to_string(i)) {
      counters.unexpected.fetch_add(1);
      ADD_FAILURE() << "stream echo mismatch";
    }
  }
  switch (rng() % 3) {
    case 0:  // finish properly
      stream->BlockingWritesDone();
      while (stream->BlockingRead(&response)) {
      }
      counters.Record(stream->BlockingFinish());
      break;
    case 1:  // cancel, then finish
      context.TryCancel();
      counters.Record(stream->BlockingFinish());
      break;
    default:  // drop it mid-call
      break;
  }
  stream.reset();
}

TEST(Stress, ChannelsStubsStreamsAndServersComeAndGoWhileCallsRun) {
  StressService service;
  auto farm = std::make_unique<ServerFarm>(&service);
  Counters counters;
  std::atomic<int> channels_made{0};
  std::atomic<int> servers_restarted{0};
  const auto until = std::chrono::steady_clock::now() + kRunFor;

  auto worker = [&](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::shared_ptr<Channel>> channels;
    std::vector<std::unique_ptr<TestService::Stub>> stubs;
    for (int action = 0;
         action < kMaxActionsPerThread && std::chrono::steady_clock::now() < until; ++action) {
      const unsigned what = rng() % 100;
      if (stubs.empty() || what < 8) {
        ChannelOptions options;
        if (rng() % 4 == 0) options.wait_for_ready = true;
        auto channel = Channel::Create(farm->Target(rng()), options);
        ASSERT_TRUE(channel.ok());
        channels_made.fetch_add(1);
        stubs.push_back(std::make_unique<TestService::Stub>(*channel));
        if (rng() % 2 == 0) channels.push_back(std::move(*channel));
      } else if (what < 14) {
        // Drop a stub (and perhaps its channel's last reference) with calls in flight.
        const size_t i = rng() % stubs.size();
        stubs.erase(stubs.begin() + static_cast<long>(i));
        if (!channels.empty() && rng() % 2 == 0) {
          channels.erase(channels.begin() + static_cast<long>(rng() % channels.size()));
        }
      } else if (what < 16) {
        farm->StopOne(rng());
        farm->Start();
        servers_restarted.fetch_add(1);
      } else if (what < 28) {
        RunStream(*stubs[rng() % stubs.size()], rng, counters);
      } else {
        StartUnary(*stubs[rng() % stubs.size()], rng, counters);
      }
    }
    stubs.clear();
    channels.clear();
  };

  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(120), [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, 1000u + t);
    for (auto& t : threads) t.join();
  }));
  // Every channel is gone, so every unary call has completed: exactly once each.
  EXPECT_EQ(counters.completed.load(), counters.started.load());
  EXPECT_EQ(counters.unexpected.load(), 0);
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(60), [&] {
    farm->StopAll();
    farm.reset();
  }));
  std::string summary;
  for (const auto& [code, n] : counters.codes) {
    summary += " " + std::string(StatusCodeName(code)) + "=" + std::to_string(n);
  }
  std::printf("unary calls %d, streams %d, channels %d, server restarts %d; statuses:%s\n",
              counters.started.load(), counters.streams.load(), channels_made.load(),
              servers_restarted.load(), summary.c_str());
  EXPECT_GT(counters.codes[StatusCode::kOk], 0);
}

}  // namespace
}  // namespace rill::test
