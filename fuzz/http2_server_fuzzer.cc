// Drives a server-side Http2Session with arbitrary client bytes, the way a connection does:
// read blocks go in through Receive(), each followed by draining FillBatch() into an OutputBatch
// that is "written" (every byte read, then consumed). A handler plays the gRPC layer: it attaches
// a stream object to each new stream and answers in one of several ways (full response with
// trailers, echo of the request body, trailers-only, reset, no answer at all).
//
// Checked, besides the sanitizers: the handler only ever sees the stream pointer it attached
// (never one for a closed stream), the session's stream count matches the handler's, the output
// is readable memory, and every buffer block taken from the pools is back when the session is
// gone.
//
// Input layout:
//   byte 0   bit 0: prepend the client connection preface (so half the inputs get past it);
//            bits 1-3: how the rest is cut into read blocks; bits 4-7: answer policy seed
//   byte 1   bit 0: hold DATA payload until the stream ends instead of consuming it at once;
//            bit 1: send a PING after the first block; bit 2: send a shutdown notice after the
//            second block; bit 3: send a GOAWAY once half the input is in;
//            bits 4-7: seed for variable cuts
//   rest     the bytes the client sends
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "fuzz/http2_fuzz_support.h"
#include "rill/detail/check.h"
#include "rill/mem/buffer.h"
#include "rill/mem/buffer_pool.h"
#include "rill/mem/buffer_slice.h"
#include "src/http2/header_block.h"
#include "src/http2/http2_session.h"
#include "src/http2/output_batch.h"

namespace rill::internal {
namespace {

// Every byte of input and output is summed into this, so that reading them is not optimized out.
volatile uint64_t g_sink = 0;

constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// How the handler answers a stream.
enum class Answer : uint8_t {
  kUnary,         // at the end of the request: headers, one message, trailers
  kTrailersOnly,  // at once: a trailers-only response
  kReset,         // at once: RST_STREAM
  kEcho,          // headers at once, every DATA payload echoed (as views), trailers at the end
  kNoTrailers,    // headers at once, message, END_STREAM on DATA at the end of the request
  kIgnore,        // never answers; the stream stays open until the client ends it
};
constexpr int kAnswerCount = 6;

struct FuzzStream {
  int32_t id = 0;
  Answer answer = Answer::kUnary;
  bool responded = false;  // response headers submitted (or the stream was reset)
  bool finished = false;   // OutboundStream::Finish() called
  OutboundStream out;
  BufferSlice held;  // payload received and not yet consumed
};

class FuzzHandler final : public Http2Handler {
 public:
  FuzzHandler(uint8_t policy, bool hold_payload) : policy_(policy), hold_payload_(hold_payload) {
    response_headers_.Add(":status", "200");
    response_headers_.Add("content-type", "application/grpc");
    trailers_only_.Add(":status", "200");
    trailers_only_.Add("content-type", "application/grpc");
    trailers_only_.Add("grpc-status", "12");
    trailers_only_.Add("grpc-message", "unknown%20method");
  }

  void set_session(Http2Session* session) { session_ = session; }
  [[nodiscard]] size_t open_streams() const { return streams_.size(); }

  void OnStreamBegin(int32_t stream_id) override {
    RILL_CHECK_MSG(stream_id > 0 && stream_id % 2 == 1,
                   "server saw a stream id a client can't use");
    RILL_CHECK_MSG(streams_.find(stream_id) == streams_.end(), "stream began twice");
    RILL_CHECK_MSG(closed_.count(stream_id) == 0, "a closed stream began again");
    auto stream = std::make_unique<FuzzStream>();
    stream->id = stream_id;
    stream->answer =
        static_cast<Answer>((policy_ + static_cast<uint32_t>(stream_id) / 2) % kAnswerCount);
    session_->SetStreamData(stream_id, stream.get());
    streams_.emplace(stream_id, std::move(stream));
  }

