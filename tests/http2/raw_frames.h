// Raw HTTP/2 frames as bytes, and a blocking loopback connection that sends them and reads the
// server's frames back, for tests that must send what no HTTP/2 library would (frames on the
// wrong stream, wrong lengths, broken HPACK, floods). Frames follow RFC 9113 §4.1; header
// blocks are HPACK (RFC 7541) literals and static-table indexes, never Huffman-coded unless a
// test writes the bytes itself.
//
//   auto conn = FrameConn::Connect(port);            // preface + empty SETTINGS, handshake done
//   conn->Send(HeadersFrame(1, kEndStream | kEndHeaders, GetRequestBlock()));
//   conn->Send(DataFrame(1, 0, "x"));                // DATA after END_STREAM
//   EXPECT_TRUE(conn->ExpectStreamError(1, kStreamClosed));
//
// Thread safety: thread-compatible.
#ifndef RILL_TESTS_HTTP2_RAW_FRAMES_H_
#define RILL_TESTS_HTTP2_RAW_FRAMES_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::test::h2 {

// Frame types (RFC 9113 §6).
enum FrameType : uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kPriority = 0x2,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPushPromise = 0x5,
  kPing = 0x6,
  kGoaway = 0x7,
  kWindowUpdate = 0x8,
  kContinuation = 0x9,
};

// Flags.
inline constexpr uint8_t kEndStream = 0x1;
inline constexpr uint8_t kAck = 0x1;
inline constexpr uint8_t kEndHeaders = 0x4;
inline constexpr uint8_t kPadded = 0x8;
inline constexpr uint8_t kPriorityFlag = 0x20;

// Error codes (RFC 9113 §7).
enum ErrorCode : uint32_t {
  kNoError = 0x0,
  kProtocolError = 0x1,
  kInternalError = 0x2,
  kFlowControlError = 0x3,
  kSettingsTimeout = 0x4,
  kStreamClosed = 0x5,
  kFrameSizeError = 0x6,
  kRefusedStream = 0x7,
  kCancel = 0x8,
  kCompressionError = 0x9,
  kEnhanceYourCalm = 0xb,
};

// Settings identifiers (RFC 9113 §6.5.2).
enum SettingId : uint16_t {
  kHeaderTableSize = 0x1,
  kEnablePush = 0x2,
  kMaxConcurrentStreams = 0x3,
  kInitialWindowSize = 0x4,
  kMaxFrameSize = 0x5,
  kMaxHeaderListSize = 0x6,
};

inline constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Any frame: the 9-byte header and `payload`. `length` overrides the length field (for frames
// that lie about it); the payload is written as given.
std::string Frame(uint8_t type, uint8_t flags, uint32_t stream_id, std::string_view payload,
                  std::optional<uint32_t> length = std::nullopt);
std::string DataFrame(uint32_t stream_id, uint8_t flags, std::string_view data);
std::string HeadersFrame(uint32_t stream_id, uint8_t flags, std::string_view block);
std::string ContinuationFrame(uint32_t stream_id, uint8_t flags, std::string_view block);
// PRIORITY payload: exclusive bit, dependency, weight (the byte, 0..255).
std::string PriorityPayload(uint32_t depends_on, uint8_t weight, bool exclusive = false);
std::string PriorityFrame(uint32_t stream_id, uint32_t depends_on, uint8_t weight = 15);
std::string RstStreamFrame(uint32_t stream_id, uint32_t error_code);
struct Setting {
  uint16_t id;
  uint32_t value;
};
std::string SettingsFrame(const std::vector<Setting>& settings);
std::string SettingsAckFrame();
std::string PingFrame(uint64_t payload, bool ack = false);
std::string GoawayFrame(uint32_t last_stream_id, uint32_t error_code, std::string_view debug = {});
std::string WindowUpdateFrame(uint32_t stream_id, uint32_t increment);

// HPACK pieces (RFC 7541 §5.1 integers, §6 representations).
std::string HpackInteger(uint32_t value, int prefix_bits, uint8_t first_byte_flags);
std::string HpackString(std::string_view s);  // not Huffman-coded
std::string HpackIndexed(uint32_t index);     // §6.1
// §6.2.2 literal without indexing, new name.
std::string HpackLiteral(std::string_view name, std::string_view value);
// §6.3 dynamic table size update.
std::string HpackTableSizeUpdate(uint32_t size);

// A header block of literals, in order.
std::string HeaderBlock(const std::vector<std::pair<std::string, std::string>>& fields);
// A plain HTTP request (what a non-gRPC client sends): GET / or POST / with `extra` fields.
std::string RequestBlock(std::string_view method = "GET", std::string_view path = "/",
                         const std::vector<std::pair<std::string, std::string>>& extra = {});
// A gRPC request for `path` (POST, application/grpc, te: trailers).
std::string GrpcRequestBlock(std::string_view path);

// One frame read from the server.
struct ReadFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream_id = 0;
  std::string payload;
  // GOAWAY / RST_STREAM error code (0 for other frames).
  [[nodiscard]] uint32_t error_code() const;
};

