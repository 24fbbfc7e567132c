// Unary calls between rill and libgrpc++ (1.51) in one process, over real loopback sockets, in
// both directions: a rill client against a libgrpc++ server, and a libgrpc++ client against a
// rill server. Both sides serve interop_checks.UnaryChecks (unary_checks.proto).
//
// Each check runs in both directions (TEST_P over Direction): custom metadata both ways (ASCII
// and -bin, bytes 0x00 and 0xFF, several values per key), deadlines that expire while the
// handler sleeps, client cancellation mid-call (the server handler must observe it), every
// status code 1..16 with a message and details, and messages from 0 B to the 4 MiB receive
// limit, one byte over which is refused with RESOURCE_EXHAUSTED.
//
// The rill server and channel of a test are destroyed inside the test, so the leak-checking
// pool ends every test at zero blocks. libgrpc++ does not use rill's pool.
#include <google/protobuf/any.pb.h>
#include <google/protobuf/io/coded_stream.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "google/rpc/status.pb.h"
#include "interop_checks/unary_checks.grpc.pb.h"
#include "interop_checks/unary_checks.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/server.h"
#include "tests/interop/unary_checks_service.h"

namespace rill::test::interop {
namespace {

using interop_checks::CheckRequest;
using interop_checks::CheckResponse;
using interop_checks::ObserveRequest;
using interop_checks::UnaryChecks;
using interop_checks::UnaryChecksGrpcpp;
using std::chrono::milliseconds;

constexpr size_t kReceiveLimit = 4 * 1024 * 1024;  // both libraries' default
constexpr std::string_view kEchoPrefix = "x-check-";
constexpr milliseconds kObserveTimeout(10000);

// Custom metadata: key -> values in the order sent.
using MetadataMap = std::map<std::string, std::vector<std::string>>;
using MetadataList = std::vector<std::pair<std::string, std::string>>;

// What a client saw of one call.
struct CallOutcome {
  int code = -1;
  std::string message;
  std::string details;
  CheckResponse response;
  MetadataMap initial;   // x-check-* entries only
  MetadataMap trailing;  // x-check-* entries only
};

std::string Printable(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && byte != '\\') {
      out += c;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", byte);
      out += hex;
    }
  }
  return out;
}

void AddEchoed(MetadataMap& map, std::string_view key, std::string_view value) {
  if (key.starts_with(kEchoPrefix)) map[std::string(key)].emplace_back(value);
}

