// rill's gRPC interop test server: grpc.testing.TestService (test_service.h) on rill, with the
// admin services (health, reflection) so that standard tools can inspect it.
//
//   rill_interop_server --port=0 --use_tls=false
//
// Prints `listening on <port>` on stdout once it accepts calls, logs on stderr how long after
// the deadline a handler observed its call's cancellation, and shuts down gracefully on SIGINT
// or SIGTERM. --test_only_unary_checks=true also serves interop_checks.UnaryChecks
// (unary_checks_service.h) for grpcio_unary_checks.py; it is never on by default.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "rill/binary_log.h"
#include "rill/credentials.h"
#include "rill/server.h"
#include "rill/services/admin.h"
#include "tests/interop/test_service.h"
#include "tests/interop/unary_checks_service.h"
#include "tests/testing/serve_until_stopped.h"

int main(int argc, char** argv) {
  CLI::App app("rill interop test server (grpc.testing.TestService)");
  int port = 0;
  bool use_tls = false;
  bool unary_checks = false;
  std::string tls_cert_file = RILL_TLS_TEST_CERTS "/server.pem";
  std::string tls_key_file = RILL_TLS_TEST_CERTS "/server.key";
  std::string tls_client_ca_file;
  app.add_option("--port", port, "TCP port to listen on; 0 picks a free one")
      ->check(CLI::Range(0, 65535));
  app.add_option("--use_tls", use_tls, "serve over TLS");
  app.add_option("--tls_cert_file", tls_cert_file, "the server's certificate chain (PEM)");
  app.add_option("--tls_key_file", tls_key_file, "the server's private key (PEM)");
  app.add_option("--tls_client_ca_file", tls_client_ca_file,
                 "require client certificates that verify against these CAs (mutual TLS)");
  app.add_option("--test_only_unary_checks", unary_checks,
                 "also serve the test-only interop_checks.UnaryChecks service");
  const rill::ServerOptions defaults;
  uint32_t max_running_handlers = defaults.max_running_handlers;
  app.add_option("--max_running_handlers", max_running_handlers,
                 "handlers running at once on the whole server (0: no limit)")
      ->default_val(max_running_handlers);
  uint32_t early_reset_burst = defaults.early_reset_burst;
  app.add_option("--early_reset_burst", early_reset_burst,
                 "rapid-reset budget per connection: early resets at once (0: no budget)")
      ->default_val(early_reset_burst);
  uint32_t early_reset_rate = defaults.early_reset_rate;
  app.add_option("--early_reset_rate", early_reset_rate,
                 "rapid-reset budget per connection: early resets a second")
      ->default_val(early_reset_rate);
  bool sleep_through_cancel = false;
  app.add_option("--test_only_sleep_through_cancel", sleep_through_cancel,
                 "handlers wait out interval_us even when their call is cancelled");
  std::string binary_log;
  std::string binary_log_filter = "*";
  app.add_option("--binary_log", binary_log, "write a gRPC binary log of every call to this file");
  app.add_option("--binary_log_filter", binary_log_filter, "which methods --binary_log logs");
  CLI11_PARSE(app, argc, argv);
  std::shared_ptr<rill::ServerCredentials> credentials = rill::ServerCredentials::Insecure();
  if (use_tls) {
    auto key_pair = rill::TlsKeyPair::FromFiles(tls_cert_file, tls_key_file);
    if (!key_pair.ok()) {
      std::fprintf(stderr, "%s\n", key_pair.status().ToString().c_str());
      return 2;
    }
    rill::ServerTlsOptions tls{.key_pair = *key_pair};
    if (!tls_client_ca_file.empty()) {
      auto client_ca = rill::ReadFileToString(tls_client_ca_file);
      if (!client_ca.ok()) {
        std::fprintf(stderr, "%s\n", client_ca.status().ToString().c_str());
        return 2;
      }
      tls.client_ca_certificates = *client_ca;
      tls.client_certificate_policy = rill::ClientCertificatePolicy::kRequireAndVerify;
    }
    auto made = rill::ServerCredentials::Tls(tls);
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", made.status().ToString().c_str());
      return 2;
    }
    credentials = *made;
  }

  const rill::test::StopSignals stop;  // before the server starts its threads

  // Declared before the server: destroyed after it, writing what its last calls logged.
  std::shared_ptr<rill::BinaryLog> log;
  if (!binary_log.empty()) {
    auto created = rill::BinaryLog::Create(binary_log, {.filter = binary_log_filter});
    if (!created.ok()) {
      std::fprintf(stderr, "--binary_log: %s\n", created.status().ToString().c_str());
      return 2;
    }
    log = std::move(*created);
  }
  rill::test::interop::TestServiceImpl test_service(stderr, sleep_through_cancel);
  rill::test::interop::UnaryChecksService unary_checks_service;
  int bound = 0;
  rill::ServerBuilder builder;
  builder.AddListeningPort("0.0.0.0:" + std::to_string(port), credentials, &bound)
      .RegisterService(&test_service);
  if (unary_checks) builder.RegisterService(&unary_checks_service);
  builder.options().max_running_handlers = max_running_handlers;
  builder.options().early_reset_burst = early_reset_burst;
  builder.options().early_reset_rate = early_reset_rate;
  if (log) builder.AddStatsHandler(log);
  const rill::AdminServices admin = rill::AddAdminServices(builder);
  admin.health->SetServingStatus("grpc.testing.TestService", rill::ServingStatus::kServing);
  auto server = builder.Build();
  const int exit_code = rill::test::ServeUntilStopped(server, bound, stop);
  std::fprintf(stderr, "StreamingOutputCall handlers started %lld, peak running %lld\n",
               static_cast<long long>(test_service.streaming_output_started()),
               static_cast<long long>(test_service.streaming_output_peak()));
  return exit_code;
}
