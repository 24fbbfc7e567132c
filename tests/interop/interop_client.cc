// rill's gRPC interop test client: the client cases of gRPC's interop test descriptions
// (grpc/doc/interop-test-descriptions.md) on rill's generated stubs, against any
// grpc.testing.TestService server (rill's, libgrpc++'s, grpc-js's).
//
//   rill_interop_client --server_host=127.0.0.1 --server_port=50051 --test_case=all
//
// --test_case takes one case, a comma-separated list, or `all` (every case below, in order);
// all cases share one channel. Prints `PASS <case>`, `FAIL <case>: <assertion>` or
// `SKIP <case>: <reason>` per case, and exits 0 when no case failed, 1 otherwise (2 for bad
// flags).
//
// Every case is a coroutine on the client's own io_context (not a rill reactor), so the cases
// use the awaitable forms of rill's stubs and streams throughout. The compression cases
// compress with gzip (ClientContext::set_compression) and check each response's compressed
// flag (ClientContext::response_compressed).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/binary_log.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/credentials.h"

namespace rill::test::interop {
namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr std::string_view kEchoInitialKey = "x-grpc-test-echo-initial";
constexpr std::string_view kEchoInitialValue = "test_initial_metadata_value";
constexpr std::string_view kEchoTrailingKey = "x-grpc-test-echo-trailing-bin";
constexpr std::string_view kEchoTrailingValue = "\xab\xab\xab";
constexpr std::string_view kSpecialStatusMessage =
    "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n";

// Every call but timeout_on_sleeping_server's gets this deadline, so a hung server fails the
// case instead of hanging the client.
constexpr std::chrono::seconds kCallDeadline(30);

// How a case ended.
struct Outcome {
  enum Kind { kPass, kFail, kSkip };
  Kind kind = kPass;
  std::string detail;  // the failed assertion, or why the case was skipped
};

[[gnu::format(printf, 1, 2)]] std::string Format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(static_cast<size_t>(std::max(size, 0)), '\0');
  std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

// Leaves the case with the first failed assertion.
#define INTEROP_EXPECT(condition, ...)                                                    \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      co_return Outcome{Outcome::kFail, Format(__VA_ARGS__) + " [" #condition ", line " + \
                                            std::to_string(__LINE__) + "]"};              \
    }                                                                                     \
  } while (0)

#define INTEROP_EXPECT_CODE(status, wanted)                                                        \
  INTEROP_EXPECT((status).code() == (wanted), "status %s, wanted %s", (status).ToString().c_str(), \
                 std::string(StatusCodeName(wanted)).c_str())

// INTEROP_EXPECT for a step of a streaming call (a write, a read, the half-close) that must
// succeed: the call's status, which says why it failed, goes into the message.
#define INTEROP_EXPECT_STEP(condition, stream, ...)                                       \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      const Status why = co_await (stream)->Finish();                                     \
      co_return Outcome{Outcome::kFail, Format(__VA_ARGS__) + " (the call ended with " +  \
                                            why.ToString() + ") [" #condition ", line " + \
                                            std::to_string(__LINE__) + "]"};              \
    }                                                                                     \
  } while (0)

// Runs a sub-check (an Awaitable<Outcome>) and leaves the case unless it passed.
#define INTEROP_CHECK(outcome_awaitable)           \
  do {                                             \
    Outcome sub = co_await (outcome_awaitable);    \
    if (sub.kind != Outcome::kPass) co_return sub; \
  } while (0)

std::string Zeros(int size) { return std::string(static_cast<size_t>(size), '\0'); }

bool IsZeros(const std::string& body, int size) {
  return body.size() == static_cast<size_t>(size) &&
         std::all_of(body.begin(), body.end(), [](char c) { return c == '\0'; });
}

void SetDeadline(ClientContext& context) { context.set_timeout(kCallDeadline); }

SimpleRequest LargeUnaryRequest() {
  SimpleRequest request;
  request.set_response_size(314159);
  request.mutable_payload()->set_body(Zeros(271828));
  return request;
}

StreamingOutputCallRequest StreamingRequest(int response_size, int payload_size) {
  StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(response_size);
  request.mutable_payload()->set_body(Zeros(payload_size));
  return request;
}

void AddEchoMetadata(ClientContext& context) {
  context.AddMetadata(kEchoInitialKey, kEchoInitialValue);
  context.AddMetadata(kEchoTrailingKey, kEchoTrailingValue);
}

