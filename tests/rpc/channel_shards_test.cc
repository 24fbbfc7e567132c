// A channel spread over several reactors (ChannelOptions::reactor_shards), rill ↔ rill on
// loopback TCP: its calls and streams run on every reactor of the pool (seen from the server as
// one connection per reactor, from the client as completions on each reactor thread), a call
// started in a completion stays on that thread, round_robin still spreads evenly over two
// servers, the connectivity state is the best shard's, and destroying the channel ends what
// runs on every shard.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/reactor_pool.h"
#include "rill/resolver.h"
#include "rill/server_context.h"
#include "tests/testing/calls.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// Counts, per client connection (the peer's address), the calls and streams it serves.
// CacheableUnaryCall waits response_size ms (WaitingHandler); FullDuplexCall answers each
// request.
class PeerCountingService final : public TestService::Service, public WaitingHandler {
 public:
  Status EmptyCall(ServerContext& context, const Empty&, Empty&) override {
    Record(context);
    return Status();
  }
  Awaitable<Status> CacheableUnaryCallAsync(ServerContext& context, const SimpleRequest& request,
                                            SimpleResponse& response) override {
    Record(context);
    waiting.fetch_add(1);
    return WaitThenAnswer(context, request, response);
  }
  Awaitable<Status> FullDuplexCall(ServerContext& context,
                                   FullDuplexServerStream& stream) override {
    Record(context);
    return AnswerEachRequest(&stream, 'd');
  }

  std::map<std::string, int> peers() {
    std::lock_guard lock(mu_);
    return peers_;
  }
  void Reset() {
    std::lock_guard lock(mu_);
    peers_.clear();
  }

  std::atomic<int> waiting{0};  // CacheableUnaryCall handlers started

 private:
  void Record(ServerContext& context) {
    std::lock_guard lock(mu_);
    ++peers_[std::string(context.peer())];
  }

  std::mutex mu_;
  std::map<std::string, int> peers_;
};

// Unary calls started asynchronously, and the threads their completions ran on.
class AsyncCalls {
 public:
  // Starts `count` EmptyCalls on `stub` from the calling thread.
  void Start(TestService::Stub& stub, int count) {
    for (int i = 0; i < count; ++i) {
      Call& call = calls_.emplace_back();
      call.context.set_timeout(kMustComplete);
      stub.EmptyCall(call.context, call.request, &call.response,
                     [this](Status status) { Completed(status); });
    }
  }
  // Blocks until `count` calls completed; false if kMustComplete passed first.
  bool WaitFor(int count) {
    return WaitUntil([&] {
      std::lock_guard lock(mu_);
      return completed_ >= count;
    });
  }
  std::set<std::thread::id> threads() {
    std::lock_guard lock(mu_);
    return threads_;
  }
  int ok() {
    std::lock_guard lock(mu_);
    return ok_;
  }

 private:
  struct Call {
    ClientContext context;
    Empty request;
    Empty response;
  };

  void Completed(const Status& status) {
    std::lock_guard lock(mu_);
    threads_.insert(std::this_thread::get_id());
    ++completed_;
    if (status.ok()) ++ok_;
  }

  std::deque<Call> calls_;
  std::mutex mu_;
  std::set<std::thread::id> threads_;
  int completed_ = 0;
  int ok_ = 0;
};

// A resolver whose every instance (one per shard, made in shard order) gives its own address.
class PerShardResolverFactory final : public ResolverFactory {
 public:
  explicit PerShardResolverFactory(std::vector<std::string> addresses)
      : addresses_(std::move(addresses)) {}
  std::string_view scheme() const override { return "pershard"; }
  std::unique_ptr<Resolver> Create(const TargetUri&,
                                   std::shared_ptr<ResolverListener> listener) override {
    std::lock_guard lock(mu_);
    return std::make_unique<Fixed>(addresses_[made_++ % addresses_.size()], std::move(listener));
  }

 private:
  class Fixed final : public Resolver {
   public:
    Fixed(std::string address, std::shared_ptr<ResolverListener> listener)
        : address_(std::move(address)), listener_(std::move(listener)) {}
    void Resolve() override { listener_->OnResult({.status = Status(), .addresses = {address_}}); }

