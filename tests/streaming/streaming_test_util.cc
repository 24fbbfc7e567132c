#include "tests/streaming/streaming_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <system_error>
#include <thread>

#include "rill/compression.h"
#include "rill/detail/check.h"
#include "rill/server_context.h"

namespace rill::test {

// ---------------------------------------------------------------------------------------------
// PeakPool

detail::BlockHeader* PeakPool::AllocateBlock(size_t size) {
  detail::BlockHeader* block = inner_.AllocateBlock(size);
  block->pool = this;
  std::lock_guard lock(mu_);
  ++blocks_out_;
  bytes_out_ += block->capacity;
  peak_bytes_out_ = std::max(peak_bytes_out_, bytes_out_);
  largest_block_ = std::max(largest_block_, size);
  return block;
}

void PeakPool::ReleaseBlock(detail::BlockHeader* block) noexcept {
  {
    std::lock_guard lock(mu_);
    --blocks_out_;
    bytes_out_ -= block->capacity;
  }
  block->pool = &inner_;
  inner_.ReleaseBlock(block);
}

BufferPoolStats PeakPool::Stats() const {
  BufferPoolStats stats = inner_.Stats();
  std::lock_guard lock(mu_);
  stats.blocks_out = blocks_out_;
  stats.bytes_out = bytes_out_;
  return stats;
}

void PeakPool::ResetPeak() {
  std::lock_guard lock(mu_);
  peak_bytes_out_ = bytes_out_;
  largest_block_ = 0;
}

size_t PeakPool::peak_bytes_out() const {
  std::lock_guard lock(mu_);
  return peak_bytes_out_;
}

size_t PeakPool::bytes_out() const {
  std::lock_guard lock(mu_);
  return bytes_out_;
}

size_t PeakPool::largest_block() const {
  std::lock_guard lock(mu_);
  return largest_block_;
}

size_t PeakPool::blocks_out() const {
  std::lock_guard lock(mu_);
  return blocks_out_;
}

// ---------------------------------------------------------------------------------------------
// Chunks

namespace {

// The pattern behind every chunk: chunk `seq` is Pattern()[seq % 251, +size). 251 is prime, so
// neighbouring chunks differ at every byte.
constexpr size_t kPatternPeriod = 251;

const std::string& Pattern(size_t size) {
  static std::mutex mu;
  static std::string pattern;
  std::lock_guard lock(mu);
  if (pattern.size() < size + kPatternPeriod) {
    pattern.resize(size + kPatternPeriod);
    for (size_t i = 0; i < pattern.size(); ++i) {
      pattern[i] = static_cast<char>((i * 131 + (i >> 8)) & 0xFF);
    }
  }
  return pattern;
}

}  // namespace

std::string ChunkData(uint64_t seq, size_t size) {
  return Pattern(size).substr(seq % kPatternPeriod, size);
}

void MakeChunk(uint64_t seq, size_t size, st::Chunk& chunk) {
  chunk.set_seq(seq);
  const std::string& pattern = Pattern(size);
  chunk.mutable_data()->assign(pattern.data() + seq % kPatternPeriod, size);
}

bool IsChunk(const st::Chunk& chunk, uint64_t seq, size_t size) {
  if (chunk.seq() != seq || chunk.data().size() != size) return false;
  const std::string& pattern = Pattern(size);
  return std::memcmp(chunk.data().data(), pattern.data() + seq % kPatternPeriod, size) == 0;
}

// ---------------------------------------------------------------------------------------------
// StreamerService

namespace {

// Waits `delay` on the call's reactor. False when the wait was aborted (the call was cancelled
// while it waited; a wait that starts after that runs its course).
Awaitable<bool> Pause(asio::io_context& io, std::chrono::milliseconds delay) {
  asio::steady_timer timer(io, delay);
  asio::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return !ec;
}

uint64_t MetadataNumber(const ServerContext& context, std::string_view key) {
  const auto value = context.client_metadata().Get(key);
  uint64_t n = 0;
  if (value) std::from_chars(value->data(), value->data() + value->size(), n);
  return n;
}

}  // namespace

namespace {

// Chunk 0 prepared once, when the request asks for that.
std::optional<PreparedMessage> PrepareChunk(const st::SourceRequest& request) {
  if (!request.prepared()) return std::nullopt;
  st::Chunk chunk;
  MakeChunk(0, request.size(), chunk);
  StatusOr<PreparedMessage> made = request.prepared_encoding() == "gzip"
                                       ? PreparedMessage::Create(chunk, *GzipCompressor())
                                       : PreparedMessage::Create(chunk);
  RILL_CHECK_MSG(made.ok(), "preparing a chunk failed");
  return std::move(*made);
}

}  // namespace

Awaitable<Status> StreamerService::Source(ServerContext& context, const st::SourceRequest& request,
                                          ServerWriter<st::Chunk>& writer) {
  started.fetch_add(1);
  HandlerOutcome outcome;
  outcome.method = "Source";
  outcome.peer = std::string(context.peer());
  Status result;
  st::Chunk chunk;
  std::optional<PreparedMessage> prepared = PrepareChunk(request);
  try {
    for (uint64_t i = 0; request.count() == 0 || i < request.count(); ++i) {
      if (request.fail_after() != 0 && i == request.fail_after()) {
        if (request.fail_delay_ms() > 0 &&
            !co_await Pause(context.io_context(),
                            std::chrono::milliseconds(request.fail_delay_ms()))) {
          outcome.end = HandlerEnd::kTimerAborted;
          break;
        }
        outcome.end = HandlerEnd::kFailedOnPurpose;
        result = Status(StatusCodeFromInt(request.fail_code()),
                        "source failed on purpose after " + std::to_string(i) + " chunks");
        break;
      }
      if (!prepared) MakeChunk(i, request.size(), chunk);
      in_write.fetch_add(1);
      bool ok;
      if (prepared) {
        ok = co_await writer.Write(*prepared);
      } else {
        ok = co_await writer.Write(chunk);
      }
      in_write.fetch_sub(1);
      if (!ok) {
        outcome.end = HandlerEnd::kWriteFalse;
        break;
      }
      ++outcome.writes;
      total_writes.fetch_add(1);
      if (request.interval_ms() > 0 &&
          !co_await Pause(context.io_context(), std::chrono::milliseconds(request.interval_ms()))) {
        outcome.end = HandlerEnd::kTimerAborted;
        break;
      }
    }
  } catch (const std::system_error&) {
    outcome.end = HandlerEnd::kThrew;
  }
  outcome.cancelled = context.IsCancelled();
  if (outcome.end == HandlerEnd::kWriteFalse || outcome.end == HandlerEnd::kTimerAborted ||
      outcome.end == HandlerEnd::kThrew) {
    result = Status(StatusCode::kCancelled, "source stopped");
  }
  Record(std::move(outcome));
  co_return result;
}

Awaitable<Status> StreamerService::Sink(ServerContext& context, ServerReader<st::Chunk>& reader,
                                        st::SinkReply& reply) {
  started.fetch_add(1);
  HandlerOutcome outcome;
  outcome.method = "Sink";
  outcome.peer = std::string(context.peer());
  st::Chunk chunk;
  uint64_t bytes = 0;
  bool in_order = true;
  bool threw = false;
  try {
    for (;;) {
      in_read.fetch_add(1);
      const bool ok = co_await reader.Read(&chunk);
      in_read.fetch_sub(1);
      if (!ok) break;
      if (chunk.seq() != outcome.reads) in_order = false;
      ++outcome.reads;
      bytes += chunk.data().size();
    }
  } catch (const std::system_error&) {
    threw = true;
  }
  outcome.cancelled = context.IsCancelled();
  outcome.end = threw               ? HandlerEnd::kThrew
                : outcome.cancelled ? HandlerEnd::kReadFalse
                                    : HandlerEnd::kCompleted;
  reply.set_count(outcome.reads);
  reply.set_bytes(bytes);
  Record(std::move(outcome));
  if (!in_order) co_return Status(StatusCode::kDataLoss, "chunks arrived out of order");
  co_return Status();
}

Awaitable<Status> StreamerService::Echo(ServerContext& context,
                                        ServerReaderWriter<st::Chunk, st::Chunk>& stream) {
  started.fetch_add(1);
  HandlerOutcome outcome;
  outcome.method = "Echo";
  outcome.peer = std::string(context.peer());
  const uint64_t fail_after = MetadataNumber(context, "x-fail-after");
  const uint64_t fail_delay_ms = MetadataNumber(context, "x-fail-delay-ms");
  Status result;
  st::Chunk chunk;
  try {
    for (;;) {
      if (fail_after != 0 && outcome.reads == fail_after) {
        if (fail_delay_ms > 0 &&
            !co_await Pause(context.io_context(), std::chrono::milliseconds(fail_delay_ms))) {
          outcome.end = HandlerEnd::kTimerAborted;
          break;
        }
        outcome.end = HandlerEnd::kFailedOnPurpose;
        result = Status(StatusCode::kAborted,
                        "echo failed on purpose after " + std::to_string(fail_after) + " chunks");
        break;
      }
      in_read.fetch_add(1);
      bool ok = co_await stream.Read(&chunk);
      in_read.fetch_sub(1);
      if (!ok) {
        outcome.end = context.IsCancelled() ? HandlerEnd::kReadFalse : HandlerEnd::kCompleted;
        break;
      }
      ++outcome.reads;
      in_write.fetch_add(1);
      ok = co_await stream.Write(chunk);
      in_write.fetch_sub(1);
      if (!ok) {
        outcome.end = HandlerEnd::kWriteFalse;
        break;
      }
      ++outcome.writes;
      total_writes.fetch_add(1);
    }
  } catch (const std::system_error&) {
    outcome.end = HandlerEnd::kThrew;
  }
  outcome.cancelled = context.IsCancelled();
  if (outcome.end != HandlerEnd::kCompleted && outcome.end != HandlerEnd::kFailedOnPurpose) {
    result = Status(StatusCode::kCancelled, "echo stopped");
  }
  Record(std::move(outcome));
  co_return result;
}

void StreamerService::Record(HandlerOutcome outcome) {
  std::lock_guard lock(mu_);
  outcomes_.push_back(std::move(outcome));
  cv_.notify_all();
}

bool StreamerService::WaitForFinished(size_t count) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, kMustComplete, [&] { return outcomes_.size() >= count; });
}

