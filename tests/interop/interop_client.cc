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
#include "tests/interop/interop_cases.h"
#include "tests/testing/grpc_testing_names.h"

namespace rill::test::interop {
namespace {

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

using DuplexStream = ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;

// The Empty calls: EmptyCall, UnimplementedCall on TestService (a method the server does not
// implement), UnimplementedCall on UnimplementedService (a service the server does not have).
enum class EmptyMethod { kEmptyCall, kUnimplementedMethod, kUnimplementedService };

class InteropClient {
 public:
  explicit InteropClient(const std::shared_ptr<Channel>& channel)
      : stub_(channel), unimplemented_stub_(channel) {}

  Awaitable<Outcome> EmptyUnary() {
    return EmptyCallEnds(EmptyMethod::kEmptyCall, StatusCode::kOk);
  }

  Awaitable<Outcome> LargeUnary() {
    ClientContext context;
    co_return co_await Unary(&context, LargeUnaryRequest(), StatusCode::kOk);
  }

  Awaitable<Outcome> ClientCompressedUnary() {
    {
      // The probe: an uncompressed request that claims to be compressed must be refused.
      ClientContext context;
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(true);
      INTEROP_CHECK(Unary(&context, request, StatusCode::kInvalidArgument, "the probe"));
    }
    for (bool compressed : {true, false}) {
      ClientContext context;
      if (compressed) context.set_compression("gzip");
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(compressed);
      INTEROP_CHECK(Unary(&context, request, StatusCode::kOk, Format("compressed=%d", compressed)));
    }
    co_return Outcome{};
  }

  Awaitable<Outcome> ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      ClientContext context;
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_response_compressed()->set_value(compressed);
      const std::string what = Format("response_compressed=%d", compressed);
      INTEROP_CHECK(Unary(&context, request, StatusCode::kOk, what));
      INTEROP_EXPECT(context.response_compressed() == compressed,
                     "%s but the response's compressed flag is %s", what.c_str(),
                     compressed ? "clear" : "set");
    }
    co_return Outcome{};
  }

  Awaitable<Outcome> ClientStreaming() {
    ClientContext context;
    // (Built outside the co_await: GCC 12 miscompiles initializer lists inside one.)
    const std::vector<InputMessage> messages = {{27182}, {8}, {1828}, {45904}};
    co_return co_await ClientStream(&context, messages, 74922);
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
    context.set_compression("gzip");
    const std::vector<InputMessage> messages = {{27182, true},
                                                {45904, false, /*no_compression=*/true}};
    co_return co_await ClientStream(&context, messages, 73086);
  }

  Awaitable<Outcome> ServerStreaming() {
    return ServerStream(
        {{31415, std::nullopt}, {9, std::nullopt}, {2653, std::nullopt}, {58979, std::nullopt}});
  }

  Awaitable<Outcome> ServerCompressedStreaming() {
    return ServerStream({{31415, true}, {92653, false}});
  }

