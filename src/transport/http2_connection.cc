#include "src/transport/http2_connection.h"

#include <fcntl.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <asio/post.hpp>
#include <cerrno>
#include <cstring>

#include "rill/log.h"
#include "rill/mem/buffer_pool.h"
#include "src/base/channelz.h"
#include "src/transport/address.h"
#include "src/transport/tls_context.h"
#include "src/transport/tls_engine.h"

namespace rill::internal {
namespace {

// Reads per readable event before yielding to other connections on the reactor.
constexpr int kMaxReadsPerTurn = 16;
// A read block grows up to this many times Options::read_block_size (AdaptReadSize).
constexpr size_t kReadGrowth = 8;
// A plaintext read of at least kSpareAfterRead bytes that left at least kSpareMin bytes of its
// block unwritten keeps that rest for the next read while streams are open (Http2Connection::
// spare_).
constexpr size_t kSpareAfterRead = 4 * 1024;
constexpr size_t kSpareMin = 4 * 1024;

// Identifies keepalive pings among the connection's PING ACKs.
constexpr uint64_t kKeepalivePingPayload = 0x6b65657061'6c6976;

// A closing connection reads and drops the peer's bytes for this long, or this many, at most.
constexpr std::chrono::milliseconds kLingerTime{1000};
constexpr size_t kLingerBytes = 1 << 20;

// Plaintext pieces shorter than this are gathered before encryption, so that a frame header
// does not become a TLS record of its own.
constexpr size_t kTlsGatherBelow = 1024;

// The one place where socket errors become statuses.
Status SocketError(std::string_view what, int error) {
  return Status(StatusCode::kUnavailable, std::string(what) + ": " + std::strerror(error));
}

}  // namespace

Http2Connection::Http2Connection(Socket socket, const Options& options, Http2Handler* handler,
                                 BufferPool& pool, Owner* owner)
    : io_context_(static_cast<asio::io_context&>(socket.get_executor().context())),
      socket_(std::move(socket)),
      fd_(socket_.native_handle()),
      session_(options.http2, handler, pool),
      batch_(pool, options.write_buffer_size),
      cipher_(pool),
      pool_(&pool),
      owner_(owner),
      handshake_timer_(io_context_),
      close_timer_(io_context_),
      settings_timer_(io_context_),
      read_block_size_(options.read_block_size),
      read_size_(options.read_block_size),
      handshake_timeout_(options.handshake_timeout),
      policy_(options),
      keepalive_timer_(io_context_),
      server_(options.http2.server) {
  if (options.dynamic_window) bdp_.emplace(options.http2.initial_stream_window);
  last_read_ = std::chrono::steady_clock::now();
  asio::error_code ec;
  socket_.non_blocking(true, ec);
  // Programs that start other programs must not hand them their connections (a child holding
  // a server's socket keeps it open after the server closed it).
  ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
  const auto endpoint = socket_.remote_endpoint(ec);
  peer_ = ec ? "unknown" : PeerName(endpoint);
  const int family = endpoint.data()->sa_family;
  if (!ec && (family == AF_INET || family == AF_INET6)) {
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  if (options.tls) {
    tls_ = std::make_unique<TlsEngine>(options.tls, cipher_, options.tls_verify_name, peer_);
  }
}

Http2Connection::Http2Connection(PipeEnd pipe, asio::io_context& io_context,
                                 const Options& options, Http2Handler* handler, BufferPool& pool,
                                 Owner* owner)
    : io_context_(io_context),
      socket_(io_context),
      fd_(-1),
      pipe_(std::move(pipe)),
      session_(options.http2, handler, pool),
      batch_(pool, options.write_buffer_size),
      cipher_(pool),
      pool_(&pool),
      owner_(owner),
      handshake_timer_(io_context_),
      close_timer_(io_context_),
      settings_timer_(io_context_),
      peer_("inprocess"),
      read_block_size_(options.read_block_size),
      read_size_(options.read_block_size),
      handshake_timeout_(options.handshake_timeout),
      policy_(options),
      keepalive_timer_(io_context_),
      server_(options.http2.server) {
  RILL_CHECK_MSG(pipe_.valid() && options.tls == nullptr,
                 "an in-memory connection needs a pipe and carries no TLS");
  if (options.dynamic_window) bdp_.emplace(options.http2.initial_stream_window);
  last_read_ = std::chrono::steady_clock::now();
}

Http2Connection::~Http2Connection() = default;

void Http2Connection::AttachChannelz(channelz::SocketNode* node) {
  channelz_ = node;
  if (fd_ >= 0) node->DescribeSocket(fd_);
}

void Http2Connection::Start() {
  if (handshake_timeout_.count() > 0) {
    ++pending_ops_;
    handshake_timer_.expires_after(handshake_timeout_);
    handshake_timer_.async_wait([this](const asio::error_code& ec) {
      OpDone();
      if (!ec && !closed_ && HandshakePending()) {
        if (tls_ && !tls_->handshake_done()) {
          Close(Status(StatusCode::kUnavailable, "TLS handshake timed out"));
        } else {
          // The HTTP/2 layer is up on our side: its GOAWAY says why the connection ends.
          session_.SubmitGoaway(kHttp2NoError, "handshake_timeout");
          CloseAfterFlush(Status(StatusCode::kUnavailable, "HTTP/2 handshake timed out"),
                          std::chrono::seconds(1));
        }
      }
      CheckDone();
    });
  }
  if (policy_.settings_ack_timeout.count() > 0) {
    ++pending_ops_;
    settings_timer_.expires_after(policy_.settings_ack_timeout);
    settings_timer_.async_wait([this](const asio::error_code& ec) {
      OpDone();
      if (!ec && !closed_ && !session_.settings_acked()) {
        session_.SubmitGoaway(kHttp2SettingsTimeout, "settings_timeout");
        CloseAfterFlush(Status(StatusCode::kUnavailable, "SETTINGS not acknowledged in time"),
                        std::chrono::seconds(1));
      }
      CheckDone();
    });
  }
  WaitReadable();
  if (tls_ && !server_) {
    if (Status status = tls_->Handshake(); !status.ok()) {  // the ClientHello
      Close(std::move(status));
      return;
    }
  }
  Flush();  // the server's SETTINGS (and the client's preface) go out right away (after TLS)
  // The write may have failed (a Unix-socket peer that already left fails at once with EPIPE):
  // a timer armed after Close() would hold the connection open until it fires.
  if (policy_.keepalive_time.count() > 0) ArmKeepalive(policy_.keepalive_time);
}

void Http2Connection::ArmKeepalive(std::chrono::steady_clock::duration delay) {
  if (closed_) return;
  keepalive_armed_ = true;
  ++pending_ops_;
  keepalive_timer_.expires_after(delay);
  keepalive_timer_.async_wait([this](const asio::error_code& ec) {
    OpDone();
    keepalive_armed_ = false;
    if (!ec && !closed_) OnKeepaliveTimer();
    CheckDone();
  });
}

void Http2Connection::OnKeepaliveTimer() {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  if (keepalive_deadline_ != steady_clock::time_point{}) {
    if (last_read_ < keepalive_deadline_ - policy_.keepalive_timeout) {
      // Nothing at all arrived since the PING went out.
      Close(Status(StatusCode::kUnavailable, "keepalive ping not acknowledged"));
      return;
    }
    keepalive_deadline_ = {};
  }
  const auto idle_until = last_read_ + policy_.keepalive_time;
  if (now < idle_until) {
    ArmKeepalive(idle_until - now);
    return;
  }
  if (session_.open_streams() == 0 && !policy_.keepalive_without_streams) {
    ArmKeepalive(policy_.keepalive_time);  // dormant without streams
    return;
  }
  session_.SubmitPing(kKeepalivePingPayload);
  if (channelz_ != nullptr) channelz_->keepalives_sent.Add();
  keepalive_deadline_ = now + policy_.keepalive_timeout;
  ScheduleFlush();
  ArmKeepalive(policy_.keepalive_timeout);
}

void Http2Connection::Misbehaved(std::string_view debug) {
  LogPeerClose(debug);
  session_.SubmitGoaway(kHttp2EnhanceYourCalm, debug);
  CloseAfterFlush(Status(StatusCode::kUnavailable, std::string(debug)));
}

void Http2Connection::ApplyPolicies() {
  using std::chrono::steady_clock;
  const auto now = steady_clock::now();
  last_read_ = now;
  const Http2Session::Counters& counters = session_.counters();
  if (counters.headers_data_sent != sends_seen_) {
    sends_seen_ = counters.headers_data_sent;
    ping_strikes_ = 0;
  }
  if (policy_.min_ping_interval.count() > 0) {
    for (; pings_seen_ < counters.pings_received; ++pings_seen_) {
      const auto min_interval = session_.open_streams() > 0 || policy_.pings_without_streams
                                    ? steady_clock::duration(policy_.min_ping_interval)
                                    : steady_clock::duration(std::chrono::hours(2));
      if (last_peer_ping_ != steady_clock::time_point{} &&
          now - last_peer_ping_ < min_interval && ++ping_strikes_ > 2) {
        Misbehaved("too_many_pings");
        return;
      }
      last_peer_ping_ = now;
    }
  }
}

void Http2Connection::WaitReadable() {
  if (reading_ || closed_) return;
  reading_ = true;
  ++pending_ops_;
  if (pipe_.valid()) {
    pipe_.AsyncWaitReadable(io_context_, [this](const asio::error_code& ec) { OnReadable(ec); });
    return;
  }
  socket_.async_wait(Socket::wait_read, [this](const asio::error_code& ec) { OnReadable(ec); });
}

void Http2Connection::OnReadable(const asio::error_code& ec) {
  OpDone();
  reading_ = false;
  if (closed_ || ec) {
    if (!closed_) Close(Status(StatusCode::kUnavailable, ec.message()));
    CheckDone();
    return;
  }
  in_read_turn_ = true;
  if (pipe_.valid()) ReadPipe();
  for (int i = 0; i < kMaxReadsPerTurn && !closed_ && !pipe_.valid(); ++i) {
    const bool fresh = spare_.empty();
    Buffer block = fresh ? Buffer::Allocate(read_size_, *pool_) : std::move(spare_);
    // The spare's block is shared with the views cut from its front, but no view covers these
    // bytes: they are the connection's to write.
    std::byte* dst = fresh ? block.mutable_data() : const_cast<std::byte*>(block.data());
    const ssize_t n = ::recv(fd_, dst, block.size(), MSG_DONTWAIT);
    if (n < 0) {
      const bool retry = errno == EINTR;
      if (retry || errno == EAGAIN || errno == EWOULDBLOCK) {
        // Nothing arrived: a kept block stays kept.
        if (!fresh) spare_ = std::move(block);
        if (retry) continue;
        break;
      }
      Close(SocketError("read", errno));
      break;
    }
    if (n == 0) {
      Close(Status(StatusCode::kUnavailable, "connection closed by peer"));
      break;
    }
    const bool drained = static_cast<size_t>(n) < block.size();
    if (fresh) AdaptReadSize(static_cast<size_t>(n));
    if (drained && !tls_ && static_cast<size_t>(n) >= kSpareAfterRead &&
        block.size() - static_cast<size_t>(n) >= kSpareMin) {
      spare_ = block.Split(static_cast<size_t>(n));
    } else {
      block.Truncate(static_cast<size_t>(n));
    }
    if (tls_) {
      // The ciphertext block lives until the engine has taken all of it, within this call.
      const bool open = ReceiveTls(block.span());
      tls_->SetInput({});
      if (!open) break;
    } else if (!Deliver(std::move(block))) {
      break;
    }
    if (drained) break;
  }
  in_read_turn_ = false;
  // Between calls the connection holds no read memory.
  if (closed_ || session_.open_streams() == 0) spare_ = Buffer();
  if (!closed_ && !close_after_flush_) ApplyPolicies();
  if (!closed_ && !close_after_flush_ && bdp_) UpdateFlowControl();
  if (channelz_ != nullptr && channelz::Enabled()) {
    channelz_->local_window.store(session_.local_window(), std::memory_order_relaxed);
    channelz_->remote_window.store(session_.remote_window(), std::memory_order_relaxed);
  }
  if (!closed_) {
    if (!HandshakePending() && handshake_timeout_.count() > 0) {
      handshake_timer_.cancel();
    }
    Flush();
    if (!closed_ && !close_after_flush_) WaitReadable();
  }
  CheckDone();
}

// A read that fills its block means more is waiting: the next block is twice as large, up to
// kReadGrowth times the configured size, so a large message arrives in a few reads instead of
// dozens. Reads that come back mostly empty shrink it again, so a connection of small calls
// reads into small blocks (a block stays pinned while any message in it is alive).
void Http2Connection::AdaptReadSize(size_t got) noexcept {
  if (got == read_size_) {
    read_size_ = std::min(read_size_ * 2, read_block_size_ * kReadGrowth);
  } else if (got < read_size_ / 4 && read_size_ > read_block_size_) {
    read_size_ /= 2;
  }
}

void Http2Connection::ReadPipe() {
  const PipeEnd::ReadResult result =
      pipe_.Read(pipe_in_, static_cast<size_t>(kMaxReadsPerTurn) * read_block_size_);
  if (result == PipeEnd::ReadResult::kEnd) {
    Close(Status(StatusCode::kUnavailable, "connection closed by peer"));
    return;
  }
  for (Buffer& piece : pipe_in_) {
    if (!Deliver(std::move(piece))) break;
  }
  pipe_in_.clear();  // what a closing connection did not deliver is dropped
}

bool Http2Connection::WritePipe() {
  if (!pipe_.CanWrite()) return false;
  batch_.TakeViews(pipe_out_);
  pipe_.Write(pipe_out_);
  return true;
}

// An operator needs to know why a peer lost its connection: the peer sees only the GOAWAY.
void Http2Connection::LogPeerClose(std::string_view reason) const {
  Log(LogSeverity::kWarning,
      "closing the HTTP/2 connection with " + peer_ + " (GOAWAY): " + std::string(reason));
}

bool Http2Connection::Deliver(Buffer block) {
  bytes_received_ += block.size();
  Status status = session_.Receive(std::move(block), std::chrono::steady_clock::now());
  owner_->OnSessionStepDone();
  if (closed_) return false;
  if (!status.ok()) {
    // nghttp2 queued a GOAWAY explaining the error; send it, then close.
    LogPeerClose(status.message());
    CloseAfterFlush(std::move(status));
    return false;
  }
  if (session_.calmed()) {
    // The glitch or reset budget ran out: the session queued GOAWAY(ENHANCE_YOUR_CALM).
    LogPeerClose(session_.calm_reason());
    CloseAfterFlush(Status(StatusCode::kUnavailable, std::string(session_.calm_reason())));
    return false;
  }
  return true;
}

bool Http2Connection::ReceiveTls(std::span<const std::byte> ciphertext) {
  if (close_after_flush_) return true;  // closing: the peer's bytes are not read any more
  tls_->SetInput(ciphertext);
  if (!tls_->handshake_done()) {
    if (Status status = tls_->Handshake(); !status.ok()) {
      OnTlsHandshakeFailed(std::move(status));
      return false;
    }
    if (!tls_->handshake_done()) return true;  // all input taken; more is needed
    identity_ = tls_->Identity();
    if (channelz_ != nullptr) channelz::Registry::Get().SetTls(*channelz_, tls_->ChannelzInfo());
    owner_->OnTlsHandshakeDone();
    if (closed_) return false;
  }
  for (;;) {
    Buffer plain = Buffer::Allocate(read_block_size_, *pool_);
    bool peer_closed = false;
    StatusOr<size_t> n = tls_->Read(std::span(plain.mutable_data(), plain.size()), peer_closed);
    if (!n.ok()) {
      Close(n.status());
      return false;
    }
    const bool full = *n == plain.size();
    if (*n > 0) {
      plain.Truncate(*n);
      if (!Deliver(std::move(plain))) return false;
    }
    if (peer_closed) {
      Close(Status(StatusCode::kUnavailable, "connection closed by peer (TLS close_notify)"));
      return false;
    }
    if (!full) return true;
  }
}

void Http2Connection::OnTlsHandshakeFailed(Status status) {
  if (server_) {
    // A refused client learns little from the alert; the log line says what went wrong.
    Log(LogSeverity::kWarning, "refused a TLS connection: " + std::string(status.message()));
  }
  // The alert OpenSSL queued goes out before the connection closes.
  CloseAfterFlush(std::move(status), std::chrono::seconds(1));
}

bool Http2Connection::HandshakePending() const noexcept {
  if (tls_ && !tls_->handshake_done()) return true;
  return server_ && bytes_received_ < 24;
}

void Http2Connection::UpdateFlowControl() {
  const auto now = BdpEstimator::Clock::now();
  if (session_.TakePingAck(BdpEstimator::kPingPayload)) {
    if (const uint32_t window = bdp_->OnPingAck(now); window != 0) {
      session_.UpdateReceiveWindow(window);
    }
  }
  const uint64_t total = session_.data_bytes_received();
  if (total != data_bytes_seen_) {
    const size_t bytes = static_cast<size_t>(total - data_bytes_seen_);
    data_bytes_seen_ = total;
    if (bdp_->OnData(bytes, now)) session_.SubmitPing(BdpEstimator::kPingPayload);
  }
}

void Http2Connection::ScheduleFlush() {
  if (flush_scheduled_ || closed_ || in_read_turn_) return;
  flush_scheduled_ = true;
  ++pending_ops_;
  asio::post(io_context_, [this] {
    OpDone();
    flush_scheduled_ = false;
    Flush();
    CheckDone();
  });
}

Status Http2Connection::Produce() {
  if (!tls_) {
    if (batch_.full()) return Status();
    Status status = session_.FillBatch(batch_);
    owner_->OnSessionStepDone();
    return status;
  }
  // The next plaintext batch is encrypted once the previous ciphertext is written: the
  // ciphertext waiting for the socket stays bounded by one batch.
  if (!cipher_.empty() || !tls_->handshake_done() || close_notify_sent_) return Status();
  Status status = session_.FillBatch(batch_);
  owner_->OnSessionStepDone();
  if (closed_ || !status.ok() || batch_.empty()) return status;
  status = EncryptBatch();
  batch_.Consume(batch_.bytes());
  return status;
}

Status Http2Connection::EncryptBatch() {
  std::byte gathered[4096];
  size_t used = 0;
  for (const iovec& iov : batch_.iovecs()) {
    std::span<const std::byte> piece(static_cast<const std::byte*>(iov.iov_base), iov.iov_len);
    if (piece.size() < kTlsGatherBelow && used + piece.size() <= sizeof(gathered)) {
      std::memcpy(gathered + used, piece.data(), piece.size());
      used += piece.size();
      continue;
    }
    if (used > 0) {
      if (Status status = tls_->Write({gathered, used}); !status.ok()) return status;
      used = 0;
    }
    if (piece.size() < kTlsGatherBelow) {
      std::memcpy(gathered, piece.data(), piece.size());
      used = piece.size();
      continue;
    }
    // TODO(perf): a 9-byte DATA frame header before a large payload view is a record of its own.
    if (Status status = tls_->Write(piece); !status.ok()) return status;
  }
  if (used > 0) return tls_->Write({gathered, used});
  return Status();
}

void Http2Connection::Flush() {
  if (writing_ || closed_) return;
  for (;;) {
    if (Status status = Produce(); closed_ || !status.ok()) {
      if (!closed_) Close(std::move(status));
      return;
    }
    // The last call ended with what was just produced: the connection is idle.
    if (!spare_.empty() && session_.open_streams() == 0) spare_ = Buffer();
    OutputBatch& out = tls_ ? cipher_ : batch_;
    if (out.empty()) {
      // Closing a TLS connection: close_notify is the last thing written.
      const bool finishing =
          close_after_flush_ || (!session_.WantsRead() && !session_.WantsWrite());
      if (finishing && tls_ && tls_->handshake_done() && !close_notify_sent_) {
        close_notify_sent_ = true;
        tls_->Shutdown();
        continue;
      }
      break;
    }
    if (pipe_.valid()) {
      if (!WritePipe()) {
        WaitWritable();
        return;
      }
      continue;
    }
    std::span<iovec> iov = out.iovecs();
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = std::min<size_t>(iov.size(), IOV_MAX);
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        WaitWritable();
        return;
      }
      Close(SocketError("write", errno));
      return;
    }
    out.Consume(static_cast<size_t>(n));
  }
  if (close_after_flush_) {
    CloseLingering();
    return;
  }
  if (!session_.WantsRead() && !session_.WantsWrite()) {
    // Both sides are done (the peer's GOAWAY ended the last stream, say). RFC 9113 §6.8: the
    // peer may still have frames in flight; closing with them unread would reset the
    // connection and could destroy what we sent last, so close as after our own GOAWAY.
    CloseLingering();
  }
}