std::string NewCallId() {
  static std::atomic<int> next{0};
  return "call-" + std::to_string(next.fetch_add(1)) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// The length of a `bytes` field 1 that makes a message holding only that field exactly
// `serialized` bytes long (tag, length varint, payload).
size_t PayloadSizeFor(size_t serialized) {
  for (size_t varint = 1; varint <= 5; ++varint) {
    if (serialized < 1 + varint) break;
    const size_t payload = serialized - 1 - varint;
    if (google::protobuf::io::CodedOutputStream::VarintSize32(static_cast<uint32_t>(payload)) ==
        varint) {
      return payload;
    }
  }
  ADD_FAILURE() << "no payload size serializes to " << serialized << " bytes";
  return 0;
}

// ---------------------------------------------------------------------------------------------
// The libgrpc++ side of the service (sync API; handlers run on libgrpc++'s threads).

class GrpcppChecksService final : public UnaryChecksGrpcpp::Service {
 public:
  grpc::Status Check(grpc::ServerContext* context, const CheckRequest* request,
                     CheckResponse* response) override {
    if (request->echo_metadata()) {
      for (const auto& [key, value] : context->client_metadata()) {
        const std::string k(key.data(), key.size());
        if (!k.starts_with(kEchoPrefix)) continue;
        const std::string v(value.data(), value.size());
        context->AddInitialMetadata(k, v);
        context->AddTrailingMetadata(k, v);
      }
    }
    if (request->sleep_ms() > 0) {
      log_.Started(request->call_id());
      const auto until = std::chrono::steady_clock::now() + milliseconds(request->sleep_ms());
      CheckObservation seen;
      while (std::chrono::steady_clock::now() < until) {
        if (context->IsCancelled()) {
          seen.cancelled = true;
          break;
        }
        std::this_thread::sleep_for(milliseconds(1));
      }
      seen.had_deadline = context->deadline() != std::chrono::system_clock::time_point::max();
      if (seen.had_deadline) {
        seen.after_deadline = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now() - context->deadline());
      }
      log_.Finished(request->call_id(), seen);
      if (seen.cancelled) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    if (!request->payload().empty()) {
      response->set_request_payload_size(static_cast<int64_t>(request->payload().size()));
      response->set_request_payload_hash(PayloadHash(request->payload()));
    }
    if (request->response_payload_size() > 0) {
      response->set_payload(PatternPayload(static_cast<size_t>(request->response_payload_size())));
    }
    if (request->status_code() != 0) {
      return grpc::Status(static_cast<grpc::StatusCode>(request->status_code()),
                          request->status_message(), request->status_details());
    }
    return grpc::Status::OK;
  }

  ObservationLog& log() { return log_; }

 private:
  ObservationLog log_;
};

// ---------------------------------------------------------------------------------------------
// The two directions behind one interface, so that every check runs in both.

class Direction {
 public:
  virtual ~Direction() = default;
  // A blocking call with `metadata` and, if given, a timeout.
  virtual CallOutcome Call(const CheckRequest& request, const MetadataList& metadata,
                           std::optional<milliseconds> timeout) = 0;
  // Starts a call, waits until its server handler runs (request.call_id's STARTED), cancels
  // it from the client and returns how it ended.
  virtual CallOutcome CallAndCancel(const CheckRequest& request) = 0;
  // What the server's handlers observed.
  virtual ObservationLog& server_log() = 0;
};

// rill's client against a libgrpc++ server.
class RillToGrpcpp final : public Direction {
 public:
  RillToGrpcpp() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_NE(port, 0);
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(port));
    EXPECT_TRUE(channel.ok()) << channel.status();
    channel_ = *channel;
    stub_.emplace(channel_);
  }
  ~RillToGrpcpp() override {
    stub_.reset();
    channel_.reset();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  CallOutcome Call(const CheckRequest& request, const MetadataList& metadata,
                   std::optional<milliseconds> timeout) override {
    ClientContext context;
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    if (timeout) context.set_timeout(*timeout);
    CallOutcome outcome;
    Status status = stub_->Check(context, request, &outcome.response);
    return Collect(context, status, std::move(outcome));
  }

  CallOutcome CallAndCancel(const CheckRequest& request) override {
    ClientContext context;
    context.set_timeout(std::chrono::seconds(30));
    CallOutcome outcome;
    std::promise<Status> done;
    stub_->Check(context, request, &outcome.response,
                 [&done](Status status) { done.set_value(std::move(status)); });
    EXPECT_TRUE(service_.log().WaitFor(request.call_id(), ObserveRequest::STARTED, kObserveTimeout))
        << "the libgrpc++ handler never started";
    context.TryCancel();
    Status status = done.get_future().get();
    return Collect(context, status, std::move(outcome));
  }

  ObservationLog& server_log() override { return service_.log(); }

 private:
  static CallOutcome Collect(const ClientContext& context, const Status& status,
                             CallOutcome outcome) {
    outcome.code = static_cast<int>(status.code());
    outcome.message = std::string(status.message());
    outcome.details = std::string(status.details());
    for (const auto& [key, value] : context.initial_metadata()) {
      AddEchoed(outcome.initial, key, value);
    }
    for (const auto& [key, value] : context.trailing_metadata()) {
      AddEchoed(outcome.trailing, key, value);
    }
    return outcome;
  }

  GrpcppChecksService service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<Channel> channel_;
  std::optional<UnaryChecks::Stub> stub_;
};

