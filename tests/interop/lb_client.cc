// A rill client that spreads grpc.testing.TestService/EmptyCall over several servers with one
// channel and counts who answered each call (ClientContext::peer()). run_lb.sh drives it
// against rill's, libgrpc++'s and grpcio's interop servers at once.
//
//   lb_client --target=ipv4:127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 --policy=round_robin
//             --expect=P1,P2,P3 [--ready_file=F] (--calls=3000 | --stop_file=S) [flags]
//
// Every call waits for ready and has a 20 s deadline. First it calls, one call at a time, until
// every port of --expect answered once (the channel's connections are up), and creates
// --ready_file. Then either:
//   --calls=N       makes N calls one after another and passes when each --expect port got
//                   N / (number of ports) ± --tolerance_pct of them;
//   --stop_file=S   keeps --threads calls in flight until the file S exists, and passes when no
//                   call failed (but up to --tolerate_cancelled that ended CANCELLED), every
//                   port of --recent answered in the last --recent_ms before
//                   S appeared, and (with --order) the ports answered in that order: all calls
//                   of one port before any call of the next, none from a port not listed.
// Prints the counts per port (per second of the run with --stop_file), and `PASS` or `FAIL:
// <why>`; exits 0 when it passed, 1 when not, 2 for bad flags.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grpc/testing/test.rill.h"
#include "rill/channel.h"
#include "rill/client_context.h"
#include "tests/testing/grpc_testing_names.h"

