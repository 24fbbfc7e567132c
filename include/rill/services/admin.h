// The admin bundle: the standard services that let operators and their tools inspect a server,
// added in one call: grpc.health.v1.Health, server reflection (v1 and v1alpha) and
// grpc.channelz.v1.Channelz.
//
//   rill::ServerBuilder builder;
//   builder.AddListeningPort("0.0.0.0:50051").RegisterService(&greeter);
//   rill::AdminServices admin = rill::AddAdminServices(builder);
//   admin.health->SetServingStatus("helloworld.Greeter", rill::ServingStatus::kServing);
//   auto server = builder.Build();
//
// Then `rill_cli ls localhost:50051`, grpcurl or grpc_cli list and call the server's services,
// and `rill_cli health localhost:50051` (or any gRPC health probe) asks whether it serves.
#ifndef RILL_SERVICES_ADMIN_H_
#define RILL_SERVICES_ADMIN_H_

#include <memory>

#include "rill/services/channelz.h"
#include "rill/services/health.h"
#include "rill/services/reflection.h"

namespace rill {

class ServerBuilder;

struct AdminServices {
  // Sets what the health service reports.
  std::shared_ptr<HealthService> health;
};

// Registers the admin services on `builder` (see AddHealthService(), AddReflectionService(),
// AddChannelzService()).
// The server keeps them alive.
AdminServices AddAdminServices(ServerBuilder& builder);

}  // namespace rill

#endif  // RILL_SERVICES_ADMIN_H_
