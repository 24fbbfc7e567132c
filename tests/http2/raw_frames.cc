#include "tests/http2/raw_frames.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rill::test::h2 {
namespace {

void Put24(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>((v >> 16) & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

void Put32(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>((v >> 24) & 0xff));
  Put24(out, v);
}

uint32_t Get32(std::string_view s, size_t at) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(s[at])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(s[at + 2])) << 8) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[at + 3]));
}

}  // namespace

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream_id, std::string_view payload,
                  std::optional<uint32_t> length) {
  std::string out;
  out.reserve(9 + payload.size());
  Put24(out, length.value_or(static_cast<uint32_t>(payload.size())));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  Put32(out, stream_id & 0x7fffffff);
  out.append(payload);
  return out;
}

std::string DataFrame(uint32_t stream_id, uint8_t flags, std::string_view data) {
  return Frame(kData, flags, stream_id, data);
}

std::string HeadersFrame(uint32_t stream_id, uint8_t flags, std::string_view block) {
  return Frame(kHeaders, flags, stream_id, block);
}

std::string ContinuationFrame(uint32_t stream_id, uint8_t flags, std::string_view block) {
  return Frame(kContinuation, flags, stream_id, block);
}

std::string PriorityPayload(uint32_t depends_on, uint8_t weight, bool exclusive) {
  std::string out;
  Put32(out, (depends_on & 0x7fffffff) | (exclusive ? 0x80000000u : 0));
  out.push_back(static_cast<char>(weight));
  return out;
}

std::string PriorityFrame(uint32_t stream_id, uint32_t depends_on, uint8_t weight) {
  return Frame(kPriority, 0, stream_id, PriorityPayload(depends_on, weight));
}

std::string RstStreamFrame(uint32_t stream_id, uint32_t error_code) {
  std::string payload;
  Put32(payload, error_code);
  return Frame(kRstStream, 0, stream_id, payload);
}

std::string SettingsFrame(const std::vector<Setting>& settings) {
  std::string payload;
  for (const Setting& s : settings) {
    payload.push_back(static_cast<char>(s.id >> 8));
    payload.push_back(static_cast<char>(s.id & 0xff));
    Put32(payload, s.value);
  }
  return Frame(kSettings, 0, 0, payload);
}

std::string SettingsAckFrame() { return Frame(kSettings, kAck, 0, {}); }

std::string PingFrame(uint64_t payload, bool ack) {
  std::string p;
  Put32(p, static_cast<uint32_t>(payload >> 32));
  Put32(p, static_cast<uint32_t>(payload));
  return Frame(kPing, ack ? kAck : 0, 0, p);
}

std::string GoawayFrame(uint32_t last_stream_id, uint32_t error_code, std::string_view debug) {
  std::string p;
  Put32(p, last_stream_id & 0x7fffffff);
  Put32(p, error_code);
  p.append(debug);
  return Frame(kGoaway, 0, 0, p);
}

std::string WindowUpdateFrame(uint32_t stream_id, uint32_t increment) {
  std::string p;
  Put32(p, increment);
  return Frame(kWindowUpdate, 0, stream_id, p);
}

std::string HpackInteger(uint32_t value, int prefix_bits, uint8_t first_byte_flags) {
  std::string out;
  const uint32_t max_prefix = (1u << prefix_bits) - 1;
  if (value < max_prefix) {
    out.push_back(static_cast<char>(first_byte_flags | value));
    return out;
  }
  out.push_back(static_cast<char>(first_byte_flags | max_prefix));
  value -= max_prefix;
  while (value >= 128) {
    out.push_back(static_cast<char>((value % 128) | 0x80));
    value /= 128;
  }
  out.push_back(static_cast<char>(value));
  return out;
}

std::string HpackString(std::string_view s) {
  return HpackInteger(static_cast<uint32_t>(s.size()), 7, 0x00) + std::string(s);
}

std::string HpackIndexed(uint32_t index) { return HpackInteger(index, 7, 0x80); }

std::string HpackLiteral(std::string_view name, std::string_view value) {
  // Appended piece by piece: GCC 12 at -O3 (release trees) misreads `string + string&&` as an
  // overlapping copy (-Wrestrict).
  std::string out(1, '\0');
  out += HpackString(name);
  out += HpackString(value);
  return out;
}

std::string HpackTableSizeUpdate(uint32_t size) { return HpackInteger(size, 5, 0x20); }

std::string HeaderBlock(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string out;
  for (const auto& [name, value] : fields) out += HpackLiteral(name, value);
  return out;
}

std::string RequestBlock(std::string_view method, std::string_view path,
                         const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", std::string(method)},
      {":scheme", "http"},
      {":path", std::string(path)},
      {":authority", "localhost"}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  return HeaderBlock(fields);
}

std::string GrpcRequestBlock(std::string_view path) {
  return RequestBlock("POST", path, {{"content-type", "application/grpc"}, {"te", "trailers"}});
}

uint32_t ReadFrame::error_code() const {
  if (type == kRstStream && payload.size() >= 4) return Get32(payload, 0);
  if (type == kGoaway && payload.size() >= 8) return Get32(payload, 4);
  return 0;
}

std::unique_ptr<FrameConn> FrameConn::Connect(int port) { return Connect(port, Options()); }