std::string Describe(std::optional<std::string_view> value) {
  if (!value) return "missing";
  std::string out = "\"";
  for (char c : *value) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte >= 0x20 && byte < 0x7f ? std::string(1, c) : Format("\\x%02x", byte);
  }
  return out + "\"";
}

class InteropClient {
 public:
  explicit InteropClient(const std::shared_ptr<Channel>& channel)
      : stub_(channel), unimplemented_stub_(channel) {}

  Awaitable<Outcome> EmptyUnary() {
    ClientContext context;
    SetDeadline(context);
    Empty request;
    Empty response;
    Status status = co_await stub_.EmptyCall(context, request, &response, asio::use_awaitable);
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    co_return Outcome{};
  }

  Awaitable<Outcome> LargeUnary() {
    ClientContext context;
    SetDeadline(context);
    SimpleRequest request = LargeUnaryRequest();
    SimpleResponse response;
    Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(IsZeros(response.payload().body(), 314159),
                   "response has %zu bytes (or non-zero bytes), wanted 314159 zeros",
                   response.payload().body().size());
    co_return Outcome{};
  }

  Awaitable<Outcome> ClientCompressedUnary() {
    {
      // The probe: an uncompressed request that claims to be compressed must be refused.
      ClientContext context;
      SetDeadline(context);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(true);
      SimpleResponse response;
      Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
      INTEROP_EXPECT_CODE(status, StatusCode::kInvalidArgument);
    }
    for (bool compressed : {true, false}) {
      ClientContext context;
      SetDeadline(context);
      if (compressed) context.set_compression("gzip");
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(compressed);
      SimpleResponse response;
      Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
      INTEROP_EXPECT_CODE(status, StatusCode::kOk);
      INTEROP_EXPECT(IsZeros(response.payload().body(), 314159),
                     "compressed=%d: response has %zu bytes (or non-zero bytes), wanted 314159 "
                     "zeros",
                     compressed, response.payload().body().size());
    }
    co_return Outcome{};
  }

