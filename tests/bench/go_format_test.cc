#include "bench/stats/go_format.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>

namespace rill::bench {
namespace {

using std::chrono::hours;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::nanoseconds;
using std::chrono::seconds;

// Expected strings are those of Go's time.Duration.String (its documentation and tests).
TEST(GoDurationStringTest, MatchesGo) {
  EXPECT_EQ(GoDurationString(nanoseconds(0)), "0s");
  EXPECT_EQ(GoDurationString(nanoseconds(1)), "1ns");
  EXPECT_EQ(GoDurationString(nanoseconds(999)), "999ns");
  EXPECT_EQ(GoDurationString(microseconds(1)), "1\xC2\xB5s");
  EXPECT_EQ(GoDurationString(nanoseconds(1500)), "1.5\xC2\xB5s");
  EXPECT_EQ(GoDurationString(microseconds(100)), "100\xC2\xB5s");
  EXPECT_EQ(GoDurationString(nanoseconds(1100)), "1.1\xC2\xB5s");
  EXPECT_EQ(GoDurationString(nanoseconds(999'999)), "999.999\xC2\xB5s");
  EXPECT_EQ(GoDurationString(milliseconds(1)), "1ms");
  EXPECT_EQ(GoDurationString(milliseconds(40)), "40ms");
  EXPECT_EQ(GoDurationString(nanoseconds(2'200'000)), "2.2ms");
  EXPECT_EQ(GoDurationString(nanoseconds(1'000'001)), "1.000001ms");
  EXPECT_EQ(GoDurationString(seconds(1)), "1s");
  EXPECT_EQ(GoDurationString(milliseconds(1500)), "1.5s");
  EXPECT_EQ(GoDurationString(nanoseconds(1'000'000'001)), "1.000000001s");
  EXPECT_EQ(GoDurationString(seconds(59)), "59s");
  EXPECT_EQ(GoDurationString(minutes(1)), "1m0s");
  EXPECT_EQ(GoDurationString(minutes(2)), "2m0s");
  EXPECT_EQ(GoDurationString(milliseconds(90'500)), "1m30.5s");
  EXPECT_EQ(GoDurationString(hours(1)), "1h0m0s");
  EXPECT_EQ(GoDurationString(hours(1) + minutes(2) + seconds(3)), "1h2m3s");
  EXPECT_EQ(GoDurationString(hours(100)), "100h0m0s");
  EXPECT_EQ(GoDurationString(milliseconds(-3)), "-3ms");
  EXPECT_EQ(GoDurationString(nanoseconds(-1)), "-1ns");
  EXPECT_EQ(GoDurationString(-minutes(2)), "-2m0s");
  EXPECT_EQ(GoDurationString(nanoseconds(std::numeric_limits<std::int64_t>::max())),
            "2562047h47m16.854775807s");
  EXPECT_EQ(GoDurationString(nanoseconds(std::numeric_limits<std::int64_t>::min())),
            "-2562047h47m16.854775808s");
}

// Expected strings are fmt.Sprint(float64) in Go: strconv 'g' with the shortest precision.
TEST(GoFloatStringTest, MatchesGoPercentV) {
  EXPECT_EQ(GoFloatString(0.0), "0");
  EXPECT_EQ(GoFloatString(-0.0), "-0");
  EXPECT_EQ(GoFloatString(1.0), "1");
  EXPECT_EQ(GoFloatString(-1.5), "-1.5");
  EXPECT_EQ(GoFloatString(160.5), "160.5");
  EXPECT_EQ(GoFloatString(0.1), "0.1");
  EXPECT_EQ(GoFloatString(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(GoFloatString(9830.465), "9830.465");
  EXPECT_EQ(GoFloatString(195920.0), "195920");
  EXPECT_EQ(GoFloatString(999999.0), "999999");
  EXPECT_EQ(GoFloatString(999999.5), "999999.5");
  EXPECT_EQ(GoFloatString(1e6), "1e+06");
  EXPECT_EQ(GoFloatString(1234567.0), "1.234567e+06");
  EXPECT_EQ(GoFloatString(1.2345e6), "1.2345e+06");
  EXPECT_EQ(GoFloatString(608863452348.1149), "6.088634523481149e+11");
  EXPECT_EQ(GoFloatString(205437009920.0), "2.0543700992e+11");
  EXPECT_EQ(GoFloatString(1e21), "1e+21");
  EXPECT_EQ(GoFloatString(1e100), "1e+100");
  EXPECT_EQ(GoFloatString(0.0001), "0.0001");
  EXPECT_EQ(GoFloatString(0.00012), "0.00012");
  EXPECT_EQ(GoFloatString(0.00001), "1e-05");
  EXPECT_EQ(GoFloatString(2.5e-5), "2.5e-05");
  EXPECT_EQ(GoFloatString(5e-324), "5e-324");
  EXPECT_EQ(GoFloatString(std::numeric_limits<double>::max()), "1.7976931348623157e+308");
  EXPECT_EQ(GoFloatString(std::nan("")), "NaN");
  EXPECT_EQ(GoFloatString(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(GoFloatString(-std::numeric_limits<double>::infinity()), "-Inf");
}

TEST(GoFixedStringTest, RoundsLikeStrconv) {
  EXPECT_EQ(GoFixedString(38.653, 4), "38.6530");
  EXPECT_EQ(GoFixedString(2.5, 0), "2");  // Ties to even.
  EXPECT_EQ(GoFixedString(0.125, 2), "0.12");
  EXPECT_EQ(GoFixedString(0.375, 2), "0.38");
  EXPECT_EQ(GoFixedString(25.366, 6), "25.366000");
  EXPECT_EQ(GoFixedString(-0.0, 1), "-0.0");
  EXPECT_EQ(GoFixedString(std::nan(""), 2), "NaN");
  EXPECT_EQ(GoFixedString(std::numeric_limits<double>::infinity(), 2), "+Inf");
  EXPECT_EQ(GoFixedString(-std::numeric_limits<double>::infinity(), 2), "-Inf");
}

TEST(GoPadTest, CountsRunesNotBytes) {
  EXPECT_EQ(RuneCount("1.5\xC2\xB5s"), 5u);
  EXPECT_EQ(GoPadLeft("1.5\xC2\xB5s", 8), "   1.5\xC2\xB5s");
  EXPECT_EQ(GoPadRight("1.5\xC2\xB5s", 8), "1.5\xC2\xB5s   ");
  EXPECT_EQ(GoPadLeft("toolong", 3), "toolong");
  EXPECT_EQ(GoPadRight("", 2), "  ");
}

TEST(GoConversionTest, SecondsAndInt64) {
  EXPECT_EQ(GoSeconds(milliseconds(1500)), 1.5);
  EXPECT_EQ(GoSeconds(seconds(0)), 0.0);
  EXPECT_EQ(GoFloatToInt64(2.9), 2);
  EXPECT_EQ(GoFloatToInt64(-2.9), -2);
  EXPECT_EQ(GoFloatToInt64(9830.45), 9830);
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(GoFloatToInt64(std::nan("")), kMin);
  EXPECT_EQ(GoFloatToInt64(1e19), kMin);
  EXPECT_EQ(GoFloatToInt64(-1e19), kMin);
  EXPECT_EQ(GoFloatToInt64(-9223372036854775808.0), kMin);
}

}  // namespace
}  // namespace rill::bench