void Http2Connection::WaitWritable() {
  writing_ = true;
  ++pending_ops_;
  auto on_writable = [this](const asio::error_code& ec) {
    OpDone();
    writing_ = false;
    if (!closed_) {
      if (ec) {
        Close(Status(StatusCode::kUnavailable, ec.message()));
      } else {
        Flush();
      }
    }
    CheckDone();
  };
  if (pipe_.valid()) {
    pipe_.AsyncWaitWritable(io_context_, std::move(on_writable));
  } else {
    socket_.async_wait(Socket::wait_write, std::move(on_writable));
  }
}

void Http2Connection::CloseAfterFlush(Status reason, std::chrono::milliseconds limit) {
  if (closed_ || close_after_flush_) return;
  close_after_flush_ = true;
  close_reason_ = std::move(reason);
  if (limit.count() > 0) {
    ++pending_ops_;
    close_timer_.expires_after(limit);
    close_timer_.async_wait([this](const asio::error_code& ec) {
      OpDone();
      if (!ec && !closed_) Close(close_reason_);
      CheckDone();
    });
  }
  ScheduleFlush();
}

void Http2Connection::Close(Status reason) {
  if (closed_) return;
  if (!close_after_flush_) close_reason_ = std::move(reason);
  StopEverything();
  asio::error_code ignored;
  socket_.close(ignored);
  pipe_.Close();  // pending waits complete as aborted
  PostFinalCheck();
}

