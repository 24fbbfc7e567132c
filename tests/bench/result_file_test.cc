#include "bench/stats/result_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace rill::bench {
namespace {

std::vector<BenchResults> SampleResults() {
  BenchResults a;
  a.runtime_version = "c++20-gcc12.2.0";
  a.rpc_version = "0.1.0";
  a.run_mode = "unary";
  a.features.network_mode = "none";
  a.features.bench_time = std::chrono::seconds(1);
  a.features.connections = 2;
  a.features.enable_trace = true;
  a.features.latency = std::chrono::milliseconds(40);
  a.features.kbps = 10240;
  a.features.mtu = 1500;
  a.features.max_concurrent_calls = 64;
  a.features.req_size_bytes = 1024;
  a.features.resp_payload_curve = std::string(64, 'f');
  a.features.mode_compressor = "gzip";
  a.features.enable_channelz = true;
  a.features.enable_preloader = true;
  a.features.client_read_buffer_size = -1;
  a.features.client_write_buffer_size = 32768;
  a.features.server_read_buffer_size = -1;
  a.features.server_write_buffer_size = 65536;
  a.features.sleep_between_rpcs = std::chrono::microseconds(250);
  a.features.recv_buffer_pool = "simple";
  a.features.shared_write_buffer = true;
  a.shared_features = {true, false, false, true, false, true, true, true, true, true,
                       true, true,  true,  true, true,  true, true, true, true};
  a.data.total_ops = 18446744073709551615ULL;
  a.data.alloced_bytes = 9830.45;
  a.data.allocs = 1.0 / 3;
  a.data.req_t = 2.05437009920e11;
  a.data.resp_t = 0;
  a.data.fiftieth = std::chrono::nanoseconds(42000);
  a.data.ninetieth = std::chrono::nanoseconds(120000);
  a.data.ninety_ninth = std::chrono::nanoseconds(900000);
  a.data.average = std::chrono::nanoseconds(std::numeric_limits<std::int64_t>::max());

  BenchResults b;
  b.runtime_version = "weird \"name\"\n";
  b.run_mode = "unconstrained";
  b.features.use_buf_conn = true;
  b.features.enable_keepalive = true;
  b.data.send_ops = 7;
  b.data.recv_ops = 13;
  b.data.allocs = -0.0;
  return {a, b};
}

TEST(ResultFileTest, JsonRoundTripKeepsEveryField) {
  const std::vector<BenchResults> results = SampleResults();
  const std::string json = ResultsToJson(results);
  const rill::StatusOr<std::vector<BenchResults>> back = ResultsFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, results);
  EXPECT_EQ(ResultsToJson(*back), json);
}

