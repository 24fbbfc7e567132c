// Tracing hooks: traceparent and grpc-trace-bin parse and format as their specs say, and a call
// from a rill client to a rill server makes the spans a tracer expects — the client's call and
// attempt spans under the application's parent, the server's span under the attempt, one trace
// — with the context in both headers on the wire.
#include "rill/tracing.h"

#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "grpc/testing/test.rill.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

TEST(TraceContext, TraceparentRoundTripAndRejects) {
  const std::string header = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  auto parsed = ParseTraceparent(header);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->trace_id[0], 0x0a);
  EXPECT_EQ(parsed->span_id[7], 0x31);
  EXPECT_EQ(parsed->flags, 1);
  EXPECT_EQ(FormatTraceparent(*parsed), header);
  // A later version may add fields after a '-'.
  EXPECT_TRUE(ParseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x"));
  for (const char* bad : {
           "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",  // uppercase
           "00-00000000000000000000000000000000-b7ad6b7169203331-01",  // zero trace id
           "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",  // zero span id
           "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",  // version ff
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-",  // v00 with more
           "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01",   // short
           ""}) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(TraceContext, GrpcTraceBinRoundTripAndRejects) {
  TraceContext context;
  for (int i = 0; i < 16; ++i) context.trace_id[i] = static_cast<uint8_t>(i + 1);
  for (int i = 0; i < 8; ++i) context.span_id[i] = static_cast<uint8_t>(0xa0 + i);
  context.flags = 1;
  const std::string bytes = FormatGrpcTraceBin(context);
  ASSERT_EQ(bytes.size(), 29u);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 0);
  EXPECT_EQ(bytes[18], 1);
  EXPECT_EQ(bytes[27], 2);
  auto parsed = ParseGrpcTraceBin(bytes);
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->trace_id, context.trace_id);
  EXPECT_EQ(parsed->span_id, context.span_id);
  EXPECT_EQ(parsed->flags, 1);
  EXPECT_FALSE(ParseGrpcTraceBin(std::string("\x01", 1) + bytes.substr(1)));  // version 1
  EXPECT_FALSE(ParseGrpcTraceBin(bytes.substr(0, 10)));                      // cut trace id
  EXPECT_FALSE(ParseGrpcTraceBin(""));
}

struct SpanRecord {
  std::string name;
  std::string target;
  bool has_parent = false;
  TraceContext parent;
  TraceContext context;
  bool ended = false;
  StatusCode code = StatusCode::kOk;
};

class RecordingTracer final : public Tracer {
 public:
  void* StartSpan(const SpanStart& start, TraceContext* context) override {
    std::lock_guard lock(mu_);
    SpanRecord& span = spans_.emplace_back();
    span.name = std::string(start.name);
    span.target = std::string(start.target);
    if (start.parent != nullptr) {
      span.has_parent = true;
      span.parent = *start.parent;
      span.context.trace_id = start.parent->trace_id;
    } else {
      span.context.trace_id.fill(0x77);
      span.context.trace_id[0] = static_cast<uint8_t>(spans_.size());
    }
    span.context.span_id.fill(0);
    span.context.span_id[7] = static_cast<uint8_t>(spans_.size());
    span.context.flags = 1;
    *context = span.context;
    return &span;
  }
  void EndSpan(void* span, const Status& status) override {
    std::lock_guard lock(mu_);
    auto* record = static_cast<SpanRecord*>(span);
    record->ended = true;
    record->code = status.code();
  }
  std::vector<SpanRecord> spans() {
    std::lock_guard lock(mu_);
    return {spans_.begin(), spans_.end()};
  }

 private:
  std::mutex mu_;
  std::deque<SpanRecord> spans_;
};

// Records the trace headers each request carried.
class Service final : public grpc::testing::TestService::Service {
 public:
  Status EmptyCall(ServerContext& context, const grpc::testing::Empty&,
                   grpc::testing::Empty&) override {
    std::lock_guard lock(mu);
    traceparent = std::string(context.client_metadata().Get("traceparent").value_or(""));
    trace_bin = std::string(context.client_metadata().Get("grpc-trace-bin").value_or(""));
    return Status(StatusCode::kAlreadyExists, "traced");
  }
  std::mutex mu;
  std::string traceparent;
  std::string trace_bin;
};

TEST(Tracing, SpansFromClientToServerInOneTrace) {
  auto client_tracer = std::make_shared<RecordingTracer>();
  auto server_tracer = std::make_shared<RecordingTracer>();
  Service service;
  TestServerSetup setup;
  setup.services.push_back(&service);
  setup.interceptors.push_back(MakeServerTracingInterceptor(server_tracer));
  auto server = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server, nullptr);
  ChannelOptions options;
  options.interceptors.push_back(MakeClientTracingInterceptor(client_tracer, server->target()));
  auto channel = server->NewChannel(options);
  grpc::testing::TestService::Stub stub(channel);

  const std::string parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  ClientContext context;
  context.AddMetadata("traceparent", parent);
  grpc::testing::Empty request;
  grpc::testing::Empty response;
  EXPECT_EQ(stub.EmptyCall(context, request, &response).code(), StatusCode::kAlreadyExists);
  channel.reset();
  server.reset();  // every server span has ended

  const auto client_spans = client_tracer->spans();
  const auto server_spans = server_tracer->spans();
  ASSERT_EQ(client_spans.size(), 2u);
  ASSERT_EQ(server_spans.size(), 1u);
  const SpanRecord& call = client_spans[0];
  const SpanRecord& attempt = client_spans[1];
  const SpanRecord& recv = server_spans[0];
  EXPECT_EQ(call.name, "Sent.grpc.testing.TestService.EmptyCall");
  EXPECT_EQ(attempt.name, "Attempt.grpc.testing.TestService.EmptyCall");
  EXPECT_EQ(recv.name, "Recv.grpc.testing.TestService.EmptyCall");
  EXPECT_FALSE(call.target.empty());
  EXPECT_EQ(attempt.target, call.target);
  ASSERT_TRUE(call.has_parent);
  EXPECT_EQ(FormatTraceparent(call.parent), parent);
  ASSERT_TRUE(attempt.has_parent);
  EXPECT_EQ(attempt.parent.span_id, call.context.span_id);
  ASSERT_TRUE(recv.has_parent);
  EXPECT_EQ(recv.parent.trace_id, call.parent.trace_id) << "one trace end to end";
  EXPECT_EQ(recv.parent.span_id, attempt.context.span_id);
  for (const SpanRecord* span : {&call, &attempt, &recv}) {
    EXPECT_TRUE(span->ended) << span->name;
    EXPECT_EQ(span->code, StatusCode::kAlreadyExists) << span->name;
  }
  // Both headers went on the wire with the attempt's context.
  std::lock_guard lock(service.mu);
  EXPECT_EQ(service.traceparent, FormatTraceparent(attempt.context));
  auto bin = ParseGrpcTraceBin(service.trace_bin);
  ASSERT_TRUE(bin.has_value());
  EXPECT_EQ(bin->span_id, attempt.context.span_id);
  EXPECT_EQ(bin->trace_id, attempt.context.trace_id);
}

}  // namespace
}  // namespace rill::test
