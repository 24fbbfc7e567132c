#include "tests/testing/streamer.h"

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <charconv>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/compression.h"
#include "rill/detail/check.h"
#include "rill/prepared_message.h"
#include "rill/server_context.h"

namespace rill::test {

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

void ExpectSourceStream(st::Streamer::Stub& stub, uint64_t count, size_t size, st::Chunk& chunk) {
  st::SourceRequest request;
  request.set_count(count);
  request.set_size(size);
  ClientContext ctx;
  auto reader = stub.Source(ctx, request);
  uint64_t received = 0;
  while (reader->BlockingRead(&chunk)) {
    ASSERT_TRUE(IsChunk(chunk, received, size)) << "chunk " << received;
    ++received;
  }
  EXPECT_EQ(received, count);
  const Status status = reader->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
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

std::vector<HandlerOutcome> StreamerService::outcomes() const {
  std::lock_guard lock(mu_);
  return outcomes_;
}

size_t StreamerService::finished() const {
  std::lock_guard lock(mu_);
  return outcomes_.size();
}

st::SourceRequest MakeSource(uint64_t count, uint32_t size) {
  st::SourceRequest request;
  request.set_count(count);
  request.set_size(size);
  return request;
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
  TestServerSetup setup;
  setup.services.push_back(&service_);
  setup.options = config.server;
  setup.pool = &server_pool_;
  server_ = TestServer::Start(Transport::kTcp, setup);
  if (server_ == nullptr) return;
  config.channel.reactors = &client_reactors_;
  config.channel.buffer_pool = &client_pool_;
  channel_ = server_->NewChannel(std::move(config.channel));
  if (channel_ == nullptr) return;
  if (!channel_->WaitForConnected(std::chrono::steady_clock::now() + kMustComplete)) {
    ADD_FAILURE() << "the channel did not connect";
    return;
  }
  stub_ = std::make_unique<st::Streamer::Stub>(channel_);
}

StreamingEnv::~StreamingEnv() { Stop(); }

void StreamingEnv::ExpectHandlerEnded(HandlerEnd end) {
  ASSERT_TRUE(service_.WaitForFinished(1));
  const HandlerOutcome outcome = service_.outcomes().at(0);
  EXPECT_EQ(outcome.end, end);
  EXPECT_TRUE(outcome.cancelled);
}

void StreamingEnv::ExpectServerPoolDrains() {
  EXPECT_TRUE(WaitUntil([&] { return server_pool_.bytes_out() == 0; }))
      << server_pool_.bytes_out() << " bytes still out on the server";
}

void StreamingEnv::Stop() {
  stub_.reset();
  channel_.reset();
  if (server_ != nullptr) {
    server_->StopNow();
    server_.reset();
  }
}

}  // namespace rill::test
