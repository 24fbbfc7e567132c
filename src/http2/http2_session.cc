#include "src/http2/http2_session.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cstring>

#include "rill/mem/buffer_pool.h"
#include "src/http2/nghttp2_memory.h"

namespace rill::internal {
namespace {

// Header fields go to nghttp2 through a stack array when there are few of them.
constexpr size_t kStackFields = 32;

class NvArray {
 public:
  explicit NvArray(const HeaderBlock& block) {
    size_ = block.size();
    if (size_ > kStackFields) {
      heap_ = std::make_unique<nghttp2_nv[]>(size_);
    }
    nghttp2_nv* out = data();
    size_t i = 0;
    for (HeaderField f : block) {
      uint8_t flags = f.never_index ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
      if (f.static_name) flags |= NGHTTP2_NV_FLAG_NO_COPY_NAME;
      if (f.static_value) flags |= NGHTTP2_NV_FLAG_NO_COPY_VALUE;
      out[i++] = nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(f.name.data())),
                            reinterpret_cast<uint8_t*>(const_cast<char*>(f.value.data())),
                            f.name.size(), f.value.size(), flags};
    }
  }
  nghttp2_nv* data() { return heap_ ? heap_.get() : stack_; }
  size_t size() const { return size_; }

 private:
  nghttp2_nv stack_[kStackFields];
  std::unique_ptr<nghttp2_nv[]> heap_;
  size_t size_ = 0;
};

HeadersKind KindOf(const nghttp2_frame* frame, bool server) {
  if (frame->headers.cat == NGHTTP2_HCAT_REQUEST) return HeadersKind::kRequest;
  if (frame->headers.cat == NGHTTP2_HCAT_RESPONSE) return HeadersKind::kResponse;
  // NGHTTP2_HCAT_HEADERS: a block after the first one on the stream. For a client that is a
  // 1xx-free response's trailers; for a server, request trailers.
  return HeadersKind::kTrailers;
}

uint64_t LoadPingPayload(const uint8_t* data) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | data[i];
  return v;
}

// Marks the calling thread as inside a session's step for its scope.
class SessionStep {
 public:
  SessionStep() noexcept { ++t_http2_session_depth; }
  ~SessionStep() { --t_http2_session_depth; }
  SessionStep(const SessionStep&) = delete;
  SessionStep& operator=(const SessionStep&) = delete;
};

}  // namespace

constinit thread_local int t_http2_session_depth = 0;

struct Http2Session::Callbacks {
  static Http2Session* Self(void* user_data) { return static_cast<Http2Session*>(user_data); }

  // The stream's attached pointer. Frames of one stream come in runs (a HEADERS block's fields,
  // a DATA frame's chunks), so the last lookup is remembered.
  static void* StreamData(Http2Session* self, int32_t stream_id) {
    if (stream_id != self->cached_stream_id_) {
      self->cached_stream_id_ = stream_id;
      self->cached_stream_data_ = nghttp2_session_get_stream_user_data(self->session_, stream_id);
    }
    return self->cached_stream_data_;
  }

  // Sees every frame header before nghttp2 acts on the frame, including frames nghttp2 then
  // ignores silently (a WINDOW_UPDATE on a closed stream, say): the place to count noise per
  // frame and to check what nghttp2 leaves unchecked.
  // Returned once the glitch budget is spent: nghttp2 stops reading at that very frame, and
  // the GOAWAY(ENHANCE_YOUR_CALM) Glitch() queued explains the close.
  static constexpr int kStopReceiving = NGHTTP2_ERR_CALLBACK_FAILURE;

