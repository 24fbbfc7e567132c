#include "src/transport/tls_engine.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstring>

#include "src/transport/tls_context.h"

namespace rill::internal {

// The BIO between OpenSSL and the connection: reads come out of the lent input span, writes go
// into the sink batch. It never blocks and never fails a write.
struct TlsBio {
  static TlsEngine* Engine(BIO* bio) { return static_cast<TlsEngine*>(BIO_get_data(bio)); }

  static int Write(BIO* bio, const char* data, int len) {
    BIO_clear_retry_flags(bio);
    TlsEngine* engine = Engine(bio);
    if (engine == nullptr || len < 0) return -1;
    engine->sink_->AppendCopy(
        std::as_bytes(std::span(data, static_cast<size_t>(len))));
    return len;
  }

  static int Read(BIO* bio, char* out, int len) {
    BIO_clear_retry_flags(bio);
    TlsEngine* engine = Engine(bio);
    if (engine == nullptr || len < 0) return -1;
    if (engine->input_.empty()) {
      BIO_set_retry_read(bio);
      return -1;
    }
    const size_t n = std::min(engine->input_.size(), static_cast<size_t>(len));
    std::memcpy(out, engine->input_.data(), n);
    engine->input_ = engine->input_.subspan(n);
    return static_cast<int>(n);
  }

  static long Ctrl(BIO* bio, int cmd, long /*num*/, void* /*ptr*/) {
    switch (cmd) {
      case BIO_CTRL_FLUSH:
        return 1;
      case BIO_CTRL_PENDING: {
        TlsEngine* engine = Engine(bio);
        return engine == nullptr ? 0 : static_cast<long>(engine->input_.size());
      }
      default:
        return 0;
    }
  }

  static int Create(BIO* bio) {
    BIO_set_init(bio, 1);
    return 1;
  }
};

struct TlsServerCallbacks {
  // Refuses a ClientHello that does not offer h2 before any key exchange is spent on it.
  static int ClientHello(SSL* ssl, int* alert, void* /*arg*/) {
    const unsigned char* ext = nullptr;
    size_t len = 0;
    std::string offered;
    bool h2 = false;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &ext,
                                  &len) == 1 &&
        len >= 2) {
      // ProtocolNameList: a 2-byte length, then 1-byte-length-prefixed names.
      size_t i = 2;
      while (i < len) {
        const size_t n = ext[i++];
        if (i + n > len) break;
        std::string_view name(reinterpret_cast<const char*>(ext + i), n);
        if (name == "h2") h2 = true;
        if (!offered.empty()) offered += ",";
        offered += name;
        i += n;
      }
    }
    if (h2) return SSL_CLIENT_HELLO_SUCCESS;
    if (auto* engine = static_cast<TlsEngine*>(SSL_get_app_data(ssl)); engine != nullptr) {
      engine->alpn_refusal_ = offered.empty()
                                  ? "the client offered no ALPN protocol; h2 is required"
                                  : "the client offered ALPN " + offered + " but not h2";
    }
    *alert = SSL_AD_NO_APPLICATION_PROTOCOL;
    return SSL_CLIENT_HELLO_ERROR;
  }

  static int SelectAlpn(SSL* /*ssl*/, const unsigned char** out, unsigned char* outlen,
                        const unsigned char* in, unsigned int inlen, void* /*arg*/) {
    static constexpr unsigned char kH2[] = {2, 'h', '2'};
    unsigned char* selected = nullptr;
    if (SSL_select_next_proto(&selected, outlen, kH2, sizeof(kH2), in, inlen) !=
        OPENSSL_NPN_NEGOTIATED) {
      return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
};

bio_method_st* NewTlsBioMethod() {
  BIO_METHOD* method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "rill");
  BIO_meth_set_write(method, &TlsBio::Write);
  BIO_meth_set_read(method, &TlsBio::Read);
  BIO_meth_set_ctrl(method, &TlsBio::Ctrl);
  BIO_meth_set_create(method, &TlsBio::Create);
  return method;
}

void InstallServerAlpn(ssl_ctx_st* ctx) {
  SSL_CTX_set_client_hello_cb(ctx, &TlsServerCallbacks::ClientHello, nullptr);
  SSL_CTX_set_alpn_select_cb(ctx, &TlsServerCallbacks::SelectAlpn, nullptr);
}

namespace {

bool IsIpAddress(const std::string& name) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

std::string OpenSslReasons() {
  std::string out;
  while (const unsigned long code = ERR_get_error()) {
    const char* reason = ERR_reason_error_string(code);
    if (!out.empty()) out += "; ";
    out += reason != nullptr ? reason : "error " + std::to_string(ERR_GET_REASON(code));
  }
  return out;
}

}  // namespace

TlsEngine::TlsEngine(std::shared_ptr<TlsContext> context, OutputBatch& sink,
                     std::string_view verify_name, std::string_view peer)
    : context_(std::move(context)), sink_(&sink), peer_(peer) {
  ssl_ = SSL_new(context_->native());
  RILL_CHECK_MSG(ssl_ != nullptr, "SSL_new failed (out of memory)");
  SSL_set_app_data(ssl_, this);
  BIO* bio = BIO_new(const_cast<BIO_METHOD*>(context_->bio_method()));
  RILL_CHECK_MSG(bio != nullptr, "BIO_new failed (out of memory)");
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways; SSL_free frees it
  if (context_->server()) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
    const std::string name(verify_name);
    if (!name.empty()) {
      if (!IsIpAddress(name)) SSL_set_tlsext_host_name(ssl_, name.c_str());
      if (IsIpAddress(name)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), name.c_str());
      } else {
        SSL_set1_host(ssl_, name.c_str());
      }
    }
  }
}

