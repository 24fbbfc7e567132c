// Http2Connection: one socket driven by one Http2Session on one reactor.
//
// Read side: the connection waits for readability and only then takes a read block from the
// pool (an idle connection holds no buffer), reads until the socket is drained, and feeds each
// block to the session. Write side: whatever the session produced during an event-loop turn
// leaves in one writev/sendmsg at the end of that turn (ScheduleFlush); partial writes wait
// for writability.
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
#include <string>

#include "rill/status.h"
#include "src/http2/http2_session.h"
#include "src/http2/output_batch.h"

namespace rill::internal {

class Http2Connection {
 public:
  using Socket = asio::generic::stream_protocol::socket;

  class Owner {
   public:
    virtual ~Owner() = default;
    // The socket is closed and no operation of the connection is pending.
    virtual void OnConnectionDone(const Status& reason) = 0;
  };

  struct Options {
    Http2Options http2;
    size_t read_block_size = 32 * 1024;
    // Closes a connection whose peer has not completed the HTTP/2 preface by then (0: never).
    std::chrono::milliseconds handshake_timeout{0};
  };

  // `handler`, `pool` and `owner` must outlive the connection.
  Http2Connection(Socket socket, const Options& options, Http2Handler* handler,
                  BufferPool& pool, Owner* owner);
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

  // Writes what the session queued, at the end of the current event-loop turn (once, however
  // often it is called in the turn).
  void ScheduleFlush();
  // Closes the socket now; queued output is dropped. Idempotent.
  void Close(Status reason);
  // Closes once everything queued has been written (after a GOAWAY, say).
  void CloseAfterFlush(Status reason);

 private:
  void WaitReadable();
  void OnReadable(const asio::error_code& ec);
  void Flush();
  void WaitWritable();
  void OpDone();
  void CheckDone();

  asio::io_context& io_context_;
  Socket socket_;
  int fd_;
  Http2Session session_;
  OutputBatch batch_;
  BufferPool* pool_;
  Owner* owner_;
  asio::steady_timer handshake_timer_;
  std::string peer_;
  Status close_reason_;
  size_t read_block_size_;
  std::chrono::milliseconds handshake_timeout_;
  size_t bytes_received_ = 0;
  int pending_ops_ = 0;
  bool reading_ = false;
  bool writing_ = false;
  bool flush_scheduled_ = false;
  bool in_read_turn_ = false;  // OnReadable flushes at its end; ScheduleFlush need not post
  bool closed_ = false;
  bool close_after_flush_ = false;
  bool done_ = false;
};

}  // namespace rill::internal

#endif  // RILL_SRC_TRANSPORT_HTTP2_CONNECTION_H_
