// The client channel over several servers, rill ↔ rill on loopback: targets naming many
// addresses, pick_first and round_robin, servers going away and coming back, a user's resolver,
// the connectivity state API, per-call wait-for-ready, and a user's load-balancing policy.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <optional>

#include <unistd.h>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "rill/load_balancing.h"
#include "rill/resolver.h"
#include "rill/server_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/log_capture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

using std::chrono::milliseconds;

// Counts the calls it answers.
class CountingService final : public TestService::Service {
 public:
  Status EmptyCall(ServerContext& context, const Empty& request, Empty& response) override {
    calls.fetch_add(1);
    return Status();
  }
  std::atomic<int> calls{0};
};

// One rill server of the group, restartable on its port.
struct Backend {
  CountingService service;
  std::unique_ptr<TestServer> server;
  int port = 0;

  bool Start() {
    TestServerSetup setup;
    setup.services.push_back(&service);
    setup.port = port;
    server = TestServer::Start(Transport::kTcp, setup);
    if (server == nullptr) return false;
    port = server->port();
    return true;
  }
  [[nodiscard]] std::string address() const { return "127.0.0.1:" + std::to_string(port); }
};

Status EmptyCall(TestService::Stub& stub, milliseconds timeout = kMustComplete,
                 std::optional<bool> wait_for_ready = std::nullopt) {
  ClientContext context;
  context.set_timeout(timeout);
  if (wait_for_ready) context.set_wait_for_ready(*wait_for_ready);
  Empty request;
  Empty response;
  return stub.EmptyCall(context, request, &response);
}

ChannelOptions FastRetry(std::string_view policy) {
  ChannelOptions options;
  options.load_balancing_policy = std::string(policy);
  options.initial_backoff = milliseconds(20);
  options.max_backoff = milliseconds(200);
  options.min_resolution_interval = milliseconds(50);
  return options;
}

// A port nobody listens on (a server was there a moment ago).
int ClosedPort() {
  Backend gone;
  if (!gone.Start()) return 0;
  const int port = gone.port;
  gone.server.reset();
  return port;
}

// A resolver whose addresses the test changes while the channel runs.
class MovableResolverFactory final : public ResolverFactory {
 public:
  std::string_view scheme() const override { return "movable"; }
  std::unique_ptr<Resolver> Create(const TargetUri& target,
                                   std::shared_ptr<ResolverListener> listener) override {
    std::lock_guard lock(mu_);
    listener_ = listener;
    return std::make_unique<Handle>(this);
  }
  void SetAddresses(std::vector<std::string> addresses) {
    std::shared_ptr<ResolverListener> listener;
    {
      std::lock_guard lock(mu_);
      addresses_ = std::move(addresses);
      listener = listener_;
    }
    if (listener != nullptr) listener->OnResult({.status = Status(), .addresses = addresses_});
  }
  std::atomic<int> resolves{0};

 private:
  class Handle final : public Resolver {
   public:
    explicit Handle(MovableResolverFactory* factory) : factory_(factory) {}
    void Resolve() override {
      factory_->resolves.fetch_add(1);
      std::lock_guard lock(factory_->mu_);
      factory_->listener_->OnResult({.status = Status(), .addresses = factory_->addresses_});
    }

   private:
    MovableResolverFactory* factory_;
  };

  std::mutex mu_;
  std::shared_ptr<ResolverListener> listener_;
  std::vector<std::string> addresses_;
};

