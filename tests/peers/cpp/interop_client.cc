// The gRPC interop test client on libgrpc++: runs the test cases of gRPC's interop test
// descriptions against any grpc.testing.TestService server (rill's or another peer's).
//
//   peer_cpp_interop_client --server_host=127.0.0.1 --server_port=50051 --test_case=all
//
// Prints `PASS <case>` per case that passed and `FAIL <case>: <assertion>` per case that did
// not; exits 0 when every case passed and 1 otherwise. --test_case takes one case, a
// comma-separated list, or `all` (every case below, in order); all cases share one channel.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "grpc/testing/empty.pb.h"
#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.grpc.pb.h"
#include "tests/interop/interop_cases.h"
#include "tests/peers/cpp/message_flags.h"
#include "tests/peers/cpp/peer_flags.h"

namespace peer {
namespace {

using grpc::ClientContext;
using grpc::Status;
using grpc::StatusCode;
using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr char kEchoInitialKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoInitialValue[] = "test_initial_metadata_value";
constexpr char kEchoTrailingKey[] = "x-grpc-test-echo-trailing-bin";
constexpr char kEchoTrailingValue[] = "\xab\xab\xab";
constexpr char kSpecialStatusMessage[] =
    "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP \U0001F608\t\n";

// Every call but timeout_on_sleeping_server gets this deadline, so a hung server fails the
// case instead of hanging the client.
constexpr std::chrono::seconds kCallDeadline(30);

// Reports the first failed assertion of a case and leaves the case.
#define PEER_EXPECT(condition, ...)                          \
  do {                                                       \
    if (!(condition)) {                                      \
      std::printf("FAIL %s: ", current_case);                \
      std::printf(__VA_ARGS__);                              \
      std::printf(" [%s, line %d]\n", #condition, __LINE__); \
      std::fflush(stdout);                                   \
      return false;                                          \
    }                                                        \
  } while (0)

#define PEER_EXPECT_STATUS(status, code)                                    \
  PEER_EXPECT((status).error_code() == (code), "status %d (%s), wanted %s", \
              static_cast<int>((status).error_code()), (status).error_message().c_str(), #code)

const char* current_case = "";

std::string Zeros(int size) { return std::string(static_cast<size_t>(size), '\0'); }

bool AllZero(const std::string& body) {
  return std::all_of(body.begin(), body.end(), [](char c) { return c == '\0'; });
}

void SetDeadline(ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + kCallDeadline);
}

// Value of `key` in `metadata`, or nullopt when absent.
std::optional<std::string> Find(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                                std::string_view key) {
  auto it = metadata.find(grpc::string_ref(key.data(), key.size()));
  if (it == metadata.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

StreamingOutputCallRequest StreamingRequest(int response_size, int payload_size) {
  StreamingOutputCallRequest request;
  request.add_response_parameters()->set_size(response_size);
  if (payload_size >= 0) request.mutable_payload()->set_body(Zeros(payload_size));
  return request;
}

using DuplexStream =
    grpc::ClientReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;
using rill::test::interop::InputMessage;
using rill::test::interop::OutputMessage;
using rill::test::interop::StatusRequest;

// The Empty calls: EmptyCall, UnimplementedCall on TestService (a method the server does not
// implement), UnimplementedCall on UnimplementedService (a service the server does not have).
enum class EmptyMethod { kEmptyCall, kUnimplementedMethod, kUnimplementedService };

class InteropClient {
 public:
  explicit InteropClient(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(grpc::testing::TestService::NewStub(channel)),
        unimplemented_stub_(grpc::testing::UnimplementedService::NewStub(channel)) {}

  bool EmptyUnary() { return EmptyCallEnds(EmptyMethod::kEmptyCall, StatusCode::OK); }

  bool LargeUnary() {
    ClientContext context;
    return Unary(&context, LargeUnaryRequest(), StatusCode::OK);
  }

  bool ClientCompressedUnary() {
    {
      // The probe: an uncompressed request that claims to be compressed must be refused.
      ClientContext context;
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(true);
      if (!Unary(&context, request, StatusCode::INVALID_ARGUMENT, "the probe")) return false;
    }
    for (bool compressed : {true, false}) {
      ClientContext context;
      if (compressed) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(compressed);
      if (!Unary(&context, request, StatusCode::OK, compressed ? "compressed" : "uncompressed")) {
        return false;
      }
    }
    return true;
  }

  bool ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      ClientContext context;
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_response_compressed()->set_value(compressed);
      if (!Unary(&context, request, StatusCode::OK)) return false;
      PEER_EXPECT(LastMessageWasCompressed(context.c_call()) == compressed,
                  "response_compressed=%s but the response's compressed flag is %s",
                  compressed ? "true" : "false", compressed ? "clear" : "set");
    }
    return true;
  }

  bool ClientStreaming() {
    ClientContext context;
    return ClientStream(&context, {{27182}, {8}, {1828}, {45904}}, 74922);
  }

  bool ClientCompressedStreaming() {
    {
      // The probe: an uncompressed message that claims to be compressed must be refused.
      ClientContext context;
      SetDeadline(&context);
      StreamingInputCallResponse response;
      auto writer = stub_->StreamingInputCall(&context, &response);
      StreamingInputCallRequest request;
      request.mutable_expect_compressed()->set_value(true);
      request.mutable_payload()->set_body(Zeros(27182));
      writer->Write(request);  // May fail once the server has refused the call.
      writer->WritesDone();
      Status status = writer->Finish();
      PEER_EXPECT_STATUS(status, StatusCode::INVALID_ARGUMENT);
    }
    ClientContext context;
    context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    return ClientStream(&context, {{27182, true}, {45904, false, /*no_compression=*/true}}, 73086);
  }

  bool ServerStreaming() {
    return ServerStream(
        {{31415, std::nullopt}, {9, std::nullopt}, {2653, std::nullopt}, {58979, std::nullopt}});
  }

  bool ServerCompressedStreaming() { return ServerStream({{31415, true}, {92653, false}}); }

  bool PingPong() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    const std::vector<std::pair<int, int>> exchanges = {
        {31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}};
    for (auto [response_size, payload_size] : exchanges) {
      if (!Exchange(stream.get(), response_size, payload_size)) return false;
    }
    return HalfCloseAndFinish(stream.get());
  }

  bool EmptyStream() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    return HalfCloseAndFinish(stream.get());
  }

  bool TimeoutOnSleepingServer() {
    ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
    auto stream = stub_->FullDuplexCall(&context);
    StreamingOutputCallRequest request;
    request.mutable_payload()->set_body(Zeros(27182));
    stream->Write(request);  // May fail: the deadline can pass before the write.
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::DEADLINE_EXCEEDED);
    return true;
  }