   private:
    std::string address_;
    std::shared_ptr<ResolverListener> listener_;
  };

  std::mutex mu_;
  std::vector<std::string> addresses_;
  size_t made_ = 0;
};

// A port nobody listens on (a server was there a moment ago).
int ClosedPort() {
  TestServerSetup setup;
  auto gone = TestServer::Start(Transport::kTcp, setup);
  if (gone == nullptr) return 0;
  const int port = gone->port();
  gone.reset();
  return port;
}

class ChannelShardsTest : public ServerTest<PeerCountingService> {
 protected:
  void SetUp() override {
    reactors_ = std::make_unique<ReactorPool>(ReactorPool::Options{.threads = 2, .cpus = {}});
    ASSERT_NO_FATAL_FAILURE(StartServer(Transport::kTcp));
  }
  void TearDown() override {
    ServerTest<PeerCountingService>::TearDown();
    reactors_.reset();  // after every channel on it
  }
  // Connects with `shards` (the option's value) and makes 20 calls: they complete on
  // `reactors` threads, over as many connections.
  void ExpectCallsSpreadOver(size_t shards, size_t reactors) {
    ASSERT_NO_FATAL_FAILURE(Connect(Sharded(shards)));
    AsyncCalls calls;
    calls.Start(*stub_, 20);
    ASSERT_TRUE(calls.WaitFor(20));
    EXPECT_EQ(calls.ok(), 20);
    EXPECT_EQ(calls.threads().size(), reactors);
    EXPECT_EQ(service_.peers().size(), reactors);
  }
  ChannelOptions Sharded(size_t shards = 2) {
    ChannelOptions options;
    options.reactors = reactors_.get();
    options.reactor_shards = shards;
    options.initial_backoff = milliseconds(20);
    options.max_backoff = milliseconds(200);
    return options;
  }

  std::unique_ptr<ReactorPool> reactors_;
};

TEST_F(ChannelShardsTest, CallsRunOnEveryReactorOverAConnectionEach) {
  ASSERT_NO_FATAL_FAILURE(Connect(Sharded()));
  AsyncCalls calls;
  calls.Start(*stub_, 200);
  ASSERT_TRUE(calls.WaitFor(200));
  EXPECT_EQ(calls.ok(), 200);
  // Completions ran on both reactor threads (never on this one).
  const std::set<std::thread::id> threads = calls.threads();
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  // Two connections, and calls from this thread alternate between them.
  const std::map<std::string, int> peers = service_.peers();
  ASSERT_EQ(peers.size(), 2u);
  for (const auto& [peer, count] : peers) EXPECT_EQ(count, 100) << peer;
}

TEST_F(ChannelShardsTest, ZeroShardsMeansOnePerReactor) {
  ExpectCallsSpreadOver(0, 2);
}

TEST_F(ChannelShardsTest, MoreShardsThanReactorsMeansOnePerReactor) {
  ExpectCallsSpreadOver(5, 2);
}

TEST_F(ChannelShardsTest, OneShardKeepsEveryCallOnOneReactor) {
  ExpectCallsSpreadOver(1, 1);
}

TEST_F(ChannelShardsTest, ACallStartedInACompletionStaysOnItsThread) {
  ASSERT_NO_FATAL_FAILURE(Connect(Sharded()));
  constexpr int kChains = 20;
  struct Chain {
    ClientContext first_context;
    ClientContext second_context;
    Empty request;
    Empty first_response;
    Empty second_response;
    std::thread::id first_thread;
    std::promise<std::pair<Status, std::thread::id>> second_done;
  };
  std::deque<Chain> chains(kChains);
  for (Chain& chain : chains) {
    stub_->EmptyCall(chain.first_context, chain.request, &chain.first_response,
                     [this, &chain](Status status) {
                       EXPECT_TRUE(status.ok()) << status;
                       chain.first_thread = std::this_thread::get_id();
                       stub_->EmptyCall(chain.second_context, chain.request,
                                        &chain.second_response, [&chain](Status second) {
                                          chain.second_done.set_value(
                                              {std::move(second), std::this_thread::get_id()});
                                        });
                     });
  }
  std::set<std::thread::id> threads;
  for (Chain& chain : chains) {
    std::future<std::pair<Status, std::thread::id>> second = chain.second_done.get_future();
    ASSERT_EQ(second.wait_for(kMustComplete), std::future_status::ready);
    auto [status, thread] = second.get();
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_EQ(thread, chain.first_thread);
    threads.insert(thread);
  }
  EXPECT_EQ(threads.size(), 2u);
}

