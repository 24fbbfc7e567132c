#include "src/rpc/resolvers.h"

#include <asio/ip/tcp.hpp>
#include <cctype>

#include "src/transport/address.h"

namespace rill::internal {
namespace {

constexpr std::string_view kDefaultPort = "443";

Status Malformed(std::string_view target, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                "bad target \"" + std::string(target) + "\": " + std::string(why));
}

struct HostPort {
  std::string_view host;
  std::string_view port;  // empty when none was given
  bool bracketed = false;
};

// "host:port", "[v6]:port", "host", "[v6]", or an IPv6 literal without brackets or port.
std::optional<HostPort> SplitHostPort(std::string_view text) {
  HostPort out;
  if (text.substr(0, 1) == "[") {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = text.substr(1, close - 1);
    out.bracketed = true;
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return std::nullopt;
      out.port = rest.substr(1);
      if (out.port.empty()) return std::nullopt;
    }
  } else {
    const size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) == std::string_view::npos) {
      out.host = text.substr(0, colon);
      out.port = text.substr(colon + 1);
      if (out.port.empty()) return std::nullopt;
    } else {
      out.host = text;  // no port, or an IPv6 literal
    }
  }
  if (out.host.empty()) return std::nullopt;
  return out;
}

// "host:port" with brackets around IPv6 literals, port 443 when none was given.
std::string JoinHostPort(std::string_view host, std::string_view port) {
  std::string out;
  const bool v6 = host.find(':') != std::string_view::npos;
  if (v6) out.push_back('[');
  out.append(host);
  if (v6) out.push_back(']');
  out.push_back(':');
  out.append(port.empty() ? kDefaultPort : port);
  return out;
}

class FixedResolver final : public Resolver {
 public:
  FixedResolver(std::vector<std::string> addresses, std::shared_ptr<ResolverListener> listener)
      : addresses_(std::move(addresses)), listener_(std::move(listener)) {}

  void Resolve() override { listener_->OnResult({.status = Status(), .addresses = addresses_}); }

 private:
  const std::vector<std::string> addresses_;
  const std::shared_ptr<ResolverListener> listener_;
};

// Looks the name up with Asio's resolver (getaddrinfo on Asio's own thread, so the reactor
// never blocks) and reports the addresses with the families interleaved (RFC 8305 §4).
class DnsResolver final : public Resolver {
 public:
  DnsResolver(asio::io_context& io_context, std::string host, std::string port,
              std::shared_ptr<ResolverListener> listener)
      : state_(std::make_shared<State>(io_context, std::move(listener))),
        host_(std::move(host)),
        port_(std::move(port)) {}

  ~DnsResolver() override { state_->resolver.cancel(); }

  void Resolve() override {
    if (state_->busy) return;
    state_->busy = true;
    // The handler may run after this object is gone (cancelled): it keeps the state alive.
    state_->resolver.async_resolve(
        host_, port_,
        [state = state_, host = host_](const asio::error_code& ec,
                                       asio::ip::tcp::resolver::results_type results) {
          state->busy = false;
          if (ec == asio::error::operation_aborted) return;
          if (ec || results.empty()) {
            state->listener->OnResult(
                {.status = Status(StatusCode::kUnavailable,
                                  "cannot resolve " + host + ": " +
                                      (ec ? ec.message() : std::string("no addresses"))),
                 .addresses = {}});
            return;
          }
          std::vector<asio::generic::stream_protocol::endpoint> endpoints;
          for (const auto& entry : results) endpoints.emplace_back(entry.endpoint());
          ResolverResult result;
          for (const auto& endpoint : InterleaveFamilies(std::move(endpoints))) {
            result.addresses.push_back(NumericAddress(endpoint));
          }
          state->listener->OnResult(std::move(result));
        });
  }

 private:
  struct State {
    State(asio::io_context& io_context, std::shared_ptr<ResolverListener> l)
        : resolver(io_context), listener(std::move(l)) {}
    asio::ip::tcp::resolver resolver;
    std::shared_ptr<ResolverListener> listener;
    bool busy = false;
  };
  std::shared_ptr<State> state_;
  const std::string host_;
  const std::string port_;
};

StatusOr<TargetResolver> MakeDns(const TargetUri& uri, std::string_view target,
                                 asio::io_context& io_context,
                                 std::shared_ptr<ResolverListener> listener) {
  if (!uri.authority.empty()) {
    return Malformed(target, "a DNS server authority is not supported");
  }
  const std::string_view endpoint = EndpointOf(uri);
  const std::optional<HostPort> split = SplitHostPort(endpoint);
  if (!split) return Malformed(target, "expected host[:port]");
  TargetResolver out;
  out.uri = uri;
  out.authority = std::string(endpoint);
  out.tls_name = std::string(split->host);
  out.resolver = std::make_unique<DnsResolver>(
      io_context, std::string(split->host),
      std::string(split->port.empty() ? kDefaultPort : split->port), std::move(listener));
  return out;
}