// libgrpc++'s client against a rill server.
class GrpcppToRill final : public Direction {
 public:
  GrpcppToRill() {
    int port = 0;
    auto server = ServerBuilder()
                      .AddListeningPort("127.0.0.1:0", &port)
                      .RegisterService(&service_)
                      .SetReactorCount(2)
                      .Build();
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = UnaryChecksGrpcpp::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                           grpc::InsecureChannelCredentials()));
  }
  ~GrpcppToRill() override {
    stub_.reset();
    server_->Shutdown(milliseconds(1000));
  }

  CallOutcome Call(const CheckRequest& request, const MetadataList& metadata,
                   std::optional<milliseconds> timeout) override {
    grpc::ClientContext context;
    for (const auto& [key, value] : metadata) context.AddMetadata(key, value);
    if (timeout) context.set_deadline(std::chrono::system_clock::now() + *timeout);
    CallOutcome outcome;
    grpc::Status status = stub_->Check(&context, request, &outcome.response);
    return Collect(context, status, std::move(outcome));
  }

  CallOutcome CallAndCancel(const CheckRequest& request) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    CallOutcome outcome;
    grpc::Status status;
    std::thread caller([&] { status = stub_->Check(&context, request, &outcome.response); });
    EXPECT_TRUE(service_.log().WaitFor(request.call_id(), ObserveRequest::STARTED, kObserveTimeout))
        << "the rill handler never started";
    context.TryCancel();
    caller.join();
    return Collect(context, status, std::move(outcome));
  }

  ObservationLog& server_log() override { return service_.log(); }

 private:
  static CallOutcome Collect(const grpc::ClientContext& context, const grpc::Status& status,
                             CallOutcome outcome) {
    outcome.code = static_cast<int>(status.error_code());
    outcome.message = status.error_message();
    outcome.details = status.error_details();
    // multimap: keys sorted, values of one key in the order received.
    for (const auto& [key, value] : context.GetServerInitialMetadata()) {
      AddEchoed(outcome.initial, std::string_view(key.data(), key.size()),
                std::string_view(value.data(), value.size()));
    }
    for (const auto& [key, value] : context.GetServerTrailingMetadata()) {
      AddEchoed(outcome.trailing, std::string_view(key.data(), key.size()),
                std::string_view(value.data(), value.size()));
    }
    return outcome;
  }

  UnaryChecksService service_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<UnaryChecksGrpcpp::Stub> stub_;
};

enum class Kind { kRillToGrpcpp, kGrpcppToRill };

std::string KindName(const ::testing::TestParamInfo<Kind>& info) {
  return info.param == Kind::kRillToGrpcpp ? "RillClientToGrpcppServer"
                                           : "GrpcppClientToRillServer";
}

class GrpcppUnaryInteropTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam() == Kind::kRillToGrpcpp) {
      direction_ = std::make_unique<RillToGrpcpp>();
    } else {
      direction_ = std::make_unique<GrpcppToRill>();
    }
  }
  // The rill server or channel goes before the leak check at the end of the test.
  void TearDown() override { direction_.reset(); }

  Direction& direction() { return *direction_; }

  CallOutcome Call(const CheckRequest& request, const MetadataList& metadata = {},
                   std::optional<milliseconds> timeout = milliseconds(30000)) {
    return direction_->Call(request, metadata, timeout);
  }

 private:
  std::unique_ptr<Direction> direction_;
};

INSTANTIATE_TEST_SUITE_P(BothDirections, GrpcppUnaryInteropTest,
                         ::testing::Values(Kind::kRillToGrpcpp, Kind::kGrpcppToRill), KindName);

// ---------------------------------------------------------------------------------------------
// Metadata.

