// Name resolution: how a channel's target becomes the addresses it connects to.
//
// A target is a URI "scheme:[//authority/]endpoint" (gRPC's naming spec). Built in:
//   "dns:///host:port" (the default: "host:port" and any target whose scheme no resolver knows
//   mean dns:///target; port 443 when omitted), "ipv4:1.2.3.4:80,5.6.7.8:80",
//   "ipv6:[::1]:80,[::2]:80", "unix:/path/to.sock" (also "unix:///path"), "unix-abstract:name".
// Users add their own schemes by giving the channel a ResolverFactory:
//
//   class StaticList : public rill::ResolverFactory {
//    public:
//     std::string_view scheme() const override { return "static"; }
//     std::unique_ptr<rill::Resolver> Create(const rill::TargetUri& target,
//                                            std::shared_ptr<rill::ResolverListener> listener)
//         override { ... }  // e.g. listener->OnResult({.addresses = {"10.0.0.1:50051", ...}})
//   };
//   rill::ChannelOptions options;
//   options.resolvers.push_back(std::make_shared<StaticList>());
//   auto channel = rill::Channel::Create("static:///backends", options);
//
// A resolver reports addresses whenever it has them (first result, later changes) through its
// listener, from any thread; the channel's load-balancing policy then connects to them. The
// channel asks for fresh results (Resolve()) when it starts and again when a connection fails
// or its server sends GOAWAY, at most once per ChannelOptions::min_resolution_interval.
#ifndef RILL_RESOLVER_H_
#define RILL_RESOLVER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status.h"

namespace rill {

// A parsed target: "dns://8.8.8.8/example.com:443" is {dns, 8.8.8.8, example.com:443}.
struct TargetUri {
  std::string scheme;
  std::string authority;  // often empty
  std::string endpoint;   // the path without its leading '/'
};

struct ResolverResult {
  // OK: `addresses` are what the target names now (an empty list means no backend: calls fail
  // UNAVAILABLE, or wait with wait-for-ready). Otherwise the name could not be resolved, and
  // the channel keeps the addresses it had.
  Status status;
  // In order of preference, each numeric: "10.0.0.1:50051", "[2001:db8::1]:50051",
  // "unix:/path/to.sock", "unix-abstract:name". A malformed entry fails the whole result.
  std::vector<std::string> addresses;
};

// Where a resolver reports results. Thread-safe: call it from any thread, at any time, also
// from inside Resolve(); results that arrive after the channel closed are ignored.
class ResolverListener {
 public:
  virtual ~ResolverListener() = default;
  virtual void OnResult(ResolverResult result) = 0;
};

// One channel's resolver. Created, called and destroyed on the channel's reactor thread: its
// methods must not block (start work elsewhere and report through the listener).
class Resolver {
 public:
  virtual ~Resolver() = default;
  // The channel wants (fresh) results: first when it leaves IDLE, then after failures.
  virtual void Resolve() = 0;
};

// Makes resolvers for one scheme. Thread-safe (channels on any thread use it).
class ResolverFactory {
 public:
  virtual ~ResolverFactory() = default;
  // The URI scheme it serves, lower case ("static", "consul", ...).
  [[nodiscard]] virtual std::string_view scheme() const = 0;
  // A resolver for `target`, or null if the target is malformed for this scheme (the channel
  // then fails to be created with INVALID_ARGUMENT).
  virtual std::unique_ptr<Resolver> Create(const TargetUri& target,
                                           std::shared_ptr<ResolverListener> listener) = 0;
  // The :authority calls carry unless ChannelOptions::authority says otherwise.
  [[nodiscard]] virtual std::string DefaultAuthority(const TargetUri& target) const {
    return target.endpoint;
  }
};

}  // namespace rill

#endif  // RILL_RESOLVER_H_
