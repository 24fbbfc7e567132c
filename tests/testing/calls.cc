#include "tests/testing/calls.h"

#include <gtest/gtest.h>

#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <utility>

namespace rill::test {

Status EmptyCall(TestService::Stub& stub, std::chrono::milliseconds timeout) {
  ClientContext context;
  context.set_timeout(timeout);
  Empty request;
  Empty response;
  return stub.EmptyCall(context, request, &response);
}

Awaitable<Status> WaitingHandler::WaitThenAnswer(ServerContext& context,
                                                 const SimpleRequest& request,
                                                 SimpleResponse& response) {
  started.Notify();
  asio::steady_timer timer(context.io_context(),
                           std::chrono::milliseconds(request.response_size()));
  asio::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  wait_aborted.store(ec == asio::error::operation_aborted);
  saw_cancelled.store(context.IsCancelled());
  finished.Notify();
  response.set_username("finished");
  co_return Status();
}

void PendingCall::Start(TestService::Stub& stub, int wait_ms) {
  request.set_response_size(wait_ms);
  stub.UnaryCall(context, request, &response,
                 [this](Status status) { done.set_value(std::move(status)); });
}

void PendingCall::StartCacheable(TestService::Stub& stub, int wait_ms) {
  request.set_response_size(wait_ms);
  stub.CacheableUnaryCall(context, request, &response,
                          [this](Status status) { done.set_value(std::move(status)); });
}

Status PendingCall::Get() {
  if (result.wait_for(kMustComplete) != std::future_status::ready) {
    return Status(StatusCode::kInternal, "the call did not complete");
  }
  return result.get();
}

void ExpectClientStreamAggregates(ClientWriter<StreamingInputCallRequest>& writer,
                                  const StreamingInputCallResponse& response,
                                  const std::vector<int32_t>& sizes) {
  int32_t total = 0;
  for (int32_t size : sizes) {
    StreamingInputCallRequest request;
    request.mutable_payload()->mutable_body()->assign(static_cast<size_t>(size), 'c');
    ASSERT_TRUE(writer.BlockingWrite(request)) << size;
    total += size;
  }
  const Status status = writer.BlockingFinish();
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.aggregated_payload_size(), total);
}

void ExpectServerStreamOfSizes(TestService::Stub& stub, const std::vector<int32_t>& sizes) {
  ClientContext context;
  StreamingOutputCallRequest request;
  for (int32_t size : sizes) request.add_response_parameters()->set_size(size);
  auto reader = stub.StreamingOutputCall(context, request);
  StreamingOutputCallResponse response;
  for (int32_t size : sizes) {
    ASSERT_TRUE(reader->BlockingRead(&response)) << size;
    EXPECT_EQ(response.payload().body().size(), static_cast<size_t>(size));
  }
  EXPECT_FALSE(reader->BlockingRead(&response));
  const Status status = reader->BlockingFinish();
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace rill::test