  void OnHeader(int32_t stream_id, void* stream, HeadersKind kind, std::string_view name,
                std::string_view value) override {
    Lookup(stream_id, stream);
    // Touch every byte so a view into freed memory is caught here.
    for (char c : name) checksum_ += static_cast<uint8_t>(c);
    for (char c : value) checksum_ += static_cast<uint8_t>(c);
  }

  void OnHeadersEnd(int32_t stream_id, void* stream, HeadersKind kind, bool end_stream) override {
    FuzzStream* s = Lookup(stream_id, stream);
    if (s == nullptr) return;
    if (kind == HeadersKind::kRequest) {
      switch (s->answer) {
        case Answer::kTrailersOnly:
          s->responded = true;
          session_->SubmitTrailersOnly(stream_id, trailers_only_);
          break;
        case Answer::kReset:
          s->responded = true;
          session_->Reset(stream_id, stream_id % 4 == 1 ? kHttp2Cancel : kHttp2RefusedStream);
          break;
        case Answer::kEcho:
        case Answer::kNoTrailers:
          s->responded = true;
          session_->SubmitResponse(stream_id, response_headers_, &s->out);
          break;
        case Answer::kUnary:
        case Answer::kIgnore:
          break;
      }
    }
    if (end_stream) RequestEnded(s);
  }

  void OnData(int32_t stream_id, void* stream, Buffer payload) override {
    FuzzStream* s = Lookup(stream_id, stream);
    RILL_CHECK_MSG(s != nullptr, "DATA reported for a stream without its object");
    RILL_CHECK_MSG(!payload.empty(), "empty DATA payload reported");
    for (std::byte b : payload.span()) checksum_ += static_cast<uint8_t>(b);
    const size_t n = payload.size();
    if (s->answer == Answer::kEcho && !s->finished) {
      s->out.Push(BufferSlice(payload.Ref()));
      session_->Resume(stream_id, &s->out);
    }
    if (hold_payload_) {
      s->held.Append(std::move(payload));
    } else {
      session_->Consume(stream_id, n);
    }
  }

  void OnRemoteEnd(int32_t stream_id, void* stream) override {
    FuzzStream* s = Lookup(stream_id, stream);
    if (s != nullptr) RequestEnded(s);
  }

  void OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) override {
    FuzzStream* s = Lookup(stream_id, stream);
    if (s == nullptr) return;  // closed before OnStreamBegin attached anything
    closed_.insert(stream_id);
    streams_.erase(stream_id);  // frees the held payload and the outbound bytes
  }

  void OnDataFramed(int32_t stream_id, void* stream, size_t bytes) override {
    Lookup(stream_id, stream);
  }

  [[nodiscard]] uint64_t checksum() const { return checksum_; }

 private:
  // The object attached to `stream_id`, checking that the session passed exactly that pointer.
  FuzzStream* Lookup(int32_t stream_id, void* stream) {
    auto it = streams_.find(stream_id);
    if (it == streams_.end()) {
      RILL_CHECK_MSG(stream == nullptr, "callback carries a pointer for an unknown stream");
      return nullptr;
    }
    RILL_CHECK_MSG(stream == nullptr || stream == it->second.get(),
                   "callback carries another stream's pointer");
    return it->second.get();
  }

  void RequestEnded(FuzzStream* s) {
    if (!s->held.empty()) {
      session_->Consume(s->id, s->held.size());
      s->held.Free();  // the slice stays usable, empty
    }
    switch (s->answer) {
      case Answer::kUnary:
        s->responded = true;
        PushMessage(s);
        s->out.trailers().Add("grpc-status", "0");
        s->finished = true;
        s->out.Finish();
        session_->SubmitResponse(s->id, response_headers_, &s->out);
        break;
      case Answer::kEcho:
        s->out.trailers().Add("grpc-status", "0");
        s->finished = true;
        s->out.Finish();
        session_->Resume(s->id, &s->out);
        break;
      case Answer::kNoTrailers:
        PushMessage(s);
        s->finished = true;
        s->out.Finish();
        session_->Resume(s->id, &s->out);
        break;
      case Answer::kTrailersOnly:
      case Answer::kReset:
      case Answer::kIgnore:
        break;
    }
  }

