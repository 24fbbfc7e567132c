// Http2Session, client against server, in memory: each side's output batch is handed to the other
// side's Receive() as a pooled read block, so the session layer is exercised deterministically,
// without sockets or threads.
#include "src/http2/http2_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "src/http2/header_block.h"
#include "src/http2/output_batch.h"
#include "tests/testing/leak_check.h"

namespace rill::internal {
namespace {

using ::testing::ElementsAre;

// What one side saw on one stream.
struct StreamRecord {
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::pair<std::string, std::string>> trailers;
  std::vector<Buffer> data;  // the payload buffers as the session handed them up
  std::vector<std::string> events;  // "headers", "headers+end", "data", "end", "close:<code>"
  bool data_viewed_read_block = true;  // every large chunk pointed into its read block
  bool small_data_copied = true;       // every small chunk was a copy outside the read block
  bool closed = false;
  uint32_t close_code = 0;
  OutboundStream out;  // the body a test sends on this stream (requests are recorded by id)

  size_t data_bytes() const {
    size_t n = 0;
    for (const Buffer& b : data) n += b.size();
    return n;
  }
  std::string data_string() const {
    std::string s;
    for (const Buffer& b : data) s.append(b.AsStringView());
    return s;
  }
};

class RecordingHandler final : public Http2Handler {
 public:
  explicit RecordingHandler(bool server) : server_(server) {}

  void set_session(Http2Session* session) { session_ = session; }
  // The read block being fed to Receive() (to tell views from copies).
  void set_current_block(const std::byte* data, size_t size) {
    block_begin_ = data;
    block_end_ = data + size;
  }

  StreamRecord& stream(int32_t id) { return streams_[id]; }
  int streams_begun() const { return streams_begun_; }

  void OnStreamBegin(int32_t stream_id) override {
    ++streams_begun_;
    session_->SetStreamData(stream_id, &streams_[stream_id]);
  }
  void OnHeader(int32_t stream_id, void* stream, HeadersKind kind, std::string_view name,
                std::string_view value) override {
    StreamRecord& s = Record(stream_id, stream);
    auto& list = kind == HeadersKind::kTrailers ? s.trailers : s.headers;
    list.emplace_back(name, value);
  }
  void OnHeadersEnd(int32_t stream_id, void* stream, HeadersKind kind, bool end_stream) override {
    std::string event = kind == HeadersKind::kTrailers ? "trailers" : "headers";
    if (end_stream) event += "+end";
    Record(stream_id, stream).events.push_back(event);
  }
  void OnData(int32_t stream_id, void* stream, Buffer payload) override {
    StreamRecord& s = Record(stream_id, stream);
    const bool inside = payload.data() >= block_begin_ && payload.data() < block_end_;
    if (payload.size() >= kSmallBufferMax) {
      if (!inside || !payload.IsPooled()) s.data_viewed_read_block = false;
    } else if (inside || payload.IsPooled()) {
      s.small_data_copied = false;
    }
    s.events.push_back("data");
    s.data.push_back(std::move(payload));
  }
  void OnRemoteEnd(int32_t stream_id, void* stream) override {
    Record(stream_id, stream).events.push_back("end");
  }
  void OnStreamClose(int32_t stream_id, void* stream, uint32_t error_code) override {
    StreamRecord& s = Record(stream_id, stream);
    s.closed = true;
    s.close_code = error_code;
    s.events.push_back("close:" + std::to_string(error_code));
  }

 private:
  StreamRecord& Record(int32_t stream_id, void* stream) {
    return stream != nullptr ? *static_cast<StreamRecord*>(stream) : streams_[stream_id];
  }

  bool server_;
  Http2Session* session_ = nullptr;
  std::map<int32_t, StreamRecord> streams_;
  int streams_begun_ = 0;
  const std::byte* block_begin_ = nullptr;
  const std::byte* block_end_ = nullptr;
};

// A client and a server session wired back to back.
class SessionPair {
 public:
  explicit SessionPair(Http2Options server_options = {}, Http2Options client_options = {})
      : pool_(DefaultBufferPool()),
        client_handler_(false),
        server_handler_(true),
        client_(WithServer(client_options, false), &client_handler_, pool_),
        server_(WithServer(server_options, true), &server_handler_, pool_) {
    client_handler_.set_session(&client_);
    server_handler_.set_session(&server_);
  }

