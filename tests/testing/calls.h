// Calls on grpc.testing.TestService that many tests make: a blocking EmptyCall, a unary call left
// pending on a handler that waits (and that handler), and client and server streams of messages
// of given sizes.
//
//   class WaitingService final : public TestService::Service, public WaitingHandler {
//     Awaitable<Status> UnaryCallAsync(ServerContext& context, const SimpleRequest& request,
//                                      SimpleResponse& response) override {
//       return WaitThenAnswer(context, request, response);
//     }
//   };
//   PendingCall call;
//   call.Start(stub, /*wait_ms=*/60'000);
//   ASSERT_TRUE(service.started.WaitForNotification());
//   call.context.TryCancel();
//   EXPECT_EQ(call.Get().code(), StatusCode::kCancelled);
#ifndef RILL_TESTS_TESTING_CALLS_H_
#define RILL_TESTS_TESTING_CALLS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/awaitable.h"
#include "rill/client_call.h"
#include "rill/client_context.h"
#include "rill/server_context.h"
#include "rill/status.h"
#include "tests/testing/fixture.h"
#include "tests/testing/grpc_testing_names.h"

namespace rill::test {

// A blocking EmptyCall with a deadline `timeout` from now.
Status EmptyCall(TestService::Stub& stub, std::chrono::milliseconds timeout = kMustComplete);

// What a unary handler that waits records, and its body. Mixed into a test's service, which
// routes a unary method to WaitThenAnswer(). Thread-safe.
struct WaitingHandler {
  // Notifies `started`, waits request.response_size() ms on a timer of the call's reactor, records
  // whether that wait was aborted and whether the call was cancelled, notifies `finished` and
  // answers OK with username "finished". The arguments must outlive the returned awaitable.
  Awaitable<Status> WaitThenAnswer(ServerContext& context, const SimpleRequest& request,
                                   SimpleResponse& response);

  Notification started;
  Notification finished;
  std::atomic<bool> wait_aborted{false};
  std::atomic<bool> saw_cancelled{false};
};

// A unary call whose handler waits (WaitingHandler): the wait in ms goes in response_size, the
// status completes `result`. Neither copyable nor movable (the completion refers to it).
struct PendingCall {
  PendingCall() = default;
  PendingCall(const PendingCall&) = delete;
  PendingCall& operator=(const PendingCall&) = delete;

  // Starts UnaryCall, or CacheableUnaryCall, asking its handler to wait `wait_ms`.
  void Start(TestService::Stub& stub, int wait_ms);
  void StartCacheable(TestService::Stub& stub, int wait_ms);
  // The call's status; INTERNAL if it did not complete within kMustComplete.
  Status Get();

  ClientContext context;
  SimpleRequest request;
  SimpleResponse response;
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
};

// Writes one StreamingInputCall message of each of `sizes` bytes on `writer`, finishes the call
// and expects it OK with the sum of `sizes` in `response`, the call's response (so any message
// written before must have been empty).
void ExpectClientStreamAggregates(ClientWriter<StreamingInputCallRequest>& writer,
                                  const StreamingInputCallResponse& response,
                                  const std::vector<int32_t>& sizes);

// Asks StreamingOutputCall for one response of each of `sizes` bytes and expects exactly those
// responses, in order, then the call to end OK.
void ExpectServerStreamOfSizes(TestService::Stub& stub, const std::vector<int32_t>& sizes);

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_CALLS_H_
