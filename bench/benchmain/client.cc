#include "bench/benchmain/client.h"

#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <atomic>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <random>
#include <string_view>
#include <thread>
#include <utility>

#include "bench/benchmain/benchmark_service.h"
#include "bench/benchmain/message_arena.h"
#include "bench/benchmain/nop_compressor.h"
#include "bench/stats/go_format.h"

namespace rill::bench {
namespace {

using Clock = std::chrono::steady_clock;
using grpc::testing::BenchmarkService;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using Stream = rill::ClientReaderWriter<SimpleRequest, SimpleResponse>;

constexpr int kWarmupCallCount = 10;                            // grpc-go's warmupCallCount
constexpr auto kUnconstrainedWarmup = std::chrono::seconds(1);  // grpc-go's warmuptime
constexpr auto kConnectTimeout = std::chrono::seconds(10);

void ApplyCompression(rill::ClientContext& context, std::string_view compression) {
  if (!compression.empty()) context.set_compression(compression);
}

// The preloader's request metadata: the server prepares its response of this size once.
void AskForPreload(rill::ClientContext& context, const WorkloadParams& params) {
  context.AddMetadata(kPreloadMsgSizeHeader, std::to_string(params.resp_size));
}

// Workers spawned for one phase of a workload, the first failure among them, and the latch the
// calling thread waits on until every one has finished.
class TaskGroup {
 public:
  explicit TaskGroup(std::size_t tasks) : latch_(static_cast<std::ptrdiff_t>(tasks)) {}

  template <typename Task>
  void Spawn(asio::io_context& reactor, Task task) {
    asio::co_spawn(reactor, std::move(task), [this](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          Fail(rill::Status(rill::StatusCode::kInternal, ex.what()));
        } catch (...) {
          Fail(rill::Status(rill::StatusCode::kInternal, "unknown exception"));
        }
      }
      latch_.count_down();
    });
  }

  void Fail(rill::Status status) {
    std::lock_guard lock(mu_);
    if (status_.ok()) status_ = std::move(status);
    failed_.store(true, std::memory_order_relaxed);
  }
  [[nodiscard]] bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // Blocks until every task finished, calling `tick` about every 10 ms meanwhile.
  rill::Status Wait(const std::function<void()>& tick) {
    for (int i = 1; !latch_.try_wait(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (tick && i % 10 == 0) tick();
    }
    std::lock_guard lock(mu_);
    return status_;
  }

 private:
  std::latch latch_;
  std::mutex mu_;
  rill::Status status_;
  std::atomic<bool> failed_{false};
};

// Sleeps on the calling thread until `deadline`, calling `tick` about every 10 ms.
void SleepUntil(Clock::time_point deadline, const std::function<void()>& tick) {
  while (true) {
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(10)));
    if (tick) tick();
  }
}

// A worker's random pause before each operation (-sleepBetweenRPCs).
class Pauser {
 public:
  Pauser(asio::any_io_executor executor, std::chrono::nanoseconds max)
      : max_(max), timer_(std::move(executor)), rng_(std::random_device{}()) {}

  [[nodiscard]] bool enabled() const { return max_.count() > 0; }
  rill::Awaitable<void> Pause() {
    std::uniform_int_distribution<std::int64_t> pause(0, max_.count() - 1);
    timer_.expires_after(std::chrono::nanoseconds(pause(rng_)));
    co_await timer_.async_wait(asio::use_awaitable);
  }

 private:
  std::chrono::nanoseconds max_;
  asio::steady_timer timer_;
  std::minstd_rand rng_;
};

// A counter written by one worker and read by the calling thread; padded so that workers on
// different reactors do not share a cache line.
struct alignas(64) OpCounter {
  std::atomic<std::uint64_t> value{0};
  void Increment() {
    value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t Get() const { return value.load(std::memory_order_relaxed); }
};

rill::Status CallFailed(std::string_view what, const rill::Status& status) {
  return rill::Status(status.code(), std::string(what) + ": " + status.ToString());
}

// --- unary ---------------------------------------------------------------------------------

// A unary worker's request, and its body as a payload when the run carries bodies outside
// protobuf (the message then has none).
struct UnaryRequest {
  explicit UnaryRequest(const WorkloadParams& params)
      : message(MakeRequest(params.payload_buffers ? 0 : params.req_size, params.resp_size)),
        body(params.payload_buffers ? ZeroPayload(static_cast<int>(params.req_size))
                                    : rill::BufferSlice()),
        payloads(params.payload_buffers) {}