  static int OnBeginFrame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user_data) {
    Http2Session* self = Self(user_data);
    switch (hd->type) {
      case NGHTTP2_HEADERS:
        if (self->server_ && hd->stream_id > 0 && hd->stream_id % 2 == 1) {
          if (hd->stream_id < self->highest_peer_stream_id_ &&
              nghttp2_session_find_stream(session, hd->stream_id) == nullptr) {
            // RFC 9113 §5.1.1: a new stream's identifier must exceed every one the client used
            // before; an unexpected identifier is a connection error of type PROTOCOL_ERROR.
            // nghttp2 ignores such a HEADERS frame when it knows nothing of the id. rill knows
            // the streams still open and the most recent closed ones (see the constructor);
            // an id below the highest that is neither can only be reused or skipped, since a
            // gRPC client sends one HEADERS frame per stream when it opens it (a header block
            // of trailers from a client comes with the stream still known).
            self->pending_error_ = {kHttp2ProtocolError, "stream id lower than a previous one"};
            return NGHTTP2_ERR_CALLBACK_FAILURE;
          }
          if (hd->stream_id > self->highest_peer_stream_id_) {
            self->highest_peer_stream_id_ = hd->stream_id;
            // A new stream may draw a WINDOW_UPDATE or two of its own.
            self->window_update_credit_ =
                std::min<uint64_t>(self->window_update_credit_ + 2, kMaxWindowUpdateCredit);
          }
        }
        break;
      case NGHTTP2_PING:
        // Control frames cost a reply or work and carry nothing: each that serves no purpose
        // is noise against the glitch budget (RFC 9113 §10.5: an endpoint may limit the
        // frames it processes and end the connection with ENHANCE_YOUR_CALM). A PING is
        // useful when something was sent since the previous one (keepalive and BDP pings
        // follow traffic); ACKs answer our own PINGs.
        if ((hd->flags & NGHTTP2_FLAG_ACK) == 0) {
          if (self->counters_.headers_data_sent == self->sends_at_last_ping_ && !self->Glitch()) {
            return kStopReceiving;
          }
          self->sends_at_last_ping_ = self->counters_.headers_data_sent;
        }
        break;
      case NGHTTP2_SETTINGS:
        // The first SETTINGS is the preface; a peer changes its settings rarely after that.
        if ((hd->flags & NGHTTP2_FLAG_ACK) == 0 && self->settings_received_++ > 0) {
          if (!self->Glitch()) return kStopReceiving;
        }
        break;
      case NGHTTP2_WINDOW_UPDATE:
        // A WINDOW_UPDATE is useful after DATA we sent (or for a new stream); beyond two per
        // such frame it is noise.
        if (self->window_update_credit_ > 0) {
          --self->window_update_credit_;
        } else {
          if (!self->Glitch()) return kStopReceiving;
        }
        break;
      case NGHTTP2_PRIORITY:
        // gRPC does not use stream priorities (RFC 9113 §5.3.2 deprecates the scheme).
        if (!self->Glitch()) return kStopReceiving;
        break;
      case NGHTTP2_DATA:
      case NGHTTP2_RST_STREAM:  // resets are not abuse (see OnFrameRecv)
      case NGHTTP2_CONTINUATION:
      case NGHTTP2_GOAWAY:
        break;
      default:
        // Frames of unknown types are ignored (RFC 9113 §5.5), which costs a read all the same.
        if (!self->Glitch()) return kStopReceiving;
        break;
    }
    return 0;
  }

  static int OnBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame,
                            void* user_data) {
    Http2Session* self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (self->server_ && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      ++self->open_streams_;
      self->handler_->OnStreamBegin(frame->hd.stream_id);
    }
    return 0;
  }

  static int OnHeader(nghttp2_session* session, const nghttp2_frame* frame, nghttp2_rcbuf* name,
                      nghttp2_rcbuf* value, uint8_t /*flags*/, void* user_data) {
    Http2Session* self = Self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    const nghttp2_vec n = nghttp2_rcbuf_get_buf(name);
    const nghttp2_vec v = nghttp2_rcbuf_get_buf(value);
    const int32_t id = frame->hd.stream_id;
    self->handler_->OnHeader(id, StreamData(self, id), KindOf(frame, self->server_),
                             {reinterpret_cast<const char*>(n.base), n.len},
                             {reinterpret_cast<const char*>(v.base), v.len});
    return 0;
  }

  static int OnFrameRecv(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Http2Session* self = Self(user_data);
    const int32_t id = frame->hd.stream_id;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        self->handler_->OnHeadersEnd(id, StreamData(self, id), KindOf(frame, self->server_),
                                     (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
        break;
      case NGHTTP2_DATA:
        if (frame->hd.length == 0 && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0) {
          self->Glitch();  // an empty DATA frame carries nothing
        }
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
          self->handler_->OnRemoteEnd(id, StreamData(self, id));
        }
        break;
      case NGHTTP2_GOAWAY:
        self->goaway_received_ = true;
        self->handler_->OnGoaway(
            frame->goaway.last_stream_id, frame->goaway.error_code,
            std::string_view(reinterpret_cast<const char*>(frame->goaway.opaque_data),
                             frame->goaway.opaque_data_len));
        break;
      case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
          ++self->counters_.pings_received;
        } else {
          const uint64_t payload = LoadPingPayload(frame->ping.opaque_data);
          self->acked_payload_ = payload;
          self->acked_ping_ = true;
          self->handler_->OnPingAck(payload);
        }
        break;
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) self->settings_acked_ = true;
        break;
      case NGHTTP2_RST_STREAM:
        // Resets are not abuse (clients cancel calls); the work they could cause is bounded by
        // the layer above, which frees a stream's handler slot only when its handler returned.
        // Rapid reset (streams reset as soon as they are opened, CVE-2023-44487) is the
        // exception: the layer above says which resets are early, and those have a budget.
        ++self->counters_.resets_received;
        if (self->handler_->IsEarlyReset(id, StreamData(self, id)) && !self->EarlyReset()) {
          return kStopReceiving;
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* session, uint8_t /*flags*/, int32_t stream_id,
                         const uint8_t* data, size_t len, void* user_data) {
    Http2Session* self = Self(user_data);
    // The connection window is credited on receipt, so that a slow stream cannot starve the
    // others; the stream window waits for Consume().
    nghttp2_session_consume_connection(session, len);
    self->data_bytes_received_ += len;
    void* stream = StreamData(self, stream_id);
    if (stream == nullptr) {
      // Nobody listens (the call already ended): give the stream window back as well.
      nghttp2_session_consume_stream(session, stream_id, len);
      return 0;
    }
    const auto* bytes = reinterpret_cast<const std::byte*>(data);
    const Buffer& block = *self->input_;
    Buffer payload;
    if (len >= kSmallBufferMax && bytes >= block.data() &&
        bytes + len <= block.data() + block.size()) {
      const size_t offset = static_cast<size_t>(bytes - block.data());
      payload = block.Slice(offset, offset + len);
    } else {
      detail::CountCopiedBytes(len);
      payload = Buffer::Copy(std::span<const std::byte>(bytes, len), *self->pool_);
    }
    self->handler_->OnData(stream_id, stream, std::move(payload));
    return 0;
  }

  static int OnStreamClose(nghttp2_session* session, int32_t stream_id, uint32_t error_code,
                           void* user_data) {
    Http2Session* self = Self(user_data);
    if (self->server_ ? (stream_id % 2 == 1) : true) {
      if (self->open_streams_ > 0) --self->open_streams_;
    }
    void* stream = StreamData(self, stream_id);
    self->cached_stream_id_ = 0;  // the stream is gone
    // nghttp2 may keep the closed stream (see the constructor) with its user data: clear it,
    // so that nothing can hand out the pointer after the layer above freed what it names.
    nghttp2_session_set_stream_user_data(session, stream_id, nullptr);
    std::erase(self->no_reset_after_end_, stream_id);
    self->handler_->OnStreamClose(stream_id, stream, error_code);
    return 0;
  }

  static int OnFrameSend(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    Http2Session* self = Self(user_data);
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      // nghttp2's own GOAWAYs (after a connection error) count too: ours never go above them.
      self->goaway_last_id_ = std::min(self->goaway_last_id_, frame->goaway.last_stream_id);
      if (frame->goaway.last_stream_id == INT32_MAX && self->notice_ping_) {
        self->SubmitPing(*self->notice_ping_);
        self->notice_ping_.reset();
      }
    }
    if (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) {
      ++self->counters_.headers_data_sent;
    }
    if (frame->hd.type == NGHTTP2_DATA) {
      self->window_update_credit_ =
          std::min<uint64_t>(self->window_update_credit_ + 2, kMaxWindowUpdateCredit);
    }
    // A server that ends its response before the client half-closed tells the client to stop
    // sending (PROTOCOL-HTTP2: RST_STREAM with NO_ERROR after the trailers).
    if (self->server_ && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
        nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id) == 0 &&
        std::find(self->no_reset_after_end_.begin(), self->no_reset_after_end_.end(),
                  frame->hd.stream_id) == self->no_reset_after_end_.end()) {
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                NGHTTP2_NO_ERROR);
    }
    return 0;
  }

  // The batch limit is checked before a frame goes in, never after: an empty batch is never
  // full, so every frame fits whole into some batch, whatever the limit (0 included).
  static ssize_t Send(nghttp2_session* /*session*/, const uint8_t* data, size_t length,
                      int /*flags*/, void* user_data) {
    Http2Session* self = Self(user_data);
    // nghttp2 keeps the frame and offers it again on the next FillBatch.
    if (self->batch_->full()) return NGHTTP2_ERR_WOULDBLOCK;
    self->batch_->AppendCopy(std::as_bytes(std::span(data, length)));
    return static_cast<ssize_t>(length);
  }

  static ssize_t ReadData(nghttp2_session* session, int32_t stream_id, uint8_t* /*buf*/,
                          size_t length, uint32_t* data_flags, nghttp2_data_source* source,
                          void* user_data) {
    // A full batch takes no DATA frame. The decision is made here, not in SendData: PAUSE leaves
    // the frame queued and unread, whereas a SendData put off to a later turn would have to take
    // the length promised now from a queue that may have been reset meanwhile.
    if (Self(user_data)->batch_->full()) return NGHTTP2_ERR_PAUSE;
    auto* out = static_cast<OutboundStream*>(source->ptr);
    const size_t available = out->reader_.Remaining();
    if (available == 0 && !out->finish_) {
      out->deferred_ = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    const size_t n = std::min(available, length);
    if (n > 0) *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == available && out->finish_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      if (!out->trailers_.empty()) {
        *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
        NvArray nva(out->trailers_);
        const int rv = nghttp2_submit_trailer(session, stream_id, nva.data(), nva.size());
        if (rv != 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
    }
    return static_cast<ssize_t>(n);
  }

  static int SendData(nghttp2_session* session, nghttp2_frame* frame, const uint8_t* framehd,
                      size_t length, nghttp2_data_source* source, void* user_data) {
    Http2Session* self = Self(user_data);
    auto* out = static_cast<OutboundStream*>(source->ptr);
    self->batch_->AppendCopy(std::as_bytes(std::span(framehd, 9)));
    // rill sends no padding (no padding callback is installed), so the frame is header + data.
    BufferSlice piece = out->reader_.Take(length);
    for (size_t i = 0, n = piece.buffer_count(); i < n; ++i) {
      self->batch_->AppendPayload(piece.PopFront());
    }
    const int32_t id = frame->hd.stream_id;
    self->handler_->OnDataFramed(id, StreamData(self, id), length);
    // ReadData saw room, so the whole frame went in; stop here if that filled the batch.
    return self->batch_->full() ? NGHTTP2_ERR_PAUSE : 0;
  }
};

Http2Session::Http2Session(const Http2Options& options, Http2Handler* handler, BufferPool& pool)
    : handler_(handler),
      pool_(&pool),
      server_(options.server),
      initial_connection_window_(options.initial_connection_window),
      glitches_{options.glitch_burst, options.glitch_rate, double(options.glitch_burst)},
      resets_{options.reset_burst, options.reset_rate, double(options.reset_burst)} {
  nghttp2_session_callbacks* cbs = nullptr;
  RILL_CHECK(nghttp2_session_callbacks_new(&cbs) == 0);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, Callbacks::OnBeginFrame);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback2(cbs, Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, Callbacks::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, Callbacks::OnFrameSend);
  nghttp2_session_callbacks_set_send_callback(cbs, Callbacks::Send);
  nghttp2_session_callbacks_set_send_data_callback(cbs, Callbacks::SendData);

  nghttp2_option* opt = nullptr;
  RILL_CHECK(nghttp2_option_new(&opt) == 0);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // Closed streams are remembered (nghttp2 keeps at most MAX_CONCURRENT_STREAMS of them, less
  // the open ones: a few hundred bytes each), so that frames on them draw the errors of RFC
  // 9113 §5.1: DATA or HEADERS after the peer's END_STREAM or RST_STREAM is STREAM_CLOSED,
  // while frames still in flight after our own RST_STREAM are ignored.
  nghttp2_option_set_max_outbound_ack(opt, 1000);
  nghttp2_option_set_max_settings(opt, 32);
  // No limit on the rate of resets: a client cancelling many calls is no attacker. What resets
  // could make the server do is bounded above (a reset stream's handler keeps its slot until
  // it returned) and by the glitch budget.
  nghttp2_option_set_stream_reset_rate_limit(opt, UINT64_MAX / 2, UINT64_MAX / 2);
  // Header blocks up to ~4 MiB (at 16 KiB frames) are decoded, so that HPACK state stays in
  // step, and fail only their stream when past the advertised list size; a longer one is a
  // CONTINUATION flood and ends the connection with GOAWAY.
  nghttp2_option_set_max_continuations(opt, 256);
  if (!server_) {
    // Until the server's SETTINGS arrive, assume grpc's customary 100 streams.
    nghttp2_option_set_peer_max_concurrent_streams(opt, 100);
  }

  int rv = server_ ? nghttp2_session_server_new3(&session_, cbs, this, opt, Nghttp2Allocator())
                   : nghttp2_session_client_new3(&session_, cbs, this, opt, Nghttp2Allocator());
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  RILL_CHECK(rv == 0);

  nghttp2_settings_entry iv[6];
  size_t n = 0;
  if (server_) {
    iv[n++] = {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams};
  }
  iv[n++] = {NGHTTP2_SETTINGS_ENABLE_PUSH, 0};
  iv[n++] = {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options.initial_stream_window};
  iv[n++] = {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, options.max_frame_size};
  iv[n++] = {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options.max_header_list_size};
  if (options.header_table_size != NGHTTP2_DEFAULT_HEADER_TABLE_SIZE) {
    iv[n++] = {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, options.header_table_size};
  }
  RILL_CHECK(nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, n) == 0);
  if (options.initial_connection_window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<int32_t>(options.initial_connection_window));
  }
}