std::unique_ptr<FrameConn> FrameConn::Connect(int port, Options options) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ADD_FAILURE() << "socket: " << std::strerror(errno);
    return nullptr;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "connect: " << std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::unique_ptr<FrameConn> conn(new FrameConn(fd));
  if (options.handshake) {
    conn->Send(std::string(kClientPreface) + SettingsFrame(options.settings));
    // The server's SETTINGS (ACKed by Next) and the ACK of ours.
    bool got_settings = false;
    bool got_ack = false;
    conn->WaitFor([&](const ReadFrame& f) {
      if (f.type == kSettings) ((f.flags & kAck) != 0 ? got_ack : got_settings) = true;
      return got_settings && got_ack;
    });
    if (!got_settings || !got_ack) {
      ADD_FAILURE() << "no HTTP/2 handshake with the server";
      return nullptr;
    }
  }
  return conn;
}

FrameConn::~FrameConn() {
  if (fd_ >= 0) ::close(fd_);
}

bool FrameConn::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

ssize_t FrameConn::TrySend(std::string_view bytes) {
  for (;;) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    return -1;
  }
}

bool FrameConn::ReadSome(int timeout_ms) {
  if (closed_) return false;
  pollfd p{fd_, POLLIN, 0};
  const int r = ::poll(&p, 1, timeout_ms);
  if (r <= 0) return false;
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
  if (n > 0) {
    if (in_pos_ > 0 && in_pos_ == in_.size()) {
      in_.clear();
      in_pos_ = 0;
    }
    in_.append(buf, static_cast<size_t>(n));
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
  closed_ = true;
  closed_cleanly_ = n == 0;
  return false;
}

std::optional<ReadFrame> FrameConn::TakeFrame() {
  if (in_.size() - in_pos_ < 9) return std::nullopt;
  const std::string_view rest(in_.data() + in_pos_, in_.size() - in_pos_);
  const uint32_t length = (static_cast<uint32_t>(static_cast<uint8_t>(rest[0])) << 16) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(rest[1])) << 8) |
                          static_cast<uint32_t>(static_cast<uint8_t>(rest[2]));
  if (rest.size() < 9 + length) return std::nullopt;
  ReadFrame f;
  f.type = static_cast<uint8_t>(rest[3]);
  f.flags = static_cast<uint8_t>(rest[4]);
  f.stream_id = Get32(rest, 5) & 0x7fffffff;
  f.payload.assign(rest.substr(9, length));
  in_pos_ += 9 + length;
  if (in_pos_ > (1u << 20)) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  if (f.type == kSettings && (f.flags & kAck) == 0) {
    for (size_t i = 0; i + 6 <= f.payload.size(); i += 6) {
      const uint16_t id = static_cast<uint16_t>((static_cast<uint8_t>(f.payload[i]) << 8) |
                                                static_cast<uint8_t>(f.payload[i + 1]));
      server_settings_.push_back({id, Get32(f.payload, i + 2)});
    }
    Send(SettingsAckFrame());
  }
  if (f.type == kGoaway) last_goaway_ = f;
  if (observer_) observer_(f);
  if (keep_frames_) frames_.push_back(f);
  return f;
}

std::optional<ReadFrame> FrameConn::Next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto f = TakeFrame()) return f;
    if (closed_) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    ReadSome(static_cast<int>(left.count()));
  }
}

bool FrameConn::WaitFor(const std::function<bool(const ReadFrame&)>& match,
                        std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    auto f = Next(left);
    if (!f) return false;
    if (match(*f)) return true;
  }
}

void FrameConn::Poll() {
  while (ReadSome(0)) {
    while (TakeFrame()) {
    }
  }
  while (TakeFrame()) {
  }
}

bool FrameConn::ExpectConnectionError(uint32_t code) {
  const bool goaway = WaitFor([&](const ReadFrame& f) { return f.type == kGoaway; });
  if (!goaway) {
    ADD_FAILURE() << "no GOAWAY";
    return false;
  }
  if (last_goaway_->error_code() != code) {
    ADD_FAILURE() << "GOAWAY code " << last_goaway_->error_code() << ", expected " << code;
    return false;
  }
  // Then the connection ends (§5.4.1).
  WaitFor([](const ReadFrame&) { return false; });
  if (!closed_) ADD_FAILURE() << "the connection stayed open after GOAWAY";
  return closed_;
}

bool FrameConn::ExpectStreamError(uint32_t stream_id, uint32_t code) {
  bool ok = false;
  WaitFor([&](const ReadFrame& f) {
    if (f.type == kRstStream && f.stream_id == stream_id) {
      ok = f.error_code() == code;
      if (!ok) ADD_FAILURE() << "RST_STREAM code " << f.error_code() << ", expected " << code;
      return true;
    }
    if (f.type == kGoaway) {
      ok = f.error_code() == code;
      if (!ok) ADD_FAILURE() << "GOAWAY code " << f.error_code() << ", expected " << code;
      return true;
    }
    return false;
  });
  if (!ok && !::testing::Test::HasFailure()) ADD_FAILURE() << "no RST_STREAM on stream " << stream_id;
  return ok;
}

bool FrameConn::ExpectAlive() {
  constexpr uint64_t kProbe = 0x616c697665;  // "alive"
  if (!Send(PingFrame(kProbe))) {
    ADD_FAILURE() << "the connection is closed";
    return false;
  }
  bool error = false;
  const bool acked = WaitFor([&](const ReadFrame& f) {
    if (f.type == kGoaway || f.type == kRstStream) error = true;
    return f.type == kPing && (f.flags & kAck) != 0 && f.payload == PingFrame(kProbe).substr(9);
  });
  if (!acked || error) ADD_FAILURE() << "the connection did not stay healthy";
  return acked && !error;
}

std::optional<ReadFrame> FrameConn::LastGoaway() const { return last_goaway_; }

std::optional<uint32_t> FrameConn::server_setting(uint16_t id) const {
  std::optional<uint32_t> value;
  for (const Setting& s : server_settings_) {
    if (s.id == id) value = s.value;
  }
  return value;
}

}  // namespace rill::test::h2
