// TlsContext: one configured OpenSSL SSL_CTX (certificates, roots, policy, ALPN), shared by
// every connection that began its handshake while it was current.
//
// Both roles refuse TLS below 1.2, renegotiation, session tickets and early data; the server
// selects ALPN "h2" and refuses a client that does not offer it (with a log line naming the
// peer's offer).
//
// Thread safety: thread-safe (immutable once made; OpenSSL's SSL_CTX is safe to share).
#ifndef RILL_SRC_TRANSPORT_TLS_CONTEXT_H_
#define RILL_SRC_TRANSPORT_TLS_CONTEXT_H_

#include <memory>

#include "rill/credentials.h"
#include "rill/status_or.h"

struct ssl_ctx_st;
struct bio_method_st;

namespace rill::internal {

class TlsContext {
 public:
  static StatusOr<std::shared_ptr<TlsContext>> ForServer(const ServerTlsOptions& options);
  static StatusOr<std::shared_ptr<TlsContext>> ForClient(const ChannelTlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  [[nodiscard]] ssl_ctx_st* native() const noexcept { return ctx_; }
  [[nodiscard]] bool server() const noexcept { return server_; }
  // The BIO method connections use to hand ciphertext to OpenSSL and take it back.
  [[nodiscard]] const bio_method_st* bio_method() const noexcept { return bio_method_; }

 private:
  TlsContext(ssl_ctx_st* ctx, bool server);
  ssl_ctx_st* ctx_;
  bio_method_st* bio_method_;
  bool server_;
};

// How the transport and rpc layers reach what the public credential classes hold.
struct CredentialsAccess {
  // The context a handshake beginning now uses (null: plaintext).
  static std::shared_ptr<TlsContext> Context(const ServerCredentials& credentials) {
    return credentials.context();
  }
  static const std::shared_ptr<TlsContext>& Context(const ChannelCredentials& credentials) {
    return credentials.context_;
  }
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_TLS_CONTEXT_H_
