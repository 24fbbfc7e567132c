// Go-style command lines for benchmain: grpc-go's benchmain is driven by Go's `flag` package,
// which takes `-name=value`, `-name value` and `--name=value`; CLI11 wants `--name`. These
// helpers translate the spelling and parse the value syntaxes Go's flags use (durations like
// "40ms", comma-separated lists, off/on/both toggles).
//
//   std::vector<std::string> args = rill::bench::NormalizeGoFlags(argc, argv);
//   std::reverse(args.begin(), args.end());   // CLI::App::parse(std::vector&) wants them reversed
//   app.parse(args);
//
//   auto d = rill::bench::ParseGoDuration("1m30.5s");            // 90.5 s
//   auto v = rill::bench::ParseDurationList("0s,40ms");          // {0, 40 ms}
//
// Pure functions; thread-safe.
#ifndef RILL_BENCH_BENCHMAIN_GO_FLAGS_H_
#define RILL_BENCH_BENCHMAIN_GO_FLAGS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rill/status_or.h"

namespace rill::bench {

// argv[1..] with every single-dash long flag ("-benchtime=1s", "-bufconn") rewritten to the
// double-dash form CLI11 understands; "-h" and "-help" become "--help". "-" alone, "--",
// arguments after "--" and negative numbers are left alone. Returned in command-line order.
std::vector<std::string> NormalizeGoFlags(int argc, const char* const* argv);

// Go's time.ParseDuration: a sequence of decimal numbers with optional fraction and a unit each
// ("300ms", "-1.5h", "2h45m"); units ns, us, µs, ms, s, m, h. "0" needs no unit.
std::optional<std::chrono::nanoseconds> ParseGoDuration(std::string_view text);

// Comma-separated lists, as grpc-go's flags package splits them. INVALID_ARGUMENT names the
// element that does not parse.
rill::StatusOr<std::vector<std::chrono::nanoseconds>> ParseDurationList(std::string_view text);
rill::StatusOr<std::vector<std::int64_t>> ParseIntList(std::string_view text);
std::vector<std::string> SplitList(std::string_view text);

// grpc-go's off/on/both toggles: {false}, {true}, {false, true}.
rill::StatusOr<std::vector<bool>> ParseToggle(std::string_view text);

}  // namespace rill::bench

#endif  // RILL_BENCH_BENCHMAIN_GO_FLAGS_H_
