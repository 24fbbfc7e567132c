// grpc.health.v1.Health served by rill and asked by rill's client: Check, Watch transitions,
// a cancelled Watch, and every service turning NOT_SERVING when the server shuts down.
#include "rill/services/health.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "grpc/health/v1/health.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "rill/server.h"

namespace rill {
namespace {

using ::grpc::health::v1::Health;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;

constexpr auto kTimeout = std::chrono::seconds(30);  // only a hang reaches it

class HealthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", &port).SetReactorCount(1);
    health_ = AddHealthService(builder);
    auto server = builder.Build();
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    auto channel = Channel::Create("127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(channel.ok());
    stub_ = std::make_unique<Health::Stub>(*channel);
  }

  void TearDown() override {
    stub_.reset();
    server_.reset();
  }

  // The status Check reports, or the call's error code as a negative number.
  int Check(const std::string& service) {
    ClientContext context;
    context.set_timeout(kTimeout);
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    Status status = stub_->Check(context, request, &response);
    if (!status.ok()) return -static_cast<int>(status.code());
    return response.status();
  }

  std::shared_ptr<HealthService> health_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Health::Stub> stub_;
};

struct Watch {
  ClientContext context;
  std::unique_ptr<ClientReader<HealthCheckResponse>> reader;

  Watch(Health::Stub& stub, const std::string& service) {
    context.set_timeout(kTimeout);
    HealthCheckRequest request;
    request.set_service(service);
    reader = stub.Watch(context, request);
  }
  // The next status sent, or -1 when the stream ended.
  int Next() {
    HealthCheckResponse response;
    if (!reader->BlockingRead(&response)) return -1;
    return response.status();
  }
};

TEST_F(HealthTest, CheckReportsTheServerAndTheServicesSet) {
  EXPECT_EQ(Check(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Check("grpc.testing.TestService"), -static_cast<int>(StatusCode::kNotFound));

  health_->SetServingStatus("grpc.testing.TestService", ServingStatus::kNotServing);
  EXPECT_EQ(Check("grpc.testing.TestService"), HealthCheckResponse::NOT_SERVING);
  health_->SetServingStatus("grpc.testing.TestService", ServingStatus::kServing);
  EXPECT_EQ(Check("grpc.testing.TestService"), HealthCheckResponse::SERVING);
  health_->ClearServingStatus("grpc.testing.TestService");
  EXPECT_EQ(Check("grpc.testing.TestService"), -static_cast<int>(StatusCode::kNotFound));

  health_->SetServingStatus("", ServingStatus::kNotServing);
  EXPECT_EQ(Check(""), HealthCheckResponse::NOT_SERVING);
}

TEST_F(HealthTest, WatchSendsTheCurrentStatusThenEveryChange) {
  Watch watch(*stub_, "svc");
  EXPECT_EQ(watch.Next(), HealthCheckResponse::SERVICE_UNKNOWN);
  health_->SetServingStatus("svc", ServingStatus::kServing);
  EXPECT_EQ(watch.Next(), HealthCheckResponse::SERVING);
  // Setting the same status again sends nothing; the next message is the next change.
  health_->SetServingStatus("svc", ServingStatus::kServing);
  health_->SetServingStatus("other", ServingStatus::kNotServing);
  health_->SetServingStatus("svc", ServingStatus::kNotServing);
  EXPECT_EQ(watch.Next(), HealthCheckResponse::NOT_SERVING);
  health_->ClearServingStatus("svc");
  EXPECT_EQ(watch.Next(), HealthCheckResponse::SERVICE_UNKNOWN);
}

TEST_F(HealthTest, ManyQuickChangesEndWithTheLatest) {
  Watch watch(*stub_, "svc");
  EXPECT_EQ(watch.Next(), HealthCheckResponse::SERVICE_UNKNOWN);
  for (int i = 0; i < 1000; ++i) {
    health_->SetServingStatus("svc",
                              i % 2 == 0 ? ServingStatus::kServing : ServingStatus::kNotServing);
  }
  health_->SetServingStatus("svc", ServingStatus::kUnknown);
  // Intermediate statuses may be skipped; the last one always arrives.
  int last = -1;
  for (int i = 0; i < 1002 && last != HealthCheckResponse::UNKNOWN; ++i) last = watch.Next();
  EXPECT_EQ(last, HealthCheckResponse::UNKNOWN);
}

TEST_F(HealthTest, CancelledWatchEndsOnTheServer) {
  auto watch = std::make_unique<Watch>(*stub_, "");
  EXPECT_EQ(watch->Next(), HealthCheckResponse::SERVING);
  watch->context.TryCancel();
  EXPECT_EQ(watch->Next(), -1);
  EXPECT_EQ(watch->reader->BlockingFinish().code(), StatusCode::kCancelled);
  watch.reset();
  // The handler has returned: a shutdown with all the grace in the world finishes, and no
  // NOT_SERVING reaches a watcher that is gone.
  server_->Shutdown(kTimeout);
}

TEST_F(HealthTest, ShutdownTurnsEveryServiceNotServingAndEndsTheWatches) {
  health_->SetServingStatus("svc", ServingStatus::kServing);
  Watch all(*stub_, "");
  Watch svc(*stub_, "svc");
  EXPECT_EQ(all.Next(), HealthCheckResponse::SERVING);
  EXPECT_EQ(svc.Next(), HealthCheckResponse::SERVING);

  // A grace longer than the test's timeout: the shutdown completes only because the watches end.
  auto shutdown = std::async(std::launch::async, [this] { server_->Shutdown(kTimeout * 2); });
  EXPECT_EQ(all.Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(svc.Next(), HealthCheckResponse::NOT_SERVING);
  EXPECT_EQ(all.Next(), -1);
  Status status = all.reader->BlockingFinish();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_EQ(svc.Next(), -1);
  EXPECT_EQ(svc.reader->BlockingFinish().code(), StatusCode::kUnavailable);
  EXPECT_EQ(shutdown.wait_for(kTimeout), std::future_status::ready);

  // Later changes are ignored.
  health_->SetServingStatus("svc", ServingStatus::kServing);
  EXPECT_EQ(health_->GetServingStatus("svc"), ServingStatus::kNotServing);
  EXPECT_EQ(health_->GetServingStatus(""), ServingStatus::kNotServing);
}

}  // namespace
}  // namespace rill