class LoadBalancingTest : public ::testing::Test {
 protected:
  void StartBackends(size_t n) {
    backends_.resize(n);
    for (auto& backend : backends_) {
      backend = std::make_unique<Backend>();
      ASSERT_TRUE(backend->Start());
    }
  }
  std::string Ipv4Target() const {
    std::string target = "ipv4:";
    for (size_t i = 0; i < backends_.size(); ++i) {
      if (i != 0) target += ",";
      target += backends_[i]->address();
    }
    return target;
  }
  std::vector<int> Counts() const {
    std::vector<int> out;
    for (const auto& backend : backends_) out.push_back(backend->service.calls.load());
    return out;
  }
  void ResetCounts() {
    for (auto& backend : backends_) backend->service.calls.store(0);
  }
  // Calls until every running backend answered one (round_robin connects to them in parallel).
  void WaitUntilAllServe(TestService::Stub& stub) {
    ASSERT_TRUE(WaitUntil([&] {
      EXPECT_TRUE(EmptyCall(stub).ok());
      for (const auto& backend : backends_) {
        if (backend->server != nullptr && backend->service.calls.load() == 0) return false;
      }
      return true;
    }));
  }
  void TearDown() override { backends_.clear(); }

  // A channel to "movable:///service", whose resolver reports backend 0 first.
  std::shared_ptr<Channel> MovableChannel(const std::shared_ptr<MovableResolverFactory>& factory,
                                          ChannelOptions options) {
    factory->SetAddresses({backends_[0]->address()});
    options.resolvers.push_back(factory);
    auto channel = Channel::Create("movable:///service", options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return channel.ok() ? *channel : nullptr;
  }

  std::vector<std::unique_ptr<Backend>> backends_;
};

TEST_F(LoadBalancingTest, RoundRobinSpreadsCallsEvenly) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(3));
  auto channel = Channel::Create(Ipv4Target(), FastRetry("round_robin"));
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAllServe(stub));
  ResetCounts();
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(100, 100, 100));
}

TEST_F(LoadBalancingTest, RoundRobinLosesNoWaitForReadyCallWhileABackendRestarts) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(3));
  ChannelOptions options = FastRetry("round_robin");
  options.wait_for_ready = true;
  auto channel = Channel::Create(Ipv4Target(), options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  ASSERT_NO_FATAL_FAILURE(WaitUntilAllServe(stub));

  backends_[1]->server->Stop(milliseconds(1000));
  backends_[1]->server.reset();
  ResetCounts();
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(EmptyCall(stub).ok()) << "call " << i;
  EXPECT_EQ(backends_[1]->service.calls.load(), 0);
  EXPECT_EQ(backends_[0]->service.calls.load() + backends_[2]->service.calls.load(), 200);
  EXPECT_GT(backends_[0]->service.calls.load(), 50);
  EXPECT_GT(backends_[2]->service.calls.load(), 50);

  // Back on the same port, it gets its share again.
  ASSERT_TRUE(backends_[1]->Start());
  ASSERT_TRUE(WaitUntil([&] {
    EXPECT_TRUE(EmptyCall(stub).ok());
    return backends_[1]->service.calls.load() > 0;
  }));
}

TEST_F(LoadBalancingTest, PickFirstSendsEveryCallToTheFirstAddressThatConnects) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(2));
  const int closed = ClosedPort();
  ASSERT_NE(closed, 0);
  auto channel = Channel::Create("ipv4:127.0.0.1:" + std::to_string(closed) + "," +
                                     backends_[0]->address() + "," + backends_[1]->address(),
                                 FastRetry("pick_first"));
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(20, 0));

  // The first goes away: the next call starts over and lands on the next address in order.
  backends_[0]->server.reset();
  ASSERT_TRUE(WaitUntil([&] { return EmptyCall(stub).ok() && backends_[1]->service.calls > 0; }));
  ResetCounts();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_EQ(backends_[1]->service.calls.load(), 20);
}

TEST_F(LoadBalancingTest, DnsTargetsReachALocalServer) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(1));
  const std::string port = std::to_string(backends_[0]->port);
  for (const std::string& target : {"dns:///localhost:" + port, "localhost:" + port,
                                    "dns:localhost:" + port}) {
    auto channel = Channel::Create(target);
    ASSERT_TRUE(channel.ok()) << target << ": " << channel.status();
    TestService::Stub stub(*channel);
    EXPECT_TRUE(EmptyCall(stub).ok()) << target;
  }
  EXPECT_EQ(backends_[0]->service.calls.load(), 3);
}

