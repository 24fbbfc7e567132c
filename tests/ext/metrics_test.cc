// Metrics: a server and a channel record gRPC's per-call instruments into a MetricsRegistry; its
// Prometheus text is scraped over HTTP while calls run, every scrape parses with the Python
// prometheus_client parser (/usr/bin/python3, python3-prometheus-client: missing, the test
// fails), and the counters match the calls made, also when many threads record at once.
#include "rill/metrics.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/client_context.h"
#include "tests/testing/fixture.h"
#include "tests/testing/messages.h"

namespace rill::test {
namespace {

class Service final : public grpc::testing::TestService::Service {
 public:
  Status UnaryCall(ServerContext&, const SimpleRequest& request,
                   SimpleResponse& response) override {
    if (request.has_response_status()) {
      return Status(StatusCodeFromInt(request.response_status().code()), "as asked");
    }
    response.mutable_payload()->mutable_body()->assign(
        static_cast<size_t>(request.response_size()), 'r');
    return Status();
  }
};

// Parses Prometheus texts with prometheus_client; returns "name{labels}" → value of the last
// text, or fails the test when a text does not parse.
constexpr const char* kParser = R"PY(
import sys
from prometheus_client.parser import text_string_to_metric_families
last = None
for path in sys.argv[1:]:
    samples = []
    for family in text_string_to_metric_families(open(path).read()):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            samples.append(f"{s.name}{{{labels}}} {s.value!r}")
    last = samples
print("\n".join(last))
)PY";

std::map<std::string, double> ParseWithPython(const std::vector<std::string>& texts) {
  const std::string dir = ::testing::TempDir();
  const std::string script = dir + "/rill_metrics_parse.py";
  std::ofstream(script) << kParser;
  std::string command = "/usr/bin/python3 " + script;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string path = dir + "/rill_metrics_scrape_" + std::to_string(i) + ".txt";
    std::ofstream(path) << texts[i];
    command += " " + path;
  }
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  char buf[4096];
  while (pipe != nullptr && fgets(buf, sizeof(buf), pipe) != nullptr) output += buf;
  const int rc = pipe != nullptr ? pclose(pipe) : -1;
  EXPECT_EQ(rc, 0) << "the Prometheus parser failed:\n" << output;
  std::map<std::string, double> values;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    values[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return values;
}

std::string Scrape(int port) {
  httplib::Client client("127.0.0.1", port);
  auto response = client.Get("/metrics");
  EXPECT_TRUE(response) << "scrape failed";
  if (!response) return {};
  EXPECT_EQ(response->status, 200);
  return response->body;
}

TEST(Metrics, ScrapeUnderLoadParsesAndCountsMatchTheCalls) {
  auto registry = std::make_shared<MetricsRegistry>();
  Service service;
  TestServerSetup setup;
  setup.services.push_back(&service);
  setup.stats_handlers.push_back(MakeMetricsStatsHandler(registry));
  auto server = TestServer::Start(Transport::kTcp, setup);
  ASSERT_NE(server, nullptr);
  auto endpoint = MetricsHttpEndpoint::Start(registry, "127.0.0.1:0");
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  ChannelOptions options;
  options.stats_handlers.push_back(MakeMetricsStatsHandler(registry, "the-target"));
  auto channel = server->NewChannel(options);
  grpc::testing::TestService::Stub stub(channel);

  constexpr int kThreads = 4;
  constexpr int kOkPerThread = 150;
  constexpr int kFailedPerThread = 30;
  std::atomic<bool> done{false};
  std::vector<std::string> scrapes;
  std::thread scraper([&] {
    while (!done.load()) {
      scrapes.push_back(Scrape(port));
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<std::thread> load;
  for (int t = 0; t < kThreads; ++t) {
    load.emplace_back([&] {
      for (int i = 0; i < kOkPerThread + kFailedPerThread; ++i) {
        ClientContext context;
        SimpleRequest request;
        request.set_response_size(100);
        request.mutable_payload()->mutable_body()->assign(50, 'q');
        if (i >= kOkPerThread) {
          request.mutable_response_status()->set_code(static_cast<int>(StatusCode::kNotFound));
        }
        SimpleResponse response;
        const Status status = stub.UnaryCall(context, request, &response);
        EXPECT_EQ(status.code(), i >= kOkPerThread ? StatusCode::kNotFound : StatusCode::kOk);
      }
    });
  }
  for (auto& t : load) t.join();
  done = true;
  scraper.join();
  // Server calls end when their streams close, just after the client saw the response.
  const std::string want_count = "grpc_server_call_duration_seconds_count{grpc_method=\"" +
                                 std::string("grpc.testing.TestService/UnaryCall") +
                                 "\",grpc_status=\"NOT_FOUND\"} " +
                                 std::to_string(kThreads * kFailedPerThread);
  std::string final_text;
  for (int i = 0; i < 3000; ++i) {
    final_text = Scrape(port);
    if (final_text.find(want_count) != std::string::npos &&
        final_text.find("grpc_status=\"OK\"} " + std::to_string(kThreads * kOkPerThread)) !=
            std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  scrapes.push_back(final_text);
  EXPECT_GE(scrapes.size(), 2u);
  const auto values = ParseWithPython(scrapes);

  const std::string m = "grpc_method=grpc.testing.TestService/UnaryCall";
  const double ok = kThreads * kOkPerThread;
  const double failed = kThreads * kFailedPerThread;
  EXPECT_EQ(values.at("grpc_server_call_started_total{" + m + "}"), ok + failed);
  EXPECT_EQ(values.at("grpc_client_attempt_started_total{" + m + ",grpc_target=the-target}"),
            ok + failed);
  EXPECT_EQ(values.at("grpc_server_call_duration_seconds_count{" + m + ",grpc_status=OK}"), ok);
  EXPECT_EQ(values.at("grpc_server_call_duration_seconds_count{" + m + ",grpc_status=NOT_FOUND}"),
            failed);
  EXPECT_EQ(values.at("grpc_client_call_duration_seconds_count{" + m +
                      ",grpc_status=OK,grpc_target=the-target}"),
            ok);
  EXPECT_EQ(values.at("grpc_client_attempt_duration_seconds_count{" + m +
                      ",grpc_status=NOT_FOUND,grpc_target=the-target}"),
            failed);
  // Every OK response carries 100 bytes of body.
  SimpleResponse expected;
  expected.mutable_payload()->mutable_body()->assign(100, 'r');
  const auto response_size = static_cast<double>(expected.ByteSizeLong());
  EXPECT_EQ(values.at("grpc_server_call_sent_total_compressed_message_size_bytes_sum{" + m +
                      ",grpc_status=OK}"),
            ok * response_size);
  EXPECT_EQ(values.at("grpc_client_attempt_rcvd_total_compressed_message_size_bytes_sum{" + m +
                      ",grpc_status=OK,grpc_target=the-target}"),
            ok * response_size);
  // What the client sent is what the server received.
  for (const char* status : {"OK", "NOT_FOUND"}) {
    EXPECT_EQ(values.at("grpc_server_call_rcvd_total_compressed_message_size_bytes_sum{" + m +
                        ",grpc_status=" + status + "}"),
              values.at("grpc_client_attempt_sent_total_compressed_message_size_bytes_sum{" + m +
                        ",grpc_status=" + status + ",grpc_target=the-target}"));
  }
  // A latency bucket: the +Inf one holds every call.
  EXPECT_EQ(values.at("grpc_server_call_duration_seconds_bucket{" + m +
                      ",grpc_status=OK,le=+Inf}"),
            ok);
  channel.reset();
  server.reset();
}

// Threads record into stripes of their own; the exposition must add them all up, whichever
// threads share a stripe (more threads than stripes here).
TEST(Metrics, RecordsFromManyThreadsAddUp) {
  MetricsRegistry registry;
  constexpr int kThreads = 24;
  constexpr int kPerThread = 1000;
  std::vector<std::thread> threads;
  std::vector<std::string> own_methods;
  for (int t = 0; t < kThreads; ++t) own_methods.push_back("svc/T" + std::to_string(t));
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&registry, &own_methods, t] {
      for (int i = 0; i < kPerThread; ++i) {
        registry.AddToCounter(MetricInstrument::kServerCallStarted, {"svc/M", "", ""}, 1);
        registry.RecordHistogram(MetricInstrument::kServerCallSentTotalCompressedMessageSize,
                                 {"svc/M", "OK", ""}, 100);
      }
      registry.AddToCounter(MetricInstrument::kServerCallStarted,
                            {own_methods[static_cast<size_t>(t)], "", ""}, 1);
    });
  }
  for (auto& t : threads) t.join();
  const std::string text = registry.PrometheusText();
  const std::string total = std::to_string(kThreads * kPerThread);
  EXPECT_NE(text.find("grpc_server_call_started_total{grpc_method=\"svc/M\"} " + total + "\n"),
            std::string::npos)
      << text;
  const std::string histogram = "grpc_server_call_sent_total_compressed_message_size_bytes";
  const std::string labels = "{grpc_method=\"svc/M\",grpc_status=\"OK\"}";
  EXPECT_NE(text.find(histogram + "_count" + labels + " " + total + "\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find(histogram + "_bucket{grpc_method=\"svc/M\",grpc_status=\"OK\",le=\"+Inf\"} " +
                      total + "\n"),
            std::string::npos)
      << text;
  const auto values = ParseWithPython({text});
  EXPECT_EQ(values.at(histogram + "_sum{grpc_method=svc/M,grpc_status=OK}"),
            100.0 * kThreads * kPerThread);
  for (const std::string& method : own_methods) {
    EXPECT_EQ(values.at("grpc_server_call_started_total{grpc_method=" + method + "}"), 1.0)
        << method;
  }
}

}  // namespace
}  // namespace rill::test