  // Opens a client stream whose events are recorded under its id.
  int32_t Request(OutboundStream* out, std::string_view path = "/pkg.Svc/Method");

  Http2Session& client() { return client_; }
  Http2Session& server() { return server_; }
  RecordingHandler& client_handler() { return client_handler_; }
  RecordingHandler& server_handler() { return server_handler_; }

  // The byte limit of the batches TransferOnce fills (OutputBatch's default unless set).
  void set_batch_limit(size_t limit) { batch_limit_ = limit; }

  // Moves one batch from `from` to `to` as one read block; returns the bytes moved. `wire`, if
  // given, receives a copy of them.
  size_t TransferOnce(Http2Session& from, RecordingHandler& to_handler, Http2Session& to,
                      size_t* iovecs = nullptr, std::string* wire = nullptr) {
    OutputBatch batch(pool_, batch_limit_);
    EXPECT_TRUE(from.FillBatch(batch).ok());
    const size_t n = batch.bytes();
    if (iovecs != nullptr) *iovecs = batch.iovecs().size();
    if (wire != nullptr) wire->clear();
    if (n == 0) return 0;
    Buffer block = Buffer::Allocate(std::max<size_t>(n, 32 * 1024), pool_);
    size_t at = 0;
    for (const iovec& iov : batch.iovecs()) {
      std::memcpy(block.mutable_data() + at, iov.iov_base, iov.iov_len);
      at += iov.iov_len;
    }
    batch.Consume(n);
    block.Truncate(n);
    if (wire != nullptr) wire->assign(block.AsStringView());
    to_handler.set_current_block(block.data(), block.size());
    EXPECT_TRUE(to.Receive(std::move(block)).ok());
    to_handler.set_current_block(nullptr, 0);
    return n;
  }

  // Exchanges frames until neither side has anything to send.
  void Pump() {
    for (int round = 0; round < 1000; ++round) {
      const size_t a = TransferOnce(client_, server_handler_, server_);
      const size_t b = TransferOnce(server_, client_handler_, client_);
      if (a == 0 && b == 0) return;
    }
    ADD_FAILURE() << "the sessions never went quiet";
  }

 private:
  static Http2Options WithServer(Http2Options options, bool server) {
    options.server = server;
    return options;
  }