TEST_F(LoadBalancingTest, UnixAbstractTarget) {
  CountingService service;
  const std::string name = "rill-lb-test-" + std::to_string(::getpid());
  ServerBuilder builder;
  builder.AddListeningPort("unix-abstract:" + name).RegisterService(&service);
  StatusOr<std::unique_ptr<Server>> server = builder.Build();
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = Channel::Create("unix-abstract:" + name);
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  EXPECT_TRUE(EmptyCall(stub).ok());
  EXPECT_EQ(service.calls.load(), 1);
  channel->reset();
  (*server)->Shutdown(milliseconds(0));
}

TEST(ChannelTargets, MalformedTargetsAndUnknownPoliciesAreRejected) {
  EXPECT_EQ(Channel::Create("ipv4:not-an-address:80").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Channel::Create("unix://host/path").status().code(), StatusCode::kInvalidArgument);
  ChannelOptions options;
  options.load_balancing_policy = "weighted_random";
  EXPECT_EQ(Channel::Create("127.0.0.1:1", options).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LoadBalancingTest, UserResolverMovesCallsToItsNewAddresses) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(2));
  auto factory = std::make_shared<MovableResolverFactory>();
  auto channel = MovableChannel(factory, FastRetry("pick_first"));
  ASSERT_NE(channel, nullptr);
  TestService::Stub stub(channel);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(5, 0));
  EXPECT_EQ(factory->resolves.load(), 1);

  factory->SetAddresses({backends_[1]->address()});
  ASSERT_TRUE(WaitUntil([&] { return EmptyCall(stub).ok() && backends_[1]->service.calls > 0; }));
  ResetCounts();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(0, 5));

  // A connection that goes away makes the channel ask its resolver again.
  backends_[1]->server.reset();
  factory->SetAddresses({backends_[0]->address()});
  ASSERT_TRUE(WaitUntil([&] { return EmptyCall(stub).ok() && backends_[0]->service.calls > 0; }));
  // (No sooner than min_resolution_interval after the first resolution.)
  EXPECT_TRUE(WaitUntil([&] { return factory->resolves.load() >= 2; }));
}

TEST_F(LoadBalancingTest, IdleChannelLetsItsConnectionGoAndComesBack) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(1));
  auto factory = std::make_shared<MovableResolverFactory>();
  ChannelOptions options = FastRetry("pick_first");
  options.idle_timeout = milliseconds(100);
  auto channel = MovableChannel(factory, options);
  ASSERT_NE(channel, nullptr);
  TestService::Stub stub(channel);
  ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);
  ASSERT_TRUE(WaitUntil([&] { return channel->GetState(false) == ConnectivityState::kIdle; }));
  // The next call resolves the target again and reconnects.
  EXPECT_TRUE(EmptyCall(stub).ok());
  EXPECT_EQ(factory->resolves.load(), 2);
  EXPECT_EQ(backends_[0]->service.calls.load(), 2);
}

TEST_F(LoadBalancingTest, ConnectivityStatesFollowTheBackend) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(1));
  auto created = Channel::Create(backends_[0]->address(), FastRetry("pick_first"));
  ASSERT_TRUE(created.ok());
  std::shared_ptr<Channel> channel = *created;
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kIdle);
  EXPECT_FALSE(channel->WaitForStateChange(ConnectivityState::kIdle,
                                           Channel::Clock::now() + milliseconds(50)));
  EXPECT_EQ(channel->GetState(/*try_to_connect=*/true), ConnectivityState::kIdle);
  ASSERT_TRUE(WaitUntil([&] { return channel->GetState(false) == ConnectivityState::kReady; }));

  // The server goes: the channel leaves READY; with no server to reconnect to, a connection
  // attempt fails and fail-fast calls fail UNAVAILABLE.
  std::future<bool> changed = channel->AsyncWaitForStateChange(
      ConnectivityState::kReady, Channel::Clock::now() + kMustComplete, asio::use_future);
  backends_[0]->server.reset();
  ASSERT_EQ(changed.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(changed.get());
  EXPECT_NE(channel->GetState(false), ConnectivityState::kReady);
  TestService::Stub stub(channel);
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kTransientFailure);

  // An expired wait completes false.
  std::future<bool> expired = channel->AsyncWaitForStateChange(
      ConnectivityState::kTransientFailure, Channel::Clock::now() + milliseconds(20),
      asio::use_future);
  ASSERT_EQ(expired.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_FALSE(expired.get());
}