// "ipv4:10.0.0.1:80,10.0.0.2" and "ipv6:[::1]:80,::2".
StatusOr<TargetResolver> MakeAddressList(const TargetUri& uri, std::string_view target,
                                         std::shared_ptr<ResolverListener> listener) {
  const bool v6 = uri.scheme == "ipv6";
  std::vector<std::string> addresses;
  std::string_view rest = EndpointOf(uri);
  std::string tls_name;
  while (!rest.empty() || addresses.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const std::optional<HostPort> split = SplitHostPort(item);
    if (!split || (v6 && split->port.empty() && !split->bracketed &&
                   split->host.find(':') == std::string_view::npos)) {
      return Malformed(target, "expected a list of addresses");
    }
    std::string address = JoinHostPort(split->host, split->port);
    StatusOr<asio::generic::stream_protocol::endpoint> endpoint = ParseNumericEndpoint(address);
    const bool family_ok = endpoint.ok() && (endpoint->data()->sa_family == AF_INET6) == v6;
    if (!family_ok) {
      return Malformed(target, "\"" + std::string(item) + "\" is not an " +
                                   (v6 ? "IPv6" : "IPv4") + " address");
    }
    if (addresses.empty()) tls_name = std::string(split->host);
    addresses.push_back(std::move(address));
    if (comma == std::string_view::npos) break;
  }
  TargetResolver out;
  out.uri = uri;
  out.authority = addresses.front();
  out.tls_name = std::move(tls_name);
  out.resolver = MakeFixedResolver(std::move(addresses), std::move(listener));
  return out;
}

StatusOr<TargetResolver> MakeUnix(const TargetUri& uri, std::string_view target,
                                  std::shared_ptr<ResolverListener> listener) {
  if (!uri.authority.empty()) return Malformed(target, "a unix target has no authority");
  const bool abstract = uri.scheme == "unix-abstract";
  std::string address = std::string(abstract ? "unix-abstract:" : "unix:") +
                        std::string(abstract ? EndpointOf(uri) : std::string_view(uri.endpoint));
  if (!ParseNumericEndpoint(address).ok()) return Malformed(target, "bad socket path");
  TargetResolver out;
  out.uri = uri;
  out.authority = "localhost";
  out.tls_name = "localhost";
  out.resolver = MakeFixedResolver({std::move(address)}, std::move(listener));
  return out;
}

}  // namespace

std::optional<TargetUri> ParseUri(std::string_view text) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || !std::isalpha(uint8_t(text[0]))) {
    return std::nullopt;
  }
  TargetUri uri;
  for (const char c : text.substr(0, colon)) {
    if (!std::isalnum(uint8_t(c)) && c != '+' && c != '-' && c != '.') return std::nullopt;
    uri.scheme.push_back(static_cast<char>(std::tolower(uint8_t(c))));
  }
  std::string_view rest = text.substr(colon + 1);
  if (rest.substr(0, 2) == "//") {
    rest.remove_prefix(2);
    const size_t slash = rest.find('/');
    uri.authority = std::string(rest.substr(0, slash));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  }
  // `endpoint` holds the path as written; EndpointOf() drops its leading '/'.
  uri.endpoint = std::string(rest);
  return uri;
}

std::string_view EndpointOf(const TargetUri& uri) {
  std::string_view path = uri.endpoint;
  if (path.substr(0, 1) == "/") path.remove_prefix(1);
  return path;
}

std::unique_ptr<Resolver> MakeFixedResolver(std::vector<std::string> addresses,
                                            std::shared_ptr<ResolverListener> listener) {
  return std::make_unique<FixedResolver>(std::move(addresses), std::move(listener));
}

StatusOr<TargetResolver> MakeTargetResolver(
    std::string_view target, const std::vector<std::shared_ptr<ResolverFactory>>& factories,
    asio::io_context& io_context, std::shared_ptr<ResolverListener> listener) {
  const auto factory_for = [&factories](std::string_view scheme) -> ResolverFactory* {
    for (const auto& factory : factories) {
      if (factory != nullptr && factory->scheme() == scheme) return factory.get();
    }
    return nullptr;
  };
  const auto builtin = [](std::string_view scheme) {
    return scheme == "dns" || scheme == "ipv4" || scheme == "ipv6" || scheme == "unix" ||
           scheme == "unix-abstract";
  };
  std::optional<TargetUri> uri = ParseUri(target);
  if (!uri || (factory_for(uri->scheme) == nullptr && !builtin(uri->scheme))) {
    uri = ParseUri("dns:///" + std::string(target));
  }
  if (ResolverFactory* factory = factory_for(uri->scheme)) {
    // The user's factory sees the path without its leading '/', as documented.
    TargetUri user_uri{uri->scheme, uri->authority, std::string(EndpointOf(*uri))};
    TargetResolver out;
    out.resolver = factory->Create(user_uri, std::move(listener));
    if (out.resolver == nullptr) {
      return Malformed(target, "the " + uri->scheme + " resolver rejected it");
    }
    out.authority = factory->DefaultAuthority(user_uri);
    const std::optional<HostPort> split = SplitHostPort(out.authority);
    out.tls_name = split ? std::string(split->host) : out.authority;
    out.uri = std::move(user_uri);
    return out;
  }
  if (uri->scheme == "dns") return MakeDns(*uri, target, io_context, std::move(listener));
  if (uri->scheme == "ipv4" || uri->scheme == "ipv6") {
    return MakeAddressList(*uri, target, std::move(listener));
  }
  return MakeUnix(*uri, target, std::move(listener));
}

}  // namespace rill::internal