  // Readies `context` for the next call.
  void Prepare(rill::ClientContext& context, const WorkloadParams& params) const {
    context.Reset();
    ApplyCompression(context, params.compression);
    if (payloads) {
      context.SetRequestPayload(kRequestBody, body.Ref());
      context.ReceivePayload(kResponseBody);
    }
  }

  SimpleRequest message;
  rill::BufferSlice body;
  bool payloads;
};

rill::Awaitable<void> UnaryWarmup(BenchmarkService::Stub* stub, WorkloadParams params,
                                  TaskGroup* group) {
  const UnaryRequest unary(params);
  const SimpleRequest& request = unary.message;
  MessageArena arena;
  rill::ClientContext context;
  for (int i = 0; i < kWarmupCallCount; ++i) {
    unary.Prepare(context, params);
    rill::Status status = co_await stub->UnaryCall(context, request, arena.Fresh<SimpleResponse>(),
                                                   asio::use_awaitable);
    if (!status.ok()) {
      group->Fail(CallFailed("warmup UnaryCall", status));
      co_return;
    }
  }
}

rill::Awaitable<void> UnaryWorker(BenchmarkService::Stub* stub, WorkloadParams params,
                                  LatencyRecorder* recorder, Clock::time_point end, OpCounter* ops,
                                  TaskGroup* group) {
  const UnaryRequest unary(params);
  const SimpleRequest& request = unary.message;
  MessageArena arena;
  rill::ClientContext context;
  Pauser pauser(co_await asio::this_coro::executor, params.sleep_between_rpcs);
  while (!group->failed()) {
    if (pauser.enabled()) co_await pauser.Pause();
    const Clock::time_point start = Clock::now();
    if (start > end) break;
    unary.Prepare(context, params);
    rill::Status status = co_await stub->UnaryCall(context, request, arena.Fresh<SimpleResponse>(),
                                                   asio::use_awaitable);
    const Clock::duration elapsed = Clock::now() - start;
    if (!status.ok()) {
      group->Fail(CallFailed("UnaryCall", status));
      break;
    }
    ops->Increment();
    recorder->Add(elapsed);
  }
}

// --- streaming -----------------------------------------------------------------------------

// One stream of a streaming or unconstrained run, with the context it needs throughout.
struct StreamSlot {
  rill::ClientContext context;
  std::unique_ptr<Stream> stream;
  asio::io_context* reactor = nullptr;
};

// Whether a stream's request and response bodies travel outside protobuf: with
// -payloadBuffers, unless the run sends a prepared (already serialized) request.
bool StreamPayloads(const WorkloadParams& params, const rill::PreparedMessage* prepared) {
  return params.payload_buffers && prepared == nullptr;
}

// The request every send of a stream worker writes: the message, or the run's prepared copy;
// with payloads, the message without its body and the body as one pooled buffer each send
// references.
struct StreamRequest {
  StreamRequest(const WorkloadParams& params, const rill::PreparedMessage* p)
      : payloads(StreamPayloads(params, p)),
        message(MakeRequest(payloads ? 0 : params.req_size, params.resp_size)),
        body(payloads ? ZeroPayload(static_cast<int>(params.req_size)) : rill::BufferSlice()),
        prepared(p) {}
  bool payloads;
  SimpleRequest message;
  rill::BufferSlice body;
  const rill::PreparedMessage* prepared;
};

rill::Awaitable<bool> Send(Stream* stream, rill::ClientContext* context,
                           const StreamRequest& request) {
  if (request.prepared != nullptr) return stream->Write(*request.prepared);
  if (request.payloads) context->SetRequestPayload(kRequestBody, request.body.Ref());
  return stream->Write(request.message);
}

rill::Awaitable<void> PingPongWarmup(StreamSlot* slot, WorkloadParams params,
                                     const rill::PreparedMessage* prepared, TaskGroup* group) {
  const StreamRequest request(params, prepared);
  Stream* stream = slot->stream.get();
  MessageArena arena;
  for (int i = 0; i < kWarmupCallCount; ++i) {
    if (!co_await Send(stream, &slot->context, request) ||
        !co_await stream->Read(arena.Fresh<SimpleResponse>())) {
      group->Fail(rill::Status(rill::StatusCode::kUnavailable, "warmup ping-pong: stream ended"));
      co_return;
    }
  }
}

rill::Awaitable<void> PingPongWorker(StreamSlot* slot, WorkloadParams params,
                                     const rill::PreparedMessage* prepared,
                                     LatencyRecorder* recorder, Clock::time_point end,
                                     OpCounter* ops, TaskGroup* group) {
  const StreamRequest request(params, prepared);
  Stream* stream = slot->stream.get();
  MessageArena arena;
  Pauser pauser(co_await asio::this_coro::executor, params.sleep_between_rpcs);
  while (!group->failed()) {
    if (pauser.enabled()) co_await pauser.Pause();
    const Clock::time_point start = Clock::now();
    if (start > end) break;
    if (!co_await Send(stream, &slot->context, request) ||
        !co_await stream->Read(arena.Fresh<SimpleResponse>())) {
      group->Fail(rill::Status(rill::StatusCode::kUnavailable, "ping-pong: stream ended"));
      break;
    }
    const Clock::duration elapsed = Clock::now() - start;
    ops->Increment();
    recorder->Add(elapsed);
  }
}

// Half-closes, drains and finishes a ping-pong stream; it must end OK.
rill::Awaitable<void> ClosePingPong(Stream* stream, TaskGroup* group) {
  co_await stream->WritesDone();
  SimpleResponse response;
  while (co_await stream->Read(&response)) {
  }
  rill::Status status = co_await stream->Finish();
  if (!status.ok()) group->Fail(CallFailed("StreamingCall", status));
}

// --- unconstrained -------------------------------------------------------------------------

rill::Awaitable<void> UnconstrainedSender(StreamSlot* slot, WorkloadParams params,
                                          const rill::PreparedMessage* prepared,
                                          Clock::time_point end, OpCounter* ops, TaskGroup* group) {
  const StreamRequest request(params, prepared);
  Stream* stream = slot->stream.get();
  Pauser pauser(co_await asio::this_coro::executor, params.sleep_between_rpcs);
  while (true) {
    if (pauser.enabled()) co_await pauser.Pause();
    if (Clock::now() > end) break;
    if (!co_await Send(stream, &slot->context, request)) {
      if (Clock::now() <= end) {
        group->Fail(
            rill::Status(rill::StatusCode::kUnavailable, "unconstrained send: stream ended"));
      }
      break;
    }
    ops->Increment();
  }
}

rill::Awaitable<void> UnconstrainedReceiver(Stream* stream, Clock::time_point end, OpCounter* ops,
                                            TaskGroup* group) {
  MessageArena arena;
  while (Clock::now() <= end) {
    if (!co_await stream->Read(arena.Fresh<SimpleResponse>())) {
      if (Clock::now() <= end) {
        group->Fail(
            rill::Status(rill::StatusCode::kUnavailable, "unconstrained receive: stream ended"));
      }
      break;
    }
    ops->Increment();
  }
}

rill::Awaitable<void> FinishCancelled(Stream* stream) {
  // The status is CANCELLED: the client cancelled the stream.
  (void)co_await stream->Finish();
}

}  // namespace

