#include "bench/stats/histogram.h"

#include <cmath>
#include <limits>
#include <string>

#include "bench/stats/go_format.h"

namespace rill::bench {

HistogramOptions LatencyHistogramOptions(std::int64_t min_ns, std::int64_t max_ns,
                                         int max_buckets) {
  int num_buckets = max_buckets;
  const std::int64_t span = max_ns - min_ns;
  if (span + 1 < num_buckets) {
    num_buckets = static_cast<int>(span + 1);
  }
  HistogramOptions options;
  options.num_buckets = num_buckets;
  // max - min = (1 + growth)^(num_buckets - 2): max is the lower bound of the last bucket.
  // With one or two buckets the exponent divides by zero or goes negative; the IEEE results
  // (inf growth, zero growth) are what grpc-go computes too.
  options.growth_factor =
      std::pow(static_cast<double>(span), 1.0 / static_cast<double>(num_buckets - 2)) - 1;
  options.base_bucket_size = 1.0;
  options.min_value = min_ns;
  return options;
}

Histogram::Histogram(HistogramOptions options)
    : options_(options),
      min_(std::numeric_limits<std::int64_t>::max()),
      max_(std::numeric_limits<std::int64_t>::min()) {
  if (options_.num_buckets <= 0) {
    options_.num_buckets = 32;
  }
  if (options_.base_bucket_size == 0.0) {
    options_.base_bucket_size = 1.0;
  }
  log_base_bucket_size_ = std::log(options_.base_bucket_size);
  one_over_log_one_plus_growth_factor_ = 1 / std::log(1 + options_.growth_factor);
  buckets_.resize(static_cast<std::size_t>(options_.num_buckets));
  const double m = 1.0 + options_.growth_factor;
  double delta = options_.base_bucket_size;
  const auto min = static_cast<double>(options_.min_value);
  buckets_[0].low_bound = min;
  for (std::size_t i = 1; i < buckets_.size(); ++i) {
    buckets_[i].low_bound = min + delta;
    delta *= m;
  }
}

long Histogram::FindBucket(std::int64_t value) const {
  const auto delta = static_cast<double>(value - options_.min_value);
  if (delta < 0) {
    return -1;
  }
  if (delta < options_.base_bucket_size) {
    return 0;
  }
  const double b =
      (std::log(delta) - log_base_bucket_size_) * one_over_log_one_plus_growth_factor_ + 1;
  if (std::isnan(b)) {
    // Only with a zero growth factor (two buckets, max = min + 1): log(1) * inf. grpc-go's
    // int(NaN) indexes out of range and panics; the value belongs to the last bucket.
    return static_cast<long>(buckets_.size()) - 1;
  }
  if (b >= static_cast<double>(buckets_.size())) {
    return -1;
  }
  return b < 0 ? 0 : static_cast<long>(b);
}

bool Histogram::Add(std::int64_t value) {
  const long bucket = FindBucket(value);
  if (bucket < 0) {
    return false;
  }
  ++buckets_[static_cast<std::size_t>(bucket)].count;
  ++count_;
  // Go's int64 arithmetic wraps on overflow; do the same without undefined behaviour (squares
  // of multi-second latencies in nanoseconds overflow quickly).
  const auto u = static_cast<std::uint64_t>(value);
  sum_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum_) + u);
  sum_of_squares_ = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum_of_squares_) + u * u);
  if (value < min_) {
    min_ = value;
  }
  if (value > max_) {
    max_ = value;
  }
  return true;
}

void Histogram::PrintWithUnit(std::ostream& os, double unit) const {
  const double avg = static_cast<double>(sum_) / static_cast<double>(count_);
  os << "Count: " << count_
     << "  Min: " << GoPadLeft(GoFixedString(static_cast<double>(min_) / unit, 1), 5)
     << "  Max: " << GoPadLeft(GoFixedString(static_cast<double>(max_) / unit, 1), 5)
     << "  Avg: " << GoFixedString(avg / unit, 2) << "\n";
  os << std::string(60, '-') << "\n";
  if (count_ <= 0) {
    return;
  }
  // The width comes from the last lower bound before dividing by the unit, as in grpc-go.
  const std::size_t bound_width = GoFixedString(buckets_.back().low_bound, 6).size();
  const std::size_t count_width = std::to_string(count_).size();
  const double percent_multi = 100 / static_cast<double>(count_);
  const auto min = static_cast<double>(options_.min_value);

  std::int64_t accumulated = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const HistogramBucket& b = buckets_[i];
    const double high = i + 1 < buckets_.size()
                            ? buckets_[i + 1].low_bound
                            : min + (b.low_bound - min) * (1.0 + options_.growth_factor);
    accumulated += b.count;
    const double pct = static_cast<double>(b.count) * percent_multi;
    const double cumulative = static_cast<double>(accumulated) * percent_multi;
    const auto bar_length = static_cast<std::size_t>(pct * 0.1 + 0.5);
    os << "[" << GoPadLeft(GoFixedString(b.low_bound / unit, 6), bound_width) << ", "
       << GoPadLeft(GoFixedString(high / unit, 6), bound_width) << ")  "
       << GoPadLeft(std::to_string(b.count), count_width) << "  "
       << GoPadLeft(GoFixedString(pct, 1), 5) << "%  " << GoPadLeft(GoFixedString(cumulative, 1), 5)
       << "%  " << std::string(bar_length, '#') << "\n";
  }
}

}  // namespace rill::bench
