// Targets per gRPC's naming spec: which resolver a target picks, the authority calls carry, and
// the addresses each built-in resolver reports.
#include "src/rpc/resolvers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>
#include <optional>

namespace rill::internal {
namespace {

using ::testing::AnyOf;
using ::testing::Contains;
using ::testing::ElementsAre;

class Capture final : public ResolverListener {
 public:
  void OnResult(ResolverResult result) override {
    std::lock_guard lock(mu_);
    results_.push_back(std::move(result));
  }
  std::vector<ResolverResult> results() {
    std::lock_guard lock(mu_);
    return results_;
  }

 private:
  std::mutex mu_;
  std::vector<ResolverResult> results_;
};

struct Resolved {
  TargetResolver target;
  std::vector<std::string> addresses;  // of the first result
  Status status;
};

// Resolves `target` once, running `io` until the result is in.
std::optional<Resolved> ResolveOnce(std::string_view target,
                                    const std::vector<std::shared_ptr<ResolverFactory>>& factories = {}) {
  asio::io_context io;
  auto capture = std::make_shared<Capture>();
  StatusOr<TargetResolver> made = MakeTargetResolver(target, factories, io, capture);
  if (!made.ok()) return std::nullopt;
  made->resolver->Resolve();
  io.run();
  std::vector<ResolverResult> results = capture->results();
  if (results.empty()) return std::nullopt;
  return Resolved{std::move(*made), results[0].addresses, results[0].status};
}

Status TargetError(std::string_view target) {
  asio::io_context io;
  StatusOr<TargetResolver> made = MakeTargetResolver(target, {}, io, std::make_shared<Capture>());
  return made.ok() ? Status() : made.status();
}

TEST(ParseUri, SplitsSchemeAuthorityAndPath) {
  std::optional<TargetUri> uri = ParseUri("DNS://8.8.8.8/example.com:443");
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->scheme, "dns");
  EXPECT_EQ(uri->authority, "8.8.8.8");
  EXPECT_EQ(EndpointOf(*uri), "example.com:443");
  uri = ParseUri("unix:/tmp/a.sock");
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->authority, "");
  EXPECT_EQ(uri->endpoint, "/tmp/a.sock");
  EXPECT_FALSE(ParseUri("127.0.0.1:80").has_value());
  EXPECT_FALSE(ParseUri("[::1]:80").has_value());
  EXPECT_FALSE(ParseUri("no-colon").has_value());
}

TEST(TargetResolver, AddressListsReportEveryAddressInOrder) {
  std::optional<Resolved> v4 = ResolveOnce("ipv4:127.0.0.1:5001,10.0.0.2:80,10.0.0.3");
  ASSERT_TRUE(v4.has_value());
  EXPECT_THAT(v4->addresses, ElementsAre("127.0.0.1:5001", "10.0.0.2:80", "10.0.0.3:443"));
  EXPECT_EQ(v4->target.authority, "127.0.0.1:5001");
  EXPECT_EQ(v4->target.tls_name, "127.0.0.1");

  std::optional<Resolved> v6 = ResolveOnce("ipv6:[::1]:5001,[2001:db8::2]:80,::3");
  ASSERT_TRUE(v6.has_value());
  EXPECT_THAT(v6->addresses, ElementsAre("[::1]:5001", "[2001:db8::2]:80", "[::3]:443"));
}

TEST(TargetResolver, UnixTargets) {
  for (const char* target : {"unix:/tmp/rill.sock", "unix:///tmp/rill.sock"}) {
    std::optional<Resolved> unix_socket = ResolveOnce(target);
    ASSERT_TRUE(unix_socket.has_value()) << target;
    EXPECT_THAT(unix_socket->addresses, ElementsAre("unix:/tmp/rill.sock"));
    EXPECT_EQ(unix_socket->target.authority, "localhost");
  }
  std::optional<Resolved> abstract = ResolveOnce("unix-abstract:rill-name");
  ASSERT_TRUE(abstract.has_value());
  EXPECT_THAT(abstract->addresses, ElementsAre("unix-abstract:rill-name"));
}

TEST(TargetResolver, HostPortAndUnknownSchemesMeanDns) {
  for (const char* target : {"localhost:5005", "dns:///localhost:5005", "dns:localhost:5005",
                             "localhost:5005"}) {
    std::optional<Resolved> dns = ResolveOnce(target);
    ASSERT_TRUE(dns.has_value()) << target;
    ASSERT_TRUE(dns->status.ok()) << target << ": " << dns->status;
    EXPECT_EQ(dns->target.uri.scheme, "dns");
    EXPECT_EQ(dns->target.authority, "localhost:5005");
    EXPECT_EQ(dns->target.tls_name, "localhost");
    EXPECT_THAT(dns->addresses, Contains(AnyOf("127.0.0.1:5005", "[::1]:5005")));
  }
  std::optional<Resolved> literal = ResolveOnce("[::1]:7");
  ASSERT_TRUE(literal.has_value());
  EXPECT_THAT(literal->addresses, ElementsAre("[::1]:7"));
  std::optional<Resolved> default_port = ResolveOnce("127.0.0.1");
  ASSERT_TRUE(default_port.has_value());
  EXPECT_THAT(default_port->addresses, ElementsAre("127.0.0.1:443"));
}

TEST(TargetResolver, UnresolvableNameReportsUnavailable) {
  std::optional<Resolved> missing = ResolveOnce("dns:///no-such-host.invalid:80");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(missing->addresses.empty());
}

TEST(TargetResolver, MalformedTargetsAreInvalidArguments) {
  for (const char* target : {"ipv4:", "ipv4:::1", "ipv4:10.0.0.1:80,host:80", "ipv6:10.0.0.1",
                             "ipv4:10.0.0.1:99999", "unix://host/path", "dns://8.8.8.8/x:80",
                             ":80", "dns:///"}) {
    EXPECT_EQ(TargetError(target).code(), StatusCode::kInvalidArgument) << target;
  }
}

class StaticFactory final : public ResolverFactory {
 public:
  std::string_view scheme() const override { return "static"; }
  std::unique_ptr<Resolver> Create(const TargetUri& target,
                                   std::shared_ptr<ResolverListener> listener) override {
    seen = target;
    if (target.endpoint == "reject") return nullptr;
    return MakeFixedResolver({"10.1.1.1:1", "10.1.1.2:2"}, std::move(listener));
  }
  std::string DefaultAuthority(const TargetUri& target) const override {
    return "backends.example:50051";
  }
  TargetUri seen;
};

TEST(TargetResolver, UserSchemesComeFirst) {
  auto factory = std::make_shared<StaticFactory>();
  std::optional<Resolved> resolved = ResolveOnce("static://registry/backends", {factory});
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(factory->seen.authority, "registry");
  EXPECT_EQ(factory->seen.endpoint, "backends");
  EXPECT_THAT(resolved->addresses, ElementsAre("10.1.1.1:1", "10.1.1.2:2"));
  EXPECT_EQ(resolved->target.authority, "backends.example:50051");
  EXPECT_EQ(resolved->target.tls_name, "backends.example");

  asio::io_context io;
  EXPECT_EQ(MakeTargetResolver("static:reject", {factory}, io, std::make_shared<Capture>())
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rill::internal