Http2Session::~Http2Session() { nghttp2_session_del(session_); }

Status Http2Session::Receive(Buffer block, std::chrono::steady_clock::time_point now) {
  SessionStep step;
  now_ = now;
  input_ = &block;
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(block.data()), block.size());
  input_ = nullptr;
  if (rv < 0) {
    // A connection error. nghttp2 queues a GOAWAY for most of them, not for all (a header
    // block past the CONTINUATION limit, say): make sure one explains the close. Terminating
    // is a no-op when nghttp2 already did.
    const int error = static_cast<int>(rv);
    int32_t last = server_ ? nghttp2_session_get_last_proc_stream_id(session_) : 0;
    last = std::min(last, goaway_last_id_);
    if (calmed_) return Status(StatusCode::kUnavailable, std::string(calm_reason_));
    if (pending_error_) {
      // A rule rill checks itself failed: GOAWAY with the code and reason, then close.
      const auto [code, reason] = *pending_error_;
      goaway_last_id_ = last;
      nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last, code,
                            reinterpret_cast<const uint8_t*>(reason.data()), reason.size());
      return Status(StatusCode::kUnavailable, std::string(reason));
    }
    if (error == NGHTTP2_ERR_FLOODED || error == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS) {
      // Floods nghttp2 stops on without a GOAWAY of its own: one that says which.
      const std::string_view reason =
          error == NGHTTP2_ERR_FLOODED ? "flood" : "too_many_continuations";
      goaway_last_id_ = last;
      nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last, kHttp2EnhanceYourCalm,
                            reinterpret_cast<const uint8_t*>(reason.data()), reason.size());
      return Status(StatusCode::kUnavailable, std::string(reason));
    }
    nghttp2_session_terminate_session2(session_, last, kHttp2ProtocolError);
    return Status(StatusCode::kUnavailable, Nghttp2ErrorText(error));
  }
  return Status();
}