  bool CancelAfterBegin() {
    ClientContext context;
    SetDeadline(&context);
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(&context, &response);
    return CancelAndFinish(&context, writer.get());
  }

  bool CancelAfterFirstResponse() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    return Exchange(stream.get(), 31415, 27182) && CancelAndFinish(&context, stream.get());
  }

  bool CustomMetadata() {
    {
      ClientContext context;
      AddEchoMetadata(&context);
      if (!Unary(&context, LargeUnaryRequest(), StatusCode::OK) ||
          !CheckEchoedMetadata(context, "UnaryCall")) {
        return false;
      }
    }
    ClientContext context;
    SetDeadline(&context);
    AddEchoMetadata(&context);
    auto stream = stub_->FullDuplexCall(&context);
    return Exchange(stream.get(), 314159, 271828) && HalfCloseAndFinish(stream.get()) &&
           CheckEchoedMetadata(context, "FullDuplexCall");
  }

  bool StatusCodeAndMessage() {
    const std::string message = "test status message";
    {
      ClientContext context;
      if (!Unary(&context, StatusRequest<SimpleRequest>(message), StatusCode::UNKNOWN, "UnaryCall",
                 message)) {
        return false;
      }
    }
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    PEER_EXPECT(stream->Write(StatusRequest<StreamingOutputCallRequest>(message)),
                "writing the request failed");
    stream->WritesDone();  // May fail once the server has finished the call.
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::UNKNOWN);
    PEER_EXPECT(status.error_message() == message, "FullDuplexCall status message \"%s\"",
                status.error_message().c_str());
    return true;
  }

  bool SpecialStatusMessage() {
    ClientContext context;
    return Unary(&context, StatusRequest<SimpleRequest>(kSpecialStatusMessage), StatusCode::UNKNOWN,
                 "UnaryCall", kSpecialStatusMessage);
  }

  bool UnimplementedMethod() {
    return EmptyCallEnds(EmptyMethod::kUnimplementedMethod, StatusCode::UNIMPLEMENTED);
  }

  bool UnimplementedService() {
    return EmptyCallEnds(EmptyMethod::kUnimplementedService, StatusCode::UNIMPLEMENTED);
  }

 private:
  static SimpleRequest LargeUnaryRequest() {
    SimpleRequest request;
    request.set_response_size(314159);
    request.mutable_payload()->set_body(Zeros(271828));
    return request;
  }

  static bool CheckBody(const std::string& body, int size) {
    return body.size() == static_cast<size_t>(size) && AllZero(body);
  }

  // A UnaryCall of `request` on `context` (given the case deadline here) that must end with
  // `wanted`: when that is OK, with a response of request.response_size() zeros; otherwise,
  // when `message` is given, with that status message. `what` names the call in a failure.
  bool Unary(ClientContext* context, const SimpleRequest& request, StatusCode wanted,
             const char* what = "UnaryCall", std::optional<std::string> message = std::nullopt) {
    SetDeadline(context);
    SimpleResponse response;
    Status status = stub_->UnaryCall(context, request, &response);
    PEER_EXPECT(status.error_code() == wanted, "%s: status %d (%s), wanted %d", what,
                static_cast<int>(status.error_code()), status.error_message().c_str(),
                static_cast<int>(wanted));
    if (wanted == StatusCode::OK) {
      PEER_EXPECT(CheckBody(response.payload().body(), request.response_size()),
                  "%s: response has %zu bytes (or non-zero bytes), wanted %d zeros", what,
                  response.payload().body().size(), request.response_size());
    }
    PEER_EXPECT(!message || status.error_message() == *message, "%s status message \"%s\"", what,
                status.error_message().c_str());
    return true;
  }

  bool EmptyCallEnds(EmptyMethod method, StatusCode wanted) {
    ClientContext context;
    SetDeadline(&context);
    Empty response;
    Status status;
    switch (method) {
      case EmptyMethod::kEmptyCall:
        status = stub_->EmptyCall(&context, Empty(), &response);
        break;
      case EmptyMethod::kUnimplementedMethod:
        status = stub_->UnimplementedCall(&context, Empty(), &response);
        break;
      case EmptyMethod::kUnimplementedService:
        status = unimplemented_stub_->UnimplementedCall(&context, Empty(), &response);
        break;
    }
    PEER_EXPECT(status.error_code() == wanted, "status %d (%s), wanted %d",
                static_cast<int>(status.error_code()), status.error_message().c_str(),
                static_cast<int>(wanted));
    return true;
  }

  // A client-streaming call on `context` (given the case deadline here) sending `messages`,
  // which must end OK with `aggregated` as the aggregated payload size.
  bool ClientStream(ClientContext* context, const std::vector<InputMessage>& messages,
                    int aggregated) {
    SetDeadline(context);
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(context, &response);
    for (const InputMessage& message : messages) {
      StreamingInputCallRequest request;
      if (message.expect_compressed) {
        request.mutable_expect_compressed()->set_value(*message.expect_compressed);
      }
      request.mutable_payload()->set_body(Zeros(message.size));
      grpc::WriteOptions options;
      if (message.no_compression) options.set_no_compression();
      PEER_EXPECT(writer->Write(request, options), "writing the %d-byte request failed",
                  message.size);
    }
    PEER_EXPECT(writer->WritesDone(), "half-close failed");
    Status status = writer->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(response.aggregated_payload_size() == aggregated,
                "aggregated_payload_size %d, wanted %d", response.aggregated_payload_size(),
                aggregated);
    return true;
  }

  // A server-streaming call asking for `responses`, which must all arrive, in order, as zeros
  // of their size (and compressed or not as asked), before the call ends OK.
  bool ServerStream(const std::vector<OutputMessage>& responses) {
    ClientContext context;
    SetDeadline(&context);
    StreamingOutputCallRequest request;
    for (const OutputMessage& wanted : responses) {
      auto* added = request.add_response_parameters();
      added->set_size(wanted.size);
      if (wanted.compressed) added->mutable_compressed()->set_value(*wanted.compressed);
    }
    auto reader = stub_->StreamingOutputCall(&context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (reader->Read(&response)) {
      PEER_EXPECT(count < responses.size(), "more than %zu responses", responses.size());
      const OutputMessage& wanted = responses[count];
      PEER_EXPECT(CheckBody(response.payload().body(), wanted.size),
                  "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                  response.payload().body().size(), wanted.size);
      PEER_EXPECT(
          !wanted.compressed || LastMessageWasCompressed(context.c_call()) == *wanted.compressed,
          "response %zu: compressed=%s asked, but the compressed flag is %s", count,
          *wanted.compressed ? "true" : "false", *wanted.compressed ? "clear" : "set");
      ++count;
    }
    Status status = reader->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(count == responses.size(), "%zu responses, wanted %zu", count, responses.size());
    return true;
  }

  // Writes StreamingRequest(response_size, payload_size) on `stream` and reads its response,
  // which must be `response_size` zeros.
  static bool Exchange(DuplexStream* stream, int response_size, int payload_size) {
    PEER_EXPECT(stream->Write(StreamingRequest(response_size, payload_size)),
                "writing the %d-byte request failed", payload_size);
    StreamingOutputCallResponse response;
    PEER_EXPECT(stream->Read(&response), "no response to the %d-byte request", payload_size);
    PEER_EXPECT(CheckBody(response.payload().body(), response_size),
                "response has %zu bytes (or non-zero bytes), wanted %d zeros",
                response.payload().body().size(), response_size);
    return true;
  }

  // Cancels the call of `stream`, which must then end CANCELLED.
  template <class Stream>
  static bool CancelAndFinish(ClientContext* context, Stream* stream) {
    context->TryCancel();
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::CANCELLED);
    return true;
  }

  // Half-closes `stream`, which must then end OK without a further response.
  static bool HalfCloseAndFinish(DuplexStream* stream) {
    PEER_EXPECT(stream->WritesDone(), "half-close failed");
    StreamingOutputCallResponse extra;
    PEER_EXPECT(!stream->Read(&extra), "a response arrived after the expected ones");
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return true;
  }

  static void AddEchoMetadata(ClientContext* context) {
    context->AddMetadata(kEchoInitialKey, kEchoInitialValue);
    context->AddMetadata(kEchoTrailingKey, kEchoTrailingValue);
  }

  static bool CheckEchoedMetadata(const ClientContext& context, const char* method) {
    std::optional<std::string> initial = Find(context.GetServerInitialMetadata(), kEchoInitialKey);
    PEER_EXPECT(initial == kEchoInitialValue, "%s: initial metadata %s is %s", method,
                kEchoInitialKey, initial ? ("\"" + *initial + "\"").c_str() : "missing");
    std::optional<std::string> trailing =
        Find(context.GetServerTrailingMetadata(), kEchoTrailingKey);
    PEER_EXPECT(trailing == kEchoTrailingValue, "%s: trailing metadata %s is %s", method,
                kEchoTrailingKey, trailing ? "not 0xababab" : "missing");
    return true;
  }

  std::unique_ptr<grpc::testing::TestService::Stub> stub_;
  std::unique_ptr<grpc::testing::UnimplementedService::Stub> unimplemented_stub_;
};

