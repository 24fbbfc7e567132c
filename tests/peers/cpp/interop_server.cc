// grpc.testing.TestService on libgrpc++'s synchronous API: the reference server that rill's
// interop clients (and the other peers' clients) are run against.
//
//   peer_cpp_interop_server --port=0 --use_tls=false
//
// Prints `listening on <port>` on stdout once it accepts calls, and shuts down on SIGINT or
// SIGTERM. Behaviour follows the server features of gRPC's interop test descriptions:
// EmptyCall, UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall,
// HalfDuplexCall, CompressedRequest (expect_compressed), CompressedResponse
// (response_compressed, ResponseParameters.compressed), Echo Status, Echo Metadata and
// ResponseParameters.interval_us. UnimplementedCall stays unimplemented.
//
// Built a second time with PEER_WITH_REFLECTION as peer_cpp_reflection_server, which also serves
// libgrpc++'s own server reflection (grpc++_reflection: grpc.reflection.v1alpha), for clients
// that find methods through reflection.
#include <grpcpp/grpcpp.h>
#ifdef PEER_WITH_REFLECTION
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/empty.pb.h"
#include "grpc/testing/messages.pb.h"
#include "grpc/testing/test.grpc.pb.h"
#include "tests/peers/cpp/message_flags.h"
#include "tests/peers/cpp/peer_flags.h"
#include "tests/testing/stop_signals.h"

namespace peer {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;
using grpc::testing::EchoStatus;
using grpc::testing::Empty;
using grpc::testing::ResponseParameters;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;

constexpr char kEchoInitialKey[] = "x-grpc-test-echo-initial";
constexpr char kEchoTrailingKey[] = "x-grpc-test-echo-trailing-bin";

// Echo Metadata: sends the client's echo keys back, the first as initial metadata and the
// second as trailing metadata. Must run before the first message is written.
void EchoMetadata(ServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto initial = metadata.find(kEchoInitialKey);
  if (initial != metadata.end()) {
    context->AddInitialMetadata(kEchoInitialKey,
                                std::string(initial->second.data(), initial->second.size()));
  }
  auto trailing = metadata.find(kEchoTrailingKey);
  if (trailing != metadata.end()) {
    context->AddTrailingMetadata(kEchoTrailingKey,
                                 std::string(trailing->second.data(), trailing->second.size()));
  }
}

// CompressedRequest: whether the last received message's compression matches `expected`.
bool CompressionAsExpected(ServerContext* context, bool expected) {
  return LastMessageWasCompressed(context->c_call()) == expected;
}

Status EchoedStatus(const EchoStatus& echo) {
  return Status(static_cast<StatusCode>(echo.code()), echo.message());
}

// Fills `payload` with `size` zero bytes of type COMPRESSABLE.
bool FillPayload(int size, grpc::testing::Payload* payload) {
  if (size < 0) return false;
  payload->set_type(grpc::testing::COMPRESSABLE);
  payload->mutable_body()->assign(static_cast<size_t>(size), '\0');
  return true;
}

// Writes one response per ResponseParameters of the requests of a streaming call, honouring
// interval_us and the per-message compressed flag.
class ResponseStreamer {
 public:
  explicit ResponseStreamer(ServerContext* context) : context_(context) {}

  // Sends the responses `request` asks for; false when the stream is broken or a parameter is
  // invalid (`status` then says why).
  template <typename Writer>
  bool Send(const StreamingOutputCallRequest& request, Writer* writer, Status* status) {
    if (request.response_type() != grpc::testing::COMPRESSABLE) {
      *status = Status(StatusCode::INVALID_ARGUMENT, "unsupported response_type");
      return false;
    }
    // The call's algorithm travels in the initial metadata, so it can only be chosen before
    // the first message; after that, messages are compressed only if it was.
    if (!wrote_ && !compressing_ &&
        std::any_of(request.response_parameters().begin(), request.response_parameters().end(),
                    [](const ResponseParameters& p) { return p.compressed().value(); })) {
      context_->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      compressing_ = true;
    }
    for (const ResponseParameters& parameters : request.response_parameters()) {
      if (parameters.interval_us() > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(parameters.interval_us()));
      }
      StreamingOutputCallResponse response;
      if (!FillPayload(parameters.size(), response.mutable_payload())) {
        *status = Status(StatusCode::INVALID_ARGUMENT, "negative response size");
        return false;
      }
      grpc::WriteOptions options;
      if (parameters.has_compressed() && !parameters.compressed().value()) {
        options.set_no_compression();
      }
      wrote_ = true;
      if (!writer->Write(response, options)) {
        *status = Status(StatusCode::UNAVAILABLE, "client went away");
        return false;
      }
    }
    return true;
  }

 private:
  ServerContext* context_;
  bool wrote_ = false;
  bool compressing_ = false;
};

class TestServiceImpl final : public grpc::testing::TestService::Service {
 public:
  // StreamingOutputCall handlers started, running now and at most at once (printed at exit for
  // the hardening prober).
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> running{0};
  std::atomic<int64_t> peak{0};

  Status EmptyCall(ServerContext* context, const Empty*, Empty*) override {
    EchoMetadata(context);
    return Status::OK;
  }

