#include "bench/stats/stats.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/benchmain_output_parser.h"

namespace rill::bench {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(RILL_BENCH_TESTDATA) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The first run of grpc-go's benchmain with its default flags.
Features DefaultFeatures() {
  Features f;
  f.network_mode = "none";
  f.bench_time = std::chrono::seconds(1);
  f.connections = 1;
  f.max_concurrent_calls = 1;
  f.req_size_bytes = 1;
  f.resp_size_bytes = 1;
  f.mode_compressor = "off";
  f.client_read_buffer_size = -1;
  f.client_write_buffer_size = -1;
  f.server_read_buffer_size = -1;
  f.server_write_buffer_size = -1;
  f.recv_buffer_pool = "simple";
  f.shared_write_buffer = true;
  return f;
}

// An allocation source whose totals the test sets.
struct FakeAllocations {
  AllocationTotals now;
  AllocationSource Source() {
    return [this] { return now; };
  }
};

// Stats reading `fake`'s allocation totals, with fixed version strings.
StatsOptions FakeOptions(FakeAllocations& fake, std::string runtime_version = "c++20-test",
                         std::string rpc_version = "9.9.9") {
  StatsOptions options;
  options.allocation_source = fake.Source();
  options.runtime_version = std::move(runtime_version);
  options.rpc_version = std::move(rpc_version);
  return options;
}

std::string PrintToString(const Stats& stats) {
  std::ostringstream os;
  stats.Print(os);
  return os.str();
}

// ---------------------------------------------------------------------------------------------

TEST(StatsHelpersTest, PercentileIndex) {
  EXPECT_EQ(PercentileIndex(10, 50), 4);
  EXPECT_EQ(PercentileIndex(10, 90), 8);
  EXPECT_EQ(PercentileIndex(10, 99), 8);
  EXPECT_EQ(PercentileIndex(20, 99), 18);
  EXPECT_EQ(PercentileIndex(100, 99), 98);
  EXPECT_EQ(PercentileIndex(1, 50), 0);
  EXPECT_EQ(PercentileIndex(1, 99), 0);
  EXPECT_EQ(PercentileIndex(0, 50), 0);
}

TEST(StatsHelpersTest, LatencyUnitIsTheLargestUnitBelowTheMinimum) {
  EXPECT_EQ(LatencyUnit(nanoseconds(1)), nanoseconds(1));
  EXPECT_EQ(LatencyUnit(nanoseconds(1000)), nanoseconds(1));
  EXPECT_EQ(LatencyUnit(nanoseconds(1001)), microseconds(1));
  EXPECT_EQ(LatencyUnit(milliseconds(1)), microseconds(1));
  EXPECT_EQ(LatencyUnit(nanoseconds(1'000'001)), milliseconds(1));
  EXPECT_EQ(LatencyUnit(std::chrono::seconds(1)), milliseconds(1));
  EXPECT_EQ(LatencyUnit(std::chrono::seconds(5)), std::chrono::seconds(1));
  EXPECT_EQ(UnitSuffix(nanoseconds(1)), "ns");
  EXPECT_EQ(UnitSuffix(microseconds(1)), "\xC2\xB5s");
  EXPECT_EQ(UnitSuffix(milliseconds(1)), "ms");
  EXPECT_EQ(UnitSuffix(std::chrono::seconds(1)), "s");
}

TEST(StatsTest, DefaultVersions) {
  EXPECT_EQ(DefaultRpcVersion(), "0.1.0");
  EXPECT_EQ(DefaultRuntimeVersion().rfind("c++", 0), 0u) << DefaultRuntimeVersion();
}

TEST(StatsTest, PrintMatchesGrpcGoBlockByteForByte) {
  FakeAllocations fake;
  Stats stats(FakeOptions(fake));
  fake.now = {100, 1000};
  stats.StartRun("unary", DefaultFeatures(), std::vector<bool>(kNumFeatureIndices, true));
  for (std::int64_t ns : {2000, 2000, 2001, 2003, 2006, 2010, 2100, 2200, 2300, 2512}) {
    stats.AddDuration(nanoseconds(ns));
  }
  fake.now = {125, 99304};
  stats.EndRun(10);

  const RunData& d = stats.results().back().data;
  EXPECT_EQ(d.total_ops, 10u);
  EXPECT_EQ(d.alloced_bytes, 9830.4);
  EXPECT_EQ(d.allocs, 2.5);
  EXPECT_EQ(d.req_t, 80);
  EXPECT_EQ(d.fiftieth, nanoseconds(2006));
  EXPECT_EQ(d.ninetieth, nanoseconds(2300));
  EXPECT_EQ(d.ninety_ninth, nanoseconds(2300));
  EXPECT_EQ(d.average, nanoseconds(2113));

  const std::string mu = "\xC2\xB5s";
  const std::string expected =
      "c++20-test/rill9.9.9\n"
      "unary-networkMode_none-bufConn_false-keepalive_false-benchTime_1s-trace_false-latency_0s-"
      "kbps_0-MTU_0-maxConcurrentCalls_1-reqSize_1B-respSize_1B-compressor_off-channelz_false-"
      "preloader_false-clientReadBufferSize_-1-clientWriteBufferSize_-1-serverReadBufferSize_-1-"
      "serverWriteBufferSize_-1-sleepBetweenRPCs_0s-connections_1-recvBufferPool_simple-"
      "sharedWriteBuffer_true:\n"
      "50_Latency: 2.0060" +
      mu + "\t90_Latency: 2.3000" + mu + "\t99_Latency: 2.3000" + mu + "\tAvg_Latency: 2.1130" +
      mu +
      "\tBytes/op: 9830.4\tAllocs/op: 2.5\t\n"
      "Histogram (unit: " +
      mu +
      ")\n"
      "Count: 10  Min:   2.0  Max:   2.5  Avg: 2.11\n"
      "------------------------------------------------------------\n"
      "[   2.000000,    2.001000)   2   20.0%   20.0%  ##\n"
      "[   2.001000,    2.002000)   1   10.0%   30.0%  #\n"
      "[   2.002000,    2.004000)   1   10.0%   40.0%  #\n"
      "[   2.004000,    2.008000)   1   10.0%   50.0%  #\n"
      "[   2.008000,    2.016000)   1   10.0%   60.0%  #\n"
      "[   2.016000,    2.032000)   0    0.0%   60.0%  \n"
      "[   2.032000,    2.064000)   0    0.0%   60.0%  \n"
      "[   2.064000,    2.128000)   1   10.0%   70.0%  #\n"
      "[   2.128000,    2.256000)   1   10.0%   80.0%  #\n"
      "[   2.256000,    2.512000)   1   10.0%   90.0%  #\n"
      "[   2.512000,    3.024000)   1   10.0%  100.0%  #\n"
      "Number of requests:  10\tRequest throughput:  80 bit/s\n"
      "Number of responses: 10\tResponse throughput: 80 bit/s\n"
      "\n";
  EXPECT_EQ(PrintToString(stats), expected);
}

// testdata/grpc_go_unary_block.txt is the block grpc-go prints for these 20 latencies (computed
// from grpc-go's rules by a separate program), with 196609 bytes and 3279 allocations.
constexpr std::int64_t kSampleLatencies[] = {25366, 31250, 35012, 36500,  38001,  38653,  39020,
                                             40100, 41234, 42000, 43010,  44020,  45102,  47000,
                                             52000, 60000, 80985, 120000, 900000, 2460611};

TEST(StdoutFormatTest, ParserAcceptsAGrpcGoBlock) {
  const std::string sample = ReadTestdata("grpc_go_unary_block.txt");
  std::string error;
  const std::optional<ParsedBlock> b = ParseBlock(sample, &error);
  ASSERT_TRUE(b.has_value()) << error;
  EXPECT_EQ(b->runtime_version, "go1.24.2");
  EXPECT_EQ(b->rpc_flavor, "grpc");
  EXPECT_EQ(b->rpc_version, "1.74.0-dev");
  EXPECT_EQ(b->run_mode, "unary");
  EXPECT_EQ(b->latency_ns.at("50"), 42000);
  EXPECT_EQ(b->latency_ns.at("90"), 120000);
  EXPECT_EQ(b->latency_ns.at("99"), 900000);
  EXPECT_EQ(b->latency_ns.at("Avg"), 210993);
  EXPECT_EQ(b->bytes_per_op, 9830.45);
  EXPECT_EQ(b->allocs_per_op, 163.95);
  EXPECT_EQ(b->histogram_unit, "\xC2\xB5s");
  EXPECT_EQ(b->histogram_count, 20);
  ASSERT_EQ(b->buckets.size(), 11u);
  std::int64_t total = 0;
  for (const ParsedBucket& bucket : b->buckets) {
    total += bucket.count;
  }
  EXPECT_EQ(total, 20);
  EXPECT_EQ(b->buckets.back().cumulative, 100.0);
  EXPECT_EQ(b->requests, 20u);
  EXPECT_EQ(b->responses, 20u);
  EXPECT_EQ(b->req_t, 160);

  // The parser is strict: a damaged block is rejected.
  std::string damaged = sample;
  damaged.replace(damaged.find("Avg_Latency"), 3, "avg");
  EXPECT_FALSE(ParseBlock(damaged, &error).has_value());
  EXPECT_FALSE(ParseBlock(sample.substr(0, sample.size() - 1), &error).has_value());
}

TEST(StdoutFormatTest, StatsReproducesTheGrpcGoBlock) {
  FakeAllocations fake;
  Stats stats(FakeOptions(fake, "go1.24.2", "1.74.0-dev"));
  fake.now = {5000, 1 << 20};
  stats.StartRun("unary", DefaultFeatures(), std::vector<bool>(kNumFeatureIndices, true));
  {
    LatencyRecorder recorder(stats, 64);
    for (std::int64_t ns : kSampleLatencies) {
      recorder.Add(nanoseconds(ns));
    }
    fake.now = {5000 + 3279, (1 << 20) + 196609};
    stats.EndRun(20);
  }
  const std::string ours = PrintToString(stats);
  const std::string sample = ReadTestdata("grpc_go_unary_block.txt");
  // Only the version line differs: "/rill" where grpc-go prints "/grpc".
  ASSERT_EQ(ours.substr(0, ours.find('\n')), "go1.24.2/rill1.74.0-dev");
  EXPECT_EQ(ours.substr(ours.find('\n')), sample.substr(sample.find('\n')));
}

TEST(StdoutFormatTest, PrintedValuesRoundTripThroughTheParser) {
  FakeAllocations fake;
  StatsOptions options;
  options.allocation_source = fake.Source();
  Stats stats(std::move(options));
  Features f = DefaultFeatures();
  f.req_size_bytes = 1048576;
  f.resp_size_bytes = 1024;
  f.max_concurrent_calls = 8;
  fake.now = {0, 0};
  stats.StartRun("streaming", f, std::vector<bool>(kNumFeatureIndices, false));
  // A deterministic spread of latencies between 10 µs and ~5 ms.
  std::uint64_t seed = 42;
  for (int i = 0; i < 5000; ++i) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    stats.AddDuration(nanoseconds(10'000 + static_cast<std::int64_t>((seed >> 33) % 5'000'000)));
  }
  fake.now = {123457, 98765431};
  stats.EndRun(24490);

  const std::string printed = PrintToString(stats);
  std::string error;
  const std::optional<ParsedBlock> b = ParseBlock(printed, &error);
  ASSERT_TRUE(b.has_value()) << error << "\n" << printed;
  const BenchResults& r = stats.results().back();
  EXPECT_EQ(b->rpc_flavor, "rill");
  EXPECT_EQ(b->runtime_version, r.runtime_version);
  EXPECT_EQ(b->rpc_version, r.rpc_version);
  EXPECT_EQ(b->run_mode, "streaming");
  EXPECT_EQ(b->features, f.String());
  // %.4f in microseconds keeps nanoseconds exact.
  EXPECT_EQ(b->histogram_unit, "\xC2\xB5s");
  EXPECT_NEAR(b->latency_ns.at("50"), static_cast<double>(r.data.fiftieth.count()), 1e-6);
  EXPECT_NEAR(b->latency_ns.at("90"), static_cast<double>(r.data.ninetieth.count()), 1e-6);
  EXPECT_NEAR(b->latency_ns.at("99"), static_cast<double>(r.data.ninety_ninth.count()), 1e-6);
  EXPECT_NEAR(b->latency_ns.at("Avg"), static_cast<double>(r.data.average.count()), 1e-6);
  // Go's %v prints the shortest text that reads back exactly.
  EXPECT_EQ(b->bytes_per_op, r.data.alloced_bytes);
  EXPECT_EQ(b->allocs_per_op, r.data.allocs);
  EXPECT_EQ(b->req_t, r.data.req_t);
  EXPECT_EQ(b->resp_t, r.data.resp_t);
  EXPECT_EQ(b->req_t, 24490.0 * 1048576 * 8);
  EXPECT_EQ(b->requests, 24490u);
  EXPECT_EQ(b->responses, 24490u);
  EXPECT_EQ(b->histogram_count, 5000);
  std::int64_t total = 0;
  for (const ParsedBucket& bucket : b->buckets) {
    total += bucket.count;
  }
  EXPECT_EQ(total, 5000);
  EXPECT_EQ(b->buckets.size(), 11u);
}

TEST(StdoutFormatTest, UnconstrainedRunHasNoLatencies) {
  FakeAllocations fake;
  Stats stats(FakeOptions(fake));
  fake.now = {0, 0};
  stats.StartRun("unconstrained", DefaultFeatures(), std::vector<bool>(kNumFeatureIndices, true));
  fake.now = {30, 1000};
  stats.EndUnconstrainedRun(7, 13);
  const RunData& d = stats.results().back().data;
  EXPECT_EQ(d.send_ops, 7u);
  EXPECT_EQ(d.recv_ops, 13u);
  EXPECT_EQ(d.total_ops, 0u);
  EXPECT_EQ(d.alloced_bytes, 100);  // 1000 / ((7 + 13) / 2)
  EXPECT_EQ(d.allocs, 3);
  EXPECT_EQ(d.req_t, 56);
  EXPECT_EQ(d.resp_t, 104);
  EXPECT_EQ(d.fiftieth, nanoseconds(0));
  EXPECT_EQ(stats.last_histogram(), nullptr);
  const std::string printed = PrintToString(stats);
  EXPECT_EQ(printed,
            "c++20-test/rill9.9.9\n"
            "unconstrained-" +
                DefaultFeatures().String() +
                ":\n"
                "Bytes/op: 100\tAllocs/op: 3\t\n"
                "Histogram (empty)\n"
                "Number of requests:  7\tRequest throughput:  56 bit/s\n"
                "Number of responses: 13\tResponse throughput: 104 bit/s\n"
                "\n");
  std::string error;
  const std::optional<ParsedBlock> b = ParseBlock(printed, &error);
  ASSERT_TRUE(b.has_value()) << error;
  EXPECT_FALSE(b->histogram_unit.has_value());
  EXPECT_TRUE(b->latency_ns.empty());
}

TEST(StatsTest, ZeroOperationsGiveNaNLikeGo) {
  Stats stats(StatsOptions{.allocation_source = [] { return AllocationTotals{}; }});
  stats.StartRun("unary", DefaultFeatures(), {});
  stats.EndRun(0);
  const std::string printed = PrintToString(stats);
  EXPECT_NE(printed.find("Bytes/op: NaN\tAllocs/op: NaN\t\n"), std::string::npos) << printed;
}

TEST(StatsTest, WithoutAllocationSourceFiguresAreZero) {
  Stats stats;
  stats.StartRun("unary", DefaultFeatures(), {});
  stats.AddDuration(microseconds(5));
  stats.EndRun(1);
  EXPECT_EQ(stats.results().back().data.alloced_bytes, 0);
  EXPECT_NE(PrintToString(stats).find("Bytes/op: 0\tAllocs/op: 0\t\n"), std::string::npos);
}

TEST(LatencyRecorderTest, WorkersRecordInParallelAndEndRunGathersEverything) {
  Stats stats;
  constexpr int kWorkers = 4;
  constexpr int kSamples = 1000;
  std::vector<std::unique_ptr<LatencyRecorder>> recorders;
  for (int w = 0; w < kWorkers; ++w) {
    recorders.push_back(std::make_unique<LatencyRecorder>(stats, kSamples));
  }
  // Warmup samples before StartRun are discarded.
  recorders[0]->Add(std::chrono::seconds(100));
  stats.StartRun("unary", DefaultFeatures(), {});
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) {
    threads.emplace_back([&recorders, w] {
      for (int i = 1; i <= kSamples; ++i) {
        recorders[static_cast<std::size_t>(w)]->Add(microseconds(i * kWorkers + w));
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  // A recorder destroyed before EndRun still contributes its samples.
  recorders.pop_back();
  stats.EndRun(kWorkers * kSamples);
  const Histogram* h = stats.last_histogram();
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->count(), kWorkers * kSamples);
  // The samples are 4, 5, ..., 4003 µs, each once: index k holds 4 + k µs.
  const RunData& d = stats.results().back().data;
  EXPECT_EQ(d.fiftieth, microseconds(2003));
  EXPECT_EQ(d.ninetieth, microseconds(3603));
  EXPECT_EQ(d.ninety_ninth, microseconds(3963));
  EXPECT_EQ(h->min(), 4000);
  EXPECT_EQ(h->max(), 4003000);
  // Each recorder is empty again and keeps its capacity for the next run.
  for (const auto& r : recorders) {
    EXPECT_EQ(r->size(), 0u);
  }
  // A second run sees only its own samples.
  stats.StartRun("unary", DefaultFeatures(), {});
  recorders[0]->Add(microseconds(7));
  stats.EndRun(1);
  EXPECT_EQ(stats.last_histogram()->count(), 1);
  EXPECT_EQ(stats.results().size(), 2u);
}

}  // namespace
}  // namespace rill::bench