class FrameConn {
 public:
  struct Options {
    bool handshake = true;  // send the preface and SETTINGS, read the server's SETTINGS, ACK it
    std::vector<Setting> settings;  // in our first SETTINGS frame
  };
  // Connects to 127.0.0.1:`port`; null (with a test failure added) on error.
  static std::unique_ptr<FrameConn> Connect(int port);
  static std::unique_ptr<FrameConn> Connect(int port, Options options);
  ~FrameConn();
  FrameConn(const FrameConn&) = delete;
  FrameConn& operator=(const FrameConn&) = delete;

  // Writes all of `bytes` (false once the server closed or reset the connection).
  bool Send(std::string_view bytes);
  // Writes what the socket takes now without blocking; returns the bytes taken (0 when full,
  // -1 once the connection failed).
  ssize_t TrySend(std::string_view bytes);

  // The next frame within `timeout`; nullopt on timeout or when the connection ended (then
  // closed() is true). SETTINGS from the server are ACKed as they arrive.
  std::optional<ReadFrame> Next(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Reads frames until `match` accepts one (true), or the connection ended or `timeout` passed
  // (false).
  bool WaitFor(const std::function<bool(const ReadFrame&)>& match,
               std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Reads whatever has arrived, without blocking (frames are kept in frames()).
  void Poll();

  // RFC 9113 §5.4.1: GOAWAY with `code`, then the connection closes.
  bool ExpectConnectionError(uint32_t code);
  // §5.4.2: RST_STREAM with `code` on the stream (a connection error with `code` also counts:
  // an endpoint may treat any stream error as a connection error).
  bool ExpectStreamError(uint32_t stream_id, uint32_t code);
  // The connection still works: a PING is answered, and no error arrived before its ACK.
  bool ExpectAlive();

  [[nodiscard]] bool closed() const { return closed_; }
  // True when the server closed with a FIN (as opposed to a reset).
  [[nodiscard]] bool closed_cleanly() const { return closed_cleanly_; }
  // Every frame read so far.
  [[nodiscard]] const std::vector<ReadFrame>& frames() const { return frames_; }
  [[nodiscard]] std::optional<ReadFrame> LastGoaway() const;
  // The server's SETTINGS value, once its SETTINGS arrived.
  [[nodiscard]] std::optional<uint32_t> server_setting(uint16_t id) const;
  // Keep no frame history (floods read millions of frames); the last GOAWAY is still kept.
  void set_keep_frames(bool keep) { keep_frames_ = keep; }
  // Called with every frame as it is read (by Next, WaitFor and Poll alike).
  void set_frame_observer(std::function<void(const ReadFrame&)> observer) {
    observer_ = std::move(observer);
  }

 private:
  explicit FrameConn(int fd) : fd_(fd) {}
  bool ReadSome(int timeout_ms);
  std::optional<ReadFrame> TakeFrame();

  int fd_ = -1;
  std::string in_;
  size_t in_pos_ = 0;
  bool closed_ = false;
  bool closed_cleanly_ = false;
  bool keep_frames_ = true;
  std::vector<ReadFrame> frames_;
  std::optional<ReadFrame> last_goaway_;
  std::vector<Setting> server_settings_;
  std::function<void(const ReadFrame&)> observer_;
};

}  // namespace rill::test::h2

#endif  // RILL_TESTS_HTTP2_RAW_FRAMES_H_
