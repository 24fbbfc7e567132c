// LoadBalancer: how a channel spreads calls over the addresses its resolver reported.
//
//   pick_first   connects to the addresses in order (starting the next one when an attempt
//                fails or has not finished within 250 ms, RFC 8305's happy-eyeballs delay) and
//                sends every call to the first that connected; when that connection goes, the
//                channel is IDLE until the next call, which starts over from the first address.
//   round_robin  connects to every address and sends each call to the next READY one in turn;
//                addresses that connect later join, failed ones reconnect after their backoff.
//   user's       a rill::LoadBalancingPolicy (rill/load_balancing.h) behind an adapter that keeps
//                its calls out of connection callbacks and inside an exception boundary.
//
// A policy owns uses of the channel's subchannels (one per address), hears their state changes,
// and tells the channel its aggregate state (IDLE, CONNECTING, READY, TRANSIENT_FAILURE), after
// which the channel retries its queued calls.
//
// Thread safety: reactor-confined (the channel's reactor).
#ifndef RILL_SRC_RPC_LOAD_BALANCER_H_
#define RILL_SRC_RPC_LOAD_BALANCER_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <memory>
#include <string_view>
#include <vector>

#include "rill/channel.h"
#include "rill/load_balancing.h"
#include "rill/status.h"

namespace rill::internal {

class ClientTransport;
class Subchannel;

class LoadBalancer {
 public:
  using Endpoint = asio::generic::stream_protocol::endpoint;

  // What a policy needs from its channel.
  class Helper {
   public:
    // A use of the subchannel for `endpoint` (made if there is none); give it back with
    // ReleaseSubchannel.
    virtual Subchannel* AcquireSubchannel(const Endpoint& endpoint) = 0;
    virtual void ReleaseSubchannel(Subchannel* subchannel) = 0;
    // The policy's state is now `state` (with `failure` saying why, in TRANSIENT_FAILURE), or
    // its picks may have changed: the channel retries its queued calls.
    virtual void UpdateState(ConnectivityState state, const Status& failure) = 0;
    // The addresses may be stale (a connection failed or went away).
    virtual void RequestReresolution() = 0;

   protected:
    ~Helper() = default;
  };

  explicit LoadBalancer(Helper& helper) : helper_(helper) {}
  virtual ~LoadBalancer() = default;
  LoadBalancer(const LoadBalancer&) = delete;
  LoadBalancer& operator=(const LoadBalancer&) = delete;

  // The resolver's latest addresses, in its order of preference.
  virtual void UpdateAddresses(const std::vector<Endpoint>& addresses) = 0;
  // One of the channel's subchannels changed state (possibly one this policy does not use).
  virtual void OnSubchannelState(Subchannel& subchannel) = 0;
  // The channel has calls and the policy reported IDLE: connect.
  virtual void ExitIdle() = 0;
  // The connection for a new call of `method`, or null when there is none yet (the call waits).
  virtual ClientTransport* Pick(std::string_view method) = 0;
  // Gives back every subchannel use (before the policy is destroyed).
  virtual void Shutdown() = 0;

 protected:
  Helper& helper_;
};

// The policy named `name`: the user's policy of that name among `user_policies`, else
// "pick_first" or "round_robin"; null for an unknown name. Timers and deferred notifications
// run on `io_context`, the channel's reactor.
std::unique_ptr<LoadBalancer> MakeLoadBalancer(
    std::string_view name, LoadBalancer::Helper& helper, asio::io_context& io_context,
    const std::vector<std::shared_ptr<LoadBalancingPolicyFactory>>& user_policies = {});

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_LOAD_BALANCER_H_
