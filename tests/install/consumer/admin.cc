// The admin bundle from an installed rill (rill::services): a server that serves pantry.v1.Pantry
// with health and reflection beside it, and a health client on the stub that comes with
// rill::services. Exits 0 when the health service answers as set, 1 (with the reason) otherwise.
#include "rill/services/admin.h"

#include <chrono>
#include <cstdio>
#include <string>

#include "grpc/health/v1/health.rill.h"
#include "pantry.rill.h"
#include "rill/channel.h"
#include "rill/server.h"
#include "rill/services/health.h"

namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

class PantryService final : public pantry::v1::Pantry::Service {};

int Fail(const std::string& what) {
  std::fprintf(stderr, "pantry_admin: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  PantryService service;
  int port = 0;
  rill::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", &port).RegisterService(&service).SetReactorCount(1);
  rill::AdminServices admin = rill::AddAdminServices(builder);
  admin.health->SetServingStatus("pantry.v1.Pantry", rill::ServingStatus::kNotServing);
  auto server = builder.Build();
  if (!server.ok()) return Fail("server: " + server.status().ToString());

  auto channel = rill::Channel::Create("127.0.0.1:" + std::to_string(port));
  if (!channel.ok()) return Fail("channel: " + channel.status().ToString());
  grpc::health::v1::Health::Stub health(*channel);

  auto check = [&](const std::string& name, HealthCheckResponse* response) {
    rill::ClientContext context;
    context.set_timeout(std::chrono::seconds(30));
    HealthCheckRequest request;
    request.set_service(name);
    return health.Check(context, request, response);
  };
  HealthCheckResponse response;
  rill::Status status = check("pantry.v1.Pantry", &response);
  if (!status.ok()) return Fail("Check: " + status.ToString());
  if (response.status() != HealthCheckResponse::NOT_SERVING) {
    return Fail("Check: pantry.v1.Pantry is " +
                HealthCheckResponse::ServingStatus_Name(response.status()));
  }
  admin.health->SetServingStatus("pantry.v1.Pantry", rill::ServingStatus::kServing);
  status = check("pantry.v1.Pantry", &response);
  if (!status.ok() || response.status() != HealthCheckResponse::SERVING) {
    return Fail("Check after SetServingStatus: " + status.ToString());
  }
  status = check("no.such.Service", &response);
  if (status.code() != rill::StatusCode::kNotFound) {
    return Fail("Check of an unknown service: " + status.ToString());
  }
  std::printf("pantry_admin: health answers as set\n");
  return 0;
}
