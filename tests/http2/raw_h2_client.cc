#include "tests/http2/raw_h2_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rill::test {

std::optional<std::string> RawHeaderBlock::Get(std::string_view name) const {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::optional<std::string> RawStream::Header(std::string_view name) const {
  if (header_blocks.empty()) return std::nullopt;
  return header_blocks.front().Get(name);
}

std::optional<std::string> RawStream::Trailer(std::string_view name) const {
  if (header_blocks.empty() || !header_blocks.back().end_stream) return std::nullopt;
  return header_blocks.back().Get(name);
}

int RawStream::GrpcStatus() const {
  const std::optional<std::string> status = Trailer("grpc-status");
  if (!status || status->empty()) return -1;
  int value = 0;
  for (char c : *status) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

std::optional<std::vector<std::string>> RawStream::Messages() const {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < data.size()) {
    if (data.size() - at < 5) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(data.data() + at);
    const uint32_t length = (uint32_t{p[1]} << 24) | (uint32_t{p[2]} << 16) |
                            (uint32_t{p[3]} << 8) | uint32_t{p[4]};
    if (data.size() - at - 5 < length) return std::nullopt;
    out.emplace_back(data.substr(at + 5, length));
    at += 5 + length;
  }
  return out;
}

// nghttp2 callbacks: record what the server sends, feed DATA from the outbound queues.
struct RawH2Client::Callbacks {
  static RawH2Client* Self(void* user_data) { return static_cast<RawH2Client*>(user_data); }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    RawStream& s = Self(user_data)->streams_[frame->hd.stream_id];
    s.id = frame->hd.stream_id;
    s.header_blocks.emplace_back();
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                      size_t namelen, const uint8_t* value, size_t valuelen, uint8_t flags,
                      void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    RawStream& s = Self(user_data)->streams_[frame->hd.stream_id];
    if (s.header_blocks.empty()) s.header_blocks.emplace_back();
    RawHeaderBlock& block = s.header_blocks.back();
    block.fields.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                              std::string(reinterpret_cast<const char*>(value), valuelen));
    if ((flags & NGHTTP2_NV_FLAG_NO_INDEX) != 0) block.never_indexed.push_back(block.fields.back().first);
    return 0;
  }

  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    RawH2Client* self = Self(user_data);
    const int32_t id = frame->hd.stream_id;
    const bool end_stream = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS: {
        RawStream& s = self->streams_[id];
        if (!s.header_blocks.empty()) s.header_blocks.back().end_stream = end_stream;
        if (end_stream) s.remote_end = true;
        break;
      }
      case NGHTTP2_DATA: {
        RawStream& s = self->streams_[id];
        ++s.data_frames;
        if (end_stream) s.remote_end = true;
        break;
      }
      case NGHTTP2_RST_STREAM:
        self->streams_[id].rst_received = frame->rst_stream.error_code;
        break;
      case NGHTTP2_GOAWAY:
        self->goaway_error_ = frame->goaway.error_code;
        self->goaway_last_stream_ = frame->goaway.last_stream_id;
        self->goaways_.push_back(
            {frame->goaway.last_stream_id, frame->goaway.error_code,
             std::string(reinterpret_cast<const char*>(frame->goaway.opaque_data),
                         frame->goaway.opaque_data_len)});
        break;
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
          for (size_t i = 0; i < frame->settings.niv; ++i) {
            self->server_settings_[frame->settings.iv[i].settings_id] =
                frame->settings.iv[i].value;
          }
        }
        break;
      case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) {
          ++self->pings_acked_;
        } else {
          ++self->pings_received_;
          // A PING after a GOAWAY: the server's two-step shutdown.
          if (!self->goaways_.empty()) self->goaways_.back().ping_followed = true;
        }
        break;
      default:
        break;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session*, uint8_t /*flags*/, int32_t stream_id,
                         const uint8_t* data, size_t len, void* user_data) {
    Self(user_data)->streams_[stream_id].data.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t stream_id, uint32_t error_code,
                           void* user_data) {
    RawStream& s = Self(user_data)->streams_[stream_id];
    s.id = stream_id;
    s.closed = true;
    s.close_error = error_code;
    return 0;
  }

  static ssize_t ReadData(nghttp2_session* session, int32_t stream_id, uint8_t* buf,
                          size_t length, uint32_t* data_flags, nghttp2_data_source* /*source*/,
                          void* user_data) {
    RawH2Client* self = Self(user_data);
    Outbound& out = self->outbound_[stream_id];
    const size_t n = std::min(length, out.pending.size());
    std::memcpy(buf, out.pending.data(), n);
    out.pending.erase(0, n);
    if (out.pending.empty()) {
      if (out.end_requested) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        if (out.trailers) {
          *data_flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
          std::vector<nghttp2_nv> nva;
          for (const RawHeader& h : *out.trailers) {
            nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(h.name.data())),
                           reinterpret_cast<uint8_t*>(const_cast<char*>(h.value.data())),
                           h.name.size(), h.value.size(), h.flags});
          }
          nghttp2_submit_trailer(session, stream_id, nva.data(), nva.size());
        }
      } else if (n == 0) {
        out.deferred = true;
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }
};

