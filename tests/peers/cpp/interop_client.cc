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

class InteropClient {
 public:
  explicit InteropClient(const std::shared_ptr<grpc::Channel>& channel)
      : stub_(grpc::testing::TestService::NewStub(channel)),
        unimplemented_stub_(grpc::testing::UnimplementedService::NewStub(channel)) {}

  bool EmptyUnary() {
    ClientContext context;
    SetDeadline(&context);
    Empty request;
    Empty response;
    Status status = stub_->EmptyCall(&context, request, &response);
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return true;
  }

  bool LargeUnary() {
    ClientContext context;
    SetDeadline(&context);
    SimpleRequest request = LargeUnaryRequest();
    SimpleResponse response;
    Status status = stub_->UnaryCall(&context, request, &response);
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return CheckLargeResponse(response);
  }

  bool ClientCompressedUnary() {
    {
      // The probe: an uncompressed request that claims to be compressed must be refused.
      ClientContext context;
      SetDeadline(&context);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(true);
      SimpleResponse response;
      Status status = stub_->UnaryCall(&context, request, &response);
      PEER_EXPECT_STATUS(status, StatusCode::INVALID_ARGUMENT);
    }
    for (bool compressed : {true, false}) {
      ClientContext context;
      SetDeadline(&context);
      if (compressed) context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_expect_compressed()->set_value(compressed);
      SimpleResponse response;
      Status status = stub_->UnaryCall(&context, request, &response);
      PEER_EXPECT_STATUS(status, StatusCode::OK);
      if (!CheckLargeResponse(response)) return false;
    }
    return true;
  }

