// grpc.testing.TestService on rill: the server side of gRPC's interop tests
// (grpc/doc/interop-test-descriptions.md, "Server"), which rill_interop_server serves to every
// interop client (rill's own, libgrpc++'s, grpcio's and grpc-js's).
//
//   rill::test::interop::TestServiceImpl service;
//   auto server = rill::ServerBuilder().AddListeningPort("0.0.0.0:0", &port)
//                     .RegisterService(&service).Build();
//
// Features: EmptyCall, UnaryCall, StreamingOutputCall, StreamingInputCall, FullDuplexCall,
// HalfDuplexCall, Echo Status, Echo Metadata, ResponseParameters.interval_us,
// CompressedRequest (expect_compressed, judged by each message's compressed flag) and
// CompressedResponse (response_compressed, ResponseParameters.compressed; gzip). UnimplementedCall
// is left unimplemented, and grpc.testing.UnimplementedService is not registered at all, so the
// unimplemented_method and unimplemented_service cases see both of rill's UNIMPLEMENTED paths
// (a registered service's default handler, an unknown service).
//
// UnaryCall carries its bodies outside protobuf (rill/payload_field.h), so every interop client
// exercises that path: the response body is a pooled buffer appended to the serialized message.
//
// The unary handlers run inline on the reactor; the streaming ones are coroutines that wait on
// asio::steady_timer for interval_us. When a FullDuplexCall handler learns that its call was
// cancelled (timeout_on_sleeping_server), it reports on `log` how long after the deadline that
// was.
//
// Thread safety: thread-safe (stateless apart from the log stream, written in whole lines).
#ifndef RILL_TESTS_INTEROP_TEST_SERVICE_H_
#define RILL_TESTS_INTEROP_TEST_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "grpc/testing/test.rill.h"

namespace rill::test::interop {

class TestServiceImpl final : public grpc::testing::TestService::Service {
 public:
  // `log` receives one line per observed cancellation; null: no log.
  // `sleep_through_cancel`: interval_us is waited out even when the call is cancelled (a
  // handler that outlives its stream, for the hardening probes); off, the wait ends with the call.
  explicit TestServiceImpl(std::FILE* log = nullptr, bool sleep_through_cancel = false);

  // StreamingOutputCall handlers started so far, and the most running at once (what the
  // hardening prober reads from the server's exit line).
  [[nodiscard]] int64_t streaming_output_started() const { return started_.load(); }
  [[nodiscard]] int64_t streaming_output_peak() const { return peak_.load(); }

  rill::Status EmptyCall(ServerContext& context, const grpc::testing::Empty& request,
                         grpc::testing::Empty& response) override;
  rill::Status UnaryCall(ServerContext& context, const grpc::testing::SimpleRequest& request,
                         grpc::testing::SimpleResponse& response) override;
  Awaitable<rill::Status> StreamingOutputCall(
      ServerContext& context, const grpc::testing::StreamingOutputCallRequest& request,
      ServerWriter<grpc::testing::StreamingOutputCallResponse>& writer) override;
  Awaitable<rill::Status> StreamingInputCall(
      ServerContext& context, ServerReader<grpc::testing::StreamingInputCallRequest>& reader,
      grpc::testing::StreamingInputCallResponse& response) override;
  Awaitable<rill::Status> FullDuplexCall(
      ServerContext& context,
      ServerReaderWriter<grpc::testing::StreamingOutputCallResponse,
                         grpc::testing::StreamingOutputCallRequest>& stream) override;
  Awaitable<rill::Status> HalfDuplexCall(
      ServerContext& context,
      ServerReaderWriter<grpc::testing::StreamingOutputCallResponse,
                         grpc::testing::StreamingOutputCallRequest>& stream) override;

 private:
  // One line on log_: how long after the deadline `method`'s handler, which began at `began`,
  // observed its call's cancellation.
  void LogCancellation(const ServerContext& context, const char* method,
                       ServerContext::Clock::time_point began) const;

  std::FILE* log_;
  bool sleep_through_cancel_;
  std::atomic<int64_t> started_{0};
  std::atomic<int64_t> running_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace rill::test::interop

#endif  // RILL_TESTS_INTEROP_TEST_SERVICE_H_