  static void PushMessage(FuzzStream* s) {
    // A length-prefixed gRPC message; the large one goes out as views, the small one is copied.
    const size_t size = s->id % 3 == 0 ? 3000 : 7;
    Buffer message = Buffer::Allocate(5 + size, DefaultBufferPool());
    std::byte* p = message.mutable_data();
    std::memset(p, 'm', 5 + size);
    p[0] = std::byte{0};
    p[1] = std::byte{0};
    p[2] = std::byte{0};
    p[3] = static_cast<std::byte>(size >> 8);
    p[4] = static_cast<std::byte>(size & 0xFF);
    s->out.Push(BufferSlice(std::move(message)));
  }

  uint8_t policy_;
  bool hold_payload_;
  Http2Session* session_ = nullptr;
  HeaderBlock response_headers_;
  HeaderBlock trailers_only_;
  std::map<int32_t, std::unique_ptr<FuzzStream>> streams_;
  std::set<int32_t> closed_;
  uint64_t checksum_ = 0;
};


void Run(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const uint8_t control = data[0];
  const uint8_t options = data[1];
  data += 2;
  size -= 2;

  std::string input;
  if (control & 1) input.append(kClientPreface);
  input.append(reinterpret_cast<const char*>(data), size);

  BufferPool& pool = DefaultBufferPool();
  const uint64_t pooled_before = pool.Stats().blocks_out;
  const int64_t small_before = SmallBlocksOutstanding();
  uint64_t checksum = 0;
  {
    // The handler (and the stream objects it owns) outlives the session, which may still
    // reference their OutboundStreams until it is destroyed.
    FuzzHandler handler(static_cast<uint8_t>(control >> 4), (options & 1) != 0);
    Http2Options http2_options;
    http2_options.server = true;
    http2_options.max_concurrent_streams = 16;
    Http2Session session(http2_options, &handler, pool);
    handler.set_session(&session);
    OutputBatch batch(pool);

    Splitter splitter(static_cast<uint8_t>((control >> 1) & 7), static_cast<uint8_t>(options >> 4));
    size_t offset = 0;
    bool goaway_sent = false;
    bool alive = Drain(session, batch, checksum);  // the server's SETTINGS
    for (int block_index = 0; alive && offset < input.size(); ++block_index) {
      const size_t n = splitter.Next(input.size() - offset);
      Buffer block = Buffer::Allocate(n, pool);
      std::memcpy(block.mutable_data(), input.data() + offset, n);
      offset += n;
      const Status status = session.Receive(std::move(block));
      if (block_index == 0 && (options & 2)) session.SubmitPing(0x0123456789abcdefULL);
      if (block_index == 1 && (options & 4)) session.SubmitShutdownNotice(0x0123456789abcdefULL);
      if ((options & 8) && !goaway_sent && offset >= input.size() / 2) {
        goaway_sent = true;
        session.SubmitGoaway(kHttp2NoError, "bye");
      }
      alive = Drain(session, batch, checksum) && status.ok();
      RILL_CHECK_MSG(session.open_streams() == handler.open_streams(),
                     "Http2Session::open_streams() disagrees with the streams reported");
      if (!session.WantsRead() && !session.WantsWrite()) break;
    }
    checksum += handler.checksum();
  }
  RILL_CHECK_MSG(pool.Stats().blocks_out == pooled_before, "a pooled buffer block leaked");
  RILL_CHECK_MSG(SmallBlocksOutstanding() == small_before, "a small buffer block leaked");
  g_sink = checksum;
}

}  // namespace
}  // namespace rill::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill::internal::Run(data, size);
  return 0;
}