struct BenchmarkClient::Connection {
  Connection(std::shared_ptr<rill::Channel> ch, std::vector<asio::io_context*> r)
      : channel(ch), stub(std::move(ch)), reactor(r.front()), reactors(std::move(r)) {}
  // Where worker `pos` of this channel runs: its shards' reactors in turn.
  [[nodiscard]] asio::io_context* ReactorFor(std::int64_t pos) const {
    return reactors[static_cast<std::size_t>(pos) % reactors.size()];
  }
  std::shared_ptr<rill::Channel> channel;
  BenchmarkService::Stub stub;
  asio::io_context* reactor;               // the first shard's
  std::vector<asio::io_context*> reactors;  // one per shard
};

SimpleRequest MakeRequest(std::int64_t req_size, std::int64_t resp_size) {
  SimpleRequest request;
  request.set_response_type(grpc::testing::COMPRESSABLE);
  request.set_response_size(static_cast<std::int32_t>(resp_size));
  request.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  request.mutable_payload()->mutable_body()->assign(static_cast<std::size_t>(req_size), '\0');
  return request;
}

BenchmarkClient::BenchmarkClient() = default;

rill::StatusOr<std::optional<rill::PreparedMessage>> BenchmarkClient::PrepareRequest(
    const WorkloadParams& params) const {
  if (!params.preloader) return std::optional<rill::PreparedMessage>();
  const SimpleRequest request = MakeRequest(params.req_size, params.resp_size);
  std::shared_ptr<rill::Compressor> compressor;
  if (!params.compression.empty()) {
    compressor = BenchCompressor(params.compression);
    if (!compressor) {
      return rill::Status(rill::StatusCode::kInvalidArgument,
                          "no compressor named " + params.compression);
    }
  }
  rill::StatusOr<rill::PreparedMessage> prepared =
      compressor ? rill::PreparedMessage::Create(request, *compressor)
                 : rill::PreparedMessage::Create(request);
  if (!prepared.ok()) return prepared.status();
  return std::optional<rill::PreparedMessage>(std::move(*prepared));
}