TEST_P(GrpcppUnaryInteropTest, CustomMetadataTravelsBothWays) {
  std::string every_byte;
  for (int b = 0; b < 256; ++b) every_byte.push_back(static_cast<char>(b));
  const MetadataList sent = {
      {"x-check-ascii", "first"},
      {"x-check-bin", std::string("\x00", 1)},
      {"x-check-ascii", "second: printable ASCII !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"},
      {"x-check-bin", std::string("\xff\x00\xfe\x01", 4)},
      {"x-check-bin", every_byte},
      {"x-check-ascii", "third"},
      {"x-check-other-bin", std::string("\xff", 1)},
      {"x-check-lone", "1"},
  };
  MetadataMap expected;
  for (const auto& [key, value] : sent) expected[key].push_back(value);

  CheckRequest request;
  request.set_echo_metadata(true);
  const CallOutcome outcome = Call(request, sent);
  ASSERT_EQ(outcome.code, 0) << outcome.message;
  for (const auto* received : {&outcome.initial, &outcome.trailing}) {
    const char* where = received == &outcome.initial ? "initial" : "trailing";
    EXPECT_EQ(received->size(), expected.size()) << where;
    for (const auto& [key, values] : expected) {
      auto it = received->find(key);
      ASSERT_NE(it, received->end()) << key << " missing from the " << where << " metadata";
      ASSERT_EQ(it->second.size(), values.size()) << key << " in the " << where << " metadata";
      for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(it->second[i], values[i])
            << key << "[" << i << "] in the " << where << " metadata: got \""
            << Printable(it->second[i]) << "\", sent \"" << Printable(values[i]) << "\"";
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Deadlines and cancellation.

TEST_P(GrpcppUnaryInteropTest, DeadlineExpiresWhileTheHandlerSleeps) {
  CheckRequest request;
  request.set_sleep_ms(20000);
  request.set_call_id(NewCallId());
  const CallOutcome outcome = Call(request, {}, milliseconds(200));
  EXPECT_EQ(outcome.code, static_cast<int>(StatusCode::kDeadlineExceeded)) << outcome.message;

  // The server learns of the deadline too and stops its handler's wait.
  const auto seen = direction().server_log().WaitFor(request.call_id(), ObserveRequest::FINISHED,
                                                     kObserveTimeout);
  ASSERT_TRUE(seen.has_value()) << "the server handler did not finish after the deadline";
  EXPECT_TRUE(seen->cancelled) << "the server handler slept on past the deadline";
  EXPECT_TRUE(seen->had_deadline);
  RecordProperty("server_observed_after_deadline_us", std::to_string(seen->after_deadline.count()));
  std::printf("server handler observed the deadline %lld us after it\n",
              static_cast<long long>(seen->after_deadline.count()));
}

TEST_P(GrpcppUnaryInteropTest, ClientCancelsMidCall) {
  CheckRequest request;
  request.set_sleep_ms(20000);
  request.set_call_id(NewCallId());
  const CallOutcome outcome = direction().CallAndCancel(request);
  EXPECT_EQ(outcome.code, static_cast<int>(StatusCode::kCancelled)) << outcome.message;

  const auto seen = direction().server_log().WaitFor(request.call_id(), ObserveRequest::FINISHED,
                                                     kObserveTimeout);
  ASSERT_TRUE(seen.has_value()) << "the server handler did not finish after the cancel";
  EXPECT_TRUE(seen->cancelled) << "the server handler did not observe the cancellation";
}

TEST_P(GrpcppUnaryInteropTest, DeadlineThatDoesNotExpire) {
  CheckRequest request;
  request.set_sleep_ms(20);
  request.set_call_id(NewCallId());
  request.set_response_payload_size(10);
  const CallOutcome outcome = Call(request, {}, milliseconds(20000));
  EXPECT_EQ(outcome.code, 0) << outcome.message;
  EXPECT_EQ(outcome.response.payload(), PatternPayload(10));
  const auto seen = direction().server_log().WaitFor(request.call_id(), ObserveRequest::FINISHED,
                                                     kObserveTimeout);
  ASSERT_TRUE(seen.has_value());
  EXPECT_FALSE(seen->cancelled);
  EXPECT_TRUE(seen->had_deadline);
}

// ---------------------------------------------------------------------------------------------
// Status codes, messages and details.

TEST_P(GrpcppUnaryInteropTest, EveryStatusCodeWithMessageAndDetails) {
  for (int code = 1; code <= kMaxStatusCode; ++code) {
    SCOPED_TRACE("code " + std::to_string(code));
    const std::string message = "status " + std::to_string(code) +
                                ": 100% sure, %41 stays %41, %zz and % alone; "
                                "non-ASCII: h\xc3\xa9, \xe2\x98\xba, \xf0\x9f\x98\x88; "
                                "tab\tnewline\n";
    google::rpc::Status details;
    details.set_code(code);
    details.set_message(message);
    google::protobuf::Any* any = details.add_details();
    any->set_type_url("type.googleapis.com/interop_checks.CheckResponse");
    CheckResponse inner;
    inner.set_payload(std::string("\x00\xff", 2));
    any->set_value(inner.SerializeAsString());

    CheckRequest request;
    request.set_status_code(code);
    request.set_status_message(message);
    request.set_status_details(details.SerializeAsString());
    const CallOutcome outcome = Call(request);
    EXPECT_EQ(outcome.code, code) << outcome.message;
    EXPECT_EQ(outcome.message, message) << Printable(outcome.message);
    google::rpc::Status received;
    ASSERT_TRUE(received.ParseFromString(outcome.details))
        << "details: " << Printable(outcome.details);
    EXPECT_EQ(received.SerializeAsString(), details.SerializeAsString())
        << received.ShortDebugString();
  }
}

TEST_P(GrpcppUnaryInteropTest, StatusWithoutMessageOrDetails) {
  CheckRequest request;
  request.set_status_code(static_cast<int>(StatusCode::kNotFound));
  const CallOutcome outcome = Call(request);
  EXPECT_EQ(outcome.code, static_cast<int>(StatusCode::kNotFound));
  EXPECT_EQ(outcome.message, "");
  EXPECT_EQ(outcome.details, "");
}

// ---------------------------------------------------------------------------------------------
// Message sizes.

TEST_P(GrpcppUnaryInteropTest, MessageSizesBothWays) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{1024}, size_t{64 * 1024}, size_t{1024 * 1024}}) {
    SCOPED_TRACE("payload of " + std::to_string(size) + " bytes");
    CheckRequest request;
    request.set_payload(PatternPayload(size));
    request.set_response_payload_size(static_cast<int32_t>(size));
    const CallOutcome outcome = Call(request);
    ASSERT_EQ(outcome.code, 0) << outcome.message;
    EXPECT_EQ(outcome.response.request_payload_size(), static_cast<int64_t>(size));
    EXPECT_EQ(outcome.response.request_payload_hash(),
              size == 0 ? 0 : PayloadHash(request.payload()));
    EXPECT_EQ(outcome.response.payload().size(), size);
    EXPECT_TRUE(outcome.response.payload() == PatternPayload(size))
        << "the response payload differs from the pattern";
  }
}

