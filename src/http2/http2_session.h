// Http2Session: a sans-I/O HTTP/2 endpoint over nghttp2 (v1 API).
//
// Bytes go in through Receive(), frames come out through FillBatch(), and everything else is a
// synchronous call into an Http2Handler. The session never touches a socket, a clock or a
// thread, so it is driven the same way by the transport, by tests and by fuzzers.
//
// Receive path: the caller passes a pooled read block. DATA payload of kSmallBufferMax bytes or
// more is handed up as a view of that block (a reference, no copy); smaller payload is copied
// into a small buffer so it does not pin the block.
//
// Send path: each stream's outbound bytes sit in an OutboundStream (owned by the layer above).
// DATA frames are produced with NGHTTP2_DATA_FLAG_NO_COPY: the 9-byte frame header is staged and
// the payload goes into the batch as views, so one writev sends the frames of many streams.
//
// Flow control: the connection window is credited as bytes arrive; a stream's window only when
// the layer above calls Consume() (it consumed a message), so a slow reader holds back its
// sender instead of making rill buffer.
//
// Thread safety: reactor-confined (one thread drives a session for its whole life).
#ifndef RILL_SRC_HTTP2_HTTP2_SESSION_H_
#define RILL_SRC_HTTP2_HTTP2_SESSION_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "rill/mem/buffer.h"
#include "rill/mem/buffer_slice.h"
#include "rill/status.h"
#include "src/http2/header_block.h"
#include "src/http2/output_batch.h"
#include "src/http2/session_depth.h"

struct nghttp2_session;

namespace rill::internal {

enum class HeadersKind : uint8_t {
  kRequest,   // server: a request's headers
  kResponse,  // client: the response's initial headers
  kTrailers,  // either side: a trailing header block
};

// HTTP/2 error codes (RFC 9113 §7) used by rill.
enum Http2ErrorCode : uint32_t {
  kHttp2NoError = 0x0,
  kHttp2ProtocolError = 0x1,
  kHttp2InternalError = 0x2,
  kHttp2FlowControlError = 0x3,
  kHttp2SettingsTimeout = 0x4,
  kHttp2StreamClosed = 0x5,
  kHttp2RefusedStream = 0x7,
  kHttp2Cancel = 0x8,
  kHttp2EnhanceYourCalm = 0xb,
  kHttp2InadequateSecurity = 0xc,
};

// Called synchronously from Receive() and FillBatch(). `stream` is the pointer attached with
// SetStreamData (null until then). Handlers may call back into the session (submit, reset,
// consume), but must not destroy it.
class Http2Handler {
 public:
  virtual ~Http2Handler() = default;

  // Server only: a client began a new stream. The handler typically attaches its call state.
  virtual void OnStreamBegin(int32_t stream_id) = 0;
  // One header field of a block, in wire order. The views are valid during the call only.
  virtual void OnHeader(int32_t stream_id, void* stream, HeadersKind kind, std::string_view name,
                        std::string_view value) = 0;
  // A header block is complete; `end_stream` means the peer will send nothing more.
  virtual void OnHeadersEnd(int32_t stream_id, void* stream, HeadersKind kind,
                            bool end_stream) = 0;
  // DATA payload (never empty). The stream window is not credited until Consume().
  virtual void OnData(int32_t stream_id, void* stream, Buffer payload) = 0;
  // END_STREAM arrived on a DATA frame.
  virtual void OnRemoteEnd(int32_t stream_id, void* stream) = 0;
  // The stream is closed (`error_code` from RST_STREAM, or kHttp2NoError). Nothing more will be
  // reported for it and its OutboundStream is no longer referenced by the session.
  virtual void OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) = 0;
  // `bytes` of the stream's outbound data were framed (they left its OutboundStream).
  virtual void OnDataFramed(int32_t stream_id, void* stream, size_t bytes) {}
  // The peer sent GOAWAY.
  virtual void OnGoaway(int32_t last_stream_id, uint32_t error_code,
                        std::string_view debug_data) {}
  // The peer acknowledged one of our PINGs.
  virtual void OnPingAck(uint64_t payload) {}
  // The peer reset an open stream (RST_STREAM received, before OnStreamClose): true when the
  // reset counts against the session's reset budget (Http2Options::reset_burst).
  virtual bool IsEarlyReset(int32_t stream_id, void* stream) { return false; }
};