namespace {

std::vector<nghttp2_nv> ToNv(const RawHeaderList& headers) {
  std::vector<nghttp2_nv> nva;
  nva.reserve(headers.size());
  for (const RawHeader& h : headers) {
    nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(h.name.data())),
                   reinterpret_cast<uint8_t*>(const_cast<char*>(h.value.data())), h.name.size(),
                   h.value.size(), h.flags});
  }
  return nva;
}

}  // namespace

RawH2Client::RawH2Client(int fd, Options options) : fd_(fd), options_(options) {}

RawH2Client::~RawH2Client() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  if (fd_ >= 0) ::close(fd_);
}

std::unique_ptr<RawH2Client> RawH2Client::Connect(const std::string& host, int port) {
  return Connect(host, port, Options());
}

std::unique_ptr<RawH2Client> RawH2Client::Connect(const std::string& host, int port,
                                                  Options options) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "cannot connect to " << host << ":" << port << ": " << std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::unique_ptr<RawH2Client> client(new RawH2Client(fd, options));
  if (!client->Init()) return nullptr;
  return client;
}

std::unique_ptr<RawH2Client> RawH2Client::ConnectUnix(const std::string& path) {
  return ConnectUnix(path, Options());
}

std::unique_ptr<RawH2Client> RawH2Client::ConnectUnix(const std::string& path, Options options) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    ADD_FAILURE() << "cannot connect to unix:" << path << ": " << std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return nullptr;
  }
  std::unique_ptr<RawH2Client> client(new RawH2Client(fd, options));
  if (!client->Init()) return nullptr;
  return client;
}

bool RawH2Client::Init() {
  if (!options_.send_preface) return true;  // a bare socket: the peer gets nothing
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_header_callback(cbs, Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, Callbacks::OnStreamClose);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // Report what the server sends as it is, without nghttp2's HTTP semantics checks.
  nghttp2_option_set_no_http_messaging(opt, 1);
  nghttp2_option_set_max_send_header_block_length(opt, options_.max_send_header_block);
  const int rv = nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) {
    ADD_FAILURE() << "nghttp2_session_client_new2: " << nghttp2_strerror(rv);
    return false;
  }
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.initial_window},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, 2);
  if (options_.initial_window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<int32_t>(options_.initial_window));
  }
  Flush();
  return true;
}

int32_t RawH2Client::OpenStream(const RawHeaderList& headers, bool end_stream) {
  std::vector<nghttp2_nv> nva = ToNv(headers);
  int32_t id;
  if (end_stream) {
    id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
  } else {
    nghttp2_data_provider provider{};
    provider.read_callback = Callbacks::ReadData;
    id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
  }
  if (id > 0) {
    streams_[id].id = id;
    if (!end_stream) outbound_[id];
  }
  Flush();
  return id;
}

void RawH2Client::SendData(int32_t stream_id, std::string_view bytes, bool end_stream) {
  Outbound& out = outbound_[stream_id];
  if (out.end_requested) return;
  out.pending.append(bytes);
  out.end_requested = end_stream;
  if (out.deferred) {
    out.deferred = false;
    nghttp2_session_resume_data(session_, stream_id);
  }
  Flush();
}