Status Http2Session::FillBatch(OutputBatch& batch) {
  SessionStep step;
  batch_ = &batch;
  const int rv = nghttp2_session_send(session_);
  batch_ = nullptr;
  if (rv != 0) return Status(StatusCode::kUnavailable, Nghttp2ErrorText(rv));
  return Status();
}

bool Http2Session::WantsRead() const { return nghttp2_session_want_read(session_) != 0; }
bool Http2Session::WantsWrite() const { return nghttp2_session_want_write(session_) != 0; }

int32_t Http2Session::SubmitRequest(const HeaderBlock& headers, OutboundStream* out,
                                    void* stream) {
  NvArray nva(headers);
  nghttp2_data_provider provider;
  provider.source.ptr = out;
  provider.read_callback = Callbacks::ReadData;
  const int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, stream);
  if (id < 0) return 0;
  ++open_streams_;
  return id;
}

void Http2Session::SubmitResponse(int32_t stream_id, const HeaderBlock& headers,
                                  OutboundStream* out) {
  NvArray nva(headers);
  nghttp2_data_provider provider;
  provider.source.ptr = out;
  provider.read_callback = Callbacks::ReadData;
  nghttp2_submit_response(session_, stream_id, nva.data(), nva.size(), &provider);
}

void Http2Session::SubmitTrailersOnly(int32_t stream_id, const HeaderBlock& headers) {
  NvArray nva(headers);
  nghttp2_submit_response(session_, stream_id, nva.data(), nva.size(), nullptr);
}