  Awaitable<Outcome> ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      ClientContext context;
      SetDeadline(context);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_response_compressed()->set_value(compressed);
      SimpleResponse response;
      Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
      INTEROP_EXPECT_CODE(status, StatusCode::kOk);
      INTEROP_EXPECT(context.response_compressed() == compressed,
                     "response_compressed=%d but the response's compressed flag is %s", compressed,
                     compressed ? "clear" : "set");
      INTEROP_EXPECT(IsZeros(response.payload().body(), 314159),
                     "response_compressed=%d: response has %zu bytes (or non-zero bytes), "
                     "wanted 314159 zeros",
                     compressed, response.payload().body().size());
    }
    co_return Outcome{};
  }

  Awaitable<Outcome> ClientStreaming() {
    ClientContext context;
    SetDeadline(context);
    StreamingInputCallResponse response;
    auto writer = stub_.StreamingInputCall(context, &response);
    for (int size : {27182, 8, 1828, 45904}) {
      StreamingInputCallRequest request;
      request.mutable_payload()->set_body(Zeros(size));
      INTEROP_EXPECT_STEP(co_await writer->Write(request), writer,
                          "writing the %d-byte request failed", size);
    }
    INTEROP_EXPECT_STEP(co_await writer->WritesDone(), writer, "half-close failed");
    Status status = co_await writer->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(response.aggregated_payload_size() == 74922, "aggregated_payload_size %d",
                   response.aggregated_payload_size());
    co_return Outcome{};
  }

  Awaitable<Outcome> ClientCompressedStreaming() {
    {
      // The probe: an uncompressed message that claims to be compressed must be refused.
      ClientContext context;
      SetDeadline(context);
      StreamingInputCallResponse response;
      auto writer = stub_.StreamingInputCall(context, &response);
      StreamingInputCallRequest request;
      request.mutable_expect_compressed()->set_value(true);
      request.mutable_payload()->set_body(Zeros(27182));
      co_await writer->Write(request);  // may fail once the server has refused the call
      Status status = co_await writer->Finish();
      INTEROP_EXPECT_CODE(status, StatusCode::kInvalidArgument);
    }
    ClientContext context;
    SetDeadline(context);
    context.set_compression("gzip");
    StreamingInputCallResponse response;
    auto writer = stub_.StreamingInputCall(context, &response);
    StreamingInputCallRequest request;
    request.mutable_expect_compressed()->set_value(true);
    request.mutable_payload()->set_body(Zeros(27182));
    INTEROP_EXPECT_STEP(co_await writer->Write(request), writer,
                        "writing the compressed request failed");
    request.mutable_expect_compressed()->set_value(false);
    request.mutable_payload()->set_body(Zeros(45904));
    INTEROP_EXPECT_STEP(co_await writer->Write(request, WriteOptions{.no_compression = true}),
                        writer, "writing the uncompressed request failed");
    INTEROP_EXPECT_STEP(co_await writer->WritesDone(), writer, "half-close failed");
    Status status = co_await writer->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(response.aggregated_payload_size() == 73086, "aggregated_payload_size %d",
                   response.aggregated_payload_size());
    co_return Outcome{};
  }

  Awaitable<Outcome> ServerStreaming() {
    ClientContext context;
    SetDeadline(context);
    StreamingOutputCallRequest request;
    const std::vector<int> sizes = {31415, 9, 2653, 58979};
    for (int size : sizes) request.add_response_parameters()->set_size(size);
    auto reader = stub_.StreamingOutputCall(context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (co_await reader->Read(&response)) {
      INTEROP_EXPECT(count < sizes.size(), "more than %zu responses", sizes.size());
      INTEROP_EXPECT(IsZeros(response.payload().body(), sizes[count]),
                     "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                     response.payload().body().size(), sizes[count]);
      ++count;
    }
    Status status = co_await reader->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(count == sizes.size(), "%zu responses, wanted %zu", count, sizes.size());
    co_return Outcome{};
  }

  Awaitable<Outcome> ServerCompressedStreaming() {
    ClientContext context;
    SetDeadline(context);
    StreamingOutputCallRequest request;
    const std::vector<std::pair<int, bool>> parameters = {{31415, true}, {92653, false}};
    for (auto [size, compressed] : parameters) {
      auto* added = request.add_response_parameters();
      added->set_size(size);
      added->mutable_compressed()->set_value(compressed);
    }
    auto reader = stub_.StreamingOutputCall(context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (co_await reader->Read(&response)) {
      INTEROP_EXPECT(count < parameters.size(), "more than %zu responses", parameters.size());
      INTEROP_EXPECT(context.response_compressed() == parameters[count].second,
                     "response %zu: compressed=%d asked, but the compressed flag is %s", count,
                     parameters[count].second, parameters[count].second ? "clear" : "set");
      INTEROP_EXPECT(IsZeros(response.payload().body(), parameters[count].first),
                     "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                     response.payload().body().size(), parameters[count].first);
      ++count;
    }
    Status status = co_await reader->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(count == parameters.size(), "%zu responses, wanted %zu", count,
                   parameters.size());
    co_return Outcome{};
  }

  Awaitable<Outcome> PingPong() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    const std::vector<std::pair<int, int>> exchanges = {
        {31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}};
    for (auto [response_size, payload_size] : exchanges) {
      StreamingOutputCallRequest request = StreamingRequest(response_size, payload_size);
      INTEROP_EXPECT_STEP(co_await stream->Write(request), stream,
                          "writing the %d-byte request failed", payload_size);
      StreamingOutputCallResponse response;
      INTEROP_EXPECT_STEP(co_await stream->Read(&response), stream,
                          "no response to the %d-byte request", payload_size);
      INTEROP_EXPECT(IsZeros(response.payload().body(), response_size),
                     "response has %zu bytes (or non-zero bytes), wanted %d zeros",
                     response.payload().body().size(), response_size);
    }
    INTEROP_EXPECT_STEP(co_await stream->WritesDone(), stream, "half-close failed");
    StreamingOutputCallResponse extra;
    INTEROP_EXPECT(!co_await stream->Read(&extra), "a fifth response arrived");
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    co_return Outcome{};
  }

  Awaitable<Outcome> EmptyStream() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    INTEROP_EXPECT_STEP(co_await stream->WritesDone(), stream, "half-close failed");
    StreamingOutputCallResponse response;
    INTEROP_EXPECT(!co_await stream->Read(&response), "a response arrived on an empty stream");
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    co_return Outcome{};
  }

  Awaitable<Outcome> TimeoutOnSleepingServer() {
    ClientContext context;
    context.set_timeout(std::chrono::milliseconds(1));
    auto stream = stub_.FullDuplexCall(context);
    StreamingOutputCallRequest request;
    request.mutable_payload()->set_body(Zeros(27182));
    co_await stream->Write(request);  // may fail: the deadline can pass before the write
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kDeadlineExceeded);
    co_return Outcome{};
  }

  Awaitable<Outcome> CancelAfterBegin() {
    ClientContext context;
    SetDeadline(context);
    StreamingInputCallResponse response;
    auto writer = stub_.StreamingInputCall(context, &response);
    context.TryCancel();
    Status status = co_await writer->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kCancelled);
    co_return Outcome{};
  }

  Awaitable<Outcome> CancelAfterFirstResponse() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    StreamingOutputCallRequest request = StreamingRequest(31415, 27182);
    INTEROP_EXPECT_STEP(co_await stream->Write(request), stream, "writing the request failed");
    StreamingOutputCallResponse response;
    INTEROP_EXPECT_STEP(co_await stream->Read(&response), stream, "no response arrived");
    INTEROP_EXPECT(IsZeros(response.payload().body(), 31415),
                   "response has %zu bytes (or non-zero bytes), wanted 31415 zeros",
                   response.payload().body().size());
    context.TryCancel();
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kCancelled);
    co_return Outcome{};
  }

  Awaitable<Outcome> CustomMetadata() {
    {
      ClientContext context;
      SetDeadline(context);
      AddEchoMetadata(context);
      SimpleRequest request = LargeUnaryRequest();
      SimpleResponse response;
      Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
      INTEROP_EXPECT_CODE(status, StatusCode::kOk);
      INTEROP_EXPECT(IsZeros(response.payload().body(), 314159),
                     "UnaryCall response has %zu bytes (or non-zero bytes), wanted 314159 zeros",
                     response.payload().body().size());
      INTEROP_CHECK(CheckEchoedMetadata(&context, "UnaryCall"));
    }
    ClientContext context;
    SetDeadline(context);
    AddEchoMetadata(context);
    auto stream = stub_.FullDuplexCall(context);
    StreamingOutputCallRequest request = StreamingRequest(314159, 271828);
    INTEROP_EXPECT_STEP(co_await stream->Write(request), stream, "writing the request failed");
    StreamingOutputCallResponse response;
    INTEROP_EXPECT_STEP(co_await stream->Read(&response), stream, "no response arrived");
    INTEROP_EXPECT(IsZeros(response.payload().body(), 314159),
                   "response has %zu bytes (or non-zero bytes), wanted 314159 zeros",
                   response.payload().body().size());
    INTEROP_EXPECT_STEP(co_await stream->WritesDone(), stream, "half-close failed");
    INTEROP_EXPECT(!co_await stream->Read(&response), "a second response arrived");
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_CHECK(CheckEchoedMetadata(&context, "FullDuplexCall"));
    co_return Outcome{};
  }

  Awaitable<Outcome> StatusCodeAndMessage() {
    const std::string message = "test status message";
    {
      ClientContext context;
      SetDeadline(context);
      SimpleRequest request;
      request.mutable_response_status()->set_code(2);
      request.mutable_response_status()->set_message(message);
      SimpleResponse response;
      Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
      INTEROP_EXPECT_CODE(status, StatusCode::kUnknown);
      INTEROP_EXPECT(status.message() == message, "UnaryCall status message %s",
                     Describe(status.message()).c_str());
    }
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    StreamingOutputCallRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    INTEROP_EXPECT_STEP(co_await stream->Write(request), stream, "writing the request failed");
    co_await stream->WritesDone();  // may fail once the server has finished the call
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kUnknown);
    INTEROP_EXPECT(status.message() == message, "FullDuplexCall status message %s",
                   Describe(status.message()).c_str());
    co_return Outcome{};
  }

  Awaitable<Outcome> SpecialStatusMessage() {
    ClientContext context;
    SetDeadline(context);
    SimpleRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(std::string(kSpecialStatusMessage));
    SimpleResponse response;
    Status status = co_await stub_.UnaryCall(context, request, &response, asio::use_awaitable);
    INTEROP_EXPECT_CODE(status, StatusCode::kUnknown);
    INTEROP_EXPECT(status.message() == kSpecialStatusMessage, "status message %s",
                   Describe(status.message()).c_str());
    co_return Outcome{};
  }

  Awaitable<Outcome> UnimplementedMethod() {
    ClientContext context;
    SetDeadline(context);
    Empty request;
    Empty response;
    Status status =
        co_await stub_.UnimplementedCall(context, request, &response, asio::use_awaitable);
    INTEROP_EXPECT_CODE(status, StatusCode::kUnimplemented);
    co_return Outcome{};
  }

  Awaitable<Outcome> UnimplementedService() {
    ClientContext context;
    SetDeadline(context);
    Empty request;
    Empty response;
    Status status = co_await unimplemented_stub_.UnimplementedCall(context, request, &response,
                                                                   asio::use_awaitable);
    INTEROP_EXPECT_CODE(status, StatusCode::kUnimplemented);
    co_return Outcome{};
  }

 private:
  // Parameters are pointers: coroutine arguments are copied into the frame.
  static Awaitable<Outcome> CheckEchoedMetadata(const ClientContext* context, const char* method) {
    const std::optional<std::string_view> initial =
        context->initial_metadata().Get(kEchoInitialKey);
    INTEROP_EXPECT(initial == kEchoInitialValue, "%s: initial metadata %s is %s", method,
                   std::string(kEchoInitialKey).c_str(), Describe(initial).c_str());
    const std::optional<std::string_view> trailing =
        context->trailing_metadata().Get(kEchoTrailingKey);
    INTEROP_EXPECT(trailing == kEchoTrailingValue, "%s: trailing metadata %s is %s", method,
                   std::string(kEchoTrailingKey).c_str(), Describe(trailing).c_str());
    co_return Outcome{};
  }

  grpc::testing::TestService::Stub stub_;
  grpc::testing::UnimplementedService::Stub unimplemented_stub_;
};

