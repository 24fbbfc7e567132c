// The feature set of one benchmark run, named and printed exactly as grpc-go's
// `benchmark/stats.Features`, and the cross-product of per-feature value lists that benchmain
// runs (grpc-go's `generateFeatures`).
//
//   rill::bench::FeatureValues values;          // from the command-line flags
//   values.bench_time = std::chrono::seconds(1);
//   values.max_concurrent_calls = {1, 8};
//   ...
//   std::vector<bool> shared = values.SharedFeatureMask();
//   for (const rill::bench::Features& f : values.Generate()) {
//     std::cout << "unary-" << f.String() << ":\n";   // "unary-networkMode_none-bufConn_false-..."
//   }
//
// Field defaults are Go's zero values, so that a result file written by an older version (with
// fewer fields) reads back as grpc-go's gob decoder would read it.
//
// Value types; thread-compatible.
#ifndef RILL_BENCH_STATS_FEATURES_H_
#define RILL_BENCH_STATS_FEATURES_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/stats/go_format.h"

namespace rill::bench {

// Features that may vary from run to run, in grpc-go's `FeatureIndex` order. A shared-features
// mask (`std::vector<bool>`) is indexed by these values.
enum class FeatureIndex : int {
  kEnableTrace = 0,
  kReadLatencies,
  kReadKbps,
  kReadMTU,
  kMaxConcurrentCalls,
  kReqSizeBytes,
  kRespSizeBytes,
  kReqPayloadCurve,
  kRespPayloadCurve,
  kCompModes,
  kEnableChannelz,
  kEnablePreloader,
  kClientReadBufferSize,
  kClientWriteBufferSize,
  kServerReadBufferSize,
  kServerWriteBufferSize,
  kSleepBetweenRPCs,
  kRecvBufferPool,
  kSharedWriteBuffer,
};

// grpc-go's MaxFeatureIndex: the number of FeatureIndex values.
inline constexpr std::size_t kNumFeatureIndices = 19;

// Configured options of one run. Go field names are given where the C++ name differs in more
// than case; result files use the Go names.
struct Features {
  // Same for every run of one benchmain invocation.
  std::string network_mode;  // NetworkMode: "none", "Local", "LAN", "WAN", "Longhaul".
  bool use_buf_conn = false;
  bool enable_keepalive = false;
  std::chrono::nanoseconds bench_time{0};
  std::int64_t connections = 0;

  // May vary from run to run (one FeatureIndex each).
  bool enable_trace = false;
  std::chrono::nanoseconds latency{0};
  std::int64_t kbps = 0;
  std::int64_t mtu = 0;  // MTU
  std::int64_t max_concurrent_calls = 0;
  std::int64_t req_size_bytes = 0;   // Unused when req_payload_curve is set.
  std::int64_t resp_size_bytes = 0;  // Unused when resp_payload_curve is set.
  // Hex SHA-256 of the payload-curve file (grpc-go's PayloadCurve.Sha256); empty when no curve
  // is used (grpc-go's nil *PayloadCurve).
  std::string req_payload_curve;
  std::string resp_payload_curve;
  std::string mode_compressor;  // "off", "gzip", "nop".
  bool enable_channelz = false;
  bool enable_preloader = false;
  std::int64_t client_read_buffer_size = 0;  // Negative: the transport default.
  std::int64_t client_write_buffer_size = 0;
  std::int64_t server_read_buffer_size = 0;
  std::int64_t server_write_buffer_size = 0;
  std::chrono::nanoseconds sleep_between_rpcs{0};
  std::string recv_buffer_pool;  // "nil", "simple".
  bool shared_write_buffer = false;

  // grpc-go's Features.String(): every feature on one hyphen-joined line,
  // "networkMode_none-bufConn_false-keepalive_false-benchTime_1s-trace_false-latency_0s-...
  //  -connections_1-recvBufferPool_simple-sharedWriteBuffer_true".
  std::string String() const;