  bool ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      ClientContext context;
      SetDeadline(&context);
      SimpleRequest request = LargeUnaryRequest();
      request.mutable_response_compressed()->set_value(compressed);
      SimpleResponse response;
      Status status = stub_->UnaryCall(&context, request, &response);
      PEER_EXPECT_STATUS(status, StatusCode::OK);
      PEER_EXPECT(LastMessageWasCompressed(context.c_call()) == compressed,
                  "response_compressed=%s but the response's compressed flag is %s",
                  compressed ? "true" : "false", compressed ? "clear" : "set");
      if (!CheckLargeResponse(response)) return false;
    }
    return true;
  }

  bool ClientStreaming() {
    ClientContext context;
    SetDeadline(&context);
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(&context, &response);
    for (int size : {27182, 8, 1828, 45904}) {
      StreamingInputCallRequest request;
      request.mutable_payload()->set_body(Zeros(size));
      PEER_EXPECT(writer->Write(request), "writing the %d-byte request failed", size);
    }
    PEER_EXPECT(writer->WritesDone(), "half-close failed");
    Status status = writer->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(response.aggregated_payload_size() == 74922, "aggregated_payload_size %d",
                response.aggregated_payload_size());
    return true;
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
    SetDeadline(&context);
    context.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    StreamingInputCallResponse response;
    auto writer = stub_->StreamingInputCall(&context, &response);
    StreamingInputCallRequest request;
    request.mutable_expect_compressed()->set_value(true);
    request.mutable_payload()->set_body(Zeros(27182));
    PEER_EXPECT(writer->Write(request), "writing the compressed request failed");
    request.mutable_expect_compressed()->set_value(false);
    request.mutable_payload()->set_body(Zeros(45904));
    PEER_EXPECT(writer->Write(request, grpc::WriteOptions().set_no_compression()),
                "writing the uncompressed request failed");
    PEER_EXPECT(writer->WritesDone(), "half-close failed");
    Status status = writer->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(response.aggregated_payload_size() == 73086, "aggregated_payload_size %d",
                response.aggregated_payload_size());
    return true;
  }

  bool ServerStreaming() {
    ClientContext context;
    SetDeadline(&context);
    StreamingOutputCallRequest request;
    const std::vector<int> sizes = {31415, 9, 2653, 58979};
    for (int size : sizes) request.add_response_parameters()->set_size(size);
    auto reader = stub_->StreamingOutputCall(&context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (reader->Read(&response)) {
      PEER_EXPECT(count < sizes.size(), "more than %zu responses", sizes.size());
      PEER_EXPECT(CheckBody(response.payload().body(), sizes[count]),
                  "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                  response.payload().body().size(), sizes[count]);
      ++count;
    }
    Status status = reader->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(count == sizes.size(), "%zu responses, wanted %zu", count, sizes.size());
    return true;
  }

  bool ServerCompressedStreaming() {
    ClientContext context;
    SetDeadline(&context);
    StreamingOutputCallRequest request;
    const std::vector<std::pair<int, bool>> parameters = {{31415, true}, {92653, false}};
    for (auto [size, compressed] : parameters) {
      auto* added = request.add_response_parameters();
      added->set_size(size);
      added->mutable_compressed()->set_value(compressed);
    }
    auto reader = stub_->StreamingOutputCall(&context, request);
    StreamingOutputCallResponse response;
    size_t count = 0;
    while (reader->Read(&response)) {
      PEER_EXPECT(count < parameters.size(), "more than %zu responses", parameters.size());
      auto [size, compressed] = parameters[count];
      PEER_EXPECT(CheckBody(response.payload().body(), size),
                  "response %zu has %zu bytes (or non-zero bytes), wanted %d zeros", count,
                  response.payload().body().size(), size);
      PEER_EXPECT(LastMessageWasCompressed(context.c_call()) == compressed,
                  "response %zu: compressed=%s asked, but the compressed flag is %s", count,
                  compressed ? "true" : "false", compressed ? "clear" : "set");
      ++count;
    }
    Status status = reader->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    PEER_EXPECT(count == parameters.size(), "%zu responses, wanted %zu", count, parameters.size());
    return true;
  }

  bool PingPong() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    const std::vector<std::pair<int, int>> exchanges = {
        {31415, 27182}, {9, 8}, {2653, 1828}, {58979, 45904}};
    for (auto [response_size, payload_size] : exchanges) {
      PEER_EXPECT(stream->Write(StreamingRequest(response_size, payload_size)),
                  "writing the %d-byte request failed", payload_size);
      StreamingOutputCallResponse response;
      PEER_EXPECT(stream->Read(&response), "no response to the %d-byte request", payload_size);
      PEER_EXPECT(CheckBody(response.payload().body(), response_size),
                  "response has %zu bytes (or non-zero bytes), wanted %d zeros",
                  response.payload().body().size(), response_size);
    }
    PEER_EXPECT(stream->WritesDone(), "half-close failed");
    StreamingOutputCallResponse extra;
    PEER_EXPECT(!stream->Read(&extra), "a fifth response arrived");
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return true;
  }

  bool EmptyStream() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    PEER_EXPECT(stream->WritesDone(), "half-close failed");
    StreamingOutputCallResponse response;
    PEER_EXPECT(!stream->Read(&response), "a response arrived on an empty stream");
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return true;
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
    context.TryCancel();
    Status status = writer->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::CANCELLED);
    return true;
  }

  bool CancelAfterFirstResponse() {
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    PEER_EXPECT(stream->Write(StreamingRequest(31415, 27182)), "writing the request failed");
    StreamingOutputCallResponse response;
    PEER_EXPECT(stream->Read(&response), "no response arrived");
    PEER_EXPECT(CheckBody(response.payload().body(), 31415),
                "response has %zu bytes (or non-zero bytes), wanted 31415 zeros",
                response.payload().body().size());
    context.TryCancel();
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::CANCELLED);
    return true;
  }

  bool CustomMetadata() {
    {
      ClientContext context;
      SetDeadline(&context);
      AddEchoMetadata(&context);
      SimpleResponse response;
      Status status = stub_->UnaryCall(&context, LargeUnaryRequest(), &response);
      PEER_EXPECT_STATUS(status, StatusCode::OK);
      if (!CheckLargeResponse(response) || !CheckEchoedMetadata(context, "UnaryCall")) {
        return false;
      }
    }
    ClientContext context;
    SetDeadline(&context);
    AddEchoMetadata(&context);
    auto stream = stub_->FullDuplexCall(&context);
    PEER_EXPECT(stream->Write(StreamingRequest(314159, 271828)), "writing the request failed");
    StreamingOutputCallResponse response;
    PEER_EXPECT(stream->Read(&response), "no response arrived");
    PEER_EXPECT(CheckBody(response.payload().body(), 314159),
                "response has %zu bytes (or non-zero bytes), wanted 314159 zeros",
                response.payload().body().size());
    PEER_EXPECT(stream->WritesDone(), "half-close failed");
    PEER_EXPECT(!stream->Read(&response), "a second response arrived");
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::OK);
    return CheckEchoedMetadata(context, "FullDuplexCall");
  }

  bool StatusCodeAndMessage() {
    const std::string message = "test status message";
    {
      ClientContext context;
      SetDeadline(&context);
      SimpleRequest request;
      request.mutable_response_status()->set_code(2);
      request.mutable_response_status()->set_message(message);
      SimpleResponse response;
      Status status = stub_->UnaryCall(&context, request, &response);
      PEER_EXPECT_STATUS(status, StatusCode::UNKNOWN);
      PEER_EXPECT(status.error_message() == message, "UnaryCall status message \"%s\"",
                  status.error_message().c_str());
    }
    ClientContext context;
    SetDeadline(&context);
    auto stream = stub_->FullDuplexCall(&context);
    StreamingOutputCallRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(message);
    PEER_EXPECT(stream->Write(request), "writing the request failed");
    stream->WritesDone();  // May fail once the server has finished the call.
    Status status = stream->Finish();
    PEER_EXPECT_STATUS(status, StatusCode::UNKNOWN);
    PEER_EXPECT(status.error_message() == message, "FullDuplexCall status message \"%s\"",
                status.error_message().c_str());
    return true;
  }

  bool SpecialStatusMessage() {
    ClientContext context;
    SetDeadline(&context);
    SimpleRequest request;
    request.mutable_response_status()->set_code(2);
    request.mutable_response_status()->set_message(kSpecialStatusMessage);
    SimpleResponse response;
    Status status = stub_->UnaryCall(&context, request, &response);
    PEER_EXPECT_STATUS(status, StatusCode::UNKNOWN);
    PEER_EXPECT(status.error_message() == kSpecialStatusMessage, "status message \"%s\"",
                status.error_message().c_str());
    return true;
  }

  bool UnimplementedMethod() {
    ClientContext context;
    SetDeadline(&context);
    Empty response;
    Status status = stub_->UnimplementedCall(&context, Empty(), &response);
    PEER_EXPECT_STATUS(status, StatusCode::UNIMPLEMENTED);
    return true;
  }

  bool UnimplementedService() {
    ClientContext context;
    SetDeadline(&context);
    Empty response;
    Status status = unimplemented_stub_->UnimplementedCall(&context, Empty(), &response);
    PEER_EXPECT_STATUS(status, StatusCode::UNIMPLEMENTED);
    return true;
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

  static bool CheckLargeResponse(const SimpleResponse& response) {
    PEER_EXPECT(CheckBody(response.payload().body(), 314159),
                "response has %zu bytes (or non-zero bytes), wanted 314159 zeros",
                response.payload().body().size());
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

struct TestCase {
  const char* name;
  bool (InteropClient::*run)();
};

// The order --test_case=all runs them in. --test_case also takes a comma-separated list.
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

// The whole file, or "" when it cannot be read.
std::string ReadWholeFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  std::string content;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) content.append(buf, n);
  std::fclose(f);
  return content;
}

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
  std::vector<const TestCase*> selected;
  std::string_view names = flags.Get("test_case");
  if (names == "all") {
    for (const TestCase& test : kTestCases) selected.push_back(&test);
  }
  while (names != "all" && !names.empty()) {
    std::string_view name = names.substr(0, names.find(','));
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
  if (selected.empty()) {
    std::fprintf(stderr, "--test_case is empty\n");
    return 2;
  }

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
  for (const TestCase* test : selected) {
    current_case = test->name;
    if ((client.*test->run)()) {
      std::printf("PASS %s\n", test->name);
    } else {
      ++failed;
    }
    std::fflush(stdout);
  }
  if (selected.size() > 1) {
    std::printf("interop client: %zu of %zu cases passed\n", selected.size() - failed,
                selected.size());
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace peer

int main(int argc, char** argv) { return peer::Main(argc, argv); }