TlsEngine::~TlsEngine() { SSL_free(ssl_); }

Status TlsEngine::Failure(int ret, std::string_view during) {
  const int error = SSL_get_error(ssl_, ret);
  std::string reason;
  if (!alpn_refusal_.empty()) {
    reason = alpn_refusal_;
  } else if (const long verify = SSL_get_verify_result(ssl_);
             verify != X509_V_OK && error == SSL_ERROR_SSL && !handshake_done_) {
    reason = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  } else if (error == SSL_ERROR_SYSCALL) {
    reason = "unexpected end of TLS stream";
  } else {
    reason = OpenSslReasons();
    if (reason.empty()) reason = "SSL error " + std::to_string(error);
  }
  ERR_clear_error();
  return Status(StatusCode::kUnavailable, std::string(during) + " with " + peer_ + ": " + reason);
}

Status TlsEngine::Handshake() {
  if (handshake_done_) return Status();
  ERR_clear_error();
  const int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    handshake_done_ = true;
    const unsigned char* alpn = nullptr;
    unsigned int alpn_len = 0;
    SSL_get0_alpn_selected(ssl_, &alpn, &alpn_len);
    if (std::string_view(reinterpret_cast<const char*>(alpn), alpn_len) != "h2") {
      return Status(StatusCode::kUnavailable,
                    "TLS handshake with " + peer_ + ": the peer did not negotiate ALPN h2");
    }
    return Status();
  }
  const int error = SSL_get_error(ssl_, ret);
  if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) return Status();
  return Failure(ret, "TLS handshake");
}

StatusOr<size_t> TlsEngine::Read(std::span<std::byte> out, bool& peer_closed) {
  size_t total = 0;
  while (total < out.size()) {
    ERR_clear_error();
    size_t n = 0;
    const int ret = SSL_read_ex(ssl_, out.data() + total, out.size() - total, &n);
    if (ret == 1) {
      total += n;
      continue;
    }
    const int error = SSL_get_error(ssl_, ret);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) break;
    if (error == SSL_ERROR_ZERO_RETURN) {
      peer_closed = true;
      break;
    }
    if (total > 0) break;  // report the bytes first; the error comes back on the next call
    return Failure(ret, "TLS read");
  }
  return total;
}

Status TlsEngine::Write(std::span<const std::byte> plaintext) {
  while (!plaintext.empty()) {
    ERR_clear_error();
    size_t n = 0;
    const int ret = SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &n);
    if (ret != 1) return Failure(ret, "TLS write");
    plaintext = plaintext.subspan(n);
  }
  return Status();
}

void TlsEngine::Shutdown() {
  if (shutdown_sent_ || !handshake_done_) return;
  shutdown_sent_ = true;
  ERR_clear_error();
  SSL_shutdown(ssl_);
  ERR_clear_error();
}

namespace {

std::string CertificateDer(X509* cert) {
  if (cert == nullptr) return {};
  const int length = i2d_X509(cert, nullptr);
  if (length <= 0) return {};
  std::string der(static_cast<size_t>(length), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_X509(cert, &out);
  return der;
}

}  // namespace

rill::channelz::TlsInfo TlsEngine::ChannelzInfo() const {
  rill::channelz::TlsInfo info;
  if (const SSL_CIPHER* cipher = SSL_get_current_cipher(ssl_); cipher != nullptr) {
    const char* name = SSL_CIPHER_standard_name(cipher);
    info.cipher = name != nullptr ? name : SSL_CIPHER_get_name(cipher);
  }
  info.local_certificate = CertificateDer(SSL_get_certificate(ssl_));
  info.remote_certificate = CertificateDer(SSL_get0_peer_certificate(ssl_));
  return info;
}

PeerIdentity TlsEngine::Identity() const {
  PeerIdentity identity;
  identity.secure = true;
  identity.tls_version = SSL_get_version(ssl_);
  if (const char* cipher = SSL_get_cipher_name(ssl_); cipher != nullptr) {
    identity.cipher = cipher;
  }
  X509* cert = SSL_get0_peer_certificate(ssl_);
  if (cert == nullptr) return identity;
  identity.certificate_verified = SSL_get_verify_result(ssl_) == X509_V_OK;
  if (BIO* mem = BIO_new(BIO_s_mem()); mem != nullptr) {
    X509_NAME_print_ex(mem, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
    char* data = nullptr;
    const long len = BIO_get_mem_data(mem, &data);
    if (len > 0) identity.subject.assign(data, static_cast<size_t>(len));
    BIO_free(mem);
  }
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
      if (name->type == GEN_DNS || name->type == GEN_URI) {
        const ASN1_IA5STRING* s = name->d.ia5;
        std::string value(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                          static_cast<size_t>(ASN1_STRING_length(s)));
        (name->type == GEN_DNS ? identity.dns_names : identity.uris).push_back(std::move(value));
      } else if (name->type == GEN_IPADD) {
        const ASN1_OCTET_STRING* ip = name->d.iPAddress;
        char text[INET6_ADDRSTRLEN] = {};
        const int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
        if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text)) != nullptr) {
          identity.ip_addresses.emplace_back(text);
        }
      }
    }
    GENERAL_NAMES_free(names);
  }
  return identity;
}

}  // namespace rill::internal