TEST_F(ChannelShardsTest, StreamsRunOnEveryShard) {
  ASSERT_NO_FATAL_FAILURE(Connect(Sharded()));
  constexpr int kStreams = 4;
  std::vector<std::unique_ptr<ClientContext>> contexts;
  std::vector<std::unique_ptr<
      ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>>>
      streams;
  // All open at once, alternating between the shards.
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<ClientContext>());
    contexts.back()->set_timeout(kMustComplete);
    streams.push_back(stub_->FullDuplexCall(*contexts.back()));
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& stream : streams) {
      StreamingOutputCallRequest request;
      request.add_response_parameters()->set_size(10 + round);
      ASSERT_TRUE(stream->BlockingWrite(request));
    }
    for (auto& stream : streams) {
      StreamingOutputCallResponse response;
      ASSERT_TRUE(stream->BlockingRead(&response));
      EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(10 + round));
    }
  }
  for (auto& stream : streams) {
    ASSERT_TRUE(stream->BlockingWritesDone());
    StreamingOutputCallResponse response;
    EXPECT_FALSE(stream->BlockingRead(&response));
    const Status status = stream->BlockingFinish();
    EXPECT_TRUE(status.ok()) << status;
  }
  const std::map<std::string, int> peers = service_.peers();
  ASSERT_EQ(peers.size(), 2u);
  for (const auto& [peer, count] : peers) EXPECT_EQ(count, kStreams / 2) << peer;
}

TEST_F(ChannelShardsTest, DestroyingTheChannelEndsCallsAndStreamsOnEveryShard) {
  ASSERT_NO_FATAL_FAILURE(Connect(Sharded()));
  constexpr int kPending = 4;
  std::deque<PendingCall> pending(kPending);
  for (PendingCall& call : pending) call.StartCacheable(*stub_, 60'000);
  std::vector<std::unique_ptr<ClientContext>> contexts;
  std::vector<std::unique_ptr<
      ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>>>
      streams;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(std::make_unique<ClientContext>());
    streams.push_back(stub_->FullDuplexCall(*contexts.back()));
    StreamingOutputCallRequest request;
    request.add_response_parameters()->set_size(1);
    ASSERT_TRUE(streams.back()->BlockingWrite(request));
    StreamingOutputCallResponse response;
    ASSERT_TRUE(streams.back()->BlockingRead(&response));
  }
  ASSERT_TRUE(WaitUntil([&] { return service_.waiting.load() == kPending; }));
  ASSERT_EQ(service_.peers().size(), 2u);  // both shards have calls in flight

  stub_.reset();
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(60), [&] { channel_.reset(); }));
  for (PendingCall& call : pending) EXPECT_EQ(call.Get().code(), StatusCode::kCancelled);
  for (auto& stream : streams) {
    StreamingOutputCallResponse response;
    EXPECT_FALSE(stream->BlockingRead(&response));
    EXPECT_EQ(stream->BlockingFinish().code(), StatusCode::kCancelled);
  }
  streams.clear();
}

