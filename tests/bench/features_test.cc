#include "bench/stats/features.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace rill::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

std::size_t Index(FeatureIndex i) { return static_cast<std::size_t>(i); }

// The flag defaults of grpc-go's benchmain.
FeatureValues BenchmainDefaults() {
  FeatureValues v;
  v.enable_trace = {false};
  v.latencies = {nanoseconds(0), milliseconds(40)};
  v.kbps = {0, 10240};
  v.mtu = {0};
  v.max_concurrent_calls = {1, 8, 64, 512};
  v.req_size_bytes = {1, 1024, 1048576};
  v.resp_size_bytes = {1, 1024, 1048576};
  v.compressor_modes = {"off"};
  v.enable_channelz = {false};
  v.enable_preloader = {false};
  v.client_read_buffer_size = {-1};
  v.client_write_buffer_size = {-1};
  v.server_read_buffer_size = {-1};
  v.server_write_buffer_size = {-1};
  v.sleep_between_rpcs = {nanoseconds(0)};
  v.recv_buffer_pools = {"simple"};
  v.shared_write_buffer = {true};
  return v;
}

constexpr const char* kFirstDefaultRun =
    "networkMode_none-bufConn_false-keepalive_false-benchTime_1s-trace_false-latency_0s-kbps_0-"
    "MTU_0-maxConcurrentCalls_1-reqSize_1B-respSize_1B-compressor_off-channelz_false-"
    "preloader_false-clientReadBufferSize_-1-clientWriteBufferSize_-1-serverReadBufferSize_-1-"
    "serverWriteBufferSize_-1-sleepBetweenRPCs_0s-connections_1-recvBufferPool_simple-"
    "sharedWriteBuffer_true";

TEST(FeaturesTest, StringOfTheFirstDefaultRunMatchesGrpcGo) {
  const std::vector<Features> all = BenchmainDefaults().Generate();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().String(), kFirstDefaultRun);
}

TEST(FeaturesTest, StringPrintsEveryFieldInGoFormat) {
  Features f;
  f.network_mode = "LAN";
  f.use_buf_conn = true;
  f.enable_keepalive = true;
  f.bench_time = seconds(120);
  f.enable_trace = true;
  f.latency = nanoseconds(1500);
  f.kbps = 102400;
  f.mtu = 1500;
  f.max_concurrent_calls = 64;
  f.req_payload_curve = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
  f.resp_size_bytes = 1048576;
  f.mode_compressor = "gzip";
  f.enable_channelz = true;
  f.enable_preloader = true;
  f.client_read_buffer_size = 1;
  f.client_write_buffer_size = 2;
  f.server_read_buffer_size = 3;
  f.server_write_buffer_size = 4;
  f.sleep_between_rpcs = milliseconds(5);
  f.connections = 3;
  f.recv_buffer_pool = "nil";
  f.shared_write_buffer = false;
  EXPECT_EQ(f.String(),
            "networkMode_LAN-bufConn_true-keepalive_true-benchTime_2m0s-trace_true-"
            "latency_1.5\xC2\xB5s-kbps_102400-MTU_1500-maxConcurrentCalls_64-"
            "reqPayloadCurve_01234567-respSize_1048576B-compressor_gzip-channelz_true-"
            "preloader_true-clientReadBufferSize_1-clientWriteBufferSize_2-"
            "serverReadBufferSize_3-serverWriteBufferSize_4-sleepBetweenRPCs_5ms-connections_3-"
            "recvBufferPool_nil-sharedWriteBuffer_false");
  EXPECT_EQ(f.FeatureString(Index(FeatureIndex::kReqPayloadCurve), ": ", "\n"),
            "ReqPayloadCurve: SHA-256:" + f.req_payload_curve + "\n");
  EXPECT_EQ(f.FeatureString(Index(FeatureIndex::kRespPayloadCurve), ": ", "\n"), "");
  EXPECT_EQ(f.FeatureString(kNumFeatureIndices, ": ", "\n"), "");
}

TEST(FeaturesTest, ZeroValueStringsLikeGo) {
  // What grpc-go prints for a zero Features{} (e.g. decoded from an empty gob struct).
  EXPECT_EQ(Features().String(),
            "networkMode_-bufConn_false-keepalive_false-benchTime_0s-trace_false-latency_0s-"
            "kbps_0-MTU_0-maxConcurrentCalls_0-reqSize_0B-respSize_0B-compressor_-"
            "channelz_false-preloader_false-clientReadBufferSize_0-clientWriteBufferSize_0-"
            "serverReadBufferSize_0-serverWriteBufferSize_0-sleepBetweenRPCs_0s-connections_0-"
            "recvBufferPool_-sharedWriteBuffer_false");
}

TEST(FeaturesTest, DefaultCrossProductHas144RunsLastIndexFastest) {
  const FeatureValues values = BenchmainDefaults();
  const std::vector<Features> all = values.Generate();
  ASSERT_EQ(all.size(), 144u);
  // The last varying index (response size) changes fastest, the first (latency) slowest.
  EXPECT_EQ(all[0].resp_size_bytes, 1);
  EXPECT_EQ(all[1].resp_size_bytes, 1024);
  EXPECT_EQ(all[2].resp_size_bytes, 1048576);
  EXPECT_EQ(all[3].resp_size_bytes, 1);
  EXPECT_EQ(all[3].req_size_bytes, 1024);
  EXPECT_EQ(all[9].max_concurrent_calls, 8);
  EXPECT_EQ(all[36].kbps, 10240);
  EXPECT_EQ(all[71].latency, nanoseconds(0));
  EXPECT_EQ(all[72].latency, milliseconds(40));
  EXPECT_EQ(all[72].kbps, 0);
  const Features& last = all.back();
  EXPECT_EQ(last.latency, milliseconds(40));
  EXPECT_EQ(last.kbps, 10240);
  EXPECT_EQ(last.max_concurrent_calls, 512);
  EXPECT_EQ(last.req_size_bytes, 1048576);
  EXPECT_EQ(last.resp_size_bytes, 1048576);
  for (const Features& f : all) {
    EXPECT_EQ(f.network_mode, "none");
    EXPECT_EQ(f.bench_time, seconds(1));
    EXPECT_EQ(f.connections, 1);
    EXPECT_TRUE(f.shared_write_buffer);
  }
}

