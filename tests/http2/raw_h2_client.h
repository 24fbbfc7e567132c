// RawH2Client: an HTTP/2 client on real nghttp2 over a blocking loopback socket, for sending a
// gRPC server exactly the bytes a test wants — header lists no gRPC client would send, gRPC
// message prefixes that lie, DATA cut anywhere, END_STREAM or RST_STREAM at any point — and
// recording everything the server answers, frame by frame.
//
//   auto client = RawH2Client::Connect("127.0.0.1", port);
//   const int32_t id = client->OpenStream(GrpcRequestHeaders("/pkg.Svc/Method"));
//   client->SendData(id, GrpcPrefix(0, 100));          // a prefix, and no body
//   ASSERT_TRUE(client->WaitForClose(id));
//   const RawStream& s = client->stream(id);
//   EXPECT_TRUE(s.trailers_only());
//   EXPECT_EQ(s.Header("grpc-status"), "8");
//
// nghttp2 frames and HPACK-encodes what it is given; it does not check request header contents
// (methods, content types, gRPC headers are all the test's choice). It lower-cases header names.
//
// Thread safety: thread-compatible; one test thread drives it.
#ifndef RILL_TESTS_HTTP2_RAW_H2_CLIENT_H_
#define RILL_TESTS_HTTP2_RAW_H2_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct nghttp2_session;

namespace rill::test {

struct RawHeader {
  std::string name;
  std::string value;
  // nghttp2_nv flags (NGHTTP2_NV_FLAG_NO_INDEX keeps the field out of the HPACK table).
  uint8_t flags = 0;
};
using RawHeaderList = std::vector<RawHeader>;

// One HEADERS block the server sent (after CONTINUATIONs were joined).
struct RawHeaderBlock {
  std::vector<std::pair<std::string, std::string>> fields;
  // Names of the fields that came in HPACK's never-indexed representation.
  std::vector<std::string> never_indexed;
  bool end_stream = false;
  std::optional<std::string> Get(std::string_view name) const;
};

// What the server did on one stream.
struct RawStream {
  int32_t id = 0;
  std::vector<RawHeaderBlock> header_blocks;  // in arrival order
  std::string data;                           // every DATA payload byte, concatenated
  int data_frames = 0;
  bool remote_end = false;                // END_STREAM seen (on HEADERS or DATA)
  std::optional<uint32_t> rst_received;   // RST_STREAM error code from the server
  bool closed = false;                    // nghttp2 closed the stream
  uint32_t close_error = 0;               // the error code it closed with

  // A single HEADERS frame with END_STREAM: gRPC's trailers-only response.
  [[nodiscard]] bool trailers_only() const {
    return header_blocks.size() == 1 && header_blocks[0].end_stream && data_frames == 0;
  }
  // A field of the first header block (the response headers, or the trailers-only block).
  [[nodiscard]] std::optional<std::string> Header(std::string_view name) const;
  // A field of the block that ended the stream (trailers, or the trailers-only block).
  [[nodiscard]] std::optional<std::string> Trailer(std::string_view name) const;
  // grpc-status as a number (-1 when absent), from the trailers or trailers-only block.
  [[nodiscard]] int GrpcStatus() const;
  // The gRPC messages in `data` (prefixes checked); nullopt when the framing is broken.
  [[nodiscard]] std::optional<std::vector<std::string>> Messages() const;
};

class RawH2Client {
 public:
  struct Options {
    // Our SETTINGS_INITIAL_WINDOW_SIZE (what the server may send per stream before we credit).
    uint32_t initial_window = 1 << 20;
    // Largest header block nghttp2 will encode (its default refuses blocks over 64 KiB).
    size_t max_send_header_block = 1 << 20;
    // Send the connection preface and SETTINGS at Connect().
    bool send_preface = true;
  };

  // Connects over TCP or to a Unix socket; null (with a test failure added) on error.
  static std::unique_ptr<RawH2Client> Connect(const std::string& host, int port);
  static std::unique_ptr<RawH2Client> Connect(const std::string& host, int port, Options options);
  static std::unique_ptr<RawH2Client> ConnectUnix(const std::string& path);
  static std::unique_ptr<RawH2Client> ConnectUnix(const std::string& path, Options options);
  ~RawH2Client();
  RawH2Client(const RawH2Client&) = delete;
  RawH2Client& operator=(const RawH2Client&) = delete;

