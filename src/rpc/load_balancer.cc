#include "src/rpc/load_balancer.h"

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <unordered_map>

#include "rill/log.h"
#include "src/base/user_code.h"
#include "src/rpc/subchannel.h"
#include "src/transport/address.h"

namespace rill::internal {
namespace {

using Endpoint = LoadBalancer::Endpoint;

// RFC 8305 §5: the delay before the next address is tried while an attempt is still running.
constexpr std::chrono::milliseconds kConnectionAttemptDelay{250};

Status NoAddresses() {
  return Status(StatusCode::kUnavailable, "the resolver returned no addresses");
}

class PickFirst final : public LoadBalancer {
 public:
  PickFirst(Helper& helper, asio::io_context& io_context)
      : LoadBalancer(helper), stagger_(io_context) {}

  void UpdateAddresses(const std::vector<Endpoint>& addresses) override {
    addresses_ = addresses;
    if (selected_ != nullptr &&
        std::find(addresses.begin(), addresses.end(), selected_->endpoint()) != addresses.end()) {
      return;  // the connection in use is still one of the target's: keep it
    }
    StartOver();
  }

  void OnSubchannelState(Subchannel& subchannel) override {
    if (selected_ != nullptr) {
      if (&subchannel != selected_ || subchannel.state() == ConnectivityState::kReady) return;
      // The connection in use went: IDLE until the next call starts over.
      ReleaseAll();
      helper_.RequestReresolution();
      helper_.UpdateState(ConnectivityState::kIdle, Status());
      return;
    }
    const auto it = std::find(subchannels_.begin(), subchannels_.end(), &subchannel);
    if (it == subchannels_.end()) return;
    switch (subchannel.state()) {
      case ConnectivityState::kReady:
        Select(subchannel);
        return;
      case ConnectivityState::kTransientFailure:
        last_failure_ = subchannel.failure();
        if (static_cast<size_t>(it - subchannels_.begin()) + 1 == next_) StartNext();
        if (AllFailed()) {
          // Every address failed once: keep trying each as its backoff ends (below), and fail
          // calls that do not wait for ready.
          helper_.RequestReresolution();
          helper_.UpdateState(ConnectivityState::kTransientFailure, last_failure_);
        }
        return;
      case ConnectivityState::kIdle:
        // Its backoff ended. Retry it once every address had its first attempt.
        if (next_ >= subchannels_.size()) subchannel.RequestConnection();
        return;
      case ConnectivityState::kConnecting:
      case ConnectivityState::kShutdown:
        return;
    }
  }

  void ExitIdle() override {
    if (selected_ == nullptr && subchannels_.empty()) StartOver();
  }

  ClientTransport* Pick(std::string_view /*method*/) override {
    return selected_ != nullptr ? selected_->ready_transport() : nullptr;
  }

  void Shutdown() override { ReleaseAll(); }

 private:
  void StartOver() {
    ReleaseAll();
    if (addresses_.empty()) {
      helper_.UpdateState(ConnectivityState::kTransientFailure, NoAddresses());
      return;
    }
    for (const Endpoint& endpoint : addresses_) {
      subchannels_.push_back(helper_.AcquireSubchannel(endpoint));
    }
    helper_.UpdateState(ConnectivityState::kConnecting, Status());
    // A subchannel shared with an earlier policy may be READY already.
    for (Subchannel* subchannel : subchannels_) {
      if (subchannel->state() == ConnectivityState::kReady) {
        Select(*subchannel);
        return;
      }
    }
    StartNext();
  }

  // Starts the next address's attempt; addresses still in their backoff are passed over.
  void StartNext() {
    stagger_.cancel();
    while (next_ < subchannels_.size()) {
      Subchannel* subchannel = subchannels_[next_++];
      if (subchannel->state() == ConnectivityState::kTransientFailure) continue;
      subchannel->RequestConnection();
      if (selected_ != nullptr || subchannels_.empty()) return;  // it completed at once
      if (next_ < subchannels_.size()) {
        stagger_.expires_after(kConnectionAttemptDelay);
        stagger_.async_wait([this, generation = generation_](const asio::error_code& ec) {
          if (!ec && generation == generation_ && selected_ == nullptr) StartNext();
        });
      }
      return;
    }
  }

  [[nodiscard]] bool AllFailed() const {
    if (next_ < subchannels_.size()) return false;
    return std::all_of(subchannels_.begin(), subchannels_.end(), [](const Subchannel* s) {
      return s->state() == ConnectivityState::kTransientFailure;
    });
  }

  void Select(Subchannel& subchannel) {
    stagger_.cancel();
    ++generation_;
    subchannel.AddUse();  // kept across ReleaseAll
    ReleaseAll();
    selected_ = &subchannel;
    helper_.UpdateState(ConnectivityState::kReady, Status());
  }