BenchmarkClient::~BenchmarkClient() = default;

rill::StatusOr<std::unique_ptr<BenchmarkClient>> BenchmarkClient::Connect(
    const ClientOptions& options) {
  std::unique_ptr<BenchmarkClient> client(new BenchmarkClient());
  for (int i = 0; i < options.connections; ++i) {
    rill::ChannelOptions channel_options;
    channel_options.reactors = options.reactors;
    channel_options.buffer_pool = options.buffer_pool;
    if (options.read_block_size > 0) channel_options.read_block_size = options.read_block_size;
    if (options.write_buffer_size >= 0) {
      channel_options.write_buffer_size = static_cast<std::size_t>(options.write_buffer_size);
    }
    if (options.extra_compressor) channel_options.compressors.push_back(options.extra_compressor);
    if (!options.lb_policy.empty()) channel_options.load_balancing_policy = options.lb_policy;
    channel_options.reactor_shards = options.channel_shards;
    if (options.keepalive) {
      channel_options.keepalive_time = std::chrono::seconds(10);
      channel_options.keepalive_timeout = std::chrono::seconds(1);
      channel_options.keepalive_without_calls = true;
    }
    rill::StatusOr<std::shared_ptr<rill::Channel>> channel =
        options.in_process_server != nullptr
            ? rill::StatusOr<std::shared_ptr<rill::Channel>>(
                  options.in_process_server->InProcessChannel(channel_options))
            : rill::Channel::Create(options.target, options.credentials, channel_options);
    if (!channel.ok()) return channel.status();
    if (!(*channel)->WaitForConnected(Clock::now() + kConnectTimeout)) {
      return rill::Status(rill::StatusCode::kUnavailable, "cannot connect to " + options.target);
    }
    const std::size_t pool_size = options.reactors->size();
    std::size_t shards = options.channel_shards == 0 ? pool_size : options.channel_shards;
    if (options.in_process_server != nullptr) shards = 1;  // in-process channels have one
    std::vector<asio::io_context*> reactors;
    for (std::size_t s = 0; s < std::min(shards, pool_size); ++s) {
      reactors.push_back(&options.reactors->reactor((static_cast<std::size_t>(i) + s) % pool_size));
    }
    client->connections_.push_back(
        std::make_unique<Connection>(std::move(*channel), std::move(reactors)));
  }
  return client;
}

rill::Status BenchmarkClient::RunUnary(const WorkloadParams& params,
                                       const std::vector<LatencyRecorder*>& recorders,
                                       const RunHooks& hooks) {
  if (params.sleep_between_rpcs.count() <= 0) {
    for (auto& conn : connections_) {
      TaskGroup warmup(1);
      warmup.Spawn(*conn->reactor, UnaryWarmup(&conn->stub, params, &warmup));
      if (rill::Status s = warmup.Wait(nullptr); !s.ok()) return s;
    }
  }
  std::vector<OpCounter> ops(workers(params));
  TaskGroup group(ops.size());
  if (hooks.started) hooks.started();
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(params.bench_time);
  std::size_t w = 0;
  for (auto& conn : connections_) {
    for (std::int64_t pos = 0; pos < params.max_concurrent_calls; ++pos, ++w) {
      group.Spawn(*conn->ReactorFor(pos),
                  UnaryWorker(&conn->stub, params, recorders[w], end, &ops[w], &group));
    }
  }
  rill::Status status = group.Wait(hooks.tick);
  RunCounts counts;
  for (const OpCounter& c : ops) counts.total_ops += c.Get();
  if (hooks.ended) hooks.ended(counts);
  return status;
}

