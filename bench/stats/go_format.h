// Go's text formatting rules, reproduced so that rill's benchmark output reads byte for byte
// like grpc-go's `benchmark/benchmain` and `benchmark/benchresult` output.
//
//   GoDurationString(std::chrono::milliseconds(40));  // "40ms"
//   GoDurationString(std::chrono::seconds(120));      // "2m0s"
//   GoFloatString(1234567.0);                         // "1.234567e+06", as fmt's %v prints it
//   GoPadLeft("1.5µs", 8);                            // "   1.5µs": widths count runes, not bytes
//
// All functions are pure and thread-safe.
#ifndef RILL_BENCH_STATS_GO_FORMAT_H_
#define RILL_BENCH_STATS_GO_FORMAT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rill::bench {

// time.Duration.String(): "0s", "999ns", "1.5µs" (U+00B5), "40ms", "1s", "1m30.5s", "2h0m0s",
// "-3ms". Sub-second values use the largest unit below a second that keeps an integer part;
// trailing fractional zeros and a bare decimal point are dropped.
std::string GoDurationString(std::chrono::nanoseconds d);

// fmt's %v for a float64, i.e. strconv.FormatFloat(v, 'g', -1, 64): the shortest decimal that
// reads back as v, in exponent form ("1e+06", "2.5e-05") when the decimal exponent is below -4
// or at least 6, plain otherwise ("0", "160.5", "123456"). NaN prints "NaN", infinities "+Inf"
// and "-Inf".
std::string GoFloatString(double v);

// fmt's %.<precision>f (strconv 'f' with a fixed precision): correctly rounded, ties to even
// on the exact binary value. NaN prints "NaN", infinities "+Inf" and "-Inf".
std::string GoFixedString(double v, int precision);

// fmt's %<width>s and %-<width>s: pad with spaces to `width` runes (UTF-8 code points).
std::string GoPadLeft(std::string_view s, std::size_t width);
std::string GoPadRight(std::string_view s, std::size_t width);

// Number of UTF-8 code points in s (utf8.RuneCountInString for valid UTF-8).
std::size_t RuneCount(std::string_view s);

// time.Duration.Seconds(): whole seconds plus the remainder, each converted separately, so the
// result equals Go's to the last bit.
double GoSeconds(std::chrono::nanoseconds d);

// int64(f) as Go computes it on amd64: truncation toward zero; NaN and values outside the int64
// range give math.MinInt64 (the CPU's "integer indefinite").
std::int64_t GoFloatToInt64(double v);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_GO_FORMAT_H_