  void ReleaseAll() {
    stagger_.cancel();
    ++generation_;
    next_ = 0;
    std::vector<Subchannel*> subchannels;
    subchannels.swap(subchannels_);
    if (selected_ != nullptr) subchannels.push_back(std::exchange(selected_, nullptr));
    for (Subchannel* subchannel : subchannels) helper_.ReleaseSubchannel(subchannel);
  }

  std::vector<Endpoint> addresses_;
  std::vector<Subchannel*> subchannels_;  // one use each, in the resolver's order
  size_t next_ = 0;                       // the next address to start
  Subchannel* selected_ = nullptr;        // holds one use of its own
  Status last_failure_;
  asio::steady_timer stagger_;
  uint64_t generation_ = 0;  // a stagger timer of an earlier round does nothing
};

class RoundRobin final : public LoadBalancer {
 public:
  explicit RoundRobin(Helper& helper) : LoadBalancer(helper) {}

  void UpdateAddresses(const std::vector<Endpoint>& addresses) override {
    // The new uses are taken before the old ones go, so an address in both lists keeps its
    // connection.
    std::vector<Subchannel*> old;
    old.swap(subchannels_);
    for (const Endpoint& endpoint : addresses) {
      subchannels_.push_back(helper_.AcquireSubchannel(endpoint));
    }
    for (Subchannel* subchannel : old) helper_.ReleaseSubchannel(subchannel);
    next_ = 0;
    if (subchannels_.empty()) {
      reported_ = ConnectivityState::kTransientFailure;
      helper_.UpdateState(reported_, NoAddresses());
      return;
    }
    for (Subchannel* subchannel : subchannels_) subchannel->RequestConnection();
    Report();
  }

  void OnSubchannelState(Subchannel& subchannel) override {
    if (std::find(subchannels_.begin(), subchannels_.end(), &subchannel) == subchannels_.end()) {
      return;
    }
    switch (subchannel.state()) {
      case ConnectivityState::kIdle:
        // A connection went, or a backoff ended: reconnect at once.
        helper_.RequestReresolution();
        subchannel.RequestConnection();
        break;
      case ConnectivityState::kTransientFailure:
        last_failure_ = subchannel.failure();
        break;
      default:
        break;
    }
    Report();
  }

  void ExitIdle() override {
    for (Subchannel* subchannel : subchannels_) subchannel->RequestConnection();
  }

  ClientTransport* Pick(std::string_view /*method*/) override {
    const size_t n = subchannels_.size();
    for (size_t i = 0; i < n; ++i) {
      const size_t index = (next_ + i) % n;
      if (ClientTransport* transport = subchannels_[index]->ready_transport()) {
        next_ = index + 1;
        return transport;
      }
    }
    return nullptr;
  }

  void Shutdown() override {
    std::vector<Subchannel*> subchannels;
    subchannels.swap(subchannels_);
    for (Subchannel* subchannel : subchannels) helper_.ReleaseSubchannel(subchannel);
  }

 private:
  // READY if any address is; otherwise CONNECTING while any attempt runs, TRANSIENT_FAILURE
  // when all failed. Once in TRANSIENT_FAILURE it stays there until an address is READY, so
  // calls that do not wait for ready keep failing fast while the addresses retry.
  void Report() {
    bool ready = false;
    bool connecting = false;
    for (const Subchannel* subchannel : subchannels_) {
      ready |= subchannel->state() == ConnectivityState::kReady;
      connecting |= subchannel->state() == ConnectivityState::kConnecting ||
                    subchannel->state() == ConnectivityState::kIdle;
    }
    ConnectivityState state = ready        ? ConnectivityState::kReady
                              : connecting ? ConnectivityState::kConnecting
                                           : ConnectivityState::kTransientFailure;
    if (state == ConnectivityState::kConnecting &&
        reported_ == ConnectivityState::kTransientFailure) {
      state = ConnectivityState::kTransientFailure;
    }
    reported_ = state;
    helper_.UpdateState(state, state == ConnectivityState::kTransientFailure ? last_failure_
                                                                            : Status());
  }

  std::vector<Subchannel*> subchannels_;  // one use each
  size_t next_ = 0;
  ConnectivityState reported_ = ConnectivityState::kConnecting;
  Status last_failure_;
};


// A user's policy. It hears subchannel changes from a fresh handler (they may happen inside a
// connection's callbacks), is called inside an exception boundary, and may hold only the
// subchannels it acquired: what it returns from Pick is checked against them.
class UserPolicy final : public LoadBalancer, private LbHelper {
 public:
  UserPolicy(Helper& helper, asio::io_context& io_context, LoadBalancingPolicyFactory& factory)
      : LoadBalancer(helper), io_context_(io_context), name_(factory.name()) {
    try {
      policy_ = factory.Create(*this);
      if (policy_ == nullptr) Broke("Create", "made no policy");
    } catch (...) {
      Broke("Create", DescribeCurrentException());
    }
    constructing_ = false;
  }

  ~UserPolicy() override { Shutdown(); }