TEST_P(GrpcppUnaryInteropTest, RequestOfExactlyTheReceiveLimitIsAccepted) {
  CheckRequest request;
  request.set_payload(PatternPayload(PayloadSizeFor(kReceiveLimit)));
  ASSERT_EQ(request.ByteSizeLong(), kReceiveLimit);
  const CallOutcome outcome = Call(request);
  ASSERT_EQ(outcome.code, 0) << outcome.message;
  EXPECT_EQ(outcome.response.request_payload_size(),
            static_cast<int64_t>(request.payload().size()));
  EXPECT_EQ(outcome.response.request_payload_hash(), PayloadHash(request.payload()));
}

TEST_P(GrpcppUnaryInteropTest, RequestOneByteOverTheReceiveLimitIsRefused) {
  CheckRequest request;
  request.set_payload(PatternPayload(PayloadSizeFor(kReceiveLimit + 1)));
  ASSERT_EQ(request.ByteSizeLong(), kReceiveLimit + 1);
  const CallOutcome outcome = Call(request);
  EXPECT_EQ(outcome.code, static_cast<int>(StatusCode::kResourceExhausted)) << outcome.message;
}

TEST_P(GrpcppUnaryInteropTest, ResponseOfExactlyTheReceiveLimitIsAccepted) {
  CheckRequest request;
  const size_t payload = PayloadSizeFor(kReceiveLimit);
  request.set_response_payload_size(static_cast<int32_t>(payload));
  const CallOutcome outcome = Call(request);
  ASSERT_EQ(outcome.code, 0) << outcome.message;
  EXPECT_EQ(outcome.response.ByteSizeLong(), kReceiveLimit);
  EXPECT_TRUE(outcome.response.payload() == PatternPayload(payload))
      << "the response payload differs from the pattern";
}

TEST_P(GrpcppUnaryInteropTest, ResponseOneByteOverTheReceiveLimitIsRefused) {
  CheckRequest request;
  request.set_response_payload_size(static_cast<int32_t>(PayloadSizeFor(kReceiveLimit + 1)));
  const CallOutcome outcome = Call(request);
  EXPECT_EQ(outcome.code, static_cast<int>(StatusCode::kResourceExhausted)) << outcome.message;
}

}  // namespace
}  // namespace rill::test::interop