TEST(ResultFileTest, UsesGrpcGoFieldNames) {
  const std::string json = ResultsToJson(SampleResults());
  for (const char* key : {"\"GoVersion\": \"c++20-gcc12.2.0\"",
                          "\"GrpcVersion\": \"0.1.0\"",
                          "\"RunMode\": \"unary\"",
                          "\"NetworkMode\": \"none\"",
                          "\"UseBufConn\": false",
                          "\"EnableKeepalive\": false",
                          "\"BenchTime\": 1000000000",
                          "\"Connections\": 2",
                          "\"EnableTrace\": true",
                          "\"Latency\": 40000000",
                          "\"Kbps\": 10240",
                          "\"MTU\": 1500",
                          "\"MaxConcurrentCalls\": 64",
                          "\"ReqSizeBytes\": 1024",
                          "\"RespSizeBytes\": 0",
                          "\"ReqPayloadCurve\": null",
                          "\"RespPayloadCurve\": {",
                          "\"Sha256\": \"ffff",
                          "\"ModeCompressor\": \"gzip\"",
                          "\"EnableChannelz\": true",
                          "\"EnablePreloader\": true",
                          "\"ClientReadBufferSize\": -1",
                          "\"ClientWriteBufferSize\": 32768",
                          "\"ServerReadBufferSize\": -1",
                          "\"ServerWriteBufferSize\": 65536",
                          "\"SleepBetweenRPCs\": 250000",
                          "\"RecvBufferPool\": \"simple\"",
                          "\"SharedWriteBuffer\": true",
                          "\"SharedFeatures\": [\n      true,\n      false,\n",
                          "\"TotalOps\": 18446744073709551615",
                          "\"SendOps\": 0",
                          "\"RecvOps\": 0",
                          "\"AllocedBytes\": 9830.45",
                          "\"Allocs\": 0.3333333333333333",
                          "\"ReqT\": 205437009920",
                          "\"RespT\": 0",
                          "\"Fiftieth\": 42000",
                          "\"Ninetieth\": 120000",
                          "\"NinetyNinth\": 900000",
                          "\"Average\": 9223372036854775807"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
}

TEST(ResultFileTest, NonFiniteFloatsSurvive) {
  BenchResults r;
  r.data.alloced_bytes = std::nan("");
  r.data.allocs = std::numeric_limits<double>::infinity();
  r.data.req_t = -std::numeric_limits<double>::infinity();
  const std::string json = ResultsToJson(std::vector<BenchResults>{r});
  EXPECT_NE(json.find("\"AllocedBytes\": \"NaN\""), std::string::npos);
  const rill::StatusOr<std::vector<BenchResults>> back = ResultsFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::isnan((*back)[0].data.alloced_bytes));
  EXPECT_EQ((*back)[0].data.allocs, std::numeric_limits<double>::infinity());
  EXPECT_EQ((*back)[0].data.req_t, -std::numeric_limits<double>::infinity());
}

TEST(ResultFileTest, MissingFieldsAreZeroAndUnknownFieldsIgnored) {
  const rill::StatusOr<std::vector<BenchResults>> r = ResultsFromJson(
      R"([{"RunMode": "unary", "Features": {"Kbps": 5, "FutureFeature": [1, {"x": null}]},
           "Data": {"TotalOps": 3}, "Extra": "ignored"}, {}])");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].run_mode, "unary");
  EXPECT_EQ((*r)[0].features.kbps, 5);
  EXPECT_EQ((*r)[0].features.mtu, 0);
  EXPECT_EQ((*r)[0].data.total_ops, 3u);
  EXPECT_TRUE((*r)[0].shared_features.empty());
  EXPECT_EQ((*r)[1], BenchResults());
}

TEST(ResultFileTest, RejectsWrongTypesWithTheFieldPath) {
  struct Case {
    const char* json;
    const char* path;
  };
  for (const Case& c : {
           Case{R"([{"Features": {"Kbps": "5"}}])", "[0].Features.Kbps"},
           Case{R"([{}, {"Data": {"TotalOps": -1}}])", "[1].Data.TotalOps"},
           Case{R"([{"Data": {"Fiftieth": 1.5}}])", "[0].Data.Fiftieth"},
           Case{R"([{"SharedFeatures": [true, 1]}])", "[0].SharedFeatures"},
           Case{R"([{"Features": {"ReqPayloadCurve": "abc"}}])", "[0].Features.ReqPayloadCurve"},
           Case{R"([{"Features": []}])", "[0].Features"},
           Case{R"([1])", "[0]"},
       }) {
    const rill::StatusOr<std::vector<BenchResults>> r = ResultsFromJson(c.json);
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.status().code(), rill::StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.path), std::string_view::npos) << r.status().message();
  }
  EXPECT_FALSE(ResultsFromJson("{}").ok());
}

TEST(ResultFileTest, RejectsWhatIsNotJson) {
  for (const char* bad :
       {"", "[{},]", "[{}] // comment", "[{\"Data\": {\"Allocs\": NaN}}]", "[{'RunMode': 'unary'}]",
        "[{\"Data\": {\"TotalOps\": 01}}]", "[{\"RunMode\": \"\xC0\xAF\"}]", "[{}] [{}]", "[{}"}) {
    const rill::StatusOr<std::vector<BenchResults>> r = ResultsFromJson(bad);
    EXPECT_EQ(r.status().code(), rill::StatusCode::kInvalidArgument) << "accepted: " << bad;
  }
  // Deep nesting is an error, not a crash.
  EXPECT_FALSE(ResultsFromJson(std::string(100000, '[')).ok());
}