TEST(FeaturesTest, SharedMaskMarksFeaturesWithAtMostOneValue) {
  const std::vector<bool> mask = BenchmainDefaults().SharedFeatureMask();
  ASSERT_EQ(mask.size(), kNumFeatureIndices);
  std::vector<bool> expected(kNumFeatureIndices, true);
  expected[Index(FeatureIndex::kReadLatencies)] = false;
  expected[Index(FeatureIndex::kReadKbps)] = false;
  expected[Index(FeatureIndex::kMaxConcurrentCalls)] = false;
  expected[Index(FeatureIndex::kReqSizeBytes)] = false;
  expected[Index(FeatureIndex::kRespSizeBytes)] = false;
  EXPECT_EQ(mask, expected);
}

TEST(FeaturesTest, SharedFeaturesAndPrintableName) {
  const FeatureValues values = BenchmainDefaults();
  const std::vector<bool> shared = values.SharedFeatureMask();
  const std::vector<Features> all = values.Generate();
  const Features& f = all[1 + 3 + 9 + 36 + 72];  // 40ms, 10240 kbps, 8 callers, 1024 B, 1024 B.
  EXPECT_EQ(f.SharedFeaturesString(shared),
            "Network: none\n"
            "BenchTime: 1s\n"
            "Trace: false\n"
            "MTU: 0\n"
            "Compressor: off\n"
            "Channelz: false\n"
            "Preloader: false\n"
            "ClientReadBufferSize: -1\n"
            "ClientWriteBufferSize: -1\n"
            "ServerReadBufferSize: -1\n"
            "ServerWriteBufferSize: -1\n"
            "SleepBetweenRPCs: 0s\n"
            "RecvBufferPool: simple\n"
            "SharedWriteBuffer: true\n");
  std::vector<bool> varying = shared;
  varying.flip();
  EXPECT_EQ(f.PrintableName(varying),
            "Latency_40ms-Kbps_10240-Callers_8-ReqSize_1024B-RespSize_1024B-");

  Features g = f;
  g.use_buf_conn = true;
  g.enable_keepalive = true;
  g.network_mode = "";
  EXPECT_EQ(g.SharedFeaturesString({}), "UseBufConn: true\nEnableKeepalive: true\nBenchTime: 1s\n");
}

TEST(FeaturesTest, PayloadCurvesReplaceSizes) {
  FeatureValues values = BenchmainDefaults();
  values.req_payload_curves = {std::string(64, 'a'), std::string(64, 'b')};
  const auto counts = values.Counts();
  EXPECT_EQ(counts[Index(FeatureIndex::kReqSizeBytes)], 0u);
  EXPECT_EQ(counts[Index(FeatureIndex::kReqPayloadCurve)], 2u);
  const std::vector<Features> all = values.Generate();
  ASSERT_EQ(all.size(), 96u);  // 2 latencies x 2 kbps x 4 callers x 2 curves x 3 sizes.
  // The curve index (7) comes after the response size (6), so it changes faster.
  EXPECT_EQ(all[0].req_payload_curve, std::string(64, 'a'));
  EXPECT_EQ(all[1].req_payload_curve, std::string(64, 'b'));
  EXPECT_EQ(all[2].req_payload_curve, std::string(64, 'a'));
  EXPECT_EQ(all[2].resp_size_bytes, 1024);
  EXPECT_EQ(all[0].req_size_bytes, 0);
  EXPECT_NE(all[0].String().find("-reqPayloadCurve_aaaaaaaa-respSize_1B-"), std::string::npos);
  const std::vector<bool> shared = values.SharedFeatureMask();
  EXPECT_TRUE(shared[Index(FeatureIndex::kReqSizeBytes)]);
  EXPECT_FALSE(shared[Index(FeatureIndex::kReqPayloadCurve)]);
  EXPECT_TRUE(shared[Index(FeatureIndex::kRespPayloadCurve)]);
}

TEST(FeaturesTest, MissingValueListYieldsNoRuns) {
  FeatureValues values = BenchmainDefaults();
  values.mtu.clear();
  EXPECT_TRUE(values.Generate().empty());
}

TEST(ForEachCombinationTest, OdometerOrderSkippingEmptyFeatures) {
  const std::vector<std::size_t> counts = {2, 0, 3};
  std::vector<std::vector<std::size_t>> seen;
  ForEachCombination(
      counts, [&](std::span<const std::size_t> pos) { seen.emplace_back(pos.begin(), pos.end()); });
  const std::vector<std::vector<std::size_t>> expected = {{0, 0, 0}, {0, 0, 1}, {0, 0, 2},
                                                          {1, 0, 0}, {1, 0, 1}, {1, 0, 2}};
  EXPECT_EQ(seen, expected);
}

TEST(ForEachCombinationTest, SingleVisitWhenNothingVaries) {
  int visits = 0;
  ForEachCombination(std::vector<std::size_t>{}, [&](std::span<const std::size_t>) { ++visits; });
  ForEachCombination(std::vector<std::size_t>{1, 1, 0},
                     [&](std::span<const std::size_t>) { ++visits; });
  EXPECT_EQ(visits, 2);
}

}  // namespace
}  // namespace rill::bench
