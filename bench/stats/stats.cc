#include "bench/stats/stats.h"

#include <algorithm>
#include <utility>

#include "bench/stats/go_format.h"
#include "rill/detail/check.h"

#ifndef RILL_BENCH_RPC_VERSION
#define RILL_BENCH_RPC_VERSION "0.0.0"
#endif

#define RILL_BENCH_STRINGIFY_INNER(x) #x
#define RILL_BENCH_STRINGIFY(x) RILL_BENCH_STRINGIFY_INNER(x)

namespace rill::bench {
namespace {

constexpr const char* CompilerVersion() {
#if defined(__clang__)
  return "clang" RILL_BENCH_STRINGIFY(__clang_major__) "." RILL_BENCH_STRINGIFY(
      __clang_minor__) "." RILL_BENCH_STRINGIFY(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "gcc" RILL_BENCH_STRINGIFY(__GNUC__) "." RILL_BENCH_STRINGIFY(
      __GNUC_MINOR__) "." RILL_BENCH_STRINGIFY(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

constexpr const char* LanguageVersion() {
  if constexpr (__cplusplus > 202002L) {
    return "c++23";
  } else if constexpr (__cplusplus == 202002L) {
    return "c++20";
  } else {
    return "c++";
  }
}

double PerOp(std::uint64_t delta, std::uint64_t ops) {
  return static_cast<double>(delta) / static_cast<double>(ops);
}

double BitsPerSecond(std::uint64_t ops, std::int64_t size_bytes, std::chrono::nanoseconds time) {
  return static_cast<double>(ops) * static_cast<double>(size_bytes) * 8 / GoSeconds(time);
}

}  // namespace

std::string DefaultRuntimeVersion() {
  return std::string(LanguageVersion()) + "-" + CompilerVersion();
}

std::string DefaultRpcVersion() { return RILL_BENCH_RPC_VERSION; }

std::chrono::nanoseconds LatencyUnit(std::chrono::nanoseconds min) {
  using std::chrono::nanoseconds;
  nanoseconds unit(1);
  for (nanoseconds u : {nanoseconds(1'000), nanoseconds(1'000'000), nanoseconds(1'000'000'000)}) {
    if (min <= u) {
      break;
    }
    unit = u;
  }
  return unit;
}

std::string UnitSuffix(std::chrono::nanoseconds unit) { return GoDurationString(unit).substr(1); }

std::int64_t PercentileIndex(std::int64_t count, std::int64_t p) {
  return std::max<std::int64_t>(count * p / 100 - 1, 0);
}

LatencyRecorder::LatencyRecorder(Stats& stats, std::size_t expected_samples) : stats_(stats) {
  samples_.reserve(expected_samples);
  std::lock_guard<std::mutex> lock(stats_.mu_);
  stats_.recorders_.push_back(this);
}

LatencyRecorder::~LatencyRecorder() {
  std::lock_guard<std::mutex> lock(stats_.mu_);
  std::erase(stats_.recorders_, this);
  stats_.loose_samples_.insert(stats_.loose_samples_.end(), samples_.begin(), samples_.end());
}

Stats::Stats(StatsOptions options) : options_(std::move(options)) {}

Stats::~Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  RILL_CHECK_MSG(recorders_.empty(), "a LatencyRecorder outlives its Stats");
}

AllocationTotals Stats::ReadAllocations() const {
  return options_.allocation_source ? options_.allocation_source() : AllocationTotals{};
}

void Stats::StartRun(std::string run_mode, Features features, std::vector<bool> shared_features) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (LatencyRecorder* r : recorders_) {
      r->samples_.clear();
    }
    loose_samples_.clear();
  }
  BenchResults result;
  result.runtime_version = options_.runtime_version;
  result.rpc_version = options_.rpc_version;
  result.run_mode = std::move(run_mode);
  result.features = std::move(features);
  result.shared_features = std::move(shared_features);
  results_.push_back(std::move(result));
  run_open_ = true;
  // Last, so that this bookkeeping is not charged to the run.
  start_allocations_ = ReadAllocations();
}

void Stats::AddDuration(std::chrono::nanoseconds elapsed) {
  std::lock_guard<std::mutex> lock(mu_);
  loose_samples_.push_back(elapsed.count());
}

void Stats::EndRun(std::uint64_t count) {
  const AllocationTotals stop = ReadAllocations();
  RILL_CHECK_MSG(run_open_, "EndRun without StartRun");
  BenchResults& r = results_.back();
  r.data = RunData{};
  r.data.total_ops = count;
  r.data.alloced_bytes = PerOp(stop.bytes - start_allocations_.bytes, count);
  r.data.allocs = PerOp(stop.allocs - start_allocations_.allocs, count);
  r.data.req_t = BitsPerSecond(count, r.features.req_size_bytes, r.features.bench_time);
  r.data.resp_t = BitsPerSecond(count, r.features.resp_size_bytes, r.features.bench_time);
  ComputeLatencies(r);
  run_open_ = false;
  last_ended_ = results_.size() - 1;
}

void Stats::EndUnconstrainedRun(std::uint64_t req, std::uint64_t resp) {
  const AllocationTotals stop = ReadAllocations();
  RILL_CHECK_MSG(run_open_, "EndUnconstrainedRun without StartRun");
  BenchResults& r = results_.back();
  r.data = RunData{};
  r.data.send_ops = req;
  r.data.recv_ops = resp;
  const std::uint64_t ops = (req + resp) / 2;
  r.data.alloced_bytes = PerOp(stop.bytes - start_allocations_.bytes, ops);
  r.data.allocs = PerOp(stop.allocs - start_allocations_.allocs, ops);
  r.data.req_t = BitsPerSecond(req, r.features.req_size_bytes, r.features.bench_time);
  r.data.resp_t = BitsPerSecond(resp, r.features.resp_size_bytes, r.features.bench_time);
  ComputeLatencies(r);
  run_open_ = false;
  last_ended_ = results_.size() - 1;
}

std::vector<std::int64_t> Stats::TakeSamples() {
  std::lock_guard<std::mutex> lock(mu_);
  std::size_t total = loose_samples_.size();
  for (const LatencyRecorder* r : recorders_) {
    total += r->samples_.size();
  }
  std::vector<std::int64_t> all;
  all.reserve(total);
  all.insert(all.end(), loose_samples_.begin(), loose_samples_.end());
  loose_samples_.clear();
  for (LatencyRecorder* r : recorders_) {
    all.insert(all.end(), r->samples_.begin(), r->samples_.end());
    r->samples_.clear();  // Keeps the reserved capacity for the next run.
  }
  return all;
}

void Stats::ComputeLatencies(BenchResults& result) {
  std::vector<std::int64_t> durations = TakeSamples();
  last_histogram_.reset();
  last_unit_ = std::chrono::nanoseconds(0);
  if (durations.empty()) {
    return;
  }
  std::sort(durations.begin(), durations.end());
  const std::int64_t min = durations.front();
  const std::int64_t max = durations.back();
  last_unit_ = LatencyUnit(std::chrono::nanoseconds(min));
  // One more bucket for the unbounded tail, as grpc-go's NewStats does.
  Histogram& h =
      last_histogram_.emplace(LatencyHistogramOptions(min, max, options_.num_buckets + 1));
  for (std::int64_t d : durations) {
    h.Add(d);
  }
  auto percentile = [&](std::int64_t p) {
    const std::int64_t index = PercentileIndex(h.count(), p);
    return std::chrono::nanoseconds(durations[static_cast<std::size_t>(index)]);
  };
  result.data.fiftieth = percentile(50);
  result.data.ninetieth = percentile(90);
  result.data.ninety_ninth = percentile(99);
  result.data.average = std::chrono::nanoseconds(
      GoFloatToInt64(static_cast<double>(h.sum()) / static_cast<double>(h.count())));
}

void Stats::Print(std::ostream& os) const {
  if (!last_ended_) {
    return;
  }
  const BenchResults& r = results_[*last_ended_];
  const std::string suffix = UnitSuffix(last_unit_);
  const auto unit = static_cast<double>(last_unit_.count());

  std::string out;
  out += r.runtime_version + "/rill" + r.rpc_version + "\n";
  out += r.run_mode + "-" + r.features.String() + ":\n";
  auto latency = [&](const char* label, std::chrono::nanoseconds value) {
    if (value.count() != 0) {
      out += label;
      out += ": " + GoFixedString(static_cast<double>(value.count()) / unit, 4) + suffix + "\t";
    }
  };
  latency("50_Latency", r.data.fiftieth);
  latency("90_Latency", r.data.ninetieth);
  latency("99_Latency", r.data.ninety_ninth);
  latency("Avg_Latency", r.data.average);
  out += "Bytes/op: " + GoFloatString(r.data.alloced_bytes) + "\t";
  out += "Allocs/op: " + GoFloatString(r.data.allocs) + "\t\n";
  os << out;

  if (last_histogram_) {
    os << "Histogram (unit: " << suffix << ")\n";
    last_histogram_->PrintWithUnit(os, unit);
  } else {
    os << "Histogram (empty)\n";
  }

  const std::uint64_t req = r.data.send_ops != 0 ? r.data.send_ops : r.data.total_ops;
  const std::uint64_t resp = r.data.recv_ops != 0 ? r.data.recv_ops : r.data.total_ops;
  os << "Number of requests:  " << req << "\tRequest throughput:  " << GoFloatString(r.data.req_t)
     << " bit/s\n";
  os << "Number of responses: " << resp << "\tResponse throughput: " << GoFloatString(r.data.resp_t)
     << " bit/s\n";
  os << "\n";
}

}  // namespace rill::bench