struct TestCase {
  const char* name;
  Awaitable<Outcome> (InteropClient::*run)();
};

// The order --test_case=all runs them in.
constexpr TestCase kTestCases[] = {
    {"empty_unary", &InteropClient::EmptyUnary},
    {"large_unary", &InteropClient::LargeUnary},
    {"client_compressed_unary", &InteropClient::ClientCompressedUnary},
    {"server_compressed_unary", &InteropClient::ServerCompressedUnary},
    {"client_streaming", &InteropClient::ClientStreaming},
    {"client_compressed_streaming", &InteropClient::ClientCompressedStreaming},
    {"server_streaming", &InteropClient::ServerStreaming},
    {"server_compressed_streaming", &InteropClient::ServerCompressedStreaming},
    {"ping_pong", &InteropClient::PingPong},
    {"empty_stream", &InteropClient::EmptyStream},
    {"timeout_on_sleeping_server", &InteropClient::TimeoutOnSleepingServer},
    {"cancel_after_begin", &InteropClient::CancelAfterBegin},
    {"cancel_after_first_response", &InteropClient::CancelAfterFirstResponse},
    {"custom_metadata", &InteropClient::CustomMetadata},
    {"status_code_and_message", &InteropClient::StatusCodeAndMessage},
    {"special_status_message", &InteropClient::SpecialStatusMessage},
    {"unimplemented_method", &InteropClient::UnimplementedMethod},
    {"unimplemented_service", &InteropClient::UnimplementedService},
};