rill::Status BenchmarkClient::RunStreaming(const WorkloadParams& params,
                                           const std::vector<LatencyRecorder*>& recorders,
                                           const RunHooks& hooks) {
  rill::StatusOr<std::optional<rill::PreparedMessage>> prepared = PrepareRequest(params);
  if (!prepared.ok()) return prepared.status();
  const rill::PreparedMessage* preload = *prepared ? &**prepared : nullptr;
  std::vector<StreamSlot> slots(workers(params));
  std::size_t w = 0;
  for (auto& conn : connections_) {
    for (std::int64_t pos = 0; pos < params.max_concurrent_calls; ++pos, ++w) {
      ApplyCompression(slots[w].context, params.compression);
      if (preload != nullptr) AskForPreload(slots[w].context, params);
      if (StreamPayloads(params, preload)) slots[w].context.ReceivePayload(kResponseBody);
      slots[w].stream = conn->stub.StreamingCall(slots[w].context);
      slots[w].reactor = conn->reactor;
    }
  }
  rill::Status status;
  if (params.sleep_between_rpcs.count() <= 0) {
    for (std::size_t cn = 0; cn < connections_.size() && status.ok(); ++cn) {
      StreamSlot& slot = slots[cn * static_cast<std::size_t>(params.max_concurrent_calls)];
      TaskGroup warmup(1);
      warmup.Spawn(*slot.reactor, PingPongWarmup(&slot, params, preload, &warmup));
      status = warmup.Wait(nullptr);
    }
  }
  if (status.ok()) {
    std::vector<OpCounter> ops(slots.size());
    TaskGroup group(slots.size());
    if (hooks.started) hooks.started();
    const Clock::time_point end =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(params.bench_time);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      group.Spawn(*slots[i].reactor, PingPongWorker(&slots[i], params, preload, recorders[i],
                                                    end, &ops[i], &group));
    }
    status = group.Wait(hooks.tick);
    RunCounts counts;
    for (const OpCounter& c : ops) counts.total_ops += c.Get();
    if (hooks.ended) hooks.ended(counts);
  }
  if (!status.ok()) {
    for (StreamSlot& slot : slots) slot.context.TryCancel();
  }
  TaskGroup close(slots.size());
  for (StreamSlot& slot : slots) {
    close.Spawn(*slot.reactor, ClosePingPong(slot.stream.get(), &close));
  }
  rill::Status closed = close.Wait(nullptr);
  return status.ok() ? closed : status;
}

rill::Status BenchmarkClient::RunUnconstrained(const WorkloadParams& params,
                                               const RunHooks& hooks) {
  rill::StatusOr<std::optional<rill::PreparedMessage>> prepared = PrepareRequest(params);
  if (!prepared.ok()) return prepared.status();
  const rill::PreparedMessage* preload = *prepared ? &**prepared : nullptr;
  std::vector<StreamSlot> slots(workers(params));
  const std::string delay = GoDurationString(params.sleep_between_rpcs);
  std::size_t w = 0;
  for (auto& conn : connections_) {
    for (std::int64_t pos = 0; pos < params.max_concurrent_calls; ++pos, ++w) {
      slots[w].context.AddMetadata(kUnconstrainedStreamingHeader, "1");
      slots[w].context.AddMetadata(kUnconstrainedStreamingDelayHeader, delay);
      ApplyCompression(slots[w].context, params.compression);
      if (preload != nullptr) AskForPreload(slots[w].context, params);
      if (StreamPayloads(params, preload)) slots[w].context.ReceivePayload(kResponseBody);
      slots[w].stream = conn->stub.StreamingCall(slots[w].context);
      slots[w].reactor = conn->reactor;
    }
  }
  std::vector<OpCounter> sent(slots.size());
  std::vector<OpCounter> received(slots.size());
  TaskGroup group(2 * slots.size());
  const Clock::time_point start = Clock::now();
  const Clock::time_point warm = start + kUnconstrainedWarmup;
  const Clock::time_point end =
      warm + std::chrono::duration_cast<Clock::duration>(params.bench_time);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    group.Spawn(*slots[i].reactor,
                UnconstrainedSender(&slots[i], params, preload, end, &sent[i], &group));
    group.Spawn(*slots[i].reactor,
                UnconstrainedReceiver(slots[i].stream.get(), end, &received[i], &group));
  }
  auto total = [](const std::vector<OpCounter>& counters) {
    std::uint64_t sum = 0;
    for (const OpCounter& c : counters) sum += c.Get();
    return sum;
  };
  SleepUntil(warm, hooks.tick);
  const std::uint64_t sent_before = total(sent);
  const std::uint64_t received_before = total(received);
  if (hooks.started) hooks.started();
  SleepUntil(end, hooks.tick);
  RunCounts counts;
  counts.send_ops = total(sent) - sent_before;
  counts.recv_ops = total(received) - received_before;
  if (hooks.ended) hooks.ended(counts);

  for (StreamSlot& slot : slots) slot.context.TryCancel();
  rill::Status status = group.Wait(nullptr);
  TaskGroup finish(slots.size());
  for (StreamSlot& slot : slots) finish.Spawn(*slot.reactor, FinishCancelled(slot.stream.get()));
  (void)finish.Wait(nullptr);
  return status;
}

}  // namespace rill::bench
