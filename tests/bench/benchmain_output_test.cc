// benchmain end to end: its stdout parses as grpc-go's benchmain output, its result file reads
// back (with benchresult and ReadResultFile), every workload runs, and -recvBufferPool switches
// between the heap pool and the default pool. The benchmain binary runs as a child process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "bench/stats/result_file.h"
#include "tests/bench/benchmain_output_parser.h"

namespace rill::bench {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A path in the test's temporary directory, unique to this process.
std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "benchmain_output_test." + std::to_string(getpid()) + "." + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs `binary args` through the shell; stdout and stderr are captured separately.
CommandResult RunCommand(const std::string& binary, const std::string& args) {
  const std::string err_path = TempPath("stderr");
  const std::string command = "'" + binary + "' " + args + " 2>'" + err_path + "'";
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char chunk[4096];
  for (std::size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) {
    result.out.append(chunk, n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = ReadFile(err_path);
  std::remove(err_path.c_str());
  return result;
}

// Every block of benchmain's stdout, parsed; fails the test on a block that does not parse.
std::vector<ParsedBlock> ParseAll(const std::string& out) {
  std::vector<ParsedBlock> blocks;
  for (const std::string& text : SplitBlocks(out)) {
    std::string error;
    std::optional<ParsedBlock> block = ParseBlock(text, &error);
    EXPECT_TRUE(block.has_value()) << error << " in:\n" << text;
    if (block) blocks.push_back(std::move(*block));
  }
  return blocks;
}

// The `rill_extras` lines of stderr, as key=value maps.
std::vector<std::map<std::string, std::string>> Extras(const std::string& err) {
  std::vector<std::map<std::string, std::string>> lines;
  std::istringstream in(err);
  static const std::regex kPair(R"((\S+)=(\S+))");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("rill_extras ", 0) != 0) continue;
    std::map<std::string, std::string> pairs;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kPair);
         it != std::sregex_iterator(); ++it) {
      pairs[(*it)[1]] = (*it)[2];
    }
    lines.push_back(std::move(pairs));
  }
  return lines;
}

// A benchmain run and the result blocks of its stdout.
struct BenchmainRun {
  CommandResult command;
  std::vector<ParsedBlock> blocks;
};

