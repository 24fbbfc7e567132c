// A greeter server: answers helloworld.Greeter/SayHello, wire-compatible with every gRPC
// implementation's helloworld client, and serves the admin services (health, reflection,
// channelz), so that `rill_cli ls localhost:50051`, grpcurl or a health probe can inspect it.
//
//   greeter_server --port 50051
#include <csignal>
#include <cstdio>
#include <string>

#include "helloworld/helloworld.rill.h"
#include "rill/credentials.h"
#include "rill/server.h"
#include "rill/services/admin.h"

#include <CLI/CLI.hpp>

namespace {

class GreeterImpl final : public helloworld::Greeter::Service {
 public:
  // Runs inline on the reactor: no coroutine, no allocation beyond the reply string.
  rill::Status SayHello(rill::ServerContext& context, const helloworld::HelloRequest& request,
                        helloworld::HelloReply& reply) override {
    reply.set_message("Hello " + request.name());
    return rill::Status();
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("helloworld greeter server");
  int port = 50051;
  bool tls = false;
  std::string cert = "server.pem";
  std::string key = "server.key";
  app.add_option("--port", port, "TCP port to listen on (0 picks a free one)");
  app.add_flag("--tls", tls, "serve over TLS with --cert and --key");
  app.add_option("--cert", cert, "certificate chain (PEM)");
  app.add_option("--key", key, "private key (PEM)");
  CLI11_PARSE(app, argc, argv);

  std::shared_ptr<rill::ServerCredentials> credentials = rill::ServerCredentials::Insecure();
  if (tls) {
    auto key_pair = rill::TlsKeyPair::FromFiles(cert, key);
    auto made = key_pair.ok() ? rill::ServerCredentials::Tls({.key_pair = *key_pair})
                              : rill::StatusOr<std::shared_ptr<rill::ServerCredentials>>(
                                    key_pair.status());
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 2;
    }
    credentials = *made;
  }

  GreeterImpl greeter;
  int bound = 0;
  rill::ServerBuilder builder;
  builder.AddListeningPort("0.0.0.0:" + std::to_string(port), credentials, &bound)
      .RegisterService(&greeter);
  const rill::AdminServices admin = rill::AddAdminServices(builder);
  admin.health->SetServingStatus("helloworld.Greeter", rill::ServingStatus::kServing);
  auto server = builder.Build();
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("greeter server listening on %d\n", bound);
  std::fflush(stdout);

  // Serve until SIGINT or SIGTERM, then shut down gracefully.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int signal = 0;
  sigwait(&signals, &signal);
  (*server)->Shutdown();
  return 0;
}