  BufferPool& pool_;
  size_t batch_limit_ = OutputBatch::kDefaultByteLimit;
  RecordingHandler client_handler_;
  RecordingHandler server_handler_;
  Http2Session client_;
  Http2Session server_;
};

HeaderBlock RequestHeaders(std::string_view path = "/pkg.Svc/Method") {
  HeaderBlock h;
  h.Add(":method", "POST");
  h.Add(":scheme", "http");
  h.Add(":path", path);
  h.Add(":authority", "localhost");
  h.Add("content-type", "application/grpc");
  h.Add("te", "trailers");
  return h;
}

int32_t SessionPair::Request(OutboundStream* out, std::string_view path) {
  const int32_t id = client_.SubmitRequest(RequestHeaders(path), out, nullptr);
  if (id > 0) client_.SetStreamData(id, &client_handler_.stream(id));
  return id;
}

BufferSlice Bytes(size_t n, char fill) {
  Buffer b = Buffer::Allocate(n, DefaultBufferPool());
  std::memset(b.mutable_data(), fill, n);
  return BufferSlice(std::move(b));
}

// Sends a whole request of `n` bytes of `fill` from the pair's client, through `request`, and
// returns what the server's handler recorded of it.
StreamRecord& SendWholeRequest(SessionPair& pair, StreamRecord& request, size_t n, char fill) {
  request.out.Push(Bytes(n, fill));
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  EXPECT_GT(id, 0);
  pair.Pump();
  return pair.server_handler().stream(id);
}

TEST(Http2SessionTest, LargeDataArrivesAsAViewOfTheReadBlock) {
  StreamRecord request;
  {
    SessionPair pair;
    request.out.Push(Bytes(4000, 'a'));
    request.out.Finish();
    const int32_t id = pair.Request(&request.out);
    ASSERT_GT(id, 0);
    pair.Pump();
    StreamRecord& s = pair.server_handler().stream(id);
    EXPECT_EQ(s.data_bytes(), 4000u);
    EXPECT_EQ(s.data_string(), std::string(4000, 'a'));
    EXPECT_TRUE(s.data_viewed_read_block) << "large DATA was copied";
    ASSERT_FALSE(s.data.empty());
    for (const Buffer& b : s.data) EXPECT_TRUE(b.IsPooled());
    EXPECT_THAT(s.events, ElementsAre("headers", "data", "end"));
    s.data.clear();
  }
  request.out.Reset();
  test::ExpectNoOutstandingBlocks("after the sessions are gone");
}

TEST(Http2SessionTest, SmallDataIsCopiedOutOfTheReadBlock) {
  StreamRecord request;
  {
    SessionPair pair;
    StreamRecord& s = SendWholeRequest(pair, request, 100, 's');
    EXPECT_EQ(s.data_string(), std::string(100, 's'));
    EXPECT_TRUE(s.small_data_copied) << "small DATA pinned the read block";
    for (const Buffer& b : s.data) EXPECT_FALSE(b.IsPooled());
    s.data.clear();
  }
  request.out.Reset();
}

TEST(Http2SessionTest, AViewKeepsOnlyItsReadBlockAlive) {
  StreamRecord request;
  SessionPair pair;
  StreamRecord& s = SendWholeRequest(pair, request, 8000, 'v');
  ASSERT_FALSE(s.data.empty());
  // The view holds its block: the bytes stay readable after Receive() returned.
  EXPECT_EQ(s.data_string(), std::string(8000, 'v'));
  const int64_t held = test::CountOutstandingBlocks().pooled;
  EXPECT_GE(held, 1);
  s.data.clear();
  EXPECT_LT(test::CountOutstandingBlocks().pooled, held) << "releasing the views freed nothing";
  request.out.Reset();
}

TEST(Http2SessionTest, FramesOfManyStreamsLeaveInOneBatch) {
  constexpr int kStreams = 10;
  std::vector<StreamRecord> requests(kStreams);
  SessionPair pair;
  pair.Pump();  // SETTINGS exchanged
  std::vector<int32_t> ids;
  std::vector<const std::byte*> payload_addresses;
  for (int i = 0; i < kStreams; ++i) {
    BufferSlice body = Bytes(2000 + i, static_cast<char>('a' + i));
    payload_addresses.push_back(body.buffer(0).data());
    requests[i].out.Push(std::move(body));
    requests[i].out.Finish();
    ids.push_back(pair.Request(&requests[i].out));
  }
  // One FillBatch produces every stream's HEADERS and DATA; the payload goes in as views of the
  // request buffers (no copy).
  OutputBatch batch(DefaultBufferPool());
  ASSERT_TRUE(pair.client().FillBatch(batch).ok());
  size_t views = 0;
  for (const iovec& iov : batch.iovecs()) {
    for (const std::byte* address : payload_addresses) {
      if (iov.iov_base == address) ++views;
    }
  }
  EXPECT_EQ(views, static_cast<size_t>(kStreams)) << "payload was copied into the batch";
  // ... and one Receive() on the server sees all of them.
  Buffer block = Buffer::Allocate(batch.bytes(), DefaultBufferPool());
  size_t at = 0;
  for (const iovec& iov : batch.iovecs()) {
    std::memcpy(block.mutable_data() + at, iov.iov_base, iov.iov_len);
    at += iov.iov_len;
  }
  batch.Consume(batch.bytes());
  ASSERT_TRUE(pair.server().Receive(std::move(block)).ok());
  EXPECT_EQ(pair.server_handler().streams_begun(), kStreams);
  for (int i = 0; i < kStreams; ++i) {
    StreamRecord& s = pair.server_handler().stream(ids[i]);
    EXPECT_EQ(s.data_string(), std::string(2000 + i, static_cast<char>('a' + i))) << i;
    EXPECT_THAT(s.events, ElementsAre("headers", "data", "end")) << i;
    s.data.clear();
  }
  pair.Pump();
  for (auto& r : requests) r.out.Reset();
}

TEST(Http2SessionTest, ResponseDataThenTrailers) {
  StreamRecord request;
  StreamRecord response;
  SessionPair pair;
  request.out.Finish();  // a request without a body
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  ASSERT_EQ(pair.server_handler().streams_begun(), 1);

  HeaderBlock headers;
  headers.Add(":status", "200");
  headers.Add("content-type", "application/grpc");
  response.out.Push(Bytes(3000, 'r'));
  response.out.trailers().Add("grpc-status", "0");
  response.out.trailers().Add("x-trailer", "yes");
  response.out.Finish();
  pair.server().SubmitResponse(id, headers, &response.out);
  pair.Pump();

  StreamRecord& s = pair.client_handler().stream(id);
  EXPECT_THAT(s.events, ElementsAre("headers", "data", "trailers+end", "close:0"));
  EXPECT_THAT(s.headers, ElementsAre(std::pair<std::string, std::string>(":status", "200"),
                                     std::pair<std::string, std::string>("content-type",
                                                                         "application/grpc")));
  EXPECT_THAT(s.trailers, ElementsAre(std::pair<std::string, std::string>("grpc-status", "0"),
                                      std::pair<std::string, std::string>("x-trailer", "yes")));
  EXPECT_EQ(s.data_string(), std::string(3000, 'r'));
  EXPECT_TRUE(pair.server_handler().stream(id).closed);
  s.data.clear();
  request.out.Reset();
  response.out.Reset();
}

TEST(Http2SessionTest, DataSentLaterResumesADeferredStream) {
  StreamRecord request;
  StreamRecord response;
  SessionPair pair;
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  HeaderBlock headers;
  headers.Add(":status", "200");
  pair.server().SubmitResponse(id, headers, &response.out);
  pair.Pump();  // headers out; the data source has nothing yet
  EXPECT_THAT(pair.client_handler().stream(id).events, ElementsAre("headers"));

  response.out.Push(Bytes(1500, 'l'));
  pair.server().Resume(id, &response.out);
  pair.Pump();
  EXPECT_EQ(pair.client_handler().stream(id).data_string(), std::string(1500, 'l'));
  response.out.Finish();
  pair.server().Resume(id, &response.out);
  pair.Pump();
  EXPECT_THAT(pair.client_handler().stream(id).events,
              ElementsAre("headers", "data", "end", "close:0"));
  pair.client_handler().stream(id).data.clear();
  request.out.Reset();
  response.out.Reset();
}

TEST(Http2SessionTest, TrailersOnlyResponse) {
  StreamRecord request;
  SessionPair pair;
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  HeaderBlock block;
  block.Add(":status", "200");
  block.Add("content-type", "application/grpc");
  block.Add("grpc-status", "12");
  pair.server().SubmitTrailersOnly(id, block);
  pair.Pump();
  EXPECT_THAT(pair.client_handler().stream(id).events, ElementsAre("headers+end", "close:0"));
  request.out.Reset();
}

TEST(Http2SessionTest, StreamWindowIsCreditedOnlyOnConsume) {
  StreamRecord request;
  SessionPair pair;
  constexpr size_t kBody = 200 * 1024;
  request.out.Push(Bytes(kBody, 'w'));
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  pair.Pump();

  // Without Consume() the server takes exactly one stream window (64 KiB - 1), however long the
  // sessions talk.
  StreamRecord& s = pair.server_handler().stream(id);
  EXPECT_EQ(s.data_bytes(), 65535u);
  EXPECT_EQ(request.out.queued_bytes(), kBody - 65535);
  pair.Pump();
  EXPECT_EQ(s.data_bytes(), 65535u);

  // Crediting what was consumed lets exactly that much more through.
  size_t consumed = 0;
  while (consumed < kBody) {
    const size_t before = s.data_bytes();
    pair.server().Consume(id, before - consumed);
    consumed = before;
    pair.Pump();
    ASSERT_GT(s.data_bytes(), before) << "Consume() did not reopen the window";
    EXPECT_LE(s.data_bytes() - consumed, 65535u);
    if (s.data_bytes() == kBody) break;
  }
  EXPECT_EQ(s.data_bytes(), kBody);
  EXPECT_THAT(s.events.back(), "end");
  s.data.clear();
  request.out.Reset();
}

TEST(Http2SessionTest, ClientResetReachesTheServerStream) {
  StreamRecord request;
  SessionPair pair;
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  pair.client().Reset(id, kHttp2Cancel);
  pair.Pump();
  StreamRecord& s = pair.server_handler().stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.close_code, static_cast<uint32_t>(kHttp2Cancel));
  EXPECT_TRUE(pair.client_handler().stream(id).closed);
  request.out.Reset();
}

TEST(Http2SessionTest, ServerEndingFirstResetsTheStreamWithNoError) {
  StreamRecord request;
  SessionPair pair;
  // The client has not half-closed when the server answers.
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  HeaderBlock block;
  block.Add(":status", "200");
  block.Add("grpc-status", "0");
  pair.server().SubmitTrailersOnly(id, block);
  pair.Pump();
  StreamRecord& s = pair.client_handler().stream(id);
  EXPECT_TRUE(s.closed);
  EXPECT_EQ(s.close_code, static_cast<uint32_t>(kHttp2NoError));
  EXPECT_EQ(pair.client().open_streams(), 0u);
  EXPECT_EQ(pair.server().open_streams(), 0u);
  request.out.Reset();
}

TEST(Http2SessionTest, OpenStreamsAreCounted) {
  std::vector<StreamRecord> requests(3);
  SessionPair pair;
  std::vector<int32_t> ids;
  for (auto& r : requests) ids.push_back(pair.Request(&r.out));
  pair.Pump();
  EXPECT_EQ(pair.client().open_streams(), 3u);
  EXPECT_EQ(pair.server().open_streams(), 3u);
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].out.Finish();
    pair.client().Resume(ids[i], &requests[i].out);
  }
  pair.Pump();  // half-closed from the client
  EXPECT_EQ(pair.server().open_streams(), 3u);
  for (auto& r : requests) r.out.Reset();
}

