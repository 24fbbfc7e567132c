// TlsEngine: one connection's TLS, sans-I/O. The connection reads ciphertext into pooled blocks
// and lends them to the engine (SetInput); OpenSSL takes the bytes through a BIO of our own
// that copies out of that span, and decrypts into the plaintext blocks the connection hands to
// its HTTP/2 session. Ciphertext OpenSSL produces goes through the same BIO into the
// connection's output batch (pooled staging blocks), which the connection writes with sendmsg.
// Nothing here touches a socket, a timer or another thread.
//
//   engine.SetInput(read_block.span());
//   Status s = engine.Handshake();            // until handshake_done()
//   StatusOr<size_t> n = engine.Read(plain);  // 0: needs more input
//   Status w = engine.Write(frame_bytes);     // ciphertext lands in the sink batch
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_TRANSPORT_TLS_ENGINE_H_
#define RILL_SRC_TRANSPORT_TLS_ENGINE_H_

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "rill/channelz.h"
#include "rill/credentials.h"
#include "rill/status_or.h"
#include "src/http2/output_batch.h"

struct ssl_st;
struct ssl_ctx_st;
struct bio_method_st;

namespace rill::internal {

class TlsContext;

// A BIO method whose read and write go through the TlsEngine it is attached to (one per
// TlsContext; freed with BIO_meth_free).
bio_method_st* NewTlsBioMethod();
// Installs the server's ALPN handling: "h2" is selected, a ClientHello without it is refused
// with a no_application_protocol alert.
void InstallServerAlpn(ssl_ctx_st* ctx);

class TlsEngine {
 public:
  // `sink` receives every ciphertext byte the engine produces and must outlive it.
  // `verify_name` (client only): the name the server's certificate must be valid for, also
  // sent as SNI unless it is an IP address. `peer` names the other end in messages.
  TlsEngine(std::shared_ptr<TlsContext> context, OutputBatch& sink, std::string_view verify_name,
            std::string_view peer);
  ~TlsEngine();
  TlsEngine(const TlsEngine&) = delete;
  TlsEngine& operator=(const TlsEngine&) = delete;

  // Lends the engine ciphertext; it must stay valid until the next SetInput or until Read() /
  // Handshake() reported that they need more input, by which time all of it was taken.
  void SetInput(std::span<const std::byte> ciphertext) noexcept { input_ = ciphertext; }

  // Advances the handshake with the input given so far. OK while it is under way or done
  // (handshake_done()); UNAVAILABLE with OpenSSL's reason (a verification failure named as such)
  // when it failed. Output to send may be in the sink either way.
  Status Handshake();
  [[nodiscard]] bool handshake_done() const noexcept { return handshake_done_; }

  // Decrypts into `out`: the number of bytes (0 when the input is used up), or UNAVAILABLE.
  // `peer_closed` becomes true once the peer's close_notify arrived.
  StatusOr<size_t> Read(std::span<std::byte> out, bool& peer_closed);
  // Encrypts all of `plaintext` into the sink.
  Status Write(std::span<const std::byte> plaintext);
  // Queues close_notify into the sink (once).
  void Shutdown();

  // The negotiated parameters and the peer's certificate (after the handshake).
  [[nodiscard]] PeerIdentity Identity() const;
  // What channelz shows (after the handshake): the cipher's IANA name and both certificates
  // (DER).
  [[nodiscard]] rill::channelz::TlsInfo ChannelzInfo() const;

 private:
  friend struct TlsBio;
  friend struct TlsServerCallbacks;
  Status Failure(int ret, std::string_view during);

  std::shared_ptr<TlsContext> context_;
  ssl_st* ssl_ = nullptr;
  OutputBatch* sink_;
  std::span<const std::byte> input_;
  std::string peer_;
  std::string alpn_refusal_;  // set by the ClientHello check: why ALPN refused the client
  bool handshake_done_ = false;
  bool shutdown_sent_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_TLS_ENGINE_H_