// Runs the cases in order and returns how many failed.
Awaitable<int> RunCases(InteropClient* client, std::vector<const TestCase*> cases) {
  int failed = 0;
  for (const TestCase* test : cases) {
    Outcome outcome;
    try {
      outcome = co_await (client->*test->run)();
    } catch (const std::exception& e) {
      outcome = Outcome{Outcome::kFail, std::string("exception: ") + e.what()};
    }
    switch (outcome.kind) {
      case Outcome::kPass:
        std::printf("PASS %s\n", test->name);
        break;
      case Outcome::kSkip:
        std::printf("SKIP %s: %s\n", test->name, outcome.detail.c_str());
        break;
      case Outcome::kFail:
        std::printf("FAIL %s: %s\n", test->name, outcome.detail.c_str());
        ++failed;
        break;
    }
    std::fflush(stdout);
  }
  co_return failed;
}

int Main(int argc, char** argv) {
  CLI::App app("rill interop test client (grpc.testing.TestService)");
  std::string server_host = "localhost";
  int server_port = 0;
  std::string server_host_override;
  std::string test_case = "large_unary";
  bool use_tls = false;
  bool use_test_ca = false;
  std::string ca_file;
  std::string tls_client_cert_file;
  std::string tls_client_key_file;
  app.add_option("--server_host", server_host, "server host name or address");
  app.add_option("--server_port", server_port, "server port")->check(CLI::Range(1, 65535));
  app.add_option("--server_host_override", server_host_override,
                 "with TLS, the name the server's certificate is checked against; also the "
                 ":authority (default: host:port)");
  app.add_option("--test_case", test_case, "a case, a comma-separated list, or all");
  app.add_option("--use_tls", use_tls, "connect over TLS");
  app.add_option("--use_test_ca", use_test_ca,
                 "verify the server against the test CA (--ca_file, default rill's test CA) "
                 "instead of the system's roots");
  app.add_option("--ca_file", ca_file, "the test CA (PEM), with --use_test_ca");
  app.add_option("--tls_client_cert_file", tls_client_cert_file,
                 "a client certificate chain (PEM) for mutual TLS");
  app.add_option("--tls_client_key_file", tls_client_key_file, "its private key (PEM)");
  std::string binary_log;
  std::string binary_log_filter = "*";
  app.add_option("--binary_log", binary_log, "write a gRPC binary log of every call to this file");
  app.add_option("--binary_log_filter", binary_log_filter, "which methods --binary_log logs");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (server_port == 0) {
    std::fprintf(stderr, "--server_port is required\n");
    return 2;
  }

  std::vector<const TestCase*> selected;
  if (test_case == "all") {
    for (const TestCase& test : kTestCases) selected.push_back(&test);
  } else {
    std::string_view names = test_case;
    while (!names.empty()) {
      const std::string_view name = names.substr(0, names.find(','));
      names.remove_prefix(std::min(names.size(), name.size() + 1));
      auto it = std::find_if(std::begin(kTestCases), std::end(kTestCases),
                             [name](const TestCase& test) { return name == test.name; });
      if (it == std::end(kTestCases)) {
        std::fprintf(stderr, "unknown --test_case: %.*s\n", static_cast<int>(name.size()),
                     name.data());
        return 2;
      }
      selected.push_back(&*it);
    }
  }
  if (selected.empty()) {
    std::fprintf(stderr, "--test_case is empty\n");
    return 2;
  }

  std::string host = server_host;
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  ChannelOptions options;
  // Declared before the channel: destroyed after it, writing what its last calls logged.
  std::shared_ptr<BinaryLog> log;
  if (!binary_log.empty()) {
    auto created = BinaryLog::Create(binary_log, {.filter = binary_log_filter});
    if (!created.ok()) {
      std::fprintf(stderr, "--binary_log: %s\n", created.status().ToString().c_str());
      return 2;
    }
    log = std::move(*created);
    options.stats_handlers.push_back(log);
  }
  std::shared_ptr<ChannelCredentials> credentials = ChannelCredentials::Insecure();
  if (use_tls) {
    ChannelTlsOptions tls{.server_name_override = server_host_override};
    if (use_test_ca) {
      auto roots = ReadFileToString(ca_file.empty() ? RILL_TLS_TEST_CERTS "/ca.pem" : ca_file);
      if (!roots.ok()) {
        std::fprintf(stderr, "%s\n", roots.status().ToString().c_str());
        return 2;
      }
      tls.root_certificates = *roots;
    }
    if (!tls_client_cert_file.empty()) {
      auto key_pair = TlsKeyPair::FromFiles(tls_client_cert_file, tls_client_key_file);
      if (!key_pair.ok()) {
        std::fprintf(stderr, "%s\n", key_pair.status().ToString().c_str());
        return 2;
      }
      tls.key_pair = *key_pair;
    }
    auto made = ChannelCredentials::Tls(tls);
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 2;
    }
    credentials = *made;
  } else {
    options.authority = server_host_override;
  }
  auto channel =
      Channel::Create(host + ":" + std::to_string(server_port), credentials, options);
  if (!channel.ok()) {
    std::fprintf(stderr, "cannot create the channel: %s\n", channel.status().ToString().c_str());
    return 2;
  }

  int failed = 0;
  {
    InteropClient client(*channel);
    asio::io_context io;
    asio::co_spawn(io, RunCases(&client, selected),
                   [&failed, total = selected.size()](std::exception_ptr error, int count) {
                     failed = error ? static_cast<int>(total) : count;
                   });
    io.run();
  }
  if (selected.size() > 1) {
    std::printf("interop client: %zu of %zu cases did not fail\n", selected.size() - failed,
                selected.size());
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace rill::test::interop

int main(int argc, char** argv) { return rill::test::interop::Main(argc, argv); }