  void UpdateAddresses(const std::vector<Endpoint>& addresses) override {
    endpoints_.clear();
    std::vector<std::string> names;
    names.reserve(addresses.size());
    for (const Endpoint& endpoint : addresses) {
      names.push_back(NumericAddress(endpoint));
      endpoints_.emplace(names.back(), endpoint);
    }
    Call("UpdateAddresses", [&] { policy_->UpdateAddresses(names); });
  }

  void OnSubchannelState(Subchannel& subchannel) override {
    if (!uses_.contains(&subchannel)) return;
    asio::post(io_context_, [this, alive = alive_, subchannel = &subchannel] {
      // Released meanwhile: the subchannel may be gone.
      if (!*alive || !uses_.contains(subchannel)) return;
      Call("OnSubchannelState", [&] { policy_->OnSubchannelState(*subchannel); });
    });
  }

  void ExitIdle() override {
    Call("ExitIdle", [&] { policy_->ExitIdle(); });
  }

  ClientTransport* Pick(std::string_view method) override {
    LbSubchannel* picked = nullptr;
    Call("Pick", [&] { picked = policy_->Pick(LbPickArgs{.method = method}); });
    if (picked == nullptr) return nullptr;
    auto it = uses_.find(picked);
    if (it == uses_.end()) {
      Broke("Pick", "returned a subchannel it does not hold");
      return nullptr;
    }
    return it->second.subchannel->ready_transport();
  }

  void Shutdown() override {
    if (!*alive_) return;
    *alive_ = false;
    shutting_down_ = true;
    policy_.reset();  // its destructor releases what it holds
    for (auto& [key, use] : uses_) {
      for (int i = 0; i < use.count; ++i) helper_.ReleaseSubchannel(use.subchannel);
    }
    uses_.clear();
  }

 private:
  struct Use {
    Subchannel* subchannel;
    int count;
  };

  // LbHelper.
  LbSubchannel* AcquireSubchannel(const std::string& address) override {
    auto it = endpoints_.find(address);
    if (it == endpoints_.end() || shutting_down_) return nullptr;
    Subchannel* subchannel = helper_.AcquireSubchannel(it->second);
    auto [use, fresh] = uses_.try_emplace(subchannel, Use{subchannel, 0});
    ++use->second.count;
    return subchannel;
  }

  void ReleaseSubchannel(LbSubchannel* subchannel) override {
    auto it = uses_.find(subchannel);
    if (it == uses_.end()) return;  // not one it holds (or released by Shutdown already)
    Subchannel* released = it->second.subchannel;
    if (--it->second.count == 0) uses_.erase(it);
    helper_.ReleaseSubchannel(released);
  }

  void UpdateState(ConnectivityState state, const Status& failure) override {
    if (constructing_ || shutting_down_ || broken_) return;
    if (state == ConnectivityState::kShutdown) {
      Broke("UpdateState", "reported SHUTDOWN, which only the channel may");
      return;
    }
    helper_.UpdateState(state, failure);
  }

  void RequestReresolution() override {
    if (!constructing_ && !shutting_down_) helper_.RequestReresolution();
  }

  // Runs the policy's `fn` unless the policy broke; an exception breaks it.
  template <typename Fn>
  void Call(std::string_view what, Fn&& fn) {
    if (broken_) {
      ReportBroken();
      return;
    }
    try {
      fn();
    } catch (...) {
      Broke(what, DescribeCurrentException());
    }
  }

  void Broke(std::string_view what, std::string_view why) {
    broken_ = true;
    failure_ = "load-balancing policy \"" + name_ + "\" failed: " + std::string(what) + " " +
               std::string(why);
    Log(LogSeverity::kError, failure_);
    if (!constructing_) ReportBroken();
  }

  void ReportBroken() {
    helper_.UpdateState(ConnectivityState::kTransientFailure,
                        Status(StatusCode::kUnavailable, failure_));
  }

  asio::io_context& io_context_;
  const std::string name_;
  std::unique_ptr<LoadBalancingPolicy> policy_;
  std::unordered_map<std::string, Endpoint> endpoints_;  // of the last UpdateAddresses
  std::unordered_map<const LbSubchannel*, Use> uses_;    // what the policy holds
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // for posted notifications
  bool constructing_ = true;
  bool shutting_down_ = false;
  bool broken_ = false;
  std::string failure_;
};

}  // namespace

std::unique_ptr<LoadBalancer> MakeLoadBalancer(
    std::string_view name, LoadBalancer::Helper& helper, asio::io_context& io_context,
    const std::vector<std::shared_ptr<LoadBalancingPolicyFactory>>& user_policies) {
  for (const auto& factory : user_policies) {
    if (factory != nullptr && factory->name() == name) {
      return std::make_unique<UserPolicy>(helper, io_context, *factory);
    }
  }
  if (name == "pick_first") return std::make_unique<PickFirst>(helper, io_context);
  if (name == "round_robin") return std::make_unique<RoundRobin>(helper);
  return nullptr;
}

}  // namespace rill::internal
