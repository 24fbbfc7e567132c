// Address parsing and the order a client tries resolved addresses in.
#include "src/transport/address.h"

#include <gtest/gtest.h>

#include <asio/ip/tcp.hpp>
#include <string>
#include <vector>

namespace rill::internal {
namespace {

using Endpoint = asio::generic::stream_protocol::endpoint;

Endpoint Tcp(const char* address, uint16_t port) {
  return Endpoint(asio::ip::tcp::endpoint(asio::ip::make_address(address), port));
}

std::vector<std::string> Names(const std::vector<Endpoint>& endpoints) {
  std::vector<std::string> out;
  for (const auto& e : endpoints) out.push_back(PeerName(e));
  return out;
}

TEST(InterleaveFamilies, AlternatesFamiliesStartingWithTheFirstAnswer) {
  const std::vector<Endpoint> resolved = {Tcp("::1", 1), Tcp("::2", 1), Tcp("::3", 1),
                                          Tcp("127.0.0.1", 1), Tcp("127.0.0.2", 1)};
  EXPECT_EQ(Names(InterleaveFamilies(resolved)),
            (std::vector<std::string>{"ipv6:[::1]:1", "ipv4:127.0.0.1:1", "ipv6:[::2]:1",
                                      "ipv4:127.0.0.2:1", "ipv6:[::3]:1"}));
}

TEST(InterleaveFamilies, OneFamilyKeepsTheResolversOrder) {
  const std::vector<Endpoint> resolved = {Tcp("10.0.0.2", 5), Tcp("10.0.0.1", 5),
                                          Tcp("10.0.0.3", 5)};
  EXPECT_EQ(Names(InterleaveFamilies(resolved)), Names(resolved));
  EXPECT_TRUE(InterleaveFamilies({}).empty());
  EXPECT_EQ(Names(InterleaveFamilies({Tcp("::1", 7)})), (std::vector<std::string>{"ipv6:[::1]:7"}));
}

TEST(InterleaveFamilies, KeepsEveryAddress) {
  const std::vector<Endpoint> resolved = {Tcp("127.0.0.1", 1), Tcp("::1", 1), Tcp("::2", 1),
                                          Tcp("::3", 1)};
  EXPECT_EQ(Names(InterleaveFamilies(resolved)),
            (std::vector<std::string>{"ipv4:127.0.0.1:1", "ipv6:[::1]:1", "ipv6:[::2]:1",
                                      "ipv6:[::3]:1"}));
}

TEST(ParseNumericEndpoint, ReadsWhatResolversReport) {
  for (const char* text : {"10.0.0.1:80", "[::1]:50051", "[2001:db8::7]:443"}) {
    StatusOr<Endpoint> endpoint = ParseNumericEndpoint(text);
    ASSERT_TRUE(endpoint.ok()) << text << ": " << endpoint.status();
    EXPECT_EQ(NumericAddress(*endpoint), text);
  }
  StatusOr<Endpoint> unix_socket = ParseNumericEndpoint("unix:///tmp/a.sock");
  ASSERT_TRUE(unix_socket.ok());
  EXPECT_EQ(PeerName(*unix_socket), "unix:/tmp/a.sock");
  StatusOr<Endpoint> abstract = ParseNumericEndpoint("unix-abstract:rill-test");
  ASSERT_TRUE(abstract.ok());
  EXPECT_EQ(PeerName(*abstract), "unix-abstract:rill-test");
}

TEST(ParseNumericEndpoint, RejectsNamesAndMalformedAddresses) {
  for (const char* text : {"localhost:80", "10.0.0.1", "10.0.0.1:", "10.0.0.1:65536",
                           "::1:80", "[::1]", "[10.0.0.1]:80", "[::1]:x", ""}) {
    StatusOr<Endpoint> endpoint = ParseNumericEndpoint(text);
    ASSERT_FALSE(endpoint.ok()) << text;
    EXPECT_EQ(endpoint.status().code(), StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace rill::internal
