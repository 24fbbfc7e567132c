#include "src/transport/tls_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "src/transport/tls_engine.h"

namespace rill::internal {
namespace {

// The one place OpenSSL's error queue becomes a message.
std::string TakeOpenSslErrors() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status Invalid(std::string what) {
  return Status(StatusCode::kInvalidArgument, std::move(what) + ": " + TakeOpenSslErrors());
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Status UseKeyPair(SSL_CTX* ctx, const TlsKeyPair& pair) {
  BioPtr certs = MemoryBio(pair.certificate_chain);
  X509* leaf = PEM_read_bio_X509_AUX(certs.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) return Invalid("cannot read the certificate chain");
  const int used = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (used != 1) return Invalid("cannot use the certificate");
  SSL_CTX_clear_chain_certs(ctx);
  while (X509* ca = PEM_read_bio_X509(certs.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
      X509_free(ca);
      return Invalid("cannot add a chain certificate");
    }
  }
  ERR_clear_error();  // the end of the PEM stream reads as an error
  BioPtr key_bio = MemoryBio(pair.private_key);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  if (key == nullptr) return Invalid("cannot read the private key");
  if (X509_check_private_key(SSL_CTX_get0_certificate(ctx), key) != 1) {
    EVP_PKEY_free(key);
    return Invalid("the private key does not match the certificate");
  }
  const int key_used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (key_used != 1) return Invalid("cannot use the private key");
  return Status();
}

Status AddTrustedCertificates(SSL_CTX* ctx, const std::string& pem, bool also_client_ca_list) {
  BioPtr bio = MemoryBio(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  int count = 0;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    if (also_client_ca_list) SSL_CTX_add_client_CA(ctx, cert);
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();
  if (count == 0) {
    return Status(StatusCode::kInvalidArgument, "no PEM certificate in the CA bundle");
  }
  return Status();
}

SSL_CTX* NewContext(bool server) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // No renegotiation, no compression, no session tickets; the server keeps no session cache
  // (each connection lives long; resumption is not worth the state).
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_max_early_data(ctx, 0);
  SSL_CTX_set_recv_max_early_data(ctx, 0);
  // SSL_MODE_RELEASE_BUFFERS stays off: it would free and reallocate OpenSSL's record buffers
  // around every record, an allocation per RPC. TODO(perf): an idle TLS connection holds them.
  return ctx;
}

}  // namespace

TlsContext::TlsContext(ssl_ctx_st* ctx, bool server)
    : ctx_(ctx), bio_method_(NewTlsBioMethod()), server_(server) {}

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx_);
  BIO_meth_free(bio_method_);
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForServer(const ServerTlsOptions& options) {
  SSL_CTX* raw = NewContext(/*server=*/true);
  if (raw == nullptr) return Invalid("cannot create a TLS context");
  std::shared_ptr<TlsContext> context(new TlsContext(raw, true));
  if (Status status = UseKeyPair(raw, options.key_pair); !status.ok()) return status;
  if (options.client_certificate_policy != ClientCertificatePolicy::kNone) {
    if (options.client_ca_certificates.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "a client certificate policy needs client_ca_certificates");
    }
    if (Status status = AddTrustedCertificates(raw, options.client_ca_certificates, true);
        !status.ok()) {
      return status;
    }
    int mode = SSL_VERIFY_PEER;
    if (options.client_certificate_policy == ClientCertificatePolicy::kRequireAndVerify) {
      mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    }
    SSL_CTX_set_verify(raw, mode, nullptr);
  } else {
    SSL_CTX_set_verify(raw, SSL_VERIFY_NONE, nullptr);
  }
  InstallServerAlpn(raw);
  return context;
}

StatusOr<std::shared_ptr<TlsContext>> TlsContext::ForClient(const ChannelTlsOptions& options) {
  SSL_CTX* raw = NewContext(/*server=*/false);
  if (raw == nullptr) return Invalid("cannot create a TLS context");
  std::shared_ptr<TlsContext> context(new TlsContext(raw, false));
  if (options.root_certificates.empty()) {
    if (SSL_CTX_set_default_verify_paths(raw) != 1) {
      return Invalid("cannot load the system's root certificates");
    }
  } else if (Status status = AddTrustedCertificates(raw, options.root_certificates, false);
             !status.ok()) {
    return status;
  }
  if (options.key_pair) {
    if (Status status = UseKeyPair(raw, *options.key_pair); !status.ok()) return status;
  }
  SSL_CTX_set_verify(raw, SSL_VERIFY_PEER, nullptr);
  static constexpr unsigned char kAlpn[] = {2, 'h', '2'};
  if (SSL_CTX_set_alpn_protos(raw, kAlpn, sizeof(kAlpn)) != 0) {
    return Invalid("cannot set ALPN");
  }
  return context;
}

}  // namespace rill::internal