TEST(ResultFileTest, IntegersAreExactTo64Bits) {
  const rill::StatusOr<std::vector<BenchResults>> r = ResultsFromJson(
      R"([{"Features": {"Kbps": -9223372036854775808}, "Data": {"SendOps": 18446744073709551615}}])");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].features.kbps, std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ((*r)[0].data.send_ops, std::numeric_limits<std::uint64_t>::max());
  // One past the limit.
  EXPECT_FALSE(ResultsFromJson(R"([{"Data": {"SendOps": 18446744073709551616}}])").ok());
  EXPECT_FALSE(ResultsFromJson(R"([{"Features": {"Kbps": 9223372036854775808}}])").ok());
}

TEST(ResultFileTest, FloatsRoundTripExactly) {
  for (double d : {0.0, -0.0, 1.0 / 3, 9830.45, 1e-300, 5e-324, 1.7976931348623157e308,
                   123456789.123456789, 9007199254740992.0, 1e21}) {
    BenchResults r;
    r.data.allocs = d;
    const rill::StatusOr<std::vector<BenchResults>> back =
        ResultsFromJson(ResultsToJson(std::vector<BenchResults>{r}));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ((*back)[0].data.allocs, d);
    EXPECT_EQ(std::signbit((*back)[0].data.allocs), std::signbit(d));
  }
}

std::string TestdataPath(const std::string& name) {
  return std::string(RILL_BENCH_TESTDATA) + "/" + name;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// old.json and new.json are kept in the writer's output format (tests/bench/update_testdata.sh
// rewrites them), so writing what they hold gives them back byte for byte.
TEST(ResultFileTest, WriterReproducesTheTestdataFiles) {
  for (const char* name : {"old.json", "new.json"}) {
    const rill::StatusOr<std::vector<BenchResults>> r = ReadResultFile(TestdataPath(name));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(ResultsToJson(*r), ReadText(TestdataPath(name))) << name;
  }
}

// old_writer_format.json holds the runs of old.json as the hand-written JSON writer that
// preceded the JSON library wrote them (arrays on one line, among other differences).
TEST(ResultFileTest, ReadsFilesOfTheEarlierWriter) {
  const rill::StatusOr<std::vector<BenchResults>> earlier =
      ReadResultFile(TestdataPath("old_writer_format.json"));
  const rill::StatusOr<std::vector<BenchResults>> current =
      ReadResultFile(TestdataPath("old.json"));
  ASSERT_TRUE(earlier.ok()) << earlier.status();
  ASSERT_TRUE(current.ok()) << current.status();
  EXPECT_EQ(*earlier, *current);
  EXPECT_NE(ReadText(TestdataPath("old_writer_format.json")), ReadText(TestdataPath("old.json")));
}

TEST(ResultFileTest, WriteAndReadAFile) {
  char dir_template[] = "/tmp/rill_result_file_testXXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string path = std::string(dir_template) + "/results.json";
  const std::vector<BenchResults> results = SampleResults();
  ASSERT_TRUE(WriteResultFile(path, results).ok());
  const rill::StatusOr<std::vector<BenchResults>> back = ReadResultFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, results);

  { std::ofstream(path) << "[{\"RunMode\": 1}]"; }
  const rill::StatusOr<std::vector<BenchResults>> bad = ReadResultFile(path);
  EXPECT_EQ(bad.status().code(), rill::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find(path), std::string_view::npos);

  std::remove(path.c_str());
  EXPECT_EQ(ReadResultFile(path).status().code(), rill::StatusCode::kNotFound);
  EXPECT_EQ(WriteResultFile(std::string(dir_template) + "/no/such/dir/x.json", results).code(),
            rill::StatusCode::kUnavailable);
  rmdir(dir_template);
}

}  // namespace
}  // namespace rill::bench
