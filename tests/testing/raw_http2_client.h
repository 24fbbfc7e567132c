// A plain-socket HTTP/2 client that frames and HPACK-encodes by hand (with nghttp2's HPACK
// codec), for peers that stop reading or never acknowledge anything.
//
//   rill::test::RawHttp2Client client;
//   ASSERT_TRUE(client.Connect(port));
//   ASSERT_TRUE(client.SendPreface({{0x4, 0}}));            // SETTINGS_INITIAL_WINDOW_SIZE 0
//   client.ReadFrames(std::chrono::seconds(5), [](const auto& frames) { ... });
#ifndef RILL_TESTS_TESTING_RAW_HTTP2_CLIENT_H_
#define RILL_TESTS_TESTING_RAW_HTTP2_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::test {

class RawHttp2Client {
 public:
  struct Frame {
    uint8_t type = 0;
    uint8_t flags = 0;
    int32_t stream_id = 0;
    std::string payload;
  };
  static constexpr uint8_t kData = 0x0;
  static constexpr uint8_t kHeaders = 0x1;
  static constexpr uint8_t kRstStream = 0x3;
  static constexpr uint8_t kSettings = 0x4;
  static constexpr uint8_t kPing = 0x6;
  static constexpr uint8_t kGoaway = 0x7;
  static constexpr uint8_t kWindowUpdate = 0x8;
  static constexpr uint8_t kFlagEndStream = 0x1;
  static constexpr uint8_t kFlagAck = 0x1;
  static constexpr uint8_t kFlagEndHeaders = 0x4;

  RawHttp2Client();
  ~RawHttp2Client();
  RawHttp2Client(const RawHttp2Client&) = delete;
  RawHttp2Client& operator=(const RawHttp2Client&) = delete;

  // Connects to 127.0.0.1:`port`; a nonzero `receive_buffer` sets SO_RCVBUF first.
  bool Connect(int port, int receive_buffer = 0);
  // The client preface followed by SETTINGS with `settings` (id, value) entries.
  bool SendPreface(const std::vector<std::pair<uint16_t, uint32_t>>& settings);
  bool SendFrame(uint8_t type, uint8_t flags, int32_t stream_id, std::string_view payload);
  bool SendHeaders(int32_t stream_id,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   bool end_stream);
  bool SendWindowUpdate(int32_t stream_id, uint32_t increment);
  // One gRPC message (5-byte prefix + `message`) in a DATA frame.
  bool SendGrpcMessage(int32_t stream_id, std::string_view message, bool end_stream);

  // Reads and parses frames for up to `limit`, stopping early once `done(frames)` is true or
  // the server closed the connection. Returns everything parsed so far (over all calls).
  const std::vector<Frame>& ReadFrames(std::chrono::milliseconds limit,
                                       const std::function<bool(const std::vector<Frame>&)>& done);
  [[nodiscard]] bool eof() const { return eof_; }
  // Decodes a HEADERS payload (END_HEADERS, no padding or priority), in order of arrival.
  std::vector<std::pair<std::string, std::string>> DecodeHeaders(const Frame& frame);

  // Closes the socket now.
  void Close();

 private:
  int fd_ = -1;
  std::string in_;  // bytes read and not parsed yet
  std::vector<Frame> frames_;
  bool eof_ = false;
  void* deflater_ = nullptr;  // nghttp2_hd_deflater
  void* inflater_ = nullptr;  // nghttp2_hd_inflater
};

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_RAW_HTTP2_CLIENT_H_