  // Opens a stream (a HEADERS frame; END_STREAM when `end_stream`). Returns its id, or a negative
  // nghttp2 error.
  int32_t OpenStream(const RawHeaderList& headers, bool end_stream = false);
  // Queues DATA bytes on the stream and sends them (one or more DATA frames); `end_stream` sets
  // END_STREAM on the last. Bytes queued after END_STREAM are not sent.
  void SendData(int32_t stream_id, std::string_view bytes, bool end_stream = false);
  // An empty DATA frame with END_STREAM.
  void EndStream(int32_t stream_id) { SendData(stream_id, {}, true); }
  void Reset(int32_t stream_id, uint32_t error_code);
  // Request trailers (a HEADERS frame with END_STREAM after the data).
  void SendTrailers(int32_t stream_id, const RawHeaderList& trailers);
  void Ping();

  // Raw bytes straight onto the socket (after everything nghttp2 queued). Only for frames whose
  // state nghttp2 does not need to know about.
  void SendRawBytes(std::string_view bytes);

  // Pumps the connection until `done()` holds (true) or `timeout` passed (false). Also returns
  // when the server closed the connection (done() decides then).
  bool RunUntil(const std::function<bool()>& done,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Until the stream is closed.
  bool WaitForClose(int32_t stream_id,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // Until the server closed the connection (EOF or a socket error).
  bool WaitForDisconnect(std::chrono::milliseconds timeout = std::chrono::seconds(30));

  [[nodiscard]] const RawStream& stream(int32_t stream_id);
  [[nodiscard]] bool disconnected() const { return disconnected_; }
  [[nodiscard]] std::optional<uint32_t> goaway_error() const { return goaway_error_; }
  [[nodiscard]] int32_t goaway_last_stream() const { return goaway_last_stream_; }
  [[nodiscard]] int pings_acked() const { return pings_acked_; }
  [[nodiscard]] int pings_received() const { return pings_received_; }
  // Every GOAWAY the server sent, in order.
  struct Goaway {
    int32_t last_stream_id;
    uint32_t error_code;
    std::string debug;
    bool ping_followed = false;  // a PING came right after it
  };
  [[nodiscard]] const std::vector<Goaway>& goaways() const { return goaways_; }
  // The server's SETTINGS values by id (after its first SETTINGS arrived).
  [[nodiscard]] const std::map<int32_t, uint32_t>& server_settings() const {
    return server_settings_;
  }
  // nghttp2's own complaint about the connection, if it failed one.
  [[nodiscard]] const std::string& session_error() const { return session_error_; }

 private:
  struct Callbacks;
  struct Outbound {
    std::string pending;
    bool end_requested = false;
    bool deferred = false;
    std::optional<RawHeaderList> trailers;
  };

  RawH2Client(int fd, Options options);
  bool Init();
  void Flush();
  void WriteAll(std::string_view bytes);
  bool ReadOnce(int timeout_ms);

  int fd_ = -1;
  Options options_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, RawStream> streams_;
  std::map<int32_t, Outbound> outbound_;
  bool disconnected_ = false;
  std::optional<uint32_t> goaway_error_;
  int32_t goaway_last_stream_ = -1;
  int pings_acked_ = 0;
  int pings_received_ = 0;
  std::vector<Goaway> goaways_;
  std::map<int32_t, uint32_t> server_settings_;
  std::string session_error_;
};

// The headers of a well-formed gRPC request for `path` (POST, http, localhost authority,
// application/grpc, te: trailers), then `extra`.
RawHeaderList GrpcRequestHeaders(std::string path, const RawHeaderList& extra = {});
// `headers` with every field named `name` removed, or its value replaced.
RawHeaderList WithoutHeader(RawHeaderList headers, std::string_view name);
RawHeaderList WithHeader(RawHeaderList headers, std::string_view name, std::string value);

// The 5-byte gRPC message prefix: flag byte, then the big-endian length.
std::string GrpcPrefix(uint8_t flag, uint32_t length);
// A whole message: prefix (flag 0) and body.
std::string GrpcMessage(std::string_view body, uint8_t flag = 0);

}  // namespace rill::test

#endif  // RILL_TESTS_HTTP2_RAW_H2_CLIENT_H_