// Runs benchmain with `args`; it must exit 0 and print `count` result blocks (fatal failures
// otherwise).
void RunBenchmain(const std::string& args, std::size_t count, BenchmainRun* run) {
  run->command = RunCommand(RILL_BENCHMAIN, args);
  ASSERT_EQ(run->command.exit_code, 0) << run->command.err;
  run->blocks = ParseAll(run->command.out);
  ASSERT_EQ(run->blocks.size(), count) << run->command.out;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(BenchmainOutputTest, UnaryRunsParseAsGrpcGoAndTheResultFileReadsBack) {
  const std::string result_file = TempPath("json");
  BenchmainRun run;

  // grpc-go's defaults for -latency (0s,40ms) and -kbps (0,10240) make four runs.
  ASSERT_NO_FATAL_FAILURE(
      RunBenchmain("-workloads=unary -benchtime=200ms -maxConcurrentCalls=4 -reqSizeBytes=1 "
                   "-respSizeBytes=1 -resultFile=" +
                       result_file,
                   4, &run));
  const std::vector<ParsedBlock>& blocks = run.blocks;
  const char* const shaping[] = {"latency_0s-kbps_0-", "latency_0s-kbps_10240-",
                                 "latency_40ms-kbps_0-", "latency_40ms-kbps_10240-"};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ParsedBlock& b = blocks[i];
    SCOPED_TRACE(b.features);
    EXPECT_EQ(b.rpc_flavor, "rill");
    EXPECT_EQ(b.run_mode, "unary");
    EXPECT_TRUE(Contains(b.features,
                         "networkMode_none-bufConn_false-keepalive_false-"
                         "benchTime_200ms-trace_false-"));
    EXPECT_TRUE(Contains(b.features, shaping[i]));
    EXPECT_TRUE(Contains(b.features,
                         "maxConcurrentCalls_4-reqSize_1B-respSize_1B-"
                         "compressor_off-"));
    EXPECT_TRUE(Contains(b.features,
                         "connections_1-recvBufferPool_simple-"
                         "sharedWriteBuffer_true"));
    EXPECT_GT(b.requests, 0u);
    EXPECT_EQ(b.requests, b.responses);
    EXPECT_EQ(static_cast<std::uint64_t>(b.histogram_count), b.requests);
    EXPECT_GE(b.allocs_per_op, 0);
    EXPECT_GE(b.bytes_per_op, 0);
    // ReqT = requests * 1 byte * 8 / 0.2 s.
    EXPECT_DOUBLE_EQ(b.req_t, static_cast<double>(b.requests) * 8 / 0.2);
  }
  // A simulated 40 ms one-way latency makes every round trip at least 80 ms.
  EXPECT_GE(blocks[2].latency_ns.at("50"), 80e6);

  const std::vector<std::map<std::string, std::string>> extras = Extras(run.command.err);
  ASSERT_EQ(extras.size(), 4u) << run.command.err;
  for (const auto& e : extras) {
    EXPECT_EQ(e.at("mode"), "unary");
    EXPECT_NE(e.at("server_cpu_us_per_op"), "n/a");
  }

  auto results = ReadResultFile(result_file);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  ASSERT_EQ(results->size(), 4u);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ((*results)[i].run_mode, "unary");
    EXPECT_EQ((*results)[i].features.String(), blocks[i].features);
    EXPECT_EQ((*results)[i].data.total_ops, blocks[i].requests);
  }

  const CommandResult table = RunCommand(RILL_BENCHRESULT, "'" + result_file + "'");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(Contains(table.out, "Shared features:")) << table.out;
  // One row per run, named by the features that vary: latency and kbps.
  EXPECT_TRUE(Contains(table.out, "unaryLatency_0s-Kbps_0-")) << table.out;
  EXPECT_TRUE(Contains(table.out, "unaryLatency_40ms-Kbps_10240-")) << table.out;
  std::remove(result_file.c_str());
}

TEST(BenchmainOutputTest, EveryWorkloadRunsWithBothPoolsOverASimulatedLan) {
  BenchmainRun run;
  ASSERT_NO_FATAL_FAILURE(
      RunBenchmain("-workloads=all -recvBufferPool=all -networkMode=LAN -benchtime=200ms "
                   "-maxConcurrentCalls=2 -reqSizeBytes=1 -respSizeBytes=1",
                   6, &run));
  const std::vector<ParsedBlock>& blocks = run.blocks;
  const std::vector<std::map<std::string, std::string>> extras = Extras(run.command.err);
  ASSERT_EQ(extras.size(), 6u) << run.command.err;

  const char* const modes[] = {"unary", "streaming", "unconstrained"};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const ParsedBlock& b = blocks[i];
    SCOPED_TRACE(b.run_mode + "-" + b.features);
    const bool heap_pool = i < 3;  // "nil" comes first, as in grpc-go
    EXPECT_EQ(b.run_mode, modes[i % 3]);
    EXPECT_EQ(extras[i].at("mode"), modes[i % 3]);
    EXPECT_TRUE(Contains(b.features, "networkMode_LAN-"));
    EXPECT_TRUE(Contains(b.features, "latency_2ms-kbps_102400-MTU_1500-"));
    EXPECT_TRUE(Contains(b.features, heap_pool ? "recvBufferPool_nil" : "recvBufferPool_simple"));
    if (b.run_mode == "unconstrained") {
      // No latencies. The counts are not checked: with 1-byte messages the server outruns the
      // client, whose reader takes one message per reactor turn while a read turn queues
      // thousands, and once the dynamic window has grown a 200 ms window can pass with
      // (almost) nothing counted.
      EXPECT_FALSE(b.histogram_unit.has_value());
      EXPECT_TRUE(b.latency_ns.empty());
    } else {
      EXPECT_GT(b.requests, 0u);
      EXPECT_EQ(b.requests, b.responses);
      // 2 ms each way.
      EXPECT_GE(b.latency_ns.at("50"), 4e6);
    }
    // The heap pool never serves from a cache; the default pool does (an unconstrained window
    // may count nothing, see above).
    if (heap_pool) {
      EXPECT_EQ(extras[i].at("pool_hits"), "0");
    } else if (b.run_mode != "unconstrained") {
      EXPECT_NE(extras[i].at("pool_hits"), "0");
    }
  }
}