TEST_F(ChannelShardsTest, ConnectivityIsTheBestShards) {
  // The first shard reaches the server; the second's address refuses every connection.
  const int closed = ClosedPort();
  ASSERT_NE(closed, 0);
  ChannelOptions options = Sharded();
  options.resolvers.push_back(std::make_shared<PerShardResolverFactory>(std::vector<std::string>{
      server_->target(), "127.0.0.1:" + std::to_string(closed)}));
  auto channel = Channel::Create("pershard:///split", options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  std::shared_ptr<Channel> split = std::move(*channel);

  EXPECT_EQ(split->GetState(false), ConnectivityState::kIdle);
  std::future<bool> left_idle = split->AsyncWaitForStateChange(
      ConnectivityState::kIdle, Channel::Clock::now() + kMustComplete, asio::use_future);
  EXPECT_EQ(split->GetState(true), ConnectivityState::kIdle);
  ASSERT_EQ(left_idle.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(left_idle.get());
  ASSERT_TRUE(WaitUntil([&] { return split->GetState(false) == ConnectivityState::kReady; }));
  // READY while the other shard fails; but not every shard connects.
  EXPECT_FALSE(split->WaitForConnected(Channel::Clock::now() + milliseconds(300)));
  EXPECT_EQ(split->GetState(false), ConnectivityState::kReady);

  // Nothing changes: the wait ends at its deadline.
  std::future<bool> unchanged = split->AsyncWaitForStateChange(
      ConnectivityState::kReady, Channel::Clock::now() + milliseconds(50), asio::use_future);
  ASSERT_EQ(unchanged.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_FALSE(unchanged.get());
  EXPECT_FALSE(split->WaitForStateChange(ConnectivityState::kReady,
                                         Channel::Clock::now() + milliseconds(50)));

  // A wait still pending when the channel goes sees SHUTDOWN.
  std::future<bool> shut_down = split->AsyncWaitForStateChange(
      ConnectivityState::kReady, Channel::Clock::now() + kMustComplete, asio::use_future);
  EXPECT_TRUE(FinishesWithin(std::chrono::seconds(60), [&] { split.reset(); }));
  ASSERT_EQ(shut_down.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(shut_down.get());
}

TEST_F(ChannelShardsTest, EveryShardFailingIsTransientFailure) {
  const int closed = ClosedPort();
  ASSERT_NE(closed, 0);
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(closed), Sharded());
  ASSERT_TRUE(channel.ok()) << channel.status();
  std::shared_ptr<Channel> failing = std::move(*channel);
  (void)failing->GetState(true);
  ASSERT_TRUE(WaitUntil(
      [&] { return failing->GetState(false) == ConnectivityState::kTransientFailure; }));
  TestService::Stub stub(failing);
  // Each shard fails its calls at once.
  for (int i = 0; i < 4; ++i) {
    ClientContext context;
    context.set_timeout(kMustComplete);
    Empty request;
    Empty response;
    EXPECT_EQ(stub.EmptyCall(context, request, &response).code(), StatusCode::kUnavailable);
  }
}

// Two servers behind one target: each shard round-robins over both, and the calls of the
// channel spread evenly.
TEST(ChannelShardsRoundRobinTest, SpreadsEvenlyOverTwoServers) {
  ReactorPool reactors(ReactorPool::Options{.threads = 2, .cpus = {}});
  PeerCountingService services[2];
  std::unique_ptr<TestServer> servers[2];
  std::string target = "ipv4:";
  for (int i = 0; i < 2; ++i) {
    TestServerSetup setup;
    setup.services.push_back(&services[i]);
    servers[i] = TestServer::Start(Transport::kTcp, setup);
    ASSERT_NE(servers[i], nullptr);
    target += (i == 0 ? "" : ",") + servers[i]->target();
  }
  ChannelOptions options;
  options.reactors = &reactors;
  options.reactor_shards = 2;
  options.load_balancing_policy = "round_robin";
  auto created = Channel::Create(target, options);
  ASSERT_TRUE(created.ok()) << created.status();
  std::shared_ptr<Channel> channel = std::move(*created);
  TestService::Stub stub(channel);
  ASSERT_TRUE(channel->WaitForConnected(Channel::Clock::now() + kMustComplete));
  // Until each server has a connection from each shard.
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_TRUE(EmptyCall(stub).ok());
    return services[0].peers().size() == 2 && services[1].peers().size() == 2;
  }));
  services[0].Reset();
  services[1].Reset();

  constexpr int kCalls = 1000;
  for (int i = 0; i < kCalls; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  for (PeerCountingService& service : services) {
    int total = 0;
    for (const auto& [peer, count] : service.peers()) total += count;
    EXPECT_NEAR(total, kCalls / 2, kCalls / 2 * 0.05);
    EXPECT_EQ(service.peers().size(), 2u);
  }
}

}  // namespace
}  // namespace rill::test
