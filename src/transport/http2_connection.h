// Http2Connection: one socket driven by one Http2Session on one reactor.
//
// Read side: the connection waits for readability and only then takes a read block from the
// pool (an idle connection holds no buffer), reads until the socket is drained, and feeds each
// block to the session; while streams are open, the next read fills the rest of a block the
// last one left mostly empty. Write side: whatever the session produced during an event-loop turn
// leaves in one writev/sendmsg at the end of that turn (ScheduleFlush); partial writes wait
// for writability.
//
// TLS (Options::tls): the same loops carry ciphertext. A read block holds what recv() returned;
// the TlsEngine decrypts it into plaintext blocks that go to the session as before. What the
// session produced is encrypted into a second output batch (pooled staging blocks) that is
// written with the same single sendmsg. Before the handshake is done the session's output waits;
// the handshake timeout covers the TLS handshake and the HTTP/2 preface together. A closing TLS
// connection sends close_notify before it half-closes.
//
// In-memory (Http2Connection(PipeEnd, ...)): the same session and loops over one end of an
// InMemoryPipe instead of a socket. HTTP/2 framing is kept; a flush hands the batch's pieces to
// the peer as views (no copy, no syscall), and a read takes the views the peer wrote. No TLS.
//
// Life cycle: Start() → ... → Close(reason). After Close, pending operations drain and the
// owner's OnConnectionDone() runs exactly once, from a fresh handler (never from inside
// Close()), after which the owner may destroy the connection.
//
// Thread safety: reactor-confined.
#ifndef RILL_SRC_TRANSPORT_HTTP2_CONNECTION_H_
#define RILL_SRC_TRANSPORT_HTTP2_CONNECTION_H_

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "rill/credentials.h"
#include "rill/status.h"
#include "src/http2/bdp_estimator.h"
#include "src/http2/http2_session.h"
#include "src/http2/output_batch.h"
#include "src/transport/in_memory_pipe.h"

namespace rill::internal {

class TlsContext;
class TlsEngine;
namespace channelz {
class SocketNode;
}  // namespace channelz

class Http2Connection {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  class Owner {
   public:
    virtual ~Owner() = default;
    // The socket is closed and no operation of the connection is pending.
    virtual void OnConnectionDone(const Status& reason) = 0;
    // The session returned from a receive or send step: work deferred out of its callbacks
    // (user code above all) may run now. The owner may submit to the session from here.
    virtual void OnSessionStepDone() {}
    // The TLS handshake completed (never called on a plaintext connection); peer_identity() is
    // set from here on.
    virtual void OnTlsHandshakeDone() {}
  };

  struct Options {
    Http2Options http2;
    size_t read_block_size = 32 * 1024;
    // Bytes gathered into one write syscall at most (the output batch's byte limit); a frame is
    // never split, so the frame that reaches the limit ends the batch. 0: one frame per write.
    size_t write_buffer_size = OutputBatch::kDefaultByteLimit;
    // Closes a connection whose peer has not completed the HTTP/2 preface by then (0: never).
    std::chrono::milliseconds handshake_timeout{0};
    // Closes a connection whose peer has not acknowledged our SETTINGS by then, with
    // GOAWAY(SETTINGS_TIMEOUT) (0: never).
    std::chrono::milliseconds settings_ack_timeout{0};
    // Grow the receive windows to the bandwidth-delay product (off when windows are static).
    bool dynamic_window = true;
    // Keepalive: after `keepalive_time` without receiving anything, send a PING; close the
    // connection if nothing arrives within `keepalive_timeout`. 0 disables it. Without open
    // streams only when `keepalive_without_streams`.
    std::chrono::milliseconds keepalive_time{0};
    std::chrono::milliseconds keepalive_timeout{20000};
    bool keepalive_without_streams = false;
    // Server side: a peer PING sooner than `min_ping_interval` after the previous one (2 h when
    // no stream is open, unless `pings_without_streams`) is a strike; more than two strikes
    // without us sending HEADERS or DATA in between earn GOAWAY(ENHANCE_YOUR_CALM,
    // "too_many_pings"). 0 disables enforcement.
    std::chrono::milliseconds min_ping_interval{0};
    bool pings_without_streams = false;
    // TLS with this context (null: plaintext). A client checks the server's certificate against
    // `tls_verify_name`.
    std::shared_ptr<TlsContext> tls;
    std::string tls_verify_name;
    // The glitch budget is the session's (http2.glitch_burst / glitch_rate): once spent, the
    // session queues GOAWAY(ENHANCE_YOUR_CALM) and the connection closes after flushing it.
  };

  // `handler`, `pool` and `owner` must outlive the connection.
  Http2Connection(Socket socket, const Options& options, Http2Handler* handler,
                  BufferPool& pool, Owner* owner);
  // Over one end of an in-memory pipe, on `io_context` (options.tls must be null).
  Http2Connection(PipeEnd pipe, asio::io_context& io_context, const Options& options,
                  Http2Handler* handler, BufferPool& pool, Owner* owner);
  ~Http2Connection();
  Http2Connection(const Http2Connection&) = delete;
  Http2Connection& operator=(const Http2Connection&) = delete;