// With the preloader, neither side serializes or compresses per message: the messages are
// prepared once and every send references them, so the pool serves fewer blocks per operation.
TEST(BenchmainOutputTest, PreloaderSendsPreparedMessagesOnBothStreamingWorkloads) {
  BenchmainRun run;
  ASSERT_NO_FATAL_FAILURE(
      RunBenchmain("-workloads=streaming -preloader=both -compression=gzip -benchtime=300ms "
                   "-maxConcurrentCalls=2 -reqSizeBytes=1024 -respSizeBytes=1024 -latency=0s "
                   "-kbps=0",
                   2, &run));
  const std::vector<ParsedBlock>& blocks = run.blocks;
  const std::vector<std::map<std::string, std::string>> extras = Extras(run.command.err);
  ASSERT_EQ(extras.size(), 2u) << run.command.err;
  double hits_per_op[2] = {0, 0};
  for (std::size_t i = 0; i < 2; ++i) {
    const ParsedBlock& b = blocks[i];
    SCOPED_TRACE(b.features);
    EXPECT_TRUE(Contains(b.features, i == 0 ? "preloader_false-" : "preloader_true-"));
    ASSERT_GT(b.requests, 0u);
    EXPECT_EQ(b.requests, b.responses);
    hits_per_op[i] = std::stod(extras[i].at("pool_hits")) / static_cast<double>(b.requests);
  }
  // Each ping-pong without the preloader takes a serialization block, compressed chunks and a
  // prefix on each side; with it, none of those.
  EXPECT_LT(hits_per_op[1], hits_per_op[0] - 2) << hits_per_op[0] << " vs " << hits_per_op[1];

  BenchmainRun unconstrained;
  ASSERT_NO_FATAL_FAILURE(
      RunBenchmain("-workloads=unconstrained -preloader=on -compression=gzip -benchtime=200ms "
                   "-maxConcurrentCalls=1 -reqSizeBytes=1024 -respSizeBytes=1024 -latency=0s "
                   "-kbps=0",
                   1, &unconstrained));
  const std::vector<ParsedBlock>& ublocks = unconstrained.blocks;
  EXPECT_TRUE(Contains(ublocks[0].features, "preloader_true-"));
}

TEST(BenchmainOutputTest, AcceptsEveryGoFlagSpellingAndRefusesBadValues) {
  BenchmainRun run;
  ASSERT_NO_FATAL_FAILURE(
      RunBenchmain("--workloads=streaming -benchtime 100ms -maxConcurrentCalls=1 -reqSizeBytes=1 "
                   "-respSizeBytes=1 -latency=0s -kbps=0 -bufconn -compression=gzip -preloader=on "
                   "-clientWriteBufferSize=0 -serverWriteBufferSize 100",
                   1, &run));
  const std::vector<ParsedBlock>& blocks = run.blocks;
  EXPECT_EQ(blocks[0].run_mode, "streaming");
  EXPECT_TRUE(Contains(blocks[0].features, "bufConn_true-"));
  EXPECT_TRUE(Contains(blocks[0].features, "compressor_gzip-"));
  EXPECT_TRUE(Contains(blocks[0].features, "preloader_true-"));
  EXPECT_TRUE(Contains(blocks[0].features, "clientWriteBufferSize_0-"));
  EXPECT_TRUE(Contains(blocks[0].features, "serverWriteBufferSize_100-"));
  EXPECT_EQ(blocks[0].requests, blocks[0].responses);

  const CommandResult bad = RunCommand(RILL_BENCHMAIN, "-workloads=bogus");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(Contains(bad.err, "-workloads")) << bad.err;
  EXPECT_TRUE(bad.out.empty());
}

}  // namespace
}  // namespace rill::bench