  // grpc-go's Features.SharedFeatures(mask): "Network: none\n" (when network_mode is non-empty),
  // "UseBufConn: true\n" and "EnableKeepalive: true\n" (only when true), "BenchTime: 1s\n", then
  // "Label: value\n" for each index set in `mask`. benchresult prints it above its table.
  std::string SharedFeaturesString(const std::vector<bool>& mask) const;

  // grpc-go's Features.PrintableName(mask): "Label_value-" for each index set in `mask`, e.g.
  // "Callers_8-ReqSize_1024B-". benchresult prefixes it with the run mode.
  std::string PrintableName(const std::vector<bool>& mask) const;

  // "Label<sep>value<delim>" for one feature (grpc-go's partialString for one index); empty for
  // an unset payload curve and for an index beyond the known ones.
  std::string FeatureString(std::size_t index, std::string_view sep, std::string_view delim) const;

  friend bool operator==(const Features&, const Features&) = default;
};

// grpc-go's PayloadCurve.ShortHash(): the first 8 characters of the SHA-256 hex string.
std::string_view ShortHash(std::string_view sha256);

// Visits every combination of positions, odometer-style with the last index fastest, starting
// from all zeros: visit(std::span<const std::size_t> positions) with positions[i] < counts[i].
// A count of 0 means the feature has no values (e.g. no payload curves): its position stays 0,
// the visitor must not use it, and it does not multiply the number of combinations. This is
// grpc-go's generateFeatures/addOne walk.
template <typename Visit>
void ForEachCombination(std::span<const std::size_t> counts, Visit&& visit) {
  std::vector<std::size_t> positions(counts.size(), 0);
  while (true) {
    visit(std::span<const std::size_t>(positions));
    std::size_t i = counts.size();
    while (i > 0) {
      --i;
      if (counts[i] == 0) {
        continue;
      }
      if (++positions[i] < counts[i]) {
        break;
      }
      positions[i] = 0;
    }
    bool wrapped = true;
    for (std::size_t p : positions) {
      if (p != 0) {
        wrapped = false;
        break;
      }
    }
    if (wrapped) {
      return;
    }
  }
}

// The values benchmain's flags give each feature. Generate() runs the cross-product in grpc-go's
// order; a feature with at most one value is "shared" and is left out of run names.
struct FeatureValues {
  // Same for every run.
  std::string network_mode = "none";
  bool use_buf_conn = false;
  bool enable_keepalive = false;
  std::chrono::nanoseconds bench_time = std::chrono::seconds(1);
  std::int64_t connections = 1;

  // One list per FeatureIndex.
  std::vector<bool> enable_trace;
  std::vector<std::chrono::nanoseconds> latencies;
  std::vector<std::int64_t> kbps;
  std::vector<std::int64_t> mtu;
  std::vector<std::int64_t> max_concurrent_calls;
  std::vector<std::int64_t> req_size_bytes;     // Ignored when req_payload_curves is non-empty.
  std::vector<std::int64_t> resp_size_bytes;    // Ignored when resp_payload_curves is non-empty.
  std::vector<std::string> req_payload_curves;  // SHA-256 hex strings.
  std::vector<std::string> resp_payload_curves;
  std::vector<std::string> compressor_modes;
  std::vector<bool> enable_channelz;
  std::vector<bool> enable_preloader;
  std::vector<std::int64_t> client_read_buffer_size;
  std::vector<std::int64_t> client_write_buffer_size;
  std::vector<std::int64_t> server_read_buffer_size;
  std::vector<std::int64_t> server_write_buffer_size;
  std::vector<std::chrono::nanoseconds> sleep_between_rpcs;
  std::vector<std::string> recv_buffer_pools;
  std::vector<bool> shared_write_buffer;

  // Number of values per FeatureIndex (grpc-go's featuresNum). Size lists report 0 when the
  // matching payload-curve list is in use.
  std::array<std::size_t, kNumFeatureIndices> Counts() const;

  // true for each FeatureIndex with at most one value (grpc-go's sharedFeatures).
  std::vector<bool> SharedFeatureMask() const;

  // Every combination, last FeatureIndex fastest. Every list that is used must be non-empty
  // (a list with no values yields no runs).
  std::vector<Features> Generate() const;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_FEATURES_H_