void Http2Connection::CloseLingering() {
  if (closed_) return;
  StopEverything();
  if (pipe_.valid()) {
    // The peer reads what we wrote, then the end of the stream; what it still sends is
    // dropped by the pipe. Nothing can reset the bytes in flight, so no lingering is needed.
    pipe_.Close();
    PostFinalCheck();
    return;
  }
  // Everything we queued (a GOAWAY, typically) is written. Closing now while the peer's frames
  // sit unread in our receive buffer would answer with a TCP reset, and the reset can destroy
  // the GOAWAY before the peer reads it. So: FIN after the last byte, then read and discard
  // until the peer closes too, for a bounded time and amount.
  ::shutdown(fd_, SHUT_WR);
  asio::error_code ignored;
  socket_.cancel(ignored);  // waits still pending from before complete as aborted
  ++pending_ops_;
  close_timer_.expires_after(kLingerTime);
  close_timer_.async_wait([this](const asio::error_code& ec) {
    OpDone();
    if (!ec) {
      asio::error_code close_error;
      socket_.close(close_error);  // the discarding wait completes as aborted and finishes
    }
    CheckDone();
  });
  DiscardInput(0);
  PostFinalCheck();
}

void Http2Connection::DiscardInput(size_t discarded) {
  ++pending_ops_;
  socket_.async_wait(Socket::wait_read, [this, discarded](const asio::error_code& ec) mutable {
    OpDone();
    bool done = ec.operator bool() || !socket_.is_open();
    char sink[4096];
    while (!done) {
      const ssize_t n = ::recv(fd_, sink, sizeof(sink), MSG_DONTWAIT);
      if (n > 0) {
        discarded += static_cast<size_t>(n);
        done = discarded > kLingerBytes;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      done = true;  // the peer closed, or the socket failed
    }
    if (done) {
      asio::error_code ignored;
      close_timer_.cancel();
      socket_.close(ignored);
    } else {
      DiscardInput(discarded);
    }
    CheckDone();
  });
}

void Http2Connection::StopEverything() {
  closed_ = true;
  handshake_timer_.cancel();
  keepalive_timer_.cancel();
  close_timer_.cancel();
  settings_timer_.cancel();
  batch_.Clear();
  cipher_.Clear();
}

void Http2Connection::PostFinalCheck() {
  // OnConnectionDone must not run inside Close() (the caller may be deep in a callback), so the
  // final check always happens in a handler of its own.
  ++pending_ops_;
  asio::post(io_context_, [this] {
    OpDone();
    CheckDone();
  });
}

void Http2Connection::OpDone() { --pending_ops_; }

void Http2Connection::CheckDone() {
  if (closed_ && pending_ops_ == 0 && !done_) {
    done_ = true;
    owner_->OnConnectionDone(close_reason_);
  }
}

}  // namespace rill::internal