// The frames of a batch's bytes, in order, as {type, size with header}; a test failure when
// the bytes do not end on a frame boundary.
struct WireFrame {
  uint8_t type;
  size_t size;
};
constexpr uint8_t kFrameData = 0x0;
constexpr uint8_t kFrameHeaders = 0x1;

std::vector<WireFrame> FramesOf(std::string_view wire) {
  std::vector<WireFrame> frames;
  while (wire.size() >= 9) {
    const auto* p = reinterpret_cast<const uint8_t*>(wire.data());
    const size_t length = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
    if (wire.size() < 9 + length) break;
    frames.push_back({p[3], 9 + length});
    wire.remove_prefix(9 + length);
  }
  EXPECT_TRUE(wire.empty()) << "a batch ended inside a frame";
  return frames;
}

// Moves batches from `from` to `to` until `from` has nothing left; checks that each batch closed
// at the first frame that reached `limit` and returns the type of every HEADERS and DATA frame
// moved (the others, WINDOW_UPDATE say, depend on flow control policy).
std::vector<uint8_t> TransferAll(SessionPair& pair, Http2Session& from,
                                 RecordingHandler& to_handler, Http2Session& to, size_t limit) {
  std::vector<uint8_t> types;
  std::string wire;
  for (int batch = 0; batch < 1000; ++batch) {
    if (pair.TransferOnce(from, to_handler, to, nullptr, &wire) == 0) return types;
    const std::vector<WireFrame> frames = FramesOf(wire);
    size_t before_last = 0;
    for (size_t i = 0; i + 1 < frames.size(); ++i) before_last += frames[i].size;
    EXPECT_LT(before_last, std::max<size_t>(limit, 1))
        << "batch " << batch << " of " << frames.size() << " frames went on past its limit";
    for (const WireFrame& frame : frames) {
      if (frame.type == kFrameHeaders || frame.type == kFrameData) types.push_back(frame.type);
    }
  }
  ADD_FAILURE() << "the session never ran out of frames";
  return types;
}