bool StreamerService::WaitUntil(const std::function<bool()>& predicate,
                                std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::vector<HandlerOutcome> StreamerService::outcomes() const {
  std::lock_guard lock(mu_);
  return outcomes_;
}

size_t StreamerService::finished() const {
  std::lock_guard lock(mu_);
  return outcomes_.size();
}

bool WaitParked(const std::atomic<int>& counter, const std::atomic<uint64_t>& progress,
                std::chrono::milliseconds quiet) {
  for (const auto give_up = std::chrono::steady_clock::now() + kMustComplete;
       std::chrono::steady_clock::now() < give_up;) {
    const uint64_t before = progress.load();
    if (counter.load() > 0) {
      std::this_thread::sleep_for(quiet);
      if (counter.load() > 0 && progress.load() == before) return true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// StreamingEnv

StreamingEnv::StreamingEnv(Config config)
    : server_pool_(config.pool != nullptr ? *config.pool : DefaultBufferPool()),
      client_pool_(config.pool != nullptr ? *config.pool : DefaultBufferPool()),
      client_reactors_(ReactorPool::Options{.threads = 1, .cpus = {}}) {
  ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", &port_)
      .RegisterService(&service_)
      .SetOptions(config.server)
      .SetReactorCount(1)
      .SetBufferPool(&server_pool_);
  auto server = builder.Build();
  if (!server.ok()) {
    ADD_FAILURE() << "cannot start the server: " << server.status();
    return;
  }
  server_ = std::move(*server);
  config.channel.reactors = &client_reactors_;
  config.channel.buffer_pool = &client_pool_;
  auto channel = Channel::Create("127.0.0.1:" + std::to_string(port_), std::move(config.channel));
  if (!channel.ok()) {
    ADD_FAILURE() << "cannot create the channel: " << channel.status();
    return;
  }
  channel_ = std::move(*channel);
  if (!channel_->WaitForConnected(std::chrono::steady_clock::now() + kMustComplete)) {
    ADD_FAILURE() << "the channel did not connect";
    return;
  }
  stub_ = std::make_unique<st::Streamer::Stub>(channel_);
}

StreamingEnv::~StreamingEnv() { Stop(); }

void StreamingEnv::Stop() {
  stub_.reset();
  channel_.reset();
  if (server_ != nullptr) {
    server_->ShutdownNow();
    server_.reset();
  }
}

// ---------------------------------------------------------------------------------------------
// RawHttp2Client

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
