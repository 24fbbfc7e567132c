// grpc.testing.BenchmarkService served the way grpc-go's benchmark server serves it
// (`benchmark/benchmark.go`): the server half of benchmain and of rill_bench_server.
//
//   rill::bench::BenchmarkServiceImpl service;
//   auto server = rill::ServerBuilder().AddListeningPort("0.0.0.0:0", &port)
//                     .RegisterService(&service).Build();
//
// - UnaryCall answers with a payload of `response_size` zero bytes.
// - The payload bodies travel outside protobuf (rill/payload_field.h), as a user who cares about
//   large messages would have them: request bodies stay views of the received buffers and are
//   dropped unread; a unary response's body is a pooled buffer filled per call, a stream's is
//   filled once and referenced by each response (grpc-go's server reuses one response message
//   per stream the same way).
// - StreamingCall is ping-pong: one such response per request until the client half-closes.
// - With the request metadata `unconstrained-streaming: 1` StreamingCall reads one request to
//   learn the response size, then discards every further request while it sends responses
//   without waiting, each after a random pause below `unconstrained-streaming-delay` (a Go
//   duration) when that header is given, until the call ends.
// - With the request metadata `preload-msg-size: N` StreamingCall (ping-pong and unconstrained)
//   serializes and compresses its response of N bytes once, into a PreparedMessage that every
//   write references, whatever size the requests ask for.
//
// Thread safety: thread-safe (stateless); every call runs on its connection's reactor.
#ifndef RILL_BENCH_BENCHMAIN_BENCHMARK_SERVICE_H_
#define RILL_BENCH_BENCHMAIN_BENCHMARK_SERVICE_H_

#include "grpc/testing/benchmark_service.rill.h"

namespace rill::bench {

// The metadata keys grpc-go's benchmain sends on unconstrained streams.
inline constexpr char kUnconstrainedStreamingHeader[] = "unconstrained-streaming";
inline constexpr char kUnconstrainedStreamingDelayHeader[] = "unconstrained-streaming-delay";
// grpc-go's -preloader: the response size the server prepares once for a whole stream.
inline constexpr char kPreloadMsgSizeHeader[] = "preload-msg-size";

// SimpleRequest.payload.body and SimpleResponse.payload.body.
inline constexpr rill::PayloadField kRequestBody{grpc::testing::SimpleRequest::kPayloadFieldNumber,
                                                 grpc::testing::Payload::kBodyFieldNumber};
inline constexpr rill::PayloadField kResponseBody{
    grpc::testing::SimpleResponse::kPayloadFieldNumber, grpc::testing::Payload::kBodyFieldNumber};

// `size` zero bytes in pooled buffers (empty for size <= 0).
rill::BufferSlice ZeroPayload(int size);

class BenchmarkServiceImpl final : public grpc::testing::BenchmarkService::Service {
 public:
  BenchmarkServiceImpl();

  // Inline on the reactor: no coroutine frame.
  rill::Status UnaryCall(rill::ServerContext& context, const grpc::testing::SimpleRequest& request,
                         grpc::testing::SimpleResponse& response) override;

  rill::Awaitable<rill::Status> StreamingCall(
      rill::ServerContext& context,
      rill::ServerReaderWriter<grpc::testing::SimpleResponse, grpc::testing::SimpleRequest>& stream)
      override;
};

// Sets `response`'s payload to `size` zero bytes (grpc-go's setPayload), reusing its capacity.
void FillPayload(grpc::testing::SimpleResponse& response, int size);

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_BENCHMARK_SERVICE_H_