void Http2Session::SubmitTrailers(int32_t stream_id, const HeaderBlock& trailers) {
  NvArray nva(trailers);
  nghttp2_submit_trailer(session_, stream_id, nva.data(), nva.size());
}

void Http2Session::KeepOpenAfterResponse(int32_t stream_id) {
  no_reset_after_end_.push_back(stream_id);
}

void Http2Session::Resume(int32_t stream_id, OutboundStream* out) {
  if (out->deferred_) {
    out->deferred_ = false;
    nghttp2_session_resume_data(session_, stream_id);
  }
}

void Http2Session::Reset(int32_t stream_id, uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
}

void Http2Session::Consume(int32_t stream_id, size_t bytes) {
  if (bytes > 0) nghttp2_session_consume_stream(session_, stream_id, bytes);
}

void Http2Session::GrowStreamWindow(int32_t stream_id, size_t bytes) {
  const int32_t window = nghttp2_session_get_stream_effective_local_window_size(session_, stream_id);
  if (window < 0 || bytes == 0) return;
  const int64_t grown = std::min<int64_t>(int64_t{window} + static_cast<int64_t>(bytes),
                                          NGHTTP2_MAX_WINDOW_SIZE);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, stream_id,
                                        static_cast<int32_t>(grown));
}

size_t Http2Session::StreamSendAllowance(int32_t stream_id) const {
  return static_cast<size_t>(
      std::max(nghttp2_session_get_stream_local_window_size(session_, stream_id), 0));
}