TEST_F(LoadBalancingTest, PerCallWaitForReadyOverridesTheChannel) {
  const int port = ClosedPort();
  ASSERT_NE(port, 0);
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(port), FastRetry("pick_first"));
  ASSERT_TRUE(channel.ok());
  TestService::Stub stub(*channel);
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);

  std::future<Status> waiting = std::async(std::launch::async, [&] {
    return EmptyCall(stub, kMustComplete, /*wait_for_ready=*/true);
  });
  EXPECT_EQ(waiting.wait_for(milliseconds(300)), std::future_status::timeout);
  backends_.push_back(std::make_unique<Backend>());
  backends_[0]->port = port;
  ASSERT_TRUE(backends_[0]->Start());
  ASSERT_EQ(waiting.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
}


// A user's policy: every call to the last address (reconnecting it whenever it goes), the
// method of each pick recorded; it may be told to throw from Pick.
class LastAddressPolicy final : public LoadBalancingPolicy {
 public:
  struct Shared {
    std::mutex mu;
    std::vector<std::string> methods;
    std::vector<std::string> states;  // the subchannel states it heard, in order
    std::atomic<bool> throw_in_pick{false};
    std::atomic<int> live{0};  // policies not yet destroyed
  };

  LastAddressPolicy(LbHelper& helper, std::shared_ptr<Shared> shared)
      : helper_(helper), shared_(std::move(shared)) {
    shared_->live.fetch_add(1);
  }
  ~LastAddressPolicy() override {
    if (used_ != nullptr) helper_.ReleaseSubchannel(used_);
    shared_->live.fetch_sub(1);
  }
  void UpdateAddresses(const std::vector<std::string>& addresses) override {
    if (used_ != nullptr) helper_.ReleaseSubchannel(std::exchange(used_, nullptr));
    if (addresses.empty()) {
      helper_.UpdateState(ConnectivityState::kTransientFailure,
                          Status(StatusCode::kUnavailable, "no addresses"));
      return;
    }
    used_ = helper_.AcquireSubchannel(addresses.back());
    used_->RequestConnection();
    OnSubchannelState(*used_);
  }
  void OnSubchannelState(LbSubchannel& subchannel) override {
    if (&subchannel != used_) return;
    {
      std::lock_guard lock(shared_->mu);
      shared_->states.emplace_back(ToString(subchannel.state()));
    }
    if (subchannel.state() == ConnectivityState::kIdle) subchannel.RequestConnection();
    helper_.UpdateState(subchannel.state(), subchannel.failure());
  }
  void ExitIdle() override {
    if (used_ != nullptr) used_->RequestConnection();
  }
  LbSubchannel* Pick(const LbPickArgs& args) override {
    if (shared_->throw_in_pick) throw std::runtime_error("no pick today");
    std::lock_guard lock(shared_->mu);
    shared_->methods.emplace_back(args.method);
    return used_;
  }

 private:
  LbHelper& helper_;
  std::shared_ptr<Shared> shared_;
  LbSubchannel* used_ = nullptr;
};

class LastAddressFactory final : public LoadBalancingPolicyFactory {
 public:
  std::string_view name() const override { return "last_address"; }
  std::unique_ptr<LoadBalancingPolicy> Create(LbHelper& helper) override {
    return std::make_unique<LastAddressPolicy>(helper, shared);
  }
  std::shared_ptr<LastAddressPolicy::Shared> shared =
      std::make_shared<LastAddressPolicy::Shared>();
};