class BatchLimitTest : public ::testing::TestWithParam<size_t> {};

// A 40000-byte request (three DATA frames at the 16 KiB frame size) and a 20000-byte response
// with trailers, through batches of the limit under test.
TEST_P(BatchLimitTest, EveryFrameArrivesWholeAndInOrder) {
  const size_t limit = GetParam();
  StreamRecord request;
  StreamRecord response;
  {
    SessionPair pair;
    pair.set_batch_limit(limit);
    pair.Pump();  // preface and SETTINGS
    request.out.Push(Bytes(40000, 'q'));
    request.out.Finish();
    const int32_t id = pair.Request(&request.out);
    ASSERT_GT(id, 0);
    const std::vector<uint8_t> request_frames =
        TransferAll(pair, pair.client(), pair.server_handler(), pair.server(), limit);
    EXPECT_THAT(request_frames, ElementsAre(kFrameHeaders, kFrameData, kFrameData, kFrameData));

    HeaderBlock headers;
    headers.Add(":status", "200");
    headers.Add("content-type", "application/grpc");
    response.out.Push(Bytes(20000, 'r'));
    response.out.trailers().Add("grpc-status", "0");
    response.out.Finish();
    pair.server().SubmitResponse(id, headers, &response.out);
    const std::vector<uint8_t> response_frames =
        TransferAll(pair, pair.server(), pair.client_handler(), pair.client(), limit);
    EXPECT_THAT(response_frames, ElementsAre(kFrameHeaders, kFrameData, kFrameData, kFrameHeaders));
    pair.Pump();

    StreamRecord& at_server = pair.server_handler().stream(id);
    EXPECT_EQ(at_server.data_string(), std::string(40000, 'q'));
    EXPECT_THAT(at_server.events, ElementsAre("headers", "data", "data", "data", "end", "close:0"));
    StreamRecord& at_client = pair.client_handler().stream(id);
    EXPECT_EQ(at_client.data_string(), std::string(20000, 'r'));
    EXPECT_THAT(at_client.events,
                ElementsAre("headers", "data", "data", "trailers+end", "close:0"));
    at_server.data.clear();
    at_client.data.clear();
  }
  request.out.Reset();
  response.out.Reset();
}

