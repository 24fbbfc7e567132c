// Drives a client-side Http2Session with arbitrary server bytes, the way a channel's
// connection does: a few requests are open (bodies queued, some finished, one cancelled
// midway), read blocks go in through Receive(), and everything the session wants to send is
// drained after each.
//
// Checked, besides the sanitizers: the handler only ever sees the stream object it attached,
// and never after the stream closed; no stream the client did not open is reported; every
// pooled buffer block is back when the session is gone.
//
// Input layout:
//   byte 0   bits 0-2: requests opened at the start (1-8); bits 3-5: how the rest is cut into
//            read blocks (see Splitter); bit 6: cancel the first stream after the first block;
//            bit 7: open one more request halfway
//   byte 1   bits 0-3: seed for variable cuts; bit 4: finish request bodies at once (else after
//            the first block); bit 5: send a GOAWAY halfway
//   rest     the bytes the server sends (its SETTINGS first, in a real exchange)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>

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

volatile uint64_t g_sink = 0;

struct ClientStream {
  int32_t id = 0;
  OutboundStream out;
};

class ClientHandler final : public Http2Handler {
 public:
  void OnStreamBegin(int32_t) override { RILL_CHECK_MSG(false, "a client saw a server stream"); }
  void OnHeader(int32_t id, void* stream, HeadersKind, std::string_view name,
                std::string_view value) override {
    Lookup(id, stream);
    for (char c : name) checksum_ += static_cast<uint8_t>(c);
    for (char c : value) checksum_ += static_cast<uint8_t>(c);
  }
  void OnHeadersEnd(int32_t id, void* stream, HeadersKind, bool) override { Lookup(id, stream); }
  void OnData(int32_t id, void* stream, Buffer payload) override {
    Lookup(id, stream);
    RILL_CHECK_MSG(payload.size() > 0, "empty DATA payload reported");
    const auto* p = reinterpret_cast<const uint8_t*>(payload.data());
    for (size_t i = 0; i < payload.size(); ++i) checksum_ += p[i];
    session_->Consume(id, payload.size());
  }
  void OnRemoteEnd(int32_t id, void* stream) override { Lookup(id, stream); }
  void OnStreamClose(int32_t id, void* stream, uint32_t) override {
    Lookup(id, stream);
    closed_.insert(id);
  }
  void OnDataFramed(int32_t id, void* stream, size_t) override { Lookup(id, stream); }

  ClientStream* Open(Http2Session& session, bool finish) {
    session_ = &session;
    auto stream = std::make_unique<ClientStream>();
    HeaderBlock headers;
    headers.Add(":method", "POST");
    headers.Add(":scheme", "http");
    headers.Add(":path", "/grpc.testing.TestService/UnaryCall");
    headers.Add(":authority", "localhost");
    headers.Add("content-type", "application/grpc");
    headers.Add("te", "trailers");
    Buffer message = Buffer::Allocate(5 + 100, DefaultBufferPool());
    std::memset(message.mutable_data(), 0, 5 + 100);
    message.mutable_data()[4] = std::byte{100};
    stream->out.Push(BufferSlice(std::move(message)));
    if (finish) stream->out.Finish();
    const int32_t id = session.SubmitRequest(headers, &stream->out, stream.get());
    if (id == 0) return nullptr;
    stream->id = id;
    ClientStream* raw = stream.get();
    streams_.emplace(id, std::move(stream));
    return raw;
  }
  void FinishAll(Http2Session& session) {
    for (auto& [id, stream] : streams_) {
      if (closed_.count(id) != 0 || stream->out.finished()) continue;
      stream->out.Finish();
      session.Resume(id, &stream->out);
    }
  }
  [[nodiscard]] uint64_t checksum() const { return checksum_; }

 private:
  ClientStream* Lookup(int32_t id, void* stream) {
    auto it = streams_.find(id);
    RILL_CHECK_MSG(it != streams_.end(), "a stream the client never opened was reported");
    RILL_CHECK_MSG(closed_.count(id) == 0, "a closed stream was reported again");
    RILL_CHECK_MSG(stream == it->second.get(), "the session passed another stream's object");
    return it->second.get();
  }

  Http2Session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<ClientStream>> streams_;
  std::set<int32_t> closed_;
  uint64_t checksum_ = 0;
};

void Run(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const uint8_t control = data[0];
  const uint8_t options = data[1];
  const std::string input(reinterpret_cast<const char*>(data + 2), size - 2);
  BufferPool& pool = DefaultBufferPool();
  const uint64_t pooled_before = pool.Stats().blocks_out;
  uint64_t checksum = 0;
  {
    ClientHandler handler;  // outlives the session, which references its OutboundStreams
    Http2Options http2_options;
    http2_options.server = false;
    Http2Session session(http2_options, &handler, pool);
    OutputBatch batch(pool);
    const bool finish_at_once = (options & 0x10) != 0;
    ClientStream* first = nullptr;
    for (int i = 0; i <= (control & 7); ++i) {
      ClientStream* s = handler.Open(session, finish_at_once);
      if (first == nullptr) first = s;
    }
    Splitter splitter(static_cast<uint8_t>((control >> 3) & 7), static_cast<uint8_t>(options & 15));
    bool alive = Drain(session, batch, checksum);  // preface, SETTINGS, requests
    bool opened_more = false;
    bool goaway_sent = false;
    size_t offset = 0;
    for (int block_index = 0; alive && offset < input.size(); ++block_index) {
      const size_t n = splitter.Next(input.size() - offset);
      Buffer block = Buffer::Allocate(n, pool);
      std::memcpy(block.mutable_data(), input.data() + offset, n);
      offset += n;
      const Status status = session.Receive(std::move(block));
      if (block_index == 0) {
        if ((control & 0x40) && first != nullptr) session.Reset(first->id, kHttp2Cancel);
        if (!finish_at_once) handler.FinishAll(session);
      }
      if ((control & 0x80) && !opened_more && offset >= input.size() / 2) {
        opened_more = true;
        handler.Open(session, /*finish=*/true);
      }
      if ((options & 0x20) && !goaway_sent && offset >= input.size() / 2) {
        goaway_sent = true;
        session.SubmitGoaway(kHttp2NoError, "client done");
      }
      alive = Drain(session, batch, checksum) && status.ok();
      if (!session.WantsRead() && !session.WantsWrite()) break;
    }
    checksum += handler.checksum();
  }
  RILL_CHECK_MSG(pool.Stats().blocks_out == pooled_before, "a pooled buffer block leaked");
  g_sink = checksum;
}

}  // namespace
}  // namespace rill::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rill::internal::Run(data, size);
  return 0;
}
