// The resolvers a channel's target picks (rill/resolver.h): the user's factories first, then the
// built-in dns, ipv4, ipv6, unix and unix-abstract schemes.
//
// Thread safety: pure functions; the resolvers they make are reactor-confined.
#ifndef RILL_SRC_RPC_RESOLVERS_H_
#define RILL_SRC_RPC_RESOLVERS_H_

#include <asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/resolver.h"
#include "rill/status_or.h"

namespace rill::internal {

// Splits "scheme:[//authority]path"; nullopt when `text` does not start with a scheme
// (letters, digits, '+', '-', '.', beginning with a letter) and ':'. The scheme is lower-cased.
std::optional<TargetUri> ParseUri(std::string_view text);

// The endpoint of a URI: its path without one leading '/'.
std::string_view EndpointOf(const TargetUri& uri);

struct TargetResolver {
  TargetUri uri;
  std::unique_ptr<Resolver> resolver;
  // The default :authority, and the host a TLS server's certificate must be valid for.
  std::string authority;
  std::string tls_name;
};

// Picks the resolver for `target` per gRPC's naming spec: a URI whose scheme a resolver serves,
// otherwise "dns:///" + target. INVALID_ARGUMENT for a malformed target. The DNS resolver runs
// its lookups off the reactor (Asio's resolver thread) and completes on `io_context`.
StatusOr<TargetResolver> MakeTargetResolver(
    std::string_view target, const std::vector<std::shared_ptr<ResolverFactory>>& factories,
    asio::io_context& io_context, std::shared_ptr<ResolverListener> listener);

// A resolver that reports `addresses` whenever asked.
std::unique_ptr<Resolver> MakeFixedResolver(std::vector<std::string> addresses,
                                            std::shared_ptr<ResolverListener> listener);

}  // namespace rill::internal

#endif  // RILL_SRC_RPC_RESOLVERS_H_
