// Tracing hooks: trace context propagation (W3C `traceparent`, and gRPC's binary
// `grpc-trace-bin`) and a span per call, through a small Tracer interface users connect to their
// tracing system.
//
//   class MyTracer final : public rill::Tracer { ... };
//   auto tracer = std::make_shared<MyTracer>();
//   builder.AddInterceptor(rill::MakeServerTracingInterceptor(tracer));
//   options.interceptors.push_back(rill::MakeClientTracingInterceptor(tracer, target));
//
// Client: a call's parent is the trace context its ClientContext metadata carries
// (`traceparent`, else `grpc-trace-bin`; none: a new trace). The interceptor starts a call span
// ("Sent.<service>.<method>") and under it an attempt span ("Attempt.<service>.<method>"; rill
// makes one attempt per call), both with the channel's target, and sends the attempt's context
// in both headers. Server: the span ("Recv.<service>.<method>") continues the context the
// request carries. Spans end with the call's status.
//
// Thread safety: a Tracer is called from every reactor (and from threads starting streaming
// calls) at once: it must be thread-safe. Its calls are user code: an exception fails the call
// as an interceptor's would.
#ifndef RILL_TRACING_H_
#define RILL_TRACING_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rill/interceptor.h"
#include "rill/status.h"

namespace rill {

struct TraceContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  uint8_t flags = 0;  // bit 0: sampled
  // Neither id is all zeros (W3C: such ids are invalid).
  [[nodiscard]] bool valid() const noexcept;
};

// W3C Trace Context `traceparent`: "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
// A later version's header is read by its first four fields, as the spec asks.
std::optional<TraceContext> ParseTraceparent(std::string_view header);
std::string FormatTraceparent(const TraceContext& context);
// gRPC's `grpc-trace-bin` (the OpenCensus binary format, decoded bytes): version 0, then
// field 0 trace id, field 1 span id, field 2 options.
std::optional<TraceContext> ParseGrpcTraceBin(std::string_view bytes);
std::string FormatGrpcTraceBin(const TraceContext& context);

struct SpanStart {
  bool client = false;
  std::string_view name;    // "Sent.pkg.Service.Method", "Attempt.…", "Recv.…"
  std::string_view method;  // "/pkg.Service/Method"
  std::string_view target;  // client spans: the channel's target
  const TraceContext* parent = nullptr;  // null: the span starts a trace
};

class Tracer {
 public:
  virtual ~Tracer() = default;
  // Starts a span and fills `context` with its trace context (the parent's trace id, or a new
  // one; a new span id); returns the tracer's handle for it (passed back to EndSpan).
  virtual void* StartSpan(const SpanStart& start, TraceContext* context) = 0;
  virtual void EndSpan(void* span, const Status& status) = 0;
};

std::shared_ptr<ServerInterceptor> MakeServerTracingInterceptor(std::shared_ptr<Tracer> tracer);
std::shared_ptr<ClientInterceptor> MakeClientTracingInterceptor(std::shared_ptr<Tracer> tracer,
                                                                std::string target);

}  // namespace rill

#endif  // RILL_TRACING_H_
