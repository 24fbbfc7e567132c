#include "tests/testing/raw_http2_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rill::test {

namespace {

void AppendFrameHeader(std::string& out, size_t length, uint8_t type, uint8_t flags,
                       int32_t stream_id) {
  out.push_back(static_cast<char>((length >> 16) & 0xFF));
  out.push_back(static_cast<char>((length >> 8) & 0xFF));
  out.push_back(static_cast<char>(length & 0xFF));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  const auto id = static_cast<uint32_t>(stream_id) & 0x7FFFFFFF;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(id >> shift));
}

void AppendU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

}  // namespace

RawHttp2Client::RawHttp2Client() {
  nghttp2_hd_deflater* deflater = nullptr;
  nghttp2_hd_inflater* inflater = nullptr;
  if (nghttp2_hd_deflate_new(&deflater, 4096) != 0 || nghttp2_hd_inflate_new(&inflater) != 0) {
    ADD_FAILURE() << "cannot make an HPACK codec";
  }
  deflater_ = deflater;
  inflater_ = inflater;
}

RawHttp2Client::~RawHttp2Client() {
  Close();
  if (deflater_ != nullptr) nghttp2_hd_deflate_del(static_cast<nghttp2_hd_deflater*>(deflater_));
  if (inflater_ != nullptr) nghttp2_hd_inflate_del(static_cast<nghttp2_hd_inflater*>(inflater_));
}

bool RawHttp2Client::Connect(int port, int receive_buffer) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return false;
  if (receive_buffer > 0) {
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
}

bool RawHttp2Client::SendFrame(uint8_t type, uint8_t flags, int32_t stream_id,
                               std::string_view payload) {
  std::string frame;
  AppendFrameHeader(frame, payload.size(), type, flags, stream_id);
  frame.append(payload);
  size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = ::send(fd_, frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool RawHttp2Client::SendPreface(const std::vector<std::pair<uint16_t, uint32_t>>& settings) {
  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (::send(fd_, kPreface.data(), kPreface.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(kPreface.size())) {
    return false;
  }
  std::string payload;
  for (const auto& [id, value] : settings) {
    payload.push_back(static_cast<char>(id >> 8));
    payload.push_back(static_cast<char>(id & 0xFF));
    AppendU32(payload, value);
  }
  return SendFrame(kSettings, 0, 0, payload);
}

bool RawHttp2Client::SendHeaders(int32_t stream_id,
                                 const std::vector<std::pair<std::string, std::string>>& headers,
                                 bool end_stream) {
  std::vector<nghttp2_nv> nva;
  for (const auto& [name, value] : headers) {
    nva.push_back(nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                             reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())),
                             name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  auto* deflater = static_cast<nghttp2_hd_deflater*>(deflater_);
  std::string block(nghttp2_hd_deflate_bound(deflater, nva.data(), nva.size()), '\0');
  const ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(block.data()),
                                          block.size(), nva.data(), nva.size());
  if (n < 0) return false;
  block.resize(static_cast<size_t>(n));
  return SendFrame(kHeaders, kFlagEndHeaders | (end_stream ? kFlagEndStream : 0), stream_id, block);
}

bool RawHttp2Client::SendWindowUpdate(int32_t stream_id, uint32_t increment) {
  std::string payload;
  AppendU32(payload, increment & 0x7FFFFFFF);
  return SendFrame(kWindowUpdate, 0, stream_id, payload);
}

bool RawHttp2Client::SendGrpcMessage(int32_t stream_id, std::string_view message, bool end_stream) {
  std::string payload;
  payload.push_back('\0');
  AppendU32(payload, static_cast<uint32_t>(message.size()));
  payload.append(message);
  return SendFrame(kData, end_stream ? kFlagEndStream : 0, stream_id, payload);
}

const std::vector<RawHttp2Client::Frame>& RawHttp2Client::ReadFrames(
    std::chrono::milliseconds limit, const std::function<bool(const std::vector<Frame>&)>& done) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!eof_ && !done(frames_)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 50)));
    if (ready <= 0) continue;
    char buf[64 * 1024];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      eof_ = true;  // reset by the peer counts as closed
      break;
    }
    if (n == 0) {
      eof_ = true;
      break;
    }
    in_.append(buf, static_cast<size_t>(n));
    while (in_.size() >= 9) {
      const auto* b = reinterpret_cast<const uint8_t*>(in_.data());
      const size_t length = (size_t{b[0]} << 16) | (size_t{b[1]} << 8) | b[2];
      if (in_.size() < 9 + length) break;
      Frame frame;
      frame.type = b[3];
      frame.flags = b[4];
      frame.stream_id = static_cast<int32_t>(
          ((uint32_t{b[5]} << 24) | (uint32_t{b[6]} << 16) | (uint32_t{b[7]} << 8) | b[8]) &
          0x7FFFFFFF);
      frame.payload = in_.substr(9, length);
      in_.erase(0, 9 + length);
      frames_.push_back(std::move(frame));
    }
  }
  return frames_;
}

std::vector<std::pair<std::string, std::string>> RawHttp2Client::DecodeHeaders(const Frame& frame) {
  std::vector<std::pair<std::string, std::string>> fields;
  auto* inflater = static_cast<nghttp2_hd_inflater*>(inflater_);
  const auto* in = reinterpret_cast<const uint8_t*>(frame.payload.data());
  size_t left = frame.payload.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, /*in_final=*/1);
    if (n < 0) {
      ADD_FAILURE() << "HPACK decoding failed: " << nghttp2_strerror(static_cast<int>(n));
      break;
    }
    in += n;
    left -= static_cast<size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      fields.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                          std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater);
      break;
    }
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
  }
  return fields;
}

void RawHttp2Client::Close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace rill::test