using TestCase = rill::test::interop::InteropCase<InteropClient, bool>;

int Main(int argc, char** argv) {
  PeerFlags flags({{"server_host", "localhost"},
                   {"server_port", "0"},
                   {"server_host_override", ""},
                   {"test_case", "large_unary"},
                   {"use_tls", "false"},
                   {"use_test_ca", "false"},
                   {"ca_file", ""},
                   {"tls_client_cert_file", ""},
                   {"tls_client_key_file", ""}});
  if (!flags.Parse(argc, argv)) return 2;
  const bool use_tls = flags.GetBool("use_tls");
  int port = flags.GetInt("server_port");
  if (port <= 0 || port > 65535) {
    std::fprintf(stderr, "bad --server_port: %s\n", flags.Get("server_port").c_str());
    return 2;
  }
  const std::optional<std::vector<TestCase>> selected = rill::test::interop::SelectInteropCases(
      rill::test::interop::InteropCases<InteropClient, bool>(), flags.Get("test_case"));
  if (!selected) return 2;

  grpc::ChannelArguments arguments;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (use_tls) {
    grpc::SslCredentialsOptions ssl;
    if (flags.GetBool("use_test_ca")) ssl.pem_root_certs = ReadWholeFile(flags.Get("ca_file"));
    if (!flags.Get("tls_client_cert_file").empty()) {
      ssl.pem_cert_chain = ReadWholeFile(flags.Get("tls_client_cert_file"));
      ssl.pem_private_key = ReadWholeFile(flags.Get("tls_client_key_file"));
    }
    credentials = grpc::SslCredentials(ssl);
    if (!flags.Get("server_host_override").empty()) {
      arguments.SetSslTargetNameOverride(flags.Get("server_host_override"));
    }
  } else if (!flags.Get("server_host_override").empty()) {
    arguments.SetString(GRPC_ARG_DEFAULT_AUTHORITY, flags.Get("server_host_override"));
  }
  std::string host = flags.Get("server_host");
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  auto channel = grpc::CreateCustomChannel(host + ":" + std::to_string(port),
                                           credentials, arguments);
  InteropClient client(channel);

  int failed = 0;
  for (const TestCase& test : *selected) {
    current_case = test.name;
    if ((client.*test.run)()) {
      std::printf("PASS %s\n", test.name);
    } else {
      ++failed;
    }
    std::fflush(stdout);
  }
  if (selected->size() > 1) {
    std::printf("interop client: %zu of %zu cases passed\n", selected->size() - failed,
                selected->size());
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace peer

int main(int argc, char** argv) { return peer::Main(argc, argv); }
