// grpc.health.v1.Health: the standard health service that load balancers, Kubernetes probes and
// `grpc_health_probe` ask whether a server (or one of its services) is serving.
//
//   rill::ServerBuilder builder;
//   builder.AddListeningPort("0.0.0.0:50051").RegisterService(&greeter);
//   std::shared_ptr<rill::HealthService> health = rill::AddHealthService(builder);
//   health->SetServingStatus("helloworld.Greeter", rill::ServingStatus::kServing);
//   auto server = builder.Build();
//   ...
//   health->SetServingStatus("helloworld.Greeter", rill::ServingStatus::kNotServing);
//
// The server as a whole is the service named "" and starts SERVING; other services are unknown
// to Check (NOT_FOUND) until a status is set for them. Watch sends the current status at once
// (SERVICE_UNKNOWN for an unknown service) and then every change, the latest one when several
// come quickly. When the server's shutdown begins every known service turns NOT_SERVING, later
// changes are ignored, and Watch streams end with UNAVAILABLE after telling their client.
//
// Thread safety: thread-safe. Statuses may be set from any thread, also from handlers.
#ifndef RILL_SERVICES_HEALTH_H_
#define RILL_SERVICES_HEALTH_H_

#include <memory>
#include <string_view>

namespace rill {

class ServerBuilder;

// Numerically equal to grpc.health.v1.HealthCheckResponse.ServingStatus.
enum class ServingStatus : int {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,
  kServiceUnknown = 3,  // what Watch reports for a service nobody set a status for
};

class HealthService {
 public:
  class Impl;

  ~HealthService();
  HealthService(const HealthService&) = delete;
  HealthService& operator=(const HealthService&) = delete;

  // Sets the status of `service` ("" for the server as a whole) and tells its watchers. Ignored
  // once shutdown has begun.
  void SetServingStatus(std::string_view service, ServingStatus status);
  // Forgets `service`: Check answers NOT_FOUND and watchers see SERVICE_UNKNOWN.
  void ClearServingStatus(std::string_view service);
  // The status Check reports for `service`, kServiceUnknown when none was set.
  [[nodiscard]] ServingStatus GetServingStatus(std::string_view service) const;
  // What the server's shutdown does: every known service NOT_SERVING, later changes ignored,
  // Watch streams told and ended. Idempotent.
  void Shutdown();

 private:
  friend std::shared_ptr<HealthService> AddHealthService(ServerBuilder& builder);
  explicit HealthService(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// Registers grpc.health.v1.Health on `builder` and hooks it to the server's shutdown. The server
// keeps the service alive; the handle sets statuses and may outlive the server.
std::shared_ptr<HealthService> AddHealthService(ServerBuilder& builder);

}  // namespace rill

#endif  // RILL_SERVICES_HEALTH_H_