INSTANTIATE_TEST_SUITE_P(Limits, BatchLimitTest,
                         ::testing::Values(size_t{0}, size_t{1}, size_t{100}, size_t{20000},
                                           OutputBatch::kDefaultByteLimit),
                         [](const ::testing::TestParamInfo<size_t>& param) {
                           return "Limit" + std::to_string(param.param);
                         });

TEST(Http2SessionTest, TheDefaultBatchTakesEveryReadyFrame) {
  StreamRecord request;
  SessionPair pair;
  pair.Pump();
  request.out.Push(Bytes(40000, 'q'));
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  std::string wire;
  pair.TransferOnce(pair.client(), pair.server_handler(), pair.server(), nullptr, &wire);
  EXPECT_EQ(FramesOf(wire).size(), 4u) << "HEADERS and three DATA frames in one batch";
  EXPECT_EQ(pair.server_handler().stream(id).data_string(), std::string(40000, 'q'));
  pair.server_handler().stream(id).data.clear();
  pair.Pump();
  request.out.Reset();
}

// A DATA frame held back by a full batch has not been read from its stream yet, so the stream's
// queue may still be dropped (a server ending a call early) and trailers sent instead.
TEST(Http2SessionTest, DataHeldBackByAFullBatchCanStillBeDropped) {
  StreamRecord request;
  StreamRecord response;
  SessionPair pair;
  pair.set_batch_limit(0);
  request.out.Finish();
  const int32_t id = pair.Request(&request.out);
  pair.Pump();
  HeaderBlock headers;
  headers.Add(":status", "200");
  response.out.Push(Bytes(3000, 'd'));
  pair.server().SubmitResponse(id, headers, &response.out);
  // The response HEADERS fill the batch; the DATA frame waits.
  pair.TransferOnce(pair.server(), pair.client_handler(), pair.client());
  EXPECT_THAT(pair.client_handler().stream(id).events, ElementsAre("headers"));

  response.out.Reset();
  HeaderBlock trailers;
  trailers.Add("grpc-status", "13");
  pair.server().SubmitTrailers(id, trailers);
  pair.Pump();
  StreamRecord& s = pair.client_handler().stream(id);
  EXPECT_THAT(s.events, ElementsAre("headers", "trailers+end", "close:0"));
  EXPECT_THAT(s.trailers, ElementsAre(std::pair<std::string, std::string>("grpc-status", "13")));
  EXPECT_EQ(s.data_bytes(), 0u);
  request.out.Reset();
}

}  // namespace
}  // namespace rill::internal
