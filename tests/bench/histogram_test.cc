#include "bench/stats/histogram.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace rill::bench {
namespace {

std::vector<double> LowBounds(const Histogram& h) {
  std::vector<double> out;
  for (const HistogramBucket& b : h.buckets()) {
    out.push_back(b.low_bound);
  }
  return out;
}

TEST(LatencyHistogramOptionsTest, GrowthPutsMaxAtTheLastLowerBound) {
  const HistogramOptions o = LatencyHistogramOptions(2000, 2512, 11);
  EXPECT_EQ(o.num_buckets, 11);
  EXPECT_NEAR(o.growth_factor, 1.0, 1e-12);
  EXPECT_EQ(o.base_bucket_size, 1.0);
  EXPECT_EQ(o.min_value, 2000);
  const Histogram h(o);
  const std::vector<double> expected = {2000, 2001, 2002, 2004, 2008, 2016,
                                        2032, 2064, 2128, 2256, 2512};
  const std::vector<double> bounds = LowBounds(h);
  ASSERT_EQ(bounds.size(), expected.size());
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    EXPECT_NEAR(bounds[i], expected[i], 1e-9) << i;
  }
}

TEST(LatencyHistogramOptionsTest, FewerBucketsForANarrowRange) {
  EXPECT_EQ(LatencyHistogramOptions(100, 104, 11).num_buckets, 5);
  EXPECT_EQ(LatencyHistogramOptions(7, 7, 11).num_buckets, 1);
  EXPECT_EQ(LatencyHistogramOptions(7, 8, 11).num_buckets, 2);
}

TEST(HistogramTest, DegenerateRangesKeepEveryValue) {
  Histogram one(LatencyHistogramOptions(7, 7, 11));
  EXPECT_TRUE(one.Add(7));
  EXPECT_TRUE(one.Add(7));
  EXPECT_EQ(one.buckets()[0].count, 2);

  // max = min + 1: a zero growth factor; grpc-go would index out of range here.
  Histogram two(LatencyHistogramOptions(7, 8, 11));
  EXPECT_TRUE(two.Add(7));
  EXPECT_TRUE(two.Add(8));
  ASSERT_EQ(two.buckets().size(), 2u);
  EXPECT_EQ(two.buckets()[0].count, 1);
  EXPECT_EQ(two.buckets()[1].count, 1);
}

TEST(HistogramTest, AddFindsBucketsAndRejectsOutliers) {
  Histogram h(HistogramOptions{
      .num_buckets = 4, .growth_factor = 1, .base_bucket_size = 1, .min_value = 0});
  EXPECT_TRUE(h.Add(0));
  EXPECT_TRUE(h.Add(1));
  EXPECT_TRUE(h.Add(3));
  EXPECT_TRUE(h.Add(3));
  EXPECT_TRUE(h.Add(5));
  EXPECT_FALSE(h.Add(100));  // Past the last bucket [4, 8).
  EXPECT_FALSE(h.Add(-1));   // Below min.
  std::vector<std::int64_t> counts;
  for (const HistogramBucket& b : h.buckets()) {
    counts.push_back(b.count);
  }
  EXPECT_EQ(counts, (std::vector<std::int64_t>{1, 1, 2, 1}));
  EXPECT_EQ(h.count(), 5);
  EXPECT_EQ(h.sum(), 12);
  EXPECT_EQ(h.sum_of_squares(), 0 + 1 + 9 + 9 + 25);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 5);
}

TEST(HistogramTest, PrintMatchesGrpcGoLayout) {
  Histogram h(HistogramOptions{
      .num_buckets = 4, .growth_factor = 1, .base_bucket_size = 1, .min_value = 0});
  for (std::int64_t v : {0, 1, 3, 3, 5}) {
    ASSERT_TRUE(h.Add(v));
  }
  std::ostringstream os;
  h.Print(os);
  EXPECT_EQ(os.str(),
            "Count: 5  Min:   0.0  Max:   5.0  Avg: 2.40\n"
            "------------------------------------------------------------\n"
            "[0.000000, 1.000000)  1   20.0%   20.0%  ##\n"
            "[1.000000, 2.000000)  1   20.0%   40.0%  ##\n"
            "[2.000000, 4.000000)  2   40.0%   80.0%  ####\n"
            "[4.000000, 8.000000)  1   20.0%  100.0%  ##\n");
}

TEST(HistogramTest, PrintWithUnitDividesValuesButNotTheWidth) {
  Histogram h(LatencyHistogramOptions(2000, 2512, 3));
  for (std::int64_t v : {2000, 2000, 2000, 2010, 2400}) {
    ASSERT_TRUE(h.Add(v));
  }
  std::ostringstream os;
  h.PrintWithUnit(os, 1000);
  // Three buckets: [2000, 2001), [2001, 2512), [2512, 2000 + 512 * 512). The bound width is
  // that of "2512.000000" (the raw last lower bound), as in grpc-go.
  EXPECT_EQ(os.str(),
            "Count: 5  Min:   2.0  Max:   2.4  Avg: 2.08\n"
            "------------------------------------------------------------\n"
            "[   2.000000,    2.001000)  3   60.0%   60.0%  ######\n"
            "[   2.001000,    2.512000)  2   40.0%  100.0%  ####\n"
            "[   2.512000,  264.144000)  0    0.0%  100.0%  \n");
}

TEST(HistogramTest, EmptyPrintsHeaderOnly) {
  Histogram h(HistogramOptions{.num_buckets = 2});
  std::ostringstream os;
  h.Print(os);
  EXPECT_EQ(os.str(),
            "Count: 0  Min: 9223372036854775808.0  Max: -9223372036854775808.0  Avg: NaN\n"
            "------------------------------------------------------------\n");
}

}  // namespace
}  // namespace rill::bench
