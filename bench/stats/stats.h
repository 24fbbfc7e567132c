// Statistics of benchmark runs, computed and printed as grpc-go's `benchmark/stats.Stats` does,
// so that rill's benchmain output reads exactly like grpc-go's.
//
//   rill::bench::Stats stats({.allocation_source = &rill::bench::AllocationCounts});
//   for (const rill::bench::Features& f : values.Generate()) {
//     std::vector<std::unique_ptr<rill::bench::LatencyRecorder>> recorders;  // one per worker,
//     for (int i = 0; i < workers; ++i)                               // made before StartRun
//       recorders.push_back(std::make_unique<rill::bench::LatencyRecorder>(stats, 1 << 16));
//     stats.StartRun("unary", f, shared);
//     ... each worker: auto t0 = Clock::now(); Call(); recorder.Add(Clock::now() - t0); ...
//     ... join the workers ...
//     stats.EndRun(total_calls);
//     stats.Print(std::cout);
//   }
//   rill::bench::WriteResultFile(path, stats.results());
//
// Latencies are recorded without locks or steady-state allocation: each worker owns a
// LatencyRecorder whose buffer is reserved up front; EndRun gathers every recorder's samples.
//
// Thread safety: Stats is thread-compatible. LatencyRecorder::Add is called only by the
// recorder's owning worker; StartRun and EndRun must not overlap any Add (the caller orders
// them, e.g. by starting workers after StartRun and joining them before EndRun). Creating and
// destroying recorders is thread-safe.
#ifndef RILL_BENCH_STATS_STATS_H_
#define RILL_BENCH_STATS_STATS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "bench/alloc_hook/alloc_hook.h"
#include "bench/stats/features.h"
#include "bench/stats/histogram.h"
#include "bench/stats/results.h"

namespace rill::bench {

class Stats;

// Process-wide allocation totals; rill_alloc_hook's AllocationCounts is the usual source.
using AllocationSource = std::function<AllocationTotals()>;

// "c++20-gcc12.2.0": language standard and compiler of this build (grpc-go prints its Go
// version in this place).
std::string DefaultRuntimeVersion();

// rill's version, "0.1.0".
std::string DefaultRpcVersion();

struct StatsOptions {
  // Histogram buckets before the unbounded last one (grpc-go's benchmain uses NewStats(10)).
  int num_buckets = 10;
  // Where Bytes/op and Allocs/op come from; when empty both are 0.
  AllocationSource allocation_source;
  std::string runtime_version = DefaultRuntimeVersion();
  std::string rpc_version = DefaultRpcVersion();
};

// Latency samples of one worker. Neither copyable nor movable: its Stats refers to it until it
// is destroyed, and it must be destroyed before that Stats. Samples recorded before StartRun
// (warmup) are discarded by StartRun; samples of a recorder destroyed mid-run are kept for
// that run.
class LatencyRecorder {
 public:
  // Registers with `stats` and reserves room for `expected_samples` (more samples reallocate,
  // and those allocations count toward Bytes/op).
  LatencyRecorder(Stats& stats, std::size_t expected_samples);
  ~LatencyRecorder();
  LatencyRecorder(const LatencyRecorder&) = delete;
  LatencyRecorder& operator=(const LatencyRecorder&) = delete;

  void Add(std::chrono::nanoseconds elapsed) { samples_.push_back(elapsed.count()); }

  std::size_t size() const { return samples_.size(); }

 private:
  friend class Stats;
  Stats& stats_;
  std::vector<std::int64_t> samples_;
};

class Stats {
 public:
  explicit Stats(StatsOptions options = {});
  ~Stats();
  Stats(const Stats&) = delete;
  Stats& operator=(const Stats&) = delete;

  // Begins a run: discards pending samples, appends a BenchResults and takes the starting
  // allocation snapshot. `shared_features` is indexed by FeatureIndex.
  void StartRun(std::string run_mode, Features features, std::vector<bool> shared_features);

  // Records one latency without a recorder; takes a lock (grpc-go's AddDuration).
  void AddDuration(std::chrono::nanoseconds elapsed);

  // Ends a unary or streaming run of `count` operations: Bytes/op and Allocs/op over `count`,
  // ReqT/RespT = count * size * 8 / benchtime seconds, latency percentiles and histogram from
  // every recorded sample.
  void EndRun(std::uint64_t count);

  // Ends an unconstrained run: per-op figures divide by (req + resp) / 2; ReqT uses req and
  // RespT uses resp.
  void EndUnconstrainedRun(std::uint64_t req, std::uint64_t resp);

  // Writes grpc-go's block for the last ended run:
  //
  //   c++20-gcc12.2.0/rill0.1.0
  //   unary-networkMode_none-...-sharedWriteBuffer_true:
  //   50_Latency: 38.6530µs\t90_Latency: ...\t99_Latency: ...\tAvg_Latency: ...\tBytes/op:
  //   9830.5\tAllocs/op: 163.9\t Histogram (unit: µs) Count: 24490  Min:  25.4  Max: 2460.6
  //   Avg: 40.75
  //   ------------------------------------------------------------
  //   [      25.366000,       26.366000)      1    0.0%    0.0%
  //   ...
  //   Number of requests:  24490\tRequest throughput:  195920 bit/s
  //   Number of responses: 24490\tResponse throughput: 195920 bit/s
  //   <blank line>
  //
  // Writes nothing when no run has ended.
  void Print(std::ostream& os) const;

  // Every run started so far, in order.
  const std::vector<BenchResults>& results() const { return results_; }

  // Histogram and unit of the last ended run; no histogram when it recorded no latencies.
  const Histogram* last_histogram() const { return last_histogram_ ? &*last_histogram_ : nullptr; }
  std::chrono::nanoseconds last_unit() const { return last_unit_; }

 private:
  friend class LatencyRecorder;

  AllocationTotals ReadAllocations() const;
  // Moves every pending sample out of the recorders into one vector.
  std::vector<std::int64_t> TakeSamples();
  void ComputeLatencies(BenchResults& result);

  StatsOptions options_;
  std::vector<BenchResults> results_;
  AllocationTotals start_allocations_;
  bool run_open_ = false;
  std::optional<std::size_t> last_ended_;  // Index into results_.
  std::optional<Histogram> last_histogram_;
  std::chrono::nanoseconds last_unit_{0};

  // Guards the recorder list and samples handed over by destroyed recorders or AddDuration.
  std::mutex mu_;
  std::vector<LatencyRecorder*> recorders_;
  std::vector<std::int64_t> loose_samples_;
};

// The unit grpc-go prints latencies in: the largest of 1µs, 1ms and 1s that is below `min`,
// else 1ns.
std::chrono::nanoseconds LatencyUnit(std::chrono::nanoseconds min);

// "ns", "µs", "ms" or "s" (Go's Duration(unit).String() without the leading "1").
std::string UnitSuffix(std::chrono::nanoseconds unit);

// Index of percentile p in `count` sorted samples: max(count * p / 100 - 1, 0), in integers.
std::int64_t PercentileIndex(std::int64_t count, std::int64_t p);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_STATS_H_