namespace rill::test::lb {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::string_view kPeerPrefix = "ipv4:127.0.0.1:";

std::vector<std::string> SplitPorts(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// One call's answer: which port (or the error), and when it completed.
struct Answer {
  std::string port;  // empty when the call failed
  std::string error;
  Clock::time_point when;
};

class Caller {
 public:
  explicit Caller(std::shared_ptr<Channel> channel) : stub_(std::move(channel)) {}

  Answer Call() {
    ClientContext context;
    context.set_timeout(std::chrono::seconds(20));
    context.set_wait_for_ready(true);
    Empty response;
    const Status status = stub_.EmptyCall(context, Empty(), &response);
    Answer answer;
    answer.when = Clock::now();
    if (!status.ok()) {
      answer.error = status.ToString();
      return answer;
    }
    const std::string_view peer = context.peer();
    if (peer.substr(0, kPeerPrefix.size()) != kPeerPrefix) {
      answer.error = "answered by an unexpected peer \"" + std::string(peer) + "\"";
      return answer;
    }
    answer.port = std::string(peer.substr(kPeerPrefix.size()));
    return answer;
  }

 private:
  TestService::Stub stub_;
};

std::string CountsLine(const std::map<std::string, int>& counts) {
  std::string line;
  for (const auto& [port, count] : counts) {
    line += (line.empty() ? "" : ", ") + port + ": " + std::to_string(count);
  }
  return line.empty() ? "(none)" : line;
}

int Fail(const std::string& why) {
  std::printf("FAIL: %s\n", why.c_str());
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app("rill load-balancing client (grpc.testing.TestService/EmptyCall)");
  std::string target;
  std::string policy = "round_robin";
  std::string expect;
  std::string ready_file;
  int calls = 0;
  double tolerance_pct = 5;
  std::string stop_file;
  int threads = 8;
  std::string recent;
  int recent_ms = 1500;
  std::string order;
  app.add_option("--target", target, "the channel's target")->required();
  app.add_option("--policy", policy, "round_robin or pick_first");
  app.add_option("--expect", expect, "ports that must answer before the run (comma-separated)")
      ->required();
  app.add_option("--ready_file", ready_file, "created once every --expect port answered");
  app.add_option("--calls", calls, "calls one after another, then check the spread");
  app.add_option("--tolerance_pct", tolerance_pct, "allowed deviation from an even spread");
  app.add_option("--stop_file", stop_file, "call until this file exists");
  app.add_option("--threads", threads, "calls in flight with --stop_file")
      ->check(CLI::Range(1, 64));
  app.add_option("--recent", recent, "ports that must have answered in the last --recent_ms");
  app.add_option("--recent_ms", recent_ms, "see --recent");
  int tolerate_cancelled = 0;
  app.add_option("--tolerate_cancelled", tolerate_cancelled,
                 "calls that may end CANCELLED with --stop_file (a C-core server being stopped "
                 "cancels the calls that reach it after its shutdown began)");
  std::string retry_codes;
  app.add_option("--retry_codes", retry_codes,
                 "give EmptyCall a retry policy (service config) for these status codes, e.g. "
                 "CANCELLED,UNAVAILABLE");
  app.add_option("--order", order, "ports in the order they must answer (pick_first)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if ((calls > 0) == !stop_file.empty()) {
    std::fprintf(stderr, "give either --calls or --stop_file\n");
    return 2;
  }
  const std::vector<std::string> expected = SplitPorts(expect);

  ChannelOptions options;
  options.load_balancing_policy = policy;
  // A stopped server's address is tried again soon after it comes back.
  options.initial_backoff = milliseconds(100);
  options.max_backoff = milliseconds(500);
  if (!retry_codes.empty()) {
    std::string codes;
    for (const std::string& code : SplitPorts(retry_codes)) {
      codes += (codes.empty() ? "\"" : ", \"") + code + "\"";
    }
    options.service_config = R"({"methodConfig": [{
        "name": [{"service": "grpc.testing.TestService", "method": "EmptyCall"}],
        "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "0.5s",
                        "backoffMultiplier": 2, "retryableStatusCodes": [)" +
                             codes + "]}}]}";
  }
  auto channel = Channel::Create(target, options);
  if (!channel.ok()) {
    std::fprintf(stderr, "Channel::Create(%s): %s\n", target.c_str(),
                 channel.status().ToString().c_str());
    return 2;
  }
  Caller caller(*channel);

  // Until every expected port answered once.
  std::map<std::string, int> warm_up;
  const Clock::time_point warm_up_deadline = Clock::now() + std::chrono::seconds(30);
  for (;;) {
    const bool all = std::all_of(expected.begin(), expected.end(),
                                 [&](const std::string& port) { return warm_up.count(port) > 0; });
    if (all) break;
    if (Clock::now() > warm_up_deadline) {
      return Fail("not every port of --expect answered within 30 s; answers: " +
                  CountsLine(warm_up));
    }
    const Answer answer = caller.Call();
    if (!answer.error.empty()) return Fail("a warm-up call failed: " + answer.error);
    ++warm_up[answer.port];
  }
  std::printf("warm-up answers: %s\n", CountsLine(warm_up).c_str());
  std::fflush(stdout);
  if (!ready_file.empty()) std::ofstream(ready_file) << "ready\n";

  if (calls > 0) {
    std::map<std::string, int> counts;
    for (int i = 0; i < calls; ++i) {
      const Answer answer = caller.Call();
      if (!answer.error.empty()) return Fail("call " + std::to_string(i) + " failed: " + answer.error);
      ++counts[answer.port];
    }
    std::printf("%d calls: %s\n", calls, CountsLine(counts).c_str());
    const double even = static_cast<double>(calls) / static_cast<double>(expected.size());
    const double low = even * (1 - tolerance_pct / 100);
    const double high = even * (1 + tolerance_pct / 100);
    for (const auto& [port, count] : counts) {
      if (std::find(expected.begin(), expected.end(), port) == expected.end()) {
        return Fail("port " + port + " is not in --expect");
      }
    }
    for (const std::string& port : expected) {
      const int count = counts.count(port) > 0 ? counts[port] : 0;
      if (count < low || count > high) {
        return Fail("port " + port + " got " + std::to_string(count) + " calls, outside " +
                    std::to_string(static_cast<int>(low)) + ".." +
                    std::to_string(static_cast<int>(high)));
      }
    }
    std::printf("PASS\n");
    return 0;
  }

  // Calls in flight until the stop file appears.
  std::mutex mutex;
  std::vector<Answer> answers;  // in completion order
  std::atomic<bool> stop{false};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        Answer answer = caller.Call();
        const std::lock_guard lock(mutex);
        answers.push_back(std::move(answer));
      }
    });
  }
  while (!std::filesystem::exists(stop_file)) std::this_thread::sleep_for(milliseconds(20));
  const Clock::time_point stopped_at = Clock::now();
  stop = true;
  for (std::thread& worker : workers) worker.join();

  // Counts per second of the run, per port, and the failures.
  std::map<long, std::map<std::string, int>> per_second;
  std::map<std::string, int> totals;
  std::map<std::string, int> recent_counts;
  std::vector<std::string> errors;
  int tolerated = 0;
  for (const Answer& answer : answers) {
    const auto since_start =
        std::chrono::duration_cast<milliseconds>(answer.when - start).count();
    if (!answer.error.empty()) {
      const std::string line = answer.error + " (at " + std::to_string(since_start) + " ms)";
      if (answer.error.rfind("CANCELLED:", 0) == 0 && tolerated < tolerate_cancelled) {
        ++tolerated;
        std::printf("tolerated failure: %s\n", line.c_str());
      } else {
        errors.push_back(line);
      }
      continue;
    }
    ++per_second[since_start / 1000][answer.port];
    ++totals[answer.port];
    if (answer.when <= stopped_at && answer.when > stopped_at - milliseconds(recent_ms)) {
      ++recent_counts[answer.port];
    }
  }
  for (const auto& [second, counts] : per_second) {
    std::printf("second %ld: %s\n", second, CountsLine(counts).c_str());
  }
  std::printf("total (%zu calls): %s\n", answers.size(), CountsLine(totals).c_str());
  std::printf("last %d ms before the stop file: %s\n", recent_ms,
              CountsLine(recent_counts).c_str());
  std::fflush(stdout);

  if (!errors.empty()) {
    for (size_t i = 0; i < errors.size() && i < 10; ++i) {
      std::printf("failed call: %s\n", errors[i].c_str());
    }
    return Fail(std::to_string(errors.size()) + " calls failed");
  }
  for (const std::string& port : SplitPorts(recent)) {
    if (recent_counts.count(port) == 0) {
      return Fail("port " + port + " did not answer in the last " + std::to_string(recent_ms) +
                  " ms");
    }
  }
  if (!order.empty()) {
    const std::vector<std::string> ports = SplitPorts(order);
    size_t at = 0;  // index in `ports` of the port answering now
    for (const Answer& answer : answers) {
      const auto found = std::find(ports.begin(), ports.end(), answer.port);
      if (found == ports.end()) return Fail("port " + answer.port + " is not in --order");
      const auto index = static_cast<size_t>(found - ports.begin());
      if (index < at) {
        return Fail("port " + answer.port + " answered after port " + ports[at] + " had");
      }
      at = index;
    }
    for (const std::string& port : ports) {
      if (totals.count(port) == 0) return Fail("port " + port + " of --order never answered");
    }
  }
  std::printf("PASS\n");
  return 0;
}

}  // namespace
}  // namespace rill::test::lb

int main(int argc, char** argv) { return rill::test::lb::Main(argc, argv); }
