#include "tests/interop/test_service.h"

#include <algorithm>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/mem/buffer_pool.h"
#include "tests/testing/grpc_testing_names.h"

namespace rill::test::interop {
namespace {

using grpc::testing::EchoStatus;
using grpc::testing::ResponseParameters;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr std::string_view kEchoInitialKey = "x-grpc-test-echo-initial";
constexpr std::string_view kEchoTrailingKey = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: the client's echo keys go back, the first in the initial metadata and the
// second in the trailing metadata. Runs before the first response message is written.
void EchoMetadata(ServerContext& context) {
  if (auto initial = context.client_metadata().Get(kEchoInitialKey)) {
    context.AddInitialMetadata(kEchoInitialKey, *initial);
  }
  if (auto trailing = context.client_metadata().Get(kEchoTrailingKey)) {
    context.AddTrailingMetadata(kEchoTrailingKey, *trailing);
  }
}

// CompressedRequest: the request message just received must have been compressed, or not.
rill::Status CheckCompression(const ServerContext& context, bool expect_compressed) {
  if (context.request_compressed() == expect_compressed) return rill::Status();
  return rill::Status(StatusCode::kInvalidArgument,
                      expect_compressed ? "request was not compressed" : "request was compressed");
}

rill::Status EchoedStatus(const EchoStatus& echo) {
  return rill::Status(StatusCodeFromInt(echo.code()), echo.message());
}

bool FillPayload(int32_t size, grpc::testing::Payload* payload) {
  if (size < 0) return false;
  payload->set_type(grpc::testing::COMPRESSABLE);
  payload->mutable_body()->assign(static_cast<size_t>(size), '\0');
  return true;
}

// Writes one response per ResponseParameters of `request`, each after its interval_us.
// nullopt when all were written; otherwise the status that ends the call.
template <typename Stream>
Awaitable<std::optional<rill::Status>> SendResponses(ServerContext* context,
                                                     const StreamingOutputCallRequest* request,
                                                     Stream* stream, bool sleep_through_cancel) {
  if (request->response_type() != grpc::testing::COMPRESSABLE) {
    co_return rill::Status(StatusCode::kInvalidArgument, "unsupported response_type");
  }
  // The call's encoding travels in the response headers: asking for it once they were sent
  // has no effect, and from then on each message can only opt out.
  if (std::any_of(request->response_parameters().begin(), request->response_parameters().end(),
                  [](const ResponseParameters& p) { return p.compressed().value(); })) {
    context->set_compression("gzip");
  }
  for (const ResponseParameters& parameters : request->response_parameters()) {
    if (parameters.interval_us() > 0 && sleep_through_cancel) {
      // The whole interval, whatever happens to the call (a handler that outlives its stream).
      co_await asio::this_coro::throw_if_cancelled(false);
      const auto end =
          std::chrono::steady_clock::now() + std::chrono::microseconds(parameters.interval_us());
      while (std::chrono::steady_clock::now() < end) {
        asio::steady_timer timer(context->io_context(), end);
        asio::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (context->IsCancelled()) {
        co_return rill::Status(StatusCode::kCancelled, "cancelled during interval_us");
      }
    } else if (parameters.interval_us() > 0) {
      asio::steady_timer timer(context->io_context(),
                               std::chrono::microseconds(parameters.interval_us()));
      asio::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return rill::Status(StatusCode::kCancelled, "cancelled during interval_us");
    }
    StreamingOutputCallResponse response;
    if (!FillPayload(parameters.size(), response.mutable_payload())) {
      co_return rill::Status(StatusCode::kInvalidArgument, "negative response size");
    }
    WriteOptions options;
    options.no_compression = parameters.has_compressed() && !parameters.compressed().value();
    if (!co_await stream->Write(response, options)) {
      co_return rill::Status(StatusCode::kCancelled, "the call ended while writing");
    }
  }
  co_return std::nullopt;
}

}  // namespace

TestServiceImpl::TestServiceImpl(std::FILE* log, bool sleep_through_cancel)
    : log_(log), sleep_through_cancel_(sleep_through_cancel) {
  // UnaryCall's bodies travel outside protobuf (rill/payload_field.h); the request's is not read.
  CarryPayload("UnaryCall",
               {SimpleRequest::kPayloadFieldNumber, grpc::testing::Payload::kBodyFieldNumber},
               {SimpleResponse::kPayloadFieldNumber, grpc::testing::Payload::kBodyFieldNumber});
}

void TestServiceImpl::LogCancellation(const ServerContext& context, const char* method,
                                      ServerContext::Clock::time_point began) const {
  if (log_ == nullptr) return;
  if (context.deadline() == ServerContext::Clock::time_point::max()) {
    std::fprintf(log_, "%s: cancellation observed (no deadline)\n", method);
  } else {
    using std::chrono::microseconds;
    const auto after =
        std::chrono::duration_cast<microseconds>(ServerContext::Clock::now() - context.deadline());
    const auto budget = std::chrono::duration_cast<microseconds>(context.deadline() - began);
    // Before it: the client ended the call first (a cancel, or its own deadline, which a
    // grpc-timeout rounded up puts before the server's). The handler's budget tells the calls
    // apart: timeout_on_sleeping_server's is about 1 ms, the other cases' 30 s.
    std::fprintf(log_,
                 "%s: cancellation observed %lld us %s the deadline (the handler began %lld us "
                 "before it)\n",
                 method, static_cast<long long>(after.count() < 0 ? -after.count() : after.count()),
                 after.count() < 0 ? "before" : "after", static_cast<long long>(budget.count()));
  }
  std::fflush(log_);
}

rill::Status TestServiceImpl::EmptyCall(ServerContext& context,
                                        const grpc::testing::Empty& /*request*/,
                                        grpc::testing::Empty& /*response*/) {
  EchoMetadata(context);
  return rill::Status();
}

rill::Status TestServiceImpl::UnaryCall(ServerContext& context,
                                        const grpc::testing::SimpleRequest& request,
                                        grpc::testing::SimpleResponse& response) {
  EchoMetadata(context);
  if (request.has_expect_compressed()) {
    rill::Status status = CheckCompression(context, request.expect_compressed().value());
    if (!status.ok()) return status;
  }
  if (request.response_type() != grpc::testing::COMPRESSABLE) {
    return rill::Status(StatusCode::kInvalidArgument, "unsupported response_type");
  }
  // The body goes out as a payload outside protobuf: every interop client reads it as the
  // ordinary field it is on the wire.
  if (request.response_size() < 0) {
    return rill::Status(StatusCode::kInvalidArgument, "negative response_size");
  }
  response.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  if (request.response_size() > 0) {
    Buffer zeros = Buffer::Allocate(static_cast<size_t>(request.response_size()),
                                    DefaultBufferPool());
    std::memset(zeros.mutable_data(), 0, zeros.size());
    context.SetResponsePayload(BufferSlice(std::move(zeros)));
  }
  if (request.has_response_compressed()) {
    context.set_compression(request.response_compressed().value() ? "gzip" : "identity");
  }
  if (request.has_response_status()) return EchoedStatus(request.response_status());
  return rill::Status();
}

Awaitable<rill::Status> TestServiceImpl::StreamingOutputCall(
    ServerContext& context, const StreamingOutputCallRequest& request,
    ServerWriter<StreamingOutputCallResponse>& writer) {
  started_.fetch_add(1);
  int64_t running = running_.fetch_add(1) + 1;
  for (int64_t peak = peak_.load();
       running > peak && !peak_.compare_exchange_weak(peak, running);) {
  }
  struct Leave {
    std::atomic<int64_t>* running;
    ~Leave() { running->fetch_sub(1); }
  } leave{&running_};
  EchoMetadata(context);
  if (request.has_response_status() && request.response_status().code() != 0) {
    co_return EchoedStatus(request.response_status());
  }
  if (auto failed = co_await SendResponses(&context, &request, &writer, sleep_through_cancel_))
    co_return *failed;
  co_return rill::Status();
}

Awaitable<rill::Status> TestServiceImpl::StreamingInputCall(
    ServerContext& context, ServerReader<grpc::testing::StreamingInputCallRequest>& reader,
    grpc::testing::StreamingInputCallResponse& response) {
  EchoMetadata(context);
  grpc::testing::StreamingInputCallRequest request;
  int64_t aggregated = 0;
  while (co_await reader.Read(&request)) {
    if (request.has_expect_compressed()) {
      rill::Status status = CheckCompression(context, request.expect_compressed().value());
      if (!status.ok()) co_return status;
    }
    aggregated += static_cast<int64_t>(request.payload().body().size());
  }
  if (context.IsCancelled()) {
    co_return rill::Status(StatusCode::kCancelled, "the call was cancelled");
  }
  response.set_aggregated_payload_size(static_cast<int32_t>(aggregated));
  co_return rill::Status();
}

Awaitable<rill::Status> TestServiceImpl::FullDuplexCall(ServerContext& context,
                                                        FullDuplexServerStream& stream) {
  const auto began = ServerContext::Clock::now();
  EchoMetadata(context);
  StreamingOutputCallRequest request;
  while (co_await stream.Read(&request)) {
    if (request.has_response_status() && request.response_status().code() != 0) {
      co_return EchoedStatus(request.response_status());
    }
    if (auto failed = co_await SendResponses(&context, &request, &stream, sleep_through_cancel_))
      co_return *failed;
  }
  if (context.IsCancelled()) {
    // timeout_on_sleeping_server ends here: the handler waited in Read() for a request that
    // never came, and learns of the deadline through the call's cancellation.
    LogCancellation(context, "FullDuplexCall", began);
    co_return rill::Status(StatusCode::kCancelled, "the call was cancelled");
  }
  co_return rill::Status();
}

Awaitable<rill::Status> TestServiceImpl::HalfDuplexCall(ServerContext& context,
                                                        FullDuplexServerStream& stream) {
  const auto began = ServerContext::Clock::now();
  EchoMetadata(context);
  std::vector<StreamingOutputCallRequest> requests;
  StreamingOutputCallRequest request;
  while (co_await stream.Read(&request)) {
    if (request.has_response_status() && request.response_status().code() != 0) {
      co_return EchoedStatus(request.response_status());
    }
    requests.push_back(request);
  }
  if (context.IsCancelled()) {
    LogCancellation(context, "HalfDuplexCall", began);
    co_return rill::Status(StatusCode::kCancelled, "the call was cancelled");
  }
  for (const StreamingOutputCallRequest& buffered : requests) {
    if (auto failed = co_await SendResponses(&context, &buffered, &stream, sleep_through_cancel_))
      co_return *failed;
  }
  co_return rill::Status();
}

}  // namespace rill::test::interop