void Http2Session::SetStreamData(int32_t stream_id, void* stream) {
  if (stream_id == cached_stream_id_) cached_stream_data_ = stream;
  nghttp2_session_set_stream_user_data(session_, stream_id, stream);
}

void Http2Session::SubmitShutdownNotice(uint64_t ping_payload) {
  if (!server_) return;
  // nghttp2 sends PINGs ahead of GOAWAYs, so the PING is submitted once the notice is sent.
  notice_ping_ = ping_payload;
  nghttp2_submit_shutdown_notice(session_);
}

void Http2Session::SubmitGoaway(uint32_t error_code, std::string_view debug_data) {
  int32_t last = server_ ? nghttp2_session_get_last_proc_stream_id(session_) : 0;
  last = std::min(last, goaway_last_id_);
  goaway_last_id_ = last;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, last, error_code,
                        reinterpret_cast<const uint8_t*>(debug_data.data()), debug_data.size());
}

bool Http2Session::Glitch() {
  ++counters_.glitches;
  return Spend(glitches_, "too_many_glitches");
}

bool Http2Session::EarlyReset() {
  ++counters_.early_resets;
  return Spend(resets_, "too_many_resets");
}

bool Http2Session::TokenBucket::Take(std::chrono::steady_clock::time_point now) {
  if (now > refilled) {
    if (refilled != std::chrono::steady_clock::time_point{}) {
      const double elapsed = std::chrono::duration<double>(now - refilled).count();
      tokens = std::min<double>(burst, tokens + elapsed * rate);
    }
    refilled = now;
  }
  tokens -= 1;
  return tokens >= 0;
}

bool Http2Session::Spend(TokenBucket& bucket, std::string_view reason) {
  if (bucket.burst == 0) return true;
  if (calmed_) return false;
  if (bucket.Take(now_)) return true;
  calmed_ = true;
  calm_reason_ = reason;
  SubmitGoaway(kHttp2EnhanceYourCalm, reason);
  return false;
}

void Http2Session::SubmitPing(uint64_t payload) {
  uint8_t data[8];
  for (int i = 7; i >= 0; --i) {
    data[i] = static_cast<uint8_t>(payload);
    payload >>= 8;
  }
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, data);
}

void Http2Session::UpdateReceiveWindow(uint32_t window) {
  // The connection window never shrinks below what it started with.
  nghttp2_session_set_local_window_size(
      session_, NGHTTP2_FLAG_NONE, 0,
      static_cast<int32_t>(std::max(window, initial_connection_window_)));
  nghttp2_settings_entry iv{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, window};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, &iv, 1);
}

uint32_t Http2Session::peer_max_concurrent_streams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

std::string_view Nghttp2ErrorText(int error) { return nghttp2_strerror(error); }

int64_t Http2Session::local_window() const noexcept {
  return nghttp2_session_get_local_window_size(session_);
}

int64_t Http2Session::remote_window() const noexcept {
  return nghttp2_session_get_remote_window_size(session_);
}

}  // namespace rill::internal