// The outbound half of one stream: bytes waiting to become DATA frames, then trailers or
// END_STREAM. Owned by the layer above; must stay alive until OnStreamClose for its stream.
class OutboundStream {
 public:
  // Appends bytes to send. Call Http2Session::Resume() afterwards.
  void Push(BufferSlice bytes) { reader_.Append(std::move(bytes)); }
  // After the queued bytes, end the stream: with `trailers()` if non-empty, else END_STREAM on
  // the last DATA frame. Call Http2Session::Resume() afterwards.
  void Finish() { finish_ = true; }
  [[nodiscard]] HeaderBlock& trailers() { return trailers_; }
  [[nodiscard]] size_t queued_bytes() const { return reader_.Remaining(); }
  [[nodiscard]] bool finished() const { return finish_; }
  // Frees everything queued (the stream ended early) and makes the object reusable.
  void Reset() {
    reader_.Close();
    trailers_.Clear();
    finish_ = false;
    deferred_ = false;
  }

 private:
  friend class Http2Session;
  BufferSliceReader reader_;
  HeaderBlock trailers_;
  bool finish_ = false;
  bool deferred_ = false;  // nghttp2 was told "no data yet"; Resume() must wake it
};

// The connection window rill advertises unless told otherwise (libgrpc++ advertises the same).
inline constexpr uint32_t kDefaultConnectionWindow = 4 * 1024 * 1024;

struct Http2Options {
  bool server = true;
  uint32_t max_concurrent_streams = 1000;  // advertised and enforced (server)
  uint32_t initial_stream_window = 65535;
  // The connection window is credited as bytes arrive (stream windows bound what is buffered),
  // so a large one costs no memory; it only saves the peer from waiting for WINDOW_UPDATEs.
  uint32_t initial_connection_window = kDefaultConnectionWindow;
  uint32_t max_frame_size = 16384;
  uint32_t max_header_list_size = 16 * 1024;  // advertised; enforced by the layer above
  uint32_t header_table_size = 4096;
  // Protocol noise (empty DATA frames, streams the layer above refused, ...) is allowed in a
  // burst of `glitch_burst` plus `glitch_rate` per second; the glitch that overdraws the
  // budget makes the session send GOAWAY(ENHANCE_YOUR_CALM) at once and take no new stream
  // (calmed()). 0 disables the budget.
  uint32_t glitch_burst = 1000;
  uint32_t glitch_rate = 100;
  // Early resets (server: streams the peer reset that the layer above calls early, see
  // Http2Handler::IsEarlyReset) are allowed in a burst of `reset_burst` plus `reset_rate` per
  // second; the one that overdraws the budget calms the session as the glitch budget does,
  // with the debug text "too_many_resets". 0 disables the budget.
  uint32_t reset_burst = 0;
  uint32_t reset_rate = 0;
};

class Http2Session {
 public:
  // `handler` and `pool` must outlive the session. Queues the connection preface (client) and
  // the initial SETTINGS (both sides).
  Http2Session(const Http2Options& options, Http2Handler* handler, BufferPool& pool);
  ~Http2Session();
  Http2Session(const Http2Session&) = delete;
  Http2Session& operator=(const Http2Session&) = delete;

  // Feeds bytes read from the connection. `block` is the pooled read block (its view covers the
  // bytes read). A non-OK status means the connection is broken beyond repair: flush what
  // FillBatch() still produces (typically a GOAWAY), then close. `now` refills the glitch
  // budget (the session itself reads no clock).
  Status Receive(Buffer block, std::chrono::steady_clock::time_point now = {});

  // Moves frames ready to send into `batch` until nothing is left or the batch is full. Frames
  // go in whole: one that starts below the batch's byte limit may end past it.
  Status FillBatch(OutputBatch& batch);