  Status UnaryCall(ServerContext* context, const SimpleRequest* request,
                   SimpleResponse* response) override {
    EchoMetadata(context);
    if (request->has_expect_compressed() &&
        !CompressionAsExpected(context, request->expect_compressed().value())) {
      return Status(StatusCode::INVALID_ARGUMENT, request->expect_compressed().value()
                                                      ? "request was not compressed"
                                                      : "request was compressed");
    }
    if (request->response_type() != grpc::testing::COMPRESSABLE) {
      return Status(StatusCode::INVALID_ARGUMENT, "unsupported response_type");
    }
    if (!FillPayload(request->response_size(), response->mutable_payload())) {
      return Status(StatusCode::INVALID_ARGUMENT, "negative response_size");
    }
    if (request->has_response_compressed()) {
      context->set_compression_algorithm(
          request->response_compressed().value() ? GRPC_COMPRESS_GZIP : GRPC_COMPRESS_NONE);
    }
    if (request->has_response_status()) return EchoedStatus(request->response_status());
    return Status::OK;
  }

  Status CacheableUnaryCall(ServerContext* context, const SimpleRequest* request,
                            SimpleResponse* response) override {
    EchoMetadata(context);
    // The payload differs per call so that a cache hit is recognisable.
    response->mutable_payload()->set_body(
        std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
    context->AddInitialMetadata("cache-control", "max-age=60, public");
    return Status::OK;
  }

  Status StreamingOutputCall(ServerContext* context, const StreamingOutputCallRequest* request,
                             grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    started.fetch_add(1);
    int64_t now_running = running.fetch_add(1) + 1;
    for (int64_t p = peak.load(); now_running > p && !peak.compare_exchange_weak(p, now_running);) {
    }
    struct Leave {
      std::atomic<int64_t>* running;
      ~Leave() { running->fetch_sub(1); }
    } leave{&running};
    EchoMetadata(context);
    if (request->has_response_status() && request->response_status().code() != 0) {
      return EchoedStatus(request->response_status());
    }
    ResponseStreamer streamer(context);
    Status status;
    if (!streamer.Send(*request, writer, &status)) return status;
    return Status::OK;
  }

  Status StreamingInputCall(ServerContext* context,
                            grpc::ServerReader<StreamingInputCallRequest>* reader,
                            StreamingInputCallResponse* response) override {
    EchoMetadata(context);
    StreamingInputCallRequest request;
    int aggregated = 0;
    while (reader->Read(&request)) {
      if (request.has_expect_compressed() &&
          !CompressionAsExpected(context, request.expect_compressed().value())) {
        return Status(StatusCode::INVALID_ARGUMENT, request.expect_compressed().value()
                                                        ? "request was not compressed"
                                                        : "request was compressed");
      }
      aggregated += static_cast<int>(request.payload().body().size());
    }
    response->set_aggregated_payload_size(aggregated);
    return Status::OK;
  }

  Status FullDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    ResponseStreamer streamer(context);
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) {
      if (request.has_response_status() && request.response_status().code() != 0) {
        return EchoedStatus(request.response_status());
      }
      Status status;
      if (!streamer.Send(request, stream, &status)) return status;
    }
    return Status::OK;
  }

  Status HalfDuplexCall(ServerContext* context,
                        grpc::ServerReaderWriter<StreamingOutputCallResponse,
                                                 StreamingOutputCallRequest>* stream) override {
    EchoMetadata(context);
    std::vector<StreamingOutputCallRequest> requests;
    StreamingOutputCallRequest request;
    while (stream->Read(&request)) {
      if (request.has_response_status() && request.response_status().code() != 0) {
        return EchoedStatus(request.response_status());
      }
      requests.push_back(request);
    }
    ResponseStreamer streamer(context);
    for (const StreamingOutputCallRequest& buffered : requests) {
      Status status;
      if (!streamer.Send(buffered, stream, &status)) return status;
    }
    return Status::OK;
  }
};

int Main(int argc, char** argv) {
  PeerFlags flags({{"port", "0"},
                   {"use_tls", "false"},
                   {"tls_cert_file", ""},
                   {"tls_key_file", ""},
                   {"tls_client_ca_file", ""}});
  if (!flags.Parse(argc, argv)) return 2;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (flags.GetBool("use_tls")) {
    grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    ssl.pem_key_cert_pairs.push_back(
        {ReadWholeFile(flags.Get("tls_key_file")), ReadWholeFile(flags.Get("tls_cert_file"))});
    if (!flags.Get("tls_client_ca_file").empty()) {
      ssl.pem_root_certs = ReadWholeFile(flags.Get("tls_client_ca_file"));
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    }
    credentials = grpc::SslServerCredentials(ssl);
  }
  int port = flags.GetInt("port");
  if (port < 0 || port > 65535) {
    std::fprintf(stderr, "bad --port: %s\n", flags.Get("port").c_str());
    return 2;
  }

  const rill::test::StopSignals stop;  // before any thread starts: they inherit the mask

  TestServiceImpl service;
#ifdef PEER_WITH_REFLECTION
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
#endif
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort("[::]:" + std::to_string(port), credentials, &selected_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    std::fprintf(stderr, "cannot listen on port %d\n", port);
    return 1;
  }
  stop.AnnounceAndWait(selected_port);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  std::fprintf(stderr, "StreamingOutputCall handlers started %lld, peak running %lld\n",
               static_cast<long long>(service.started.load()),
               static_cast<long long>(service.peak.load()));
  return 0;
}

}  // namespace
}  // namespace peer

int main(int argc, char** argv) { return peer::Main(argc, argv); }