  Awaitable<Outcome> PingPong() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    const std::vector<std::pair<int, int>> exchanges = {
        {31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}};
    for (auto [response_size, payload_size] : exchanges) {
      INTEROP_CHECK(Exchange(stream.get(), response_size, payload_size));
    }
    INTEROP_CHECK(HalfCloseAndFinish(stream.get()));
    co_return Outcome{};
  }

  Awaitable<Outcome> EmptyStream() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    INTEROP_CHECK(HalfCloseAndFinish(stream.get()));
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
    co_return co_await CancelAndFinish(&context, writer.get());
  }

  Awaitable<Outcome> CancelAfterFirstResponse() {
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    INTEROP_CHECK(Exchange(stream.get(), 31415, 27182));
    co_return co_await CancelAndFinish(&context, stream.get());
  }

  Awaitable<Outcome> CustomMetadata() {
    {
      ClientContext context;
      AddEchoMetadata(context);
      INTEROP_CHECK(Unary(&context, LargeUnaryRequest(), StatusCode::kOk));
      INTEROP_CHECK(CheckEchoedMetadata(&context, "UnaryCall"));
    }
    ClientContext context;
    SetDeadline(context);
    AddEchoMetadata(context);
    auto stream = stub_.FullDuplexCall(context);
    INTEROP_CHECK(Exchange(stream.get(), 314159, 271828));
    INTEROP_CHECK(HalfCloseAndFinish(stream.get()));
    INTEROP_CHECK(CheckEchoedMetadata(&context, "FullDuplexCall"));
    co_return Outcome{};
  }

  Awaitable<Outcome> StatusCodeAndMessage() {
    const std::string message = "test status message";
    {
      ClientContext context;
      INTEROP_CHECK(Unary(&context, StatusRequest<SimpleRequest>(message), StatusCode::kUnknown,
                          "UnaryCall", message));
    }
    ClientContext context;
    SetDeadline(context);
    auto stream = stub_.FullDuplexCall(context);
    const auto request = StatusRequest<StreamingOutputCallRequest>(message);
    INTEROP_EXPECT_STEP(co_await stream->Write(request), stream, "writing the request failed");
    co_await stream->WritesDone();  // may fail once the server has finished the call
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kUnknown);
    INTEROP_EXPECT(status.message() == message, "FullDuplexCall status message %s",
                   Describe(status.message()).c_str());
    co_return Outcome{};
  }

  Awaitable<Outcome> SpecialStatusMessage() {
    const std::string message(kSpecialStatusMessage);
    ClientContext context;
    co_return co_await Unary(&context, StatusRequest<SimpleRequest>(message), StatusCode::kUnknown,
                             "UnaryCall", message);
  }

  Awaitable<Outcome> UnimplementedMethod() {
    return EmptyCallEnds(EmptyMethod::kUnimplementedMethod, StatusCode::kUnimplemented);
  }

  Awaitable<Outcome> UnimplementedService() {
    return EmptyCallEnds(EmptyMethod::kUnimplementedService, StatusCode::kUnimplemented);
  }

 private:
  // Coroutine parameters are values or pointers: they are copied into the frame.

  // A UnaryCall of `request` on `context` (given the case deadline here) that must end with
  // `wanted`: when that is OK, with a response of request.response_size() zeros; otherwise,
  // when `message` is given, with that status message. `what` names the call in a failure.
  Awaitable<Outcome> Unary(ClientContext* context, SimpleRequest request, StatusCode wanted,
                           std::string what = "UnaryCall",
                           std::optional<std::string> message = std::nullopt) {
    SetDeadline(*context);
    SimpleResponse response;
    Status status = co_await stub_.UnaryCall(*context, request, &response, asio::use_awaitable);
    INTEROP_EXPECT(status.code() == wanted, "%s: status %s, wanted %s", what.c_str(),
                   status.ToString().c_str(), std::string(StatusCodeName(wanted)).c_str());
    if (wanted == StatusCode::kOk) {
      INTEROP_EXPECT(IsZeros(response.payload().body(), request.response_size()),
                     "%s: response has %zu bytes (or non-zero bytes), wanted %d zeros",
                     what.c_str(), response.payload().body().size(), request.response_size());
    }
    INTEROP_EXPECT(!message || status.message() == *message, "%s status message %s", what.c_str(),
                   Describe(status.message()).c_str());
    co_return Outcome{};
  }

  Awaitable<Outcome> EmptyCallEnds(EmptyMethod method, StatusCode wanted) {
    ClientContext context;
    SetDeadline(context);
    Empty request;
    Empty response;
    Status status;
    switch (method) {
      case EmptyMethod::kEmptyCall:
        status = co_await stub_.EmptyCall(context, request, &response, asio::use_awaitable);
        break;
      case EmptyMethod::kUnimplementedMethod:
        status = co_await stub_.UnimplementedCall(context, request, &response, asio::use_awaitable);
        break;
      case EmptyMethod::kUnimplementedService:
        status = co_await unimplemented_stub_.UnimplementedCall(context, request, &response,
                                                                asio::use_awaitable);
        break;
    }
    INTEROP_EXPECT_CODE(status, wanted);
    co_return Outcome{};
  }

  // A client-streaming call on `context` (given the case deadline here) sending `messages`,
  // which must end OK with `aggregated` as the aggregated payload size.
  Awaitable<Outcome> ClientStream(ClientContext* context, std::vector<InputMessage> messages,
                                  int aggregated) {
    SetDeadline(*context);
    StreamingInputCallResponse response;
    auto writer = stub_.StreamingInputCall(*context, &response);
    for (const InputMessage& message : messages) {
      StreamingInputCallRequest request;
      if (message.expect_compressed) {
        request.mutable_expect_compressed()->set_value(*message.expect_compressed);
      }
      request.mutable_payload()->set_body(Zeros(message.size));
      INTEROP_EXPECT_STEP(
          co_await writer->Write(request, WriteOptions{.no_compression = message.no_compression}),
          writer, "writing the %d-byte request failed", message.size);
    }
    INTEROP_EXPECT_STEP(co_await writer->WritesDone(), writer, "half-close failed");
    Status status = co_await writer->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(response.aggregated_payload_size() == aggregated,
                   "aggregated_payload_size %d, wanted %d", response.aggregated_payload_size(),
                   aggregated);
    co_return Outcome{};
  }

  // A server-streaming call asking for `responses`, which must all arrive, in order, as zeros
  // of their size (and compressed or not as asked), before the call ends OK.
  Awaitable<Outcome> ServerStream(std::vector<OutputMessage> responses) {
    ClientContext context;
    SetDeadline(context);
    StreamingOutputCallRequest request;
    for (const OutputMessage& wanted : responses) {
      auto* added = request.add_response_parameters();
      added->set_size(wanted.size);
      if (wanted.compressed) added->mutable_compressed()->set_value(*wanted.compressed);
    }
    auto reader = stub_.StreamingOutputCall(context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (co_await reader->Read(&response)) {
      INTEROP_EXPECT(count < responses.size(), "more than %zu responses", responses.size());
      const OutputMessage& wanted = responses[count];
      INTEROP_EXPECT(!wanted.compressed || context.response_compressed() == *wanted.compressed,
                     "response %zu: compressed=%d asked, but the compressed flag is %s", count,
                     *wanted.compressed, *wanted.compressed ? "clear" : "set");
      INTEROP_EXPECT(IsZeros(response.payload().body(), wanted.size),
                     "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                     response.payload().body().size(), wanted.size);
      ++count;
    }
    Status status = co_await reader->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    INTEROP_EXPECT(count == responses.size(), "%zu responses, wanted %zu", count, responses.size());
    co_return Outcome{};
  }

  // Writes StreamingRequest(response_size, payload_size) on `stream` and reads its response,
  // which must be `response_size` zeros.
  static Awaitable<Outcome> Exchange(DuplexStream* stream, int response_size, int payload_size) {
    StreamingOutputCallRequest request = StreamingRequest(response_size, payload_size);
    INTEROP_EXPECT_STEP(co_await stream->Write(request), stream,
                        "writing the %d-byte request failed", payload_size);
    StreamingOutputCallResponse response;
    INTEROP_EXPECT_STEP(co_await stream->Read(&response), stream,
                        "no response to the %d-byte request", payload_size);
    INTEROP_EXPECT(IsZeros(response.payload().body(), response_size),
                   "response has %zu bytes (or non-zero bytes), wanted %d zeros",
                   response.payload().body().size(), response_size);
    co_return Outcome{};
  }

  // Cancels the call of `stream`, which must then end CANCELLED.
  template <class Stream>
  static Awaitable<Outcome> CancelAndFinish(ClientContext* context, Stream* stream) {
    context->TryCancel();
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kCancelled);
    co_return Outcome{};
  }

  // Half-closes `stream`, which must then end OK without a further response.
  static Awaitable<Outcome> HalfCloseAndFinish(DuplexStream* stream) {
    INTEROP_EXPECT_STEP(co_await stream->WritesDone(), stream, "half-close failed");
    StreamingOutputCallResponse extra;
    INTEROP_EXPECT(!co_await stream->Read(&extra), "a response arrived after the expected ones");
    Status status = co_await stream->Finish();
    INTEROP_EXPECT_CODE(status, StatusCode::kOk);
    co_return Outcome{};
  }

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

using TestCase = InteropCase<InteropClient, Awaitable<Outcome>>;

// Runs the cases in order and returns how many failed.
Awaitable<int> RunCases(InteropClient* client, std::vector<TestCase> cases) {
  int failed = 0;
  for (const TestCase& test : cases) {
    Outcome outcome;
    try {
      outcome = co_await (client->*test.run)();
    } catch (const std::exception& e) {
      outcome = Outcome{Outcome::kFail, std::string("exception: ") + e.what()};
    }
    switch (outcome.kind) {
      case Outcome::kPass:
        std::printf("PASS %s\n", test.name);
        break;
      case Outcome::kSkip:
        std::printf("SKIP %s: %s\n", test.name, outcome.detail.c_str());
        break;
      case Outcome::kFail:
        std::printf("FAIL %s: %s\n", test.name, outcome.detail.c_str());
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

  const std::optional<std::vector<TestCase>> selected =
      SelectInteropCases(InteropCases<InteropClient, Awaitable<Outcome>>(), test_case);
  if (!selected) return 2;

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
    asio::co_spawn(io, RunCases(&client, *selected),
                   [&failed, total = selected->size()](std::exception_ptr error, int count) {
                     failed = error ? static_cast<int>(total) : count;
                   });
    io.run();
  }
  if (selected->size() > 1) {
    std::printf("interop client: %zu of %zu cases did not fail\n", selected->size() - failed,
                selected->size());
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace rill::test::interop

int main(int argc, char** argv) { return rill::test::interop::Main(argc, argv); }
