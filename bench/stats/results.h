// The outcome of benchmark runs, field for field grpc-go's `stats.BenchResults` and
// `stats.RunData`. `Stats` produces them, result files store them (with grpc-go's field names),
// and benchresult prints and compares them.
//
//   for (const rill::bench::BenchResults& r : stats.results()) {
//     std::cout << r.run_mode << " p50=" << GoDurationString(r.data.fiftieth) << "\n";
//   }
//
// Value types; thread-compatible.
#ifndef RILL_BENCH_STATS_RESULTS_H_
#define RILL_BENCH_STATS_RESULTS_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/stats/features.h"

namespace rill::bench {

struct RunData {
  // Operations of a unary or streaming run.
  std::uint64_t total_ops = 0;
  // Sends and receives of an unconstrained run.
  std::uint64_t send_ops = 0;
  std::uint64_t recv_ops = 0;
  // Process-wide heap bytes and allocations per operation (Bytes/op, Allocs/op).
  double alloced_bytes = 0;
  double allocs = 0;
  // Request and response throughput in bits per second (benchresult labels them "/op").
  double req_t = 0;
  double resp_t = 0;
  // Latency percentiles from the sorted samples, and the mean; zero for unconstrained runs.
  std::chrono::nanoseconds fiftieth{0};
  std::chrono::nanoseconds ninetieth{0};
  std::chrono::nanoseconds ninety_ninth{0};
  std::chrono::nanoseconds average{0};

  friend bool operator==(const RunData&, const RunData&) = default;
};

struct BenchResults {
  // "<language>-<compiler>" for rill, e.g. "c++20-gcc12.2.0"; grpc-go's GoVersion.
  std::string runtime_version;
  // rill's version, e.g. "0.1.0"; grpc-go's GrpcVersion.
  std::string rpc_version;
  // "unary", "streaming" or "unconstrained".
  std::string run_mode;
  Features features;
  // Indexed by FeatureIndex: true when the feature has the same value in every run.
  std::vector<bool> shared_features;
  RunData data;

  // "<run_mode>-<features.String()>": how benchresult matches runs of two files.
  std::string Key() const { return run_mode + "-" + features.String(); }

  friend bool operator==(const BenchResults&, const BenchResults&) = default;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_RESULTS_H_
