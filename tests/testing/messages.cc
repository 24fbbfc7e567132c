#include "tests/testing/messages.h"

#include <algorithm>

#include "rill/detail/check.h"

namespace rill::test {

namespace {

// Fills the payload body of `message` so that it serializes to `target` bytes. Where a varint
// boundary makes that size unreachable, `adjust` adds a small field first and the search is
// repeated.
template <typename Message>
Message OfSize(Message message, size_t target, std::string* (*body)(Message&),
               void (*adjust)(Message&)) {
  if (target == message.ByteSizeLong()) return message;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const size_t start = target > 16 ? target - 16 : 0;
    for (size_t n = start; n <= target; ++n) {
      body(message)->assign(n, 'x');
      if (message.ByteSizeLong() == target) return message;
    }
    adjust(message);
  }
  RILL_CHECK_MSG(false, "no message of the requested size");
  return message;
}

template <typename Message>
size_t BodySizeFor(size_t serialized_size) {
  // The body is the payload minus at most 1 + 1 + 2 * 5 bytes of tags and lengths.
  for (size_t overhead = 0; overhead <= 12 && overhead <= serialized_size; ++overhead) {
    Message message;
    message.mutable_payload()->set_body(std::string(serialized_size - overhead, '\0'));
    if (message.ByteSizeLong() == serialized_size) return serialized_size - overhead;
  }
  RILL_CHECK_MSG(false, "no payload body gives this serialized size");
  return 0;
}

}  // namespace

SimpleRequest RequestOfSize(size_t serialized_size, int32_t response_size) {
  SimpleRequest request;
  request.set_response_size(response_size);
  return OfSize<SimpleRequest>(
      std::move(request), serialized_size,
      [](SimpleRequest& m) { return m.mutable_payload()->mutable_body(); },
      [](SimpleRequest& m) { m.set_fill_username(true); });
}

SimpleResponse ResponseOfSize(size_t serialized_size) {
  return OfSize<SimpleResponse>(
      SimpleResponse(), serialized_size,
      [](SimpleResponse& m) { return m.mutable_payload()->mutable_body(); },
      [](SimpleResponse& m) { m.set_hostname("h"); });
}

SimpleRequest ZerosRequest(size_t body_size, int32_t response_size) {
  SimpleRequest request;
  request.set_response_size(response_size);
  request.mutable_payload()->set_body(std::string(body_size, '\0'));
  return request;
}

size_t BodySizeForSerializedRequest(size_t serialized_size) {
  return BodySizeFor<SimpleRequest>(serialized_size);
}

size_t BodySizeForSerializedResponse(size_t serialized_size) {
  return BodySizeFor<SimpleResponse>(serialized_size);
}

StreamingOutputCallRequest StreamRequest(size_t body_size,
                                         const std::vector<ResponseSpec>& responses) {
  StreamingOutputCallRequest request;
  request.mutable_payload()->set_body(std::string(body_size, '\0'));
  for (const ResponseSpec& spec : responses) {
    auto* parameters = request.add_response_parameters();
    parameters->set_size(spec.size);
    if (spec.compressed) parameters->mutable_compressed()->set_value(*spec.compressed);
  }
  return request;
}

Awaitable<Status> SumRequestPayloads(ServerReader<StreamingInputCallRequest>* reader,
                                     StreamingInputCallResponse* response) {
  StreamingInputCallRequest request;
  int32_t total = 0;
  while (co_await reader->Read(&request)) {
    total += static_cast<int32_t>(request.payload().body().size());
  }
  response->set_aggregated_payload_size(total);
  co_return Status();
}

Awaitable<Status> WriteRequestedResponses(const StreamingOutputCallRequest* request,
                                          ServerWriter<StreamingOutputCallResponse>* writer,
                                          char fill) {
  for (const auto& parameters : request->response_parameters()) {
    StreamingOutputCallResponse response;
    response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(parameters.size()),
                                                       fill);
    if (!co_await writer->Write(response)) co_return Status(StatusCode::kCancelled, "gone");
  }
  if (request->has_response_status()) {
    co_return Status(StatusCodeFromInt(request->response_status().code()),
                     request->response_status().message());
  }
  co_return Status();
}

Awaitable<Status> AnswerEachRequest(FullDuplexServerStream* stream, char fill) {
  StreamingOutputCallRequest request;
  while (co_await stream->Read(&request)) {
    for (const auto& parameters : request.response_parameters()) {
      StreamingOutputCallResponse response;
      response.mutable_payload()->mutable_body()->assign(static_cast<size_t>(parameters.size()),
                                                         fill);
      if (!co_await stream->Write(response)) co_return Status(StatusCode::kCancelled, "gone");
    }
  }
  co_return Status();
}

Status CallUnary(TestService::Stub& stub, const SimpleRequest& request, SimpleResponse* response,
                 const std::vector<std::pair<std::string, std::string>>& metadata) {
  ClientContext context;
  for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
  SimpleResponse ignored;
  return stub.UnaryCall(context, request, response != nullptr ? response : &ignored);
}

bool AllZeros(const std::string& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == '\0'; });
}

std::string TrailerOf(const ClientContext& context, std::string_view key) {
  const std::optional<std::string_view> value = context.trailing_metadata().Get(key);
  return value ? std::string(*value) : std::string("<absent>");
}

MetadataEntries CopyEntries(const Metadata& metadata) {
  MetadataEntries out;
  for (const auto& [key, value] : metadata) out.emplace_back(key, value);
  return out;
}

std::vector<std::string> ValuesOf(const MetadataEntries& entries, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries) {
    if (k == key) out.push_back(v);
  }
  return out;
}

}  // namespace rill::test