  // True while the session still wants to read / has frames to write. When neither holds, the
  // connection is done (both sides sent GOAWAY or a fatal error occurred, and all is flushed).
  [[nodiscard]] bool WantsRead() const;
  [[nodiscard]] bool WantsWrite() const;

  // Client: opens a stream with `headers` and `out` as its body source; returns the stream id or
  // 0 if the session refuses new streams (GOAWAY received, ids exhausted).
  int32_t SubmitRequest(const HeaderBlock& headers, OutboundStream* out, void* stream);
  // Server: response headers; the body comes from `out`.
  void SubmitResponse(int32_t stream_id, const HeaderBlock& headers, OutboundStream* out);
  // Server: a trailers-only response (one HEADERS frame with END_STREAM).
  void SubmitTrailersOnly(int32_t stream_id, const HeaderBlock& headers);
  // Trailers (HEADERS with END_STREAM) after the response headers but ahead of the data still
  // queued: for ending a stream early. Its OutboundStream must not be finished; nothing more
  // of it is sent.
  void SubmitTrailers(int32_t stream_id, const HeaderBlock& trailers);
  // Server: the response of this stream, once complete, is not followed by RST_STREAM(NO_ERROR)
  // while the request is still open (the default for gRPC calls, PROTOCOL-HTTP2): the stream
  // stays half-closed until the client ends it, as for any HTTP/2 exchange (RFC 9113 §8.1).
  void KeepOpenAfterResponse(int32_t stream_id);
  // Wakes the stream's data source after OutboundStream::Push() or Finish().
  void Resume(int32_t stream_id, OutboundStream* out);
  // RST_STREAM.
  void Reset(int32_t stream_id, uint32_t error_code);
  // Credits `bytes` of the stream's receive window (the layer above consumed them).
  void Consume(int32_t stream_id, size_t bytes);
  // Bytes the peer may still send on a stream before it needs a WINDOW_UPDATE: the window minus
  // what arrived and was not announced back yet, credited or not (0 for an unknown stream).
  [[nodiscard]] size_t StreamSendAllowance(int32_t stream_id) const;
  // Enlarges the stream's receive window so that the peer may send `bytes` more than it may now
  // (a WINDOW_UPDATE goes out): a message whose size is known arrives without waiting for a
  // WINDOW_UPDATE per window. No-op for an unknown stream.
  void GrowStreamWindow(int32_t stream_id, size_t bytes);
  void SetStreamData(int32_t stream_id, void* stream);

  // Graceful shutdown, first step: GOAWAY with the maximum stream id (grpc's "shutdown notice"),
  // followed on the wire by a PING carrying `ping_payload`: its ACK proves the peer has seen the
  // notice, and the real GOAWAY may follow.
  void SubmitShutdownNotice(uint64_t ping_payload);
  // GOAWAY with the last stream id actually processed: no new streams after this. The last
  // stream id announced never rises from one GOAWAY to the next (RFC 9113 §6.8).
  void SubmitGoaway(uint32_t error_code, std::string_view debug_data);
  // Counts one unit of protocol noise against the glitch budget (see Http2Options); false
  // once the budget is spent (the session is calmed()).
  bool Glitch();
  // The glitch budget or the reset budget ran out: a GOAWAY(ENHANCE_YOUR_CALM) is queued and
  // no new stream may reach the layer above. calm_reason() is its debug text.
  [[nodiscard]] bool calmed() const noexcept { return calmed_; }
  [[nodiscard]] std::string_view calm_reason() const noexcept { return calm_reason_; }
  // The time passed to the Receive() under way (or the last one).
  [[nodiscard]] std::chrono::steady_clock::time_point now() const noexcept { return now_; }
  void SubmitPing(uint64_t payload);

  // Dynamic flow control: the connection window and every stream's window become `window`
  // (SETTINGS_INITIAL_WINDOW_SIZE for the streams).
  void UpdateReceiveWindow(uint32_t window);
  // The connection-level flow-control windows: what the peer may still send us, and what we
  // may still send the peer.
  [[nodiscard]] int64_t local_window() const noexcept;
  [[nodiscard]] int64_t remote_window() const noexcept;
  // Total DATA payload bytes received so far.
  [[nodiscard]] uint64_t data_bytes_received() const noexcept { return data_bytes_received_; }
  // True once after an ACK of a PING whose payload was `payload` arrived.
  bool TakePingAck(uint64_t payload) {
    if (!acked_ping_ || acked_payload_ != payload) return false;
    acked_ping_ = false;
    return true;
  }