// A channel over every backend whose policy is `factory`'s "last_address".
std::shared_ptr<Channel> LastAddressChannel(const std::string& target,
                                            const std::shared_ptr<LastAddressFactory>& factory) {
  ChannelOptions options = FastRetry("last_address");
  options.load_balancing_policies.push_back(factory);
  auto channel = Channel::Create(target, options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  return channel.ok() ? *channel : nullptr;
}

TEST_F(LoadBalancingTest, UserPolicyChoosesTheConnectionOfEachCall) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(3));
  auto factory = std::make_shared<LastAddressFactory>();
  auto channel = LastAddressChannel(Ipv4Target(), factory);
  ASSERT_NE(channel, nullptr);
  auto stub = std::make_unique<TestService::Stub>(channel);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(EmptyCall(*stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(0, 0, 20));
  {
    std::lock_guard lock(factory->shared->mu);
    // (A call picked for while the subchannel still connected is picked for again.)
    EXPECT_GE(factory->shared->methods.size(), 20u);
    EXPECT_THAT(factory->shared->methods,
                ::testing::Each(std::string("/grpc.testing.TestService/EmptyCall")));
  }

  // It hears its subchannel go and come back: calls that wait for ready are not lost.
  const int port = backends_[2]->port;
  backends_[2]->server.reset();
  std::future<Status> waiting = std::async(std::launch::async, [&] {
    return EmptyCall(*stub, kMustComplete, /*wait_for_ready=*/true);
  });
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard lock(factory->shared->mu);
    return factory->shared->states.size() >= 2 && factory->shared->states.back() != "READY";
  }));
  backends_[2]->port = port;
  ASSERT_TRUE(backends_[2]->Start());
  ASSERT_EQ(waiting.wait_for(kMustComplete), std::future_status::ready);
  EXPECT_TRUE(waiting.get().ok());
  EXPECT_EQ(backends_[2]->service.calls.load(), 21);
  EXPECT_EQ(channel->GetState(false), ConnectivityState::kReady);

  // The channel destroys its policy (which releases its subchannel) when it goes.
  stub.reset();
  channel.reset();
  EXPECT_TRUE(WaitUntil([&] { return factory->shared->live.load() == 0; }));
}

TEST_F(LoadBalancingTest, UserPolicyChosenByTheServiceConfig) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(2));
  auto factory = std::make_shared<LastAddressFactory>();
  ChannelOptions options = FastRetry("pick_first");
  options.load_balancing_policies.push_back(factory);
  options.service_config =
      R"({"loadBalancingConfig": [{"weighted_unknown": {}}, {"last_address": {}}]})";
  auto channel = Channel::Create(Ipv4Target(), options);
  ASSERT_TRUE(channel.ok()) << channel.status();
  TestService::Stub stub(*channel);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(EmptyCall(stub).ok());
  EXPECT_THAT(Counts(), ::testing::ElementsAre(0, 5));

  // The same config on a channel that does not know the policy is refused.
  ChannelOptions without = FastRetry("pick_first");
  without.service_config = options.service_config;
  EXPECT_EQ(Channel::Create(Ipv4Target(), without).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(LoadBalancingTest, UserPolicyThatThrowsFailsCallsNotTheProcess) {
  ASSERT_NO_FATAL_FAILURE(StartBackends(1));
  auto factory = std::make_shared<LastAddressFactory>();
  auto channel = LastAddressChannel(Ipv4Target(), factory);
  ASSERT_NE(channel, nullptr);
  TestService::Stub stub(channel);
  ASSERT_TRUE(EmptyCall(stub).ok());

  LogCapture log;
  factory->shared->throw_in_pick = true;
  const Status status = EmptyCall(stub);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), ::testing::HasSubstr("last_address"));
  EXPECT_THAT(LogCapture::Lines(),
              ::testing::Contains(::testing::HasSubstr("no pick today")));
  // The broken policy is not called again: later calls fail the same way at once.
  factory->shared->throw_in_pick = false;
  EXPECT_EQ(EmptyCall(stub).code(), StatusCode::kUnavailable);
  EXPECT_EQ(backends_[0]->service.calls.load(), 1);
}

}  // namespace
}  // namespace rill::test
