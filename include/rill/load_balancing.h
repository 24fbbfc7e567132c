// Load-balancing policies of one's own: how a channel chooses the connection for each call.
//
// Built in are "pick_first" and "round_robin" (rill/channel.h). A policy of one's own is a
// LoadBalancingPolicy made by a factory given to the channel, and chosen by name like the
// built-in ones (ChannelOptions::load_balancing_policy, or the service config's
// loadBalancingConfig / loadBalancingPolicy):
//
//   // Every call to the address that answered last, the others as spares.
//   class LastAddress final : public rill::LoadBalancingPolicy {
//    public:
//     explicit LastAddress(rill::LbHelper& helper) : helper_(helper) {}
//     ~LastAddress() override { if (used_) helper_.ReleaseSubchannel(used_); }
//     void UpdateAddresses(const std::vector<std::string>& addresses) override {
//       if (used_) helper_.ReleaseSubchannel(std::exchange(used_, nullptr));
//       if (addresses.empty()) {
//         helper_.UpdateState(rill::ConnectivityState::kTransientFailure,
//                             rill::Status(rill::StatusCode::kUnavailable, "no addresses"));
//         return;
//       }
//       used_ = helper_.AcquireSubchannel(addresses.back());
//       used_->RequestConnection();
//       OnSubchannelState(*used_);
//     }
//     void OnSubchannelState(rill::LbSubchannel& subchannel) override {
//       if (&subchannel != used_) return;
//       if (subchannel.state() == rill::ConnectivityState::kIdle) subchannel.RequestConnection();
//       helper_.UpdateState(subchannel.state(), subchannel.failure());
//     }
//     void ExitIdle() override { if (used_) used_->RequestConnection(); }
//     rill::LbSubchannel* Pick(const rill::LbPickArgs&) override { return used_; }
//    private:
//     rill::LbHelper& helper_;
//     rill::LbSubchannel* used_ = nullptr;
//   };
//
//   class LastAddressFactory final : public rill::LoadBalancingPolicyFactory {
//    public:
//     std::string_view name() const override { return "last_address"; }
//     std::unique_ptr<rill::LoadBalancingPolicy> Create(rill::LbHelper& helper) override {
//       return std::make_unique<LastAddress>(helper);
//     }
//   };
//
//   rill::ChannelOptions options;
//   options.load_balancing_policies.push_back(std::make_shared<LastAddressFactory>());
//   options.load_balancing_policy = "last_address";
//
// The model is gRPC's: the resolver's addresses go to the policy; the policy takes subchannels
// (one per address, each connecting with backoff on its own, shared with other policies of the
// channel), hears their state changes, reports the channel's state, and picks a READY
// subchannel for each call. A pick that returns null (or a subchannel that is not READY) makes
// the call wait until the policy next reports a state; a call that does not wait for ready fails
// UNAVAILABLE at once while the policy reports TRANSIENT_FAILURE.
//
// Threads: every method of a policy, and every call it makes on its helper and subchannels,
// runs on the channel's reactor thread, never inside the HTTP/2 session's callbacks. A policy
// must not block. An exception thrown by a policy is logged; the policy is then treated as
// broken: the channel reports TRANSIENT_FAILURE (UNAVAILABLE, naming the policy) and calls no
// method of it again except its destructor.
//
// Lifetimes: the channel destroys its policy when it closes or goes IDLE (a fresh one is made
// for the next call). The destructor must release every subchannel it still holds. A
// subchannel pointer is valid from AcquireSubchannel until its ReleaseSubchannel.
#ifndef RILL_LOAD_BALANCING_H_
#define RILL_LOAD_BALANCING_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/channel.h"
#include "rill/status.h"

namespace rill {

// A channel's connection to one address.
class LbSubchannel {
 public:
  // As the resolver reported it: "10.0.0.1:50051", "[::1]:50051", "unix:/path".
  [[nodiscard]] virtual const std::string& address() const noexcept = 0;
  // IDLE (not connecting), CONNECTING, READY (takes calls), TRANSIENT_FAILURE (the last attempt
  // failed; IDLE again once its backoff ended).
  [[nodiscard]] virtual ConnectivityState state() const noexcept = 0;
  // Why the last attempt failed (in TRANSIENT_FAILURE).
  [[nodiscard]] virtual const Status& failure() const noexcept = 0;
  // Starts connecting when IDLE; otherwise does nothing.
  virtual void RequestConnection() = 0;

 protected:
  ~LbSubchannel() = default;
};

// What the policy knows of a call when it picks.
struct LbPickArgs {
  std::string_view method;  // "/package.Service/Method"
};

// The channel, as its policy sees it.
class LbHelper {
 public:
  // A use of the subchannel for `address` (one of the addresses of the last UpdateAddresses);
  // null for any other address. Acquiring an address twice gives the same subchannel twice,
  // each use to be released.
  virtual LbSubchannel* AcquireSubchannel(const std::string& address) = 0;
  // Gives a use back. A subchannel no policy uses stops connecting; its connection closes once
  // its calls are done.
  virtual void ReleaseSubchannel(LbSubchannel* subchannel) = 0;
  // The policy's state is now `state` (`failure` says why, in TRANSIENT_FAILURE), or its picks
  // may have changed: the channel picks again for its waiting calls.
  virtual void UpdateState(ConnectivityState state, const Status& failure) = 0;
  // The addresses may be stale (a connection failed or went away): the channel resolves its
  // target again (at most once per ChannelOptions::min_resolution_interval).
  virtual void RequestReresolution() = 0;

 protected:
  ~LbHelper() = default;
};

class LoadBalancingPolicy {
 public:
  virtual ~LoadBalancingPolicy() = default;
  // The resolver's addresses, in its order of preference (numeric, as LbSubchannel::address()).
  virtual void UpdateAddresses(const std::vector<std::string>& addresses) = 0;
  // A subchannel this policy holds changed state.
  virtual void OnSubchannelState(LbSubchannel& subchannel) = 0;
  // The channel has calls and the policy last reported IDLE: connect.
  virtual void ExitIdle() = 0;
  // The subchannel for a new call: a READY one this policy holds, or null to make it wait.
  virtual LbSubchannel* Pick(const LbPickArgs& args) = 0;
};

// Makes the policies of one name. Thread-safe: channels on any thread use it.
class LoadBalancingPolicyFactory {
 public:
  virtual ~LoadBalancingPolicyFactory() = default;
  // The name channels and service configs choose it by; it takes precedence over a built-in
  // policy of the same name.
  [[nodiscard]] virtual std::string_view name() const = 0;
  virtual std::unique_ptr<LoadBalancingPolicy> Create(LbHelper& helper) = 0;
};

}  // namespace rill

#endif  // RILL_LOAD_BALANCING_H_
