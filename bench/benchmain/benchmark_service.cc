#include "bench/benchmain/benchmark_service.h"

#include <algorithm>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <charconv>
#include <cstring>
#include <chrono>
#include <optional>
#include <random>

#include "bench/benchmain/go_flags.h"
#include "bench/benchmain/message_arena.h"
#include "bench/benchmain/nop_compressor.h"
#include "rill/mem/buffer_pool.h"
#include "rill/prepared_message.h"

namespace rill::bench {
namespace {

using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using Stream = rill::ServerReaderWriter<SimpleResponse, SimpleRequest>;

// Reads and drops requests until the call ends (grpc-go's discarding receive goroutine).
rill::Awaitable<void> DiscardRequests(Stream* stream) {
  MessageArena arena;
  while (co_await stream->Read(arena.Fresh<SimpleRequest>())) {
  }
}

// The response a preloading stream sends every time, prepared for the call's response encoding;
// empty without `preload-msg-size`.
rill::StatusOr<std::optional<rill::PreparedMessage>> PreloadedResponse(
    const rill::ServerContext& context) {
  std::optional<std::string_view> size_text = context.client_metadata().Get(kPreloadMsgSizeHeader);
  if (!size_text) return std::optional<rill::PreparedMessage>();
  int size = 0;
  const auto [end, ec] =
      std::from_chars(size_text->data(), size_text->data() + size_text->size(), size);
  if (ec != std::errc() || end != size_text->data() + size_text->size() || size < 0) {
    return rill::Status(rill::StatusCode::kInvalidArgument, "bad preload-msg-size");
  }
  SimpleResponse response;
  FillPayload(response, size);
  // Unknown or no encoding: the plain form (each send then compresses it if needed).
  std::shared_ptr<rill::Compressor> compressor = BenchCompressor(context.compression());
  rill::StatusOr<rill::PreparedMessage> prepared =
      compressor ? rill::PreparedMessage::Create(response, *compressor)
                 : rill::PreparedMessage::Create(response);
  if (!prepared.ok()) return prepared.status();
  return std::optional<rill::PreparedMessage>(std::move(*prepared));
}

// Sends `response` until the call ends, pausing a random time below `max_delay` before each
// send when it is positive.
rill::Awaitable<void> SendWithoutWaiting(rill::ServerContext* context, Stream* stream,
                                         const SimpleResponse* response,
                                         const rill::BufferSlice* body,
                                         const rill::PreparedMessage* prepared,
                                         std::chrono::nanoseconds max_delay) {
  std::optional<asio::steady_timer> timer;
  std::minstd_rand rng(std::random_device{}());
  if (max_delay.count() > 0) timer.emplace(co_await asio::this_coro::executor);
  while (true) {
    if (timer) {
      std::uniform_int_distribution<std::int64_t> pause(0, max_delay.count() - 1);
      timer->expires_after(std::chrono::nanoseconds(pause(rng)));
      co_await timer->async_wait(asio::use_awaitable);
    }
    // (Not one co_await over a conditional expression: GCC 12 destroys its temporary twice.)
    bool sent;
    if (prepared != nullptr) {
      sent = co_await stream->Write(*prepared);
    } else {
      context->SetResponsePayload(body->Ref());
      sent = co_await stream->Write(*response);
    }
    if (!sent) break;
  }
}

rill::Awaitable<rill::Status> UnconstrainedStreamingCall(rill::ServerContext& context,
                                                         Stream& stream) {
  std::chrono::nanoseconds max_delay{0};
  if (auto delay = context.client_metadata().Get(kUnconstrainedStreamingDelayHeader)) {
    std::optional<std::chrono::nanoseconds> parsed = ParseGoDuration(*delay);
    if (!parsed) {
      co_return rill::Status(rill::StatusCode::kInvalidArgument,
                             "bad unconstrained-streaming-delay");
    }
    max_delay = *parsed;
  }
  rill::StatusOr<std::optional<rill::PreparedMessage>> preloaded = PreloadedResponse(context);
  if (!preloaded.ok()) co_return preloaded.status();
  const rill::PreparedMessage* prepared = *preloaded ? &**preloaded : nullptr;
  // The first request tells the response size.
  SimpleRequest first;
  if (!co_await stream.Read(&first)) co_return rill::Status();
  SimpleResponse response;
  const rill::BufferSlice body = ZeroPayload(first.response_size());
  using asio::experimental::awaitable_operators::operator&&;
  co_await (DiscardRequests(&stream) &&
            SendWithoutWaiting(&context, &stream, &response, &body, prepared, max_delay));
  co_return rill::Status(rill::StatusCode::kCancelled, "unconstrained stream ended");
}

// Drops the request's payload and gives the next response a body of `size` zeros: a reference
// to `body`, made again only when the size asked changes. (Outside the coroutine: GCC 12 reports
// a false mismatched-new-delete for these lines inside it.)
void SetStreamResponseBody(rill::ServerContext& context, int size, rill::BufferSlice& body) {
  context.TakeRequestPayload().Free();
  if (body.size() != static_cast<std::size_t>(std::max(size, 0))) body = ZeroPayload(size);
  context.SetResponsePayload(body.Ref());
}

}  // namespace

void FillPayload(SimpleResponse& response, int size) {
  // assign() keeps the body's capacity from the previous response on a reused message.
  response.mutable_payload()->mutable_body()->assign(static_cast<std::size_t>(std::max(size, 0)),
                                                     '\0');
}

rill::BufferSlice ZeroPayload(int size) {
  if (size <= 0) return rill::BufferSlice();
  rill::Buffer zeros = rill::Buffer::Allocate(static_cast<std::size_t>(size),
                                              rill::DefaultBufferPool());
  std::memset(zeros.mutable_data(), 0, zeros.size());
  return rill::BufferSlice(std::move(zeros));
}

BenchmarkServiceImpl::BenchmarkServiceImpl() {
  CarryPayload("UnaryCall", kRequestBody, kResponseBody);
  CarryPayload("StreamingCall", kRequestBody, kResponseBody);
}

rill::Status BenchmarkServiceImpl::UnaryCall(rill::ServerContext& context,
                                             const SimpleRequest& request,
                                             SimpleResponse& response) {
  context.TakeRequestPayload().Free();  // unread: its receive buffers go back now
  context.SetResponsePayload(ZeroPayload(request.response_size()));
  return rill::Status();
}

rill::Awaitable<rill::Status> BenchmarkServiceImpl::StreamingCall(rill::ServerContext& context,
                                                                  Stream& stream) {
  if (context.client_metadata().Contains(kUnconstrainedStreamingHeader)) {
    co_return co_await UnconstrainedStreamingCall(context, stream);
  }
  // One response object for the whole stream, like grpc-go's server; requests are parsed into
  // an arena (see MessageArena for why not into one reused message).
  rill::StatusOr<std::optional<rill::PreparedMessage>> preloaded = PreloadedResponse(context);
  if (!preloaded.ok()) co_return preloaded.status();
  const rill::PreparedMessage* prepared = *preloaded ? &**preloaded : nullptr;
  MessageArena arena;
  SimpleResponse response;
  rill::BufferSlice body;  // the response body, made again only when the size asked changes
  while (true) {
    SimpleRequest* request = arena.Fresh<SimpleRequest>();
    if (!co_await stream.Read(request)) break;
    if (prepared != nullptr) {
      if (!co_await stream.Write(*prepared)) break;
      continue;
    }
    SetStreamResponseBody(context, request->response_size(), body);
    if (!co_await stream.Write(response)) break;
  }
  co_return rill::Status();
}

}  // namespace rill::bench