  // Counters the connection's policies read (keepalive enforcement, glitch budget).
  struct Counters {
    uint64_t pings_received = 0;       // PINGs from the peer (not ACKs)
    uint64_t headers_data_sent = 0;    // HEADERS and DATA frames we sent
    uint64_t glitches = 0;             // protocol noise counted against the budget
    uint64_t resets_received = 0;      // RST_STREAM frames from the peer (not noise)
    uint64_t early_resets = 0;         // of those, the ones counted against the reset budget
  };
  [[nodiscard]] const Counters& counters() const noexcept { return counters_; }

  // Streams currently open (either direction).
  [[nodiscard]] size_t open_streams() const { return open_streams_; }
  [[nodiscard]] bool goaway_received() const { return goaway_received_; }
  // The peer acknowledged our SETTINGS at least once.
  [[nodiscard]] bool settings_acked() const { return settings_acked_; }
  [[nodiscard]] bool is_server() const { return server_; }
  [[nodiscard]] uint32_t peer_max_concurrent_streams() const;

 private:
  struct Callbacks;
  friend struct Callbacks;

  nghttp2_session* session_ = nullptr;
  Http2Handler* handler_;
  BufferPool* pool_;
  OutputBatch* batch_ = nullptr;  // set during FillBatch
  const Buffer* input_ = nullptr;  // the block being parsed, during Receive
  size_t open_streams_ = 0;
  uint64_t data_bytes_received_ = 0;
  int32_t cached_stream_id_ = 0;  // 0 never names a stream
  void* cached_stream_data_ = nullptr;
  Counters counters_;
  uint64_t acked_payload_ = 0;
  bool acked_ping_ = false;
  bool server_;
  bool goaway_received_ = false;
  bool calmed_ = false;
  bool settings_acked_ = false;
  int32_t goaway_last_id_ = INT32_MAX;  // lowest last stream id announced so far
  int32_t highest_peer_stream_id_ = 0;  // highest stream id of a peer's HEADERS so far
  // A connection error found by rill's own checks during Receive: code and GOAWAY debug text.
  std::optional<std::pair<uint32_t, std::string_view>> pending_error_;
  // Streams whose complete response is not followed by RST_STREAM (KeepOpenAfterResponse).
  std::vector<int32_t> no_reset_after_end_;
  // Control-frame accounting (see Callbacks::OnBeginFrame).
  static constexpr uint64_t kMaxWindowUpdateCredit = 1 << 16;
  uint64_t window_update_credit_ = 16;
  uint32_t initial_connection_window_;
  uint64_t sends_at_last_ping_ = UINT64_MAX;
  uint64_t settings_received_ = 0;
  std::optional<uint64_t> notice_ping_;  // sent once the shutdown notice is on the wire
  // A budget of events: `burst` at once, refilled at `rate` per second (burst 0: unlimited).
  struct TokenBucket {
    uint32_t burst;
    uint32_t rate;
    double tokens;
    std::chrono::steady_clock::time_point refilled{};
    // Takes one token at `now`; false when there was none left.
    bool Take(std::chrono::steady_clock::time_point now);
  };
  // Spends one event of `bucket`; when it overdraws, calms the session with GOAWAY
  // (ENHANCE_YOUR_CALM, `reason`). False once calmed.
  bool Spend(TokenBucket& bucket, std::string_view reason);
  bool EarlyReset();
  TokenBucket glitches_;
  TokenBucket resets_;
  std::string_view calm_reason_;
  std::chrono::steady_clock::time_point now_{};
};

// Maps an nghttp2 error code (negative int) to text, for logs and statuses.
std::string_view Nghttp2ErrorText(int error);

}  // namespace rill::internal

#endif  // RILL_SRC_HTTP2_HTTP2_SESSION_H_