  // Sends the preface/SETTINGS and starts reading.
  void Start();

  [[nodiscard]] Http2Session& session() noexcept { return session_; }
  [[nodiscard]] asio::io_context& io_context() noexcept { return io_context_; }
  [[nodiscard]] const std::string& peer() const noexcept { return peer_; }
  [[nodiscard]] bool closed() const noexcept { return closed_; }
  [[nodiscard]] BufferPool& pool() noexcept { return *pool_; }
  [[nodiscard]] bool secure() const noexcept { return tls_ != nullptr; }
  // Who the peer is (after the TLS handshake; `secure` is false on a plaintext connection).
  [[nodiscard]] const PeerIdentity& peer_identity() const noexcept { return identity_; }
  // The channelz node the connection reports keepalives, windows and TLS parameters to (set
  // once, before Start(); must outlive the connection). Its addresses are filled in here.
  void AttachChannelz(channelz::SocketNode* node);

  // Writes what the session queued, at the end of the current event-loop turn (once, however
  // often it is called in the turn).
  void ScheduleFlush();
  // Closes the socket now; queued output is dropped. Idempotent.
  void Close(Status reason);
  // Closes once everything queued has been written (after a GOAWAY, say), or after `limit` at
  // the latest (0: no limit; a peer that stops reading cannot hold the connection open then).
  void CloseAfterFlush(Status reason, std::chrono::milliseconds limit = {});

 private:
  // After CloseAfterFlush: half-closes and discards the peer's input briefly, then closes.
  void CloseLingering();
  void DiscardInput(size_t discarded);
  void StopEverything();
  void PostFinalCheck();
  void WaitReadable();
  void OnReadable(const asio::error_code& ec);
  void AdaptReadSize(size_t got) noexcept;
  // In-memory: one read turn over the pipe; false when the connection closed during it.
  void ReadPipe();
  // In-memory: hands the batch to the peer; false when the peer's queue is full.
  bool WritePipe();
  void Flush();
  // Fills the batch that goes out next: the session's frames (plaintext), or their encryption.
  Status Produce();
  Status EncryptBatch();
  // Hands decrypted (or plaintext) bytes to the session; false once the connection closes.
  bool Deliver(Buffer block);
  // Takes one read block of ciphertext; false once the connection closes.
  bool ReceiveTls(std::span<const std::byte> ciphertext);
  void OnTlsHandshakeFailed(Status status);
  [[nodiscard]] bool HandshakePending() const noexcept;
  void WaitWritable();
  void OpDone();
  void UpdateFlowControl();
  void ApplyPolicies();
  void ArmKeepalive(std::chrono::steady_clock::duration delay);
  void OnKeepaliveTimer();
  void Misbehaved(std::string_view debug);
  void LogPeerClose(std::string_view reason) const;
  void CheckDone();

  asio::io_context& io_context_;
  Socket socket_;  // unopened on an in-memory connection
  int fd_;
  PipeEnd pipe_;   // valid on an in-memory connection only
  std::vector<Buffer> pipe_in_;   // views taken from the pipe (reused)
  std::vector<Buffer> pipe_out_;  // views handed to the pipe (reused)
  Http2Session session_;
  OutputBatch batch_;
  OutputBatch cipher_;  // TLS: ciphertext to write (unused on a plaintext connection)
  std::unique_ptr<TlsEngine> tls_;
  channelz::SocketNode* channelz_ = nullptr;
  PeerIdentity identity_;
  BufferPool* pool_;
  Owner* owner_;
  asio::steady_timer handshake_timer_;
  asio::steady_timer close_timer_;
  asio::steady_timer settings_timer_;
  std::string peer_;
  Status close_reason_;
  size_t read_block_size_;
  size_t read_size_;  // the next read's block: read_block_size_ grown while reads come back full
  // The unwritten rest of the last read block, kept for the next read while streams are open: a
  // peer that writes a large message a frame at a time (grpc-go: 16 KiB per write) then fills
  // one block over several reads instead of pinning a mostly empty block per frame, which the
  // deframer would have to compact (copy) to bound the memory a partial message holds.
  Buffer spare_;
  std::chrono::milliseconds handshake_timeout_;
  size_t bytes_received_ = 0;
  std::optional<BdpEstimator> bdp_;
  uint64_t data_bytes_seen_ = 0;

  // Keepalive and ping enforcement.
  Options policy_;
  asio::steady_timer keepalive_timer_;
  std::chrono::steady_clock::time_point last_read_;
  std::chrono::steady_clock::time_point keepalive_deadline_{};  // a keepalive PING is unanswered
  bool keepalive_armed_ = false;
  uint64_t pings_seen_ = 0;
  uint64_t sends_seen_ = 0;
  std::chrono::steady_clock::time_point last_peer_ping_{};
  int ping_strikes_ = 0;
  int pending_ops_ = 0;
  bool reading_ = false;
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool in_read_turn_ = false;  // OnReadable flushes at its end; ScheduleFlush need not post
  bool closed_ = false;
  bool close_after_flush_ = false;
  bool close_notify_sent_ = false;
  bool server_;
  bool done_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_HTTP2_CONNECTION_H_
