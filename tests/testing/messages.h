// grpc.testing messages of exact sizes and contents, and metadata read back from calls.
//
//   auto request = rill::test::RequestOfSize(4 << 20);           // exactly 4 MiB serialized
//   auto zeros = rill::test::ZerosRequest(10000, 10000);         // 10000 zeros each way
//   EXPECT_EQ(rill::test::TrailerOf(context, "x-request-compressed"), "1");
#ifndef RILL_TESTS_TESTING_MESSAGES_H_
#define RILL_TESTS_TESTING_MESSAGES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.rill.h"
#include "rill/awaitable.h"
#include "rill/client_context.h"
#include "rill/metadata.h"
#include "rill/status.h"
#include "tests/testing/grpc_testing_names.h"

namespace rill::test {

// Messages of an exact serialized size (the size limits count serialized bytes), made by
// filling the payload body with 'x'. Sizes 1, 3 and 4 cannot be made this way; the functions
// abort on them. A request may also ask for a response size (counted in its own size).
grpc::testing::SimpleRequest RequestOfSize(size_t serialized_size, int32_t response_size = 0);
grpc::testing::SimpleResponse ResponseOfSize(size_t serialized_size);

// A SimpleRequest whose payload is `body_size` zeros (grpc-go's benchmark payload) asking for a
// response of `response_size` zeros.
grpc::testing::SimpleRequest ZerosRequest(size_t body_size, int32_t response_size = 0);
// The body size that makes ZerosRequest(body, 0) serialize to exactly `serialized_size` bytes
// (aborts when no body size does: sizes below 5 and a few just above length-prefix steps).
size_t BodySizeForSerializedRequest(size_t serialized_size);
// The same for a SimpleResponse with a payload body of zeros.
size_t BodySizeForSerializedResponse(size_t serialized_size);

// A StreamingOutputCallRequest with `body_size` zeros asking for one response per entry of
// `responses`: {size, compressed} where compressed is nullopt for "leave it to the call".
struct ResponseSpec {
  int32_t size;
  std::optional<bool> compressed;
};
grpc::testing::StreamingOutputCallRequest StreamRequest(size_t body_size,
                                                        const std::vector<ResponseSpec>& responses);

bool AllZeros(const std::string& bytes);

// A request whose response_status asks the grpc.testing services here to end the call with
// `code` and `message`.
template <typename Request = SimpleRequest>
Request RequestForStatus(StatusCode code, std::string_view message = {}) {
  Request request;
  request.mutable_response_status()->set_code(static_cast<int>(code));
  if (!message.empty()) request.mutable_response_status()->set_message(std::string(message));
  return request;
}

// A StreamingInputCall handler's body: reads until the client half-closes, then answers OK with
// the total payload bytes read. `reader` and `response` must outlive the returned awaitable.
Awaitable<Status> SumRequestPayloads(ServerReader<StreamingInputCallRequest>* reader,
                                     StreamingInputCallResponse* response);

// A StreamingOutputCall handler's body: one response per entry of the request's
// response_parameters, of that many `fill` bytes, then the request's response_status (OK when it
// has none); CANCELLED once a write fails. `request` and `writer` must outlive the returned
// awaitable.
Awaitable<Status> WriteRequestedResponses(const StreamingOutputCallRequest* request,
                                          ServerWriter<StreamingOutputCallResponse>* writer,
                                          char fill);

// A FullDuplexCall handler's body: answers each request with one response per entry of its
// response_parameters, of that many `fill` bytes, until the client half-closes (OK) or a write
// fails (CANCELLED). `stream` must outlive the returned awaitable.
Awaitable<Status> AnswerEachRequest(FullDuplexServerStream* stream, char fill);

// A blocking UnaryCall of `request` on `stub` with a context of its own carrying `metadata`;
// the response goes to `response` when given.
Status CallUnary(TestService::Stub& stub, const SimpleRequest& request,
                 SimpleResponse* response = nullptr,
                 const std::vector<std::pair<std::string, std::string>>& metadata = {});

// The value of `key` in the client context's trailing metadata ("<absent>" when missing).
std::string TrailerOf(const ClientContext& context, std::string_view key);

// A copy of a Metadata's entries (the handler's context dies with the call).
using MetadataEntries = std::vector<std::pair<std::string, std::string>>;
MetadataEntries CopyEntries(const Metadata& metadata);
// Every value of `key` in `entries`, in order.
std::vector<std::string> ValuesOf(const MetadataEntries& entries, std::string_view key);

}  // namespace rill::test

#endif  // RILL_TESTS_TESTING_MESSAGES_H_
