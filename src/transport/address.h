// Addresses rill listens on and connects to, and how peers are named.
//
//   "host:port", "1.2.3.4:port", "[::1]:port"   TCP
//   "unix:/path/to.sock", "unix:///path"         Unix-domain stream socket
//   "unix-abstract:name"                         Linux abstract socket (path: '\0' + name)
//
// Thread safety: pure functions.
#ifndef RILL_SRC_TRANSPORT_ADDRESS_H_
#define RILL_SRC_TRANSPORT_ADDRESS_H_

#include <asio/generic/stream_protocol.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status_or.h"

namespace rill::internal {

struct Address {
  enum class Kind : uint8_t { kTcp, kUnix };
  Kind kind = Kind::kTcp;
  std::string host;  // kTcp: a name or a literal address (without brackets)
  uint16_t port = 0;
  std::string path;  // kUnix

  // "host:port" (with brackets for IPv6 literals) or "unix:/path"; used as the default
  // :authority ("localhost" for Unix sockets).
  [[nodiscard]] std::string Authority() const;
};

StatusOr<Address> ParseAddress(std::string_view text);

// A numeric address as resolvers report them: "10.0.0.1:80", "[::1]:80", "unix:/path",
// "unix:///path", "unix-abstract:name". Names are not resolved (INVALID_ARGUMENT).
StatusOr<asio::generic::stream_protocol::endpoint> ParseNumericEndpoint(std::string_view text);

// The form ParseNumericEndpoint reads: "10.0.0.1:80", "[::1]:80", "unix:/path".
std::string NumericAddress(const asio::generic::stream_protocol::endpoint& endpoint);

// The order to try resolved addresses in (RFC 8305 §4): the resolver's first address first,
// then alternating between the address families, each family in the resolver's order. A
// client that tried only the first address would fail where "localhost" resolves to ::1 first
// and the server listens on 127.0.0.1 only.
std::vector<asio::generic::stream_protocol::endpoint> InterleaveFamilies(
    std::vector<asio::generic::stream_protocol::endpoint> endpoints);

// "ipv4:127.0.0.1:5000", "ipv6:[::1]:5000", "unix:/path" (grpc's peer naming).
std::string PeerName(const asio::generic::stream_protocol::endpoint& endpoint);

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_ADDRESS_H_
