#include "src/transport/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <asio/local/stream_protocol.hpp>
#include <charconv>
#include <cstring>

namespace rill::internal {

std::string Address::Authority() const {
  if (kind == Kind::kUnix) return "localhost";
  const bool ipv6 = host.find(':') != std::string::npos;
  std::string out;
  out.reserve(host.size() + 8);
  if (ipv6) out.push_back('[');
  out.append(host);
  if (ipv6) out.push_back(']');
  out.push_back(':');
  out.append(std::to_string(port));
  return out;
}

StatusOr<Address> ParseAddress(std::string_view text) {
  Address address;
  if (text.substr(0, 14) == "unix-abstract:") {
    const std::string_view name = text.substr(14);
    if (name.size() + 1 >= sizeof(sockaddr_un::sun_path)) {
      return Status(StatusCode::kInvalidArgument, "abstract socket name too long in " +
                                                      std::string(text));
    }
    address.kind = Address::Kind::kUnix;
    address.path.assign(1, '\0');
    address.path.append(name);
    return address;
  }
  if (text.substr(0, 5) == "unix:") {
    std::string_view path = text.substr(5);
    if (path.substr(0, 2) == "//") path = path.substr(2);
    if (path.empty() || path.size() >= sizeof(sockaddr_un::sun_path)) {
      return Status(StatusCode::kInvalidArgument, "bad unix socket path in " + std::string(text));
    }
    address.kind = Address::Kind::kUnix;
    address.path = std::string(path);
    return address;
  }
  if (text.substr(0, 6) == "dns://" || text.substr(0, 5) == "ipv4:" ||
      text.substr(0, 5) == "ipv6:") {
    // "dns:///host:port", "ipv4:1.2.3.4:80", "ipv6:[::1]:80": strip the scheme.
    const size_t colon = text.find(':');
    text = text.substr(colon + 1);
    while (text.substr(0, 1) == "/") text = text.substr(1);
  }
  std::string_view host;
  std::string_view port;
  if (text.substr(0, 1) == "[") {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":") {
      return Status(StatusCode::kInvalidArgument, "bad address " + std::string(text));
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon) {
      return Status(StatusCode::kInvalidArgument,
                    "address needs host:port: " + std::string(text));
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value > 65535 || port.empty()) {
    return Status(StatusCode::kInvalidArgument, "bad port in " + std::string(text));
  }
  address.host = host.empty() ? "0.0.0.0" : std::string(host);
  address.port = static_cast<uint16_t>(value);
  return address;
}

std::string PeerName(const asio::generic::stream_protocol::endpoint& endpoint) {
  const sockaddr* sa = endpoint.data();
  char buf[INET6_ADDRSTRLEN] = {};
  switch (sa->sa_family) {
    case AF_INET: {
      const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
      inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
      return "ipv4:" + std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
    }
    case AF_INET6: {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
      inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
      return "ipv6:[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
    }
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(sa);
      const size_t len = endpoint.size() > offsetof(sockaddr_un, sun_path)
                             ? endpoint.size() - offsetof(sockaddr_un, sun_path)
                             : 0;
      if (len > 0 && un->sun_path[0] == '\0') {
        return "unix-abstract:" + std::string(un->sun_path + 1, len - 1);
      }
      std::string path(un->sun_path, strnlen(un->sun_path, len));
      return "unix:" + path;
    }
    default:
      return "unknown";
  }
}

StatusOr<asio::generic::stream_protocol::endpoint> ParseNumericEndpoint(std::string_view text) {
  const auto bad = [text](std::string_view why) {
    return Status(StatusCode::kInvalidArgument,
                  "bad address \"" + std::string(text) + "\": " + std::string(why));
  };
  if (text.substr(0, 5) == "unix:" || text.substr(0, 14) == "unix-abstract:") {
    StatusOr<Address> address = ParseAddress(text);
    if (!address.ok()) return address.status();
    return asio::generic::stream_protocol::endpoint(
        asio::local::stream_protocol::endpoint(address->path));
  }
  std::string_view host;
  std::string_view port;
  if (text.substr(0, 1) == "[") {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || text.substr(close + 1, 1) != ":") {
      return bad("expected [address]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.find(':');
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos) {
      return bad("expected address:port");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad("bad port");
  }
  const std::string host_text(host);
  sockaddr_storage storage{};
  size_t size = 0;
  auto* in = reinterpret_cast<sockaddr_in*>(&storage);
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (text.substr(0, 1) != "[" && inet_pton(AF_INET, host_text.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<uint16_t>(value));
    size = sizeof(sockaddr_in);
  } else if (text.substr(0, 1) == "[" &&
             inet_pton(AF_INET6, host_text.c_str(), &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(value));
    size = sizeof(sockaddr_in6);
  } else {
    return bad("not a numeric IPv4 or [IPv6] address");
  }
  return asio::generic::stream_protocol::endpoint(&storage, size, IPPROTO_TCP);
}

std::string NumericAddress(const asio::generic::stream_protocol::endpoint& endpoint) {
  std::string name = PeerName(endpoint);
  // PeerName's "ipv4:" and "ipv6:" prefixes name the family; the numeric form has none.
  if (name.substr(0, 5) == "ipv4:" || name.substr(0, 5) == "ipv6:") name.erase(0, 5);
  return name;
}

std::vector<asio::generic::stream_protocol::endpoint> InterleaveFamilies(
    std::vector<asio::generic::stream_protocol::endpoint> endpoints) {
  if (endpoints.size() < 3 && (endpoints.size() < 2 || endpoints[0].data()->sa_family !=
                                                           endpoints[1].data()->sa_family)) {
    return endpoints;
  }
  const int first_family = endpoints[0].data()->sa_family;
  std::vector<asio::generic::stream_protocol::endpoint> first;
  std::vector<asio::generic::stream_protocol::endpoint> other;
  for (auto& e : endpoints) (e.data()->sa_family == first_family ? first : other).push_back(e);
  std::vector<asio::generic::stream_protocol::endpoint> out;
  out.reserve(endpoints.size());
  for (size_t i = 0; i < first.size() || i < other.size(); ++i) {
    if (i < first.size()) out.push_back(first[i]);
    if (i < other.size()) out.push_back(other[i]);
  }
  return out;
}

}  // namespace rill::internal