void RawH2Client::SendTrailers(int32_t stream_id, const RawHeaderList& trailers) {
  Outbound& out = outbound_[stream_id];
  out.trailers = trailers;
  SendData(stream_id, {}, true);
}

void RawH2Client::Reset(int32_t stream_id, uint32_t error_code) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, error_code);
  Flush();
}

void RawH2Client::Ping() {
  nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
  Flush();
}

void RawH2Client::SendRawBytes(std::string_view bytes) {
  Flush();
  WriteAll(bytes);
}

void RawH2Client::WriteAll(std::string_view bytes) {
  while (!bytes.empty() && !disconnected_) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      // The server closed while we were still sending (a reset, typically). What it sent
      // before (a GOAWAY saying why) may still wait in the receive queue: read it first.
      while (!disconnected_ && ReadOnce(0)) {
      }
      disconnected_ = true;
      return;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void RawH2Client::Flush() {
  if (session_ == nullptr || disconnected_) return;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t len = nghttp2_session_mem_send(session_, &data);
    if (len < 0) {
      session_error_ = nghttp2_strerror(static_cast<int>(len));
      return;
    }
    if (len == 0) return;
    WriteAll(std::string_view(reinterpret_cast<const char*>(data), static_cast<size_t>(len)));
  }
}

bool RawH2Client::ReadOnce(int timeout_ms) {
  pollfd pfd{fd_, POLLIN, 0};
  const int ready = ::poll(&pfd, 1, timeout_ms);
  if (ready <= 0) return false;
  char buf[64 * 1024];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    disconnected_ = true;
    return true;
  }
  if (session_ == nullptr) return true;  // a bare socket: bytes are discarded
  const ssize_t rv =
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf),
                               static_cast<size_t>(n));
  if (rv < 0) session_error_ = nghttp2_strerror(static_cast<int>(rv));
  return true;
}

bool RawH2Client::RunUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    Flush();
    if (done()) return true;
    if (disconnected_) return done();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return done();
    ReadOnce(static_cast<int>(std::min<int64_t>(left.count(), 100)));
  }
}

bool RawH2Client::WaitForClose(int32_t stream_id, std::chrono::milliseconds timeout) {
  return RunUntil([this, stream_id] { return streams_[stream_id].closed; }, timeout);
}

bool RawH2Client::WaitForDisconnect(std::chrono::milliseconds timeout) {
  return RunUntil([this] { return disconnected_; }, timeout);
}

const RawStream& RawH2Client::stream(int32_t stream_id) { return streams_[stream_id]; }

RawHeaderList GrpcRequestHeaders(std::string path, const RawHeaderList& extra) {
  RawHeaderList headers = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", std::move(path)},
      {":authority", "localhost"},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
  };
  headers.insert(headers.end(), extra.begin(), extra.end());
  return headers;
}

RawHeaderList WithoutHeader(RawHeaderList headers, std::string_view name) {
  std::erase_if(headers, [name](const RawHeader& h) { return h.name == name; });
  return headers;
}

RawHeaderList WithHeader(RawHeaderList headers, std::string_view name, std::string value) {
  bool found = false;
  for (RawHeader& h : headers) {
    if (h.name == name) {
      h.value = value;
      found = true;
    }
  }
  if (!found) headers.push_back({std::string(name), std::move(value)});
  return headers;
}

std::string GrpcPrefix(uint8_t flag, uint32_t length) {
  std::string prefix(5, '\0');
  prefix[0] = static_cast<char>(flag);
  prefix[1] = static_cast<char>(length >> 24);
  prefix[2] = static_cast<char>(length >> 16);
  prefix[3] = static_cast<char>(length >> 8);
  prefix[4] = static_cast<char>(length);
  return prefix;
}

std::string GrpcMessage(std::string_view body, uint8_t flag) {
  return GrpcPrefix(flag, static_cast<uint32_t>(body.size())) + std::string(body);
}

}  // namespace rill::test
