// Transport security for servers and channels: TLS 1.2/1.3 with ALPN "h2", optionally mutual.
//
//   // Server: a certificate chain and its key; plaintext and TLS ports may sit side by side.
//   auto creds = rill::ServerCredentials::Tls(
//       {.key_pair = *rill::TlsKeyPair::FromFiles("server.pem", "server.key")});
//   builder.AddListeningPort("0.0.0.0:50443", *creds, &port);
//
//   // Client: verify the server against a CA bundle (or the system roots when none is given).
//   auto channel_creds = rill::ChannelCredentials::Tls({.root_certificates = ca_pem});
//   auto channel = rill::Channel::Create("localhost:50443", *channel_creds);
//
// Both sides refuse TLS below 1.2, renegotiation and 0-RTT data, and require ALPN "h2": a peer
// that does not offer or select it is refused during the handshake.
//
// Thread safety: thread-safe (credentials may be shared by many servers and channels, and
// ServerCredentials::Reload may be called while connections are being accepted).
#ifndef RILL_CREDENTIALS_H_
#define RILL_CREDENTIALS_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status_or.h"

namespace rill {

namespace internal {
class TlsContext;
struct CredentialsAccess;
}  // namespace internal

// Reads a whole file (a PEM bundle, say). NOT_FOUND when it cannot be opened.
StatusOr<std::string> ReadFileToString(const std::string& path);

// A certificate chain (leaf first) and its private key, both PEM.
struct TlsKeyPair {
  std::string certificate_chain{};
  std::string private_key{};

  static StatusOr<TlsKeyPair> FromFiles(const std::string& certificate_chain_path,
                                        const std::string& private_key_path);
};

// What a TLS server asks of its clients' certificates.
enum class ClientCertificatePolicy {
  kNone,              // none is asked for
  kRequest,           // asked for; a client without one is served, a presented one is verified
  kRequireAndVerify,  // a client without a certificate that verifies is refused
};

struct ServerTlsOptions {
  TlsKeyPair key_pair{};
  // CA certificates (PEM) that client certificates are verified against. Needed unless the
  // policy is kNone.
  std::string client_ca_certificates{};
  ClientCertificatePolicy client_certificate_policy = ClientCertificatePolicy::kNone;
};

class ServerCredentials {
 public:
  // Plaintext HTTP/2 (h2c).
  static std::shared_ptr<ServerCredentials> Insecure();
  // INVALID_ARGUMENT when the certificates or the key do not load or do not match.
  static StatusOr<std::shared_ptr<ServerCredentials>> Tls(const ServerTlsOptions& options);

  ~ServerCredentials();
  ServerCredentials(const ServerCredentials&) = delete;
  ServerCredentials& operator=(const ServerCredentials&) = delete;

  [[nodiscard]] bool secure() const noexcept { return secure_; }

  // Replaces the key pair (a rotated certificate, say): every handshake that begins afterwards
  // uses the new one; established connections keep theirs. On failure the old pair stays in
  // use. FAILED_PRECONDITION on insecure credentials.
  Status Reload(const TlsKeyPair& key_pair);
  // Replaces everything, the client CA and policy included.
  Status Reload(const ServerTlsOptions& options);

 private:
  friend struct internal::CredentialsAccess;
  explicit ServerCredentials(std::shared_ptr<internal::TlsContext> context);
  [[nodiscard]] std::shared_ptr<internal::TlsContext> context() const;

  const bool secure_;
  mutable std::mutex mu_;
  ServerTlsOptions options_;                      // guarded by mu_
  std::shared_ptr<internal::TlsContext> context_;  // guarded by mu_; null when insecure
};

struct ChannelTlsOptions {
  // CA certificates (PEM) the server's chain is verified against; empty: the system's roots.
  std::string root_certificates{};
  // The name the server's certificate must be valid for, instead of the target's host (tests,
  // or a server reached through an address its certificate does not name). Also sent as SNI
  // and, unless ChannelOptions::authority says otherwise, as :authority.
  std::string server_name_override{};
  // A client certificate for servers that ask for one (mutual TLS).
  std::optional<TlsKeyPair> key_pair{};
};

class ChannelCredentials {
 public:
  // Plaintext HTTP/2 (h2c); the default of Channel::Create.
  static std::shared_ptr<ChannelCredentials> Insecure();
  // INVALID_ARGUMENT when the roots or the key pair do not load.
  static StatusOr<std::shared_ptr<ChannelCredentials>> Tls(const ChannelTlsOptions& options);

  ~ChannelCredentials();
  ChannelCredentials(const ChannelCredentials&) = delete;
  ChannelCredentials& operator=(const ChannelCredentials&) = delete;

  [[nodiscard]] bool secure() const noexcept { return context_ != nullptr; }
  [[nodiscard]] const std::string& server_name_override() const noexcept {
    return server_name_override_;
  }

 private:
  friend struct internal::CredentialsAccess;
  ChannelCredentials(std::shared_ptr<internal::TlsContext> context, std::string name_override);

  std::shared_ptr<internal::TlsContext> context_;  // null when insecure
  std::string server_name_override_;
};

// Who is on the other end of a server connection (ServerContext::peer_identity()).
struct PeerIdentity {
  // False on a plaintext connection; everything below is then empty.
  bool secure = false;
  // "TLSv1.3", "TLSv1.2".
  std::string tls_version;
  // The negotiated cipher suite, e.g. "TLS_AES_128_GCM_SHA256".
  std::string cipher;
  // The client certificate, when one was presented and verified.
  bool certificate_verified = false;
  std::string subject;                    // RFC 2253, e.g. "CN=client,O=rill test"
  std::vector<std::string> dns_names;     // subjectAltName DNS entries
  std::vector<std::string> uris;          // subjectAltName URI entries (SPIFFE ids and the like)
  std::vector<std::string> ip_addresses;  // subjectAltName IP entries, printed
};

}  // namespace rill

#endif  // RILL_CREDENTIALS_H_
