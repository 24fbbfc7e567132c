// grpc-go's `benchmark/stats.Histogram`: int64 values in exponentially growing buckets, printed
// in grpc-go's layout.
//
//   rill::bench::Histogram h(rill::bench::LatencyHistogramOptions(min_ns, max_ns, 11));
//   for (std::int64_t ns : sorted_latencies) h.Add(ns);
//   h.PrintWithUnit(std::cout, 1e3);   // bounds and Min/Max/Avg in microseconds
//
// Bucket 0 is [min, min + base); bucket i >= 1 is [min + base*m^(i-1), min + base*m^i) with
// m = 1 + growth_factor. The last bucket's printed upper bound is extrapolated the same way.
//
// Thread-compatible.
#ifndef RILL_BENCH_STATS_HISTOGRAM_H_
#define RILL_BENCH_STATS_HISTOGRAM_H_

#include <cstdint>
#include <ostream>
#include <span>
#include <vector>

namespace rill::bench {

struct HistogramOptions {
  // 0 means 32, as in grpc-go.
  int num_buckets = 0;
  // 0.1 makes bucket n+1 10% wider than bucket n.
  double growth_factor = 0;
  // Width of bucket 0; 0 means 1.
  double base_bucket_size = 0;
  // Lower bound of bucket 0.
  std::int64_t min_value = 0;
};

struct HistogramBucket {
  double low_bound = 0;
  std::int64_t count = 0;
};

// The bucket layout grpc-go's Stats uses for latencies between min_ns and max_ns (both
// inclusive): max_buckets buckets, fewer when max - min + 1 is smaller, base 1 ns, and a growth
// factor that puts max at the lower bound of the last bucket.
HistogramOptions LatencyHistogramOptions(std::int64_t min_ns, std::int64_t max_ns, int max_buckets);

class Histogram {
 public:
  explicit Histogram(HistogramOptions options);

  // Adds `value` to its bucket. Returns false, and changes nothing, when no bucket holds it
  // (below min_value or past the last bucket), as grpc-go's Add returns an error.
  bool Add(std::int64_t value);

  // "Count: <n>  Min: <%5.1f>  Max: <%5.1f>  Avg: <%.2f>", 60 dashes, then one line per bucket:
  // "[<lo>, <hi>)  <count>  <pct>%  <cumulative>%  <#bar>". Values are divided by `unit`.
  void PrintWithUnit(std::ostream& os, double unit) const;
  void Print(std::ostream& os) const { PrintWithUnit(os, 1); }

  std::int64_t count() const { return count_; }
  std::int64_t sum() const { return sum_; }
  std::int64_t sum_of_squares() const { return sum_of_squares_; }
  // INT64_MAX and INT64_MIN while empty, as in grpc-go.
  std::int64_t min() const { return min_; }
  std::int64_t max() const { return max_; }
  std::span<const HistogramBucket> buckets() const { return buckets_; }
  const HistogramOptions& options() const { return options_; }

 private:
  // Index of the bucket holding `value`, or -1.
  long FindBucket(std::int64_t value) const;

  HistogramOptions options_;
  std::vector<HistogramBucket> buckets_;
  double log_base_bucket_size_;
  double one_over_log_one_plus_growth_factor_;
  std::int64_t count_ = 0;
  std::int64_t sum_ = 0;
  std::int64_t sum_of_squares_ = 0;
  std::int64_t min_;
  std::int64_t max_;
};

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_HISTOGRAM_H_
