// A greeter client: calls helloworld.Greeter/SayHello and prints the reply.
//
//   greeter_client --target localhost:50051 --name world
#include <cstdio>
#include <string>

#include "helloworld/helloworld.rill.h"
#include "rill/channel.h"
#include "rill/credentials.h"

#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
  CLI::App app("helloworld greeter client");
  std::string target = "localhost:50051";
  std::string name = "world";
  int timeout_ms = 10000;
  app.add_option("--target", target, "server address (host:port or unix:/path)");
  app.add_option("--name", name, "who to greet");
  bool tls = false;
  std::string ca;
  app.add_option("--timeout_ms", timeout_ms, "deadline of the call");
  app.add_flag("--tls", tls, "connect over TLS, verifying the server against --ca");
  app.add_option("--ca", ca, "CA bundle (PEM); without it the system's roots");
  CLI11_PARSE(app, argc, argv);

  std::shared_ptr<rill::ChannelCredentials> credentials = rill::ChannelCredentials::Insecure();
  if (tls) {
    rill::ChannelTlsOptions options;
    if (!ca.empty()) {
      auto roots = rill::ReadFileToString(ca);
      if (!roots.ok()) {
        std::fprintf(stderr, "%s\n", roots.status().ToString().c_str());
        return 2;
      }
      options.root_certificates = *roots;
    }
    auto made = rill::ChannelCredentials::Tls(options);
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 2;
    }
    credentials = *made;
  }
  auto channel = rill::Channel::Create(target, credentials);
  if (!channel.ok()) {
    std::fprintf(stderr, "%s\n", channel.status().ToString().c_str());
    return 2;
  }
  helloworld::Greeter::Stub stub(*channel);
  helloworld::HelloRequest request;
  request.set_name(name);
  helloworld::HelloReply reply;
  rill::ClientContext context;
  context.set_timeout(std::chrono::milliseconds(timeout_ms));
  rill::Status status = stub.SayHello(context, request, &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "SayHello failed: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", reply.message().c_str());
  return 0;
}
