// A rill server with only the health service, whose statuses a test sets through stdin: the
// server side of health checks made by real clients (grpcio, grpc-js).
//
//   health_server --port 0
//   prints "port <n>", then reads one command a line and answers "ok <command>":
//     set <service> <SERVING|NOT_SERVING|UNKNOWN>   ("-" names the server as a whole, "")
//     clear <service>
//     shutdown                                      Server::Shutdown() with a 30 s grace
//   and exits after the shutdown completed (or at the end of stdin).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "rill/server.h"
#include "rill/services/health.h"

namespace {

std::string ServiceArg(const std::string& word) { return word == "-" ? "" : word; }

bool ParseStatus(const std::string& word, rill::ServingStatus* status) {
  if (word == "SERVING")
    *status = rill::ServingStatus::kServing;
  else if (word == "NOT_SERVING")
    *status = rill::ServingStatus::kNotServing;
  else if (word == "UNKNOWN")
    *status = rill::ServingStatus::kUnknown;
  else
    return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("rill health server driven through stdin");
  int port = 0;
  app.add_option("--port", port, "TCP port (0 picks a free one)");
  CLI11_PARSE(app, argc, argv);

  rill::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), &bound);
  std::shared_ptr<rill::HealthService> health = rill::AddHealthService(builder);
  auto server = builder.Build();
  if (!server.ok()) {
    std::fprintf(stderr, "cannot start: %s\n", server.status().ToString().c_str());
    return 1;
  }
  std::printf("port %d\n", bound);
  std::fflush(stdout);

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command, service, status_word;
    words >> command;
    if (command == "set" && (words >> service >> status_word)) {
      rill::ServingStatus status;
      if (!ParseStatus(status_word, &status)) {
        std::printf("error unknown status %s\n", status_word.c_str());
        std::fflush(stdout);
        continue;
      }
      health->SetServingStatus(ServiceArg(service), status);
    } else if (command == "clear" && (words >> service)) {
      health->ClearServingStatus(ServiceArg(service));
    } else if (command == "shutdown") {
      (*server)->Shutdown(std::chrono::seconds(30));
      std::printf("ok %s\n", line.c_str());
      std::fflush(stdout);
      return 0;
    } else {
      std::printf("error unknown command %s\n", line.c_str());
      std::fflush(stdout);
      continue;
    }
    std::printf("ok %s\n", line.c_str());
    std::fflush(stdout);
  }
  return 0;
}
