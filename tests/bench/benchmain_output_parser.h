// A reader for grpc-go's benchmain stdout (benchmark/stats.Stats.dump), written from the
// format description, independent of the code that prints it. Shared by the statistics tests
// and benchmain's output test.
//
//   for (const std::string& text : rill::bench::SplitBlocks(stdout_text)) {
//     std::string error;
//     std::optional<rill::bench::ParsedBlock> b = rill::bench::ParseBlock(text, &error);
//   }
#ifndef RILL_TESTS_BENCH_BENCHMAIN_OUTPUT_PARSER_H_
#define RILL_TESTS_BENCH_BENCHMAIN_OUTPUT_PARSER_H_

#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace rill::bench {

struct ParsedBucket {
  double low = 0;
  double high = 0;
  std::int64_t count = 0;
  double pct = 0;
  double cumulative = 0;
  std::size_t bar = 0;
};

struct ParsedBlock {
  std::string runtime_version;
  std::string rpc_flavor;  // "grpc" or "rill"
  std::string rpc_version;
  std::string run_mode;
  std::string features;
  std::map<std::string, double> latency_ns;  // "50", "90", "99", "Avg"
  double bytes_per_op = 0;
  double allocs_per_op = 0;
  std::optional<std::string> histogram_unit;  // Empty optional for "Histogram (empty)".
  std::int64_t histogram_count = 0;
  double histogram_min = 0;
  double histogram_max = 0;
  double histogram_avg = 0;
  std::vector<ParsedBucket> buckets;
  std::uint64_t requests = 0;
  std::uint64_t responses = 0;
  double req_t = 0;
  double resp_t = 0;
};

inline double UnitNanos(const std::string& suffix) {
  if (suffix == "ns") return 1;
  if (suffix == "\xC2\xB5s") return 1e3;
  if (suffix == "ms") return 1e6;
  if (suffix == "s") return 1e9;
  return 0;
}

// Go's %v output for a float64 reads back with strtod (including "NaN" and "+Inf").
inline double GoFloat(const std::string& s) { return std::strtod(s.c_str(), nullptr); }

// Parses one block. Strict: every line must have the expected shape, and the block must end
// with an empty line. On failure returns nothing and says which line failed in `*error`.
inline std::optional<ParsedBlock> ParseBlock(const std::string& text, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = why;
    return std::optional<ParsedBlock>();
  };
  if (text.size() < 2 || text.substr(text.size() - 2) != "\n\n") {
    return fail("block does not end with an empty line");
  }
  std::vector<std::string> lines;
  std::istringstream in(text.substr(0, text.size() - 1));
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  std::size_t i = 0;
  auto next = [&]() -> const std::string* { return i < lines.size() ? &lines[i++] : nullptr; };
  std::smatch m;
  ParsedBlock b;

  const std::string* line = next();
  static const std::regex kVersion(R"(^(\S+)/(grpc|rill)(\S+)$)");
  if (line == nullptr || !std::regex_match(*line, m, kVersion)) return fail("version line");
  b.runtime_version = m[1];
  b.rpc_flavor = m[2];
  b.rpc_version = m[3];

  line = next();
  static const std::regex kName(R"(^(unary|streaming|unconstrained)-(networkMode_.*):$)");
  if (line == nullptr || !std::regex_match(*line, m, kName)) return fail("run name line");
  b.run_mode = m[1];
  b.features = m[2];

  line = next();
  static const std::regex kLatencies(
      "^((?:(?:50|90|99|Avg)_Latency: [0-9]+\\.[0-9]{4}(?:ns|\xC2\xB5s|ms|s)\t)*)"
      "Bytes/op: (\\S+)\tAllocs/op: (\\S+)\t$");
  if (line == nullptr || !std::regex_match(*line, m, kLatencies)) return fail("latency line");
  b.bytes_per_op = GoFloat(m[2]);
  b.allocs_per_op = GoFloat(m[3]);
  const std::string latencies = m[1];
  static const std::regex kOne("(50|90|99|Avg)_Latency: ([0-9.]+)(ns|\xC2\xB5s|ms|s)\t");
  for (auto it = std::sregex_iterator(latencies.begin(), latencies.end(), kOne);
       it != std::sregex_iterator(); ++it) {
    b.latency_ns[(*it)[1]] = std::strtod((*it)[2].str().c_str(), nullptr) * UnitNanos((*it)[3]);
  }

  line = next();
  static const std::regex kHistogram("^Histogram \\(unit: (ns|\xC2\xB5s|ms|s)\\)$");
  if (line != nullptr && *line == "Histogram (empty)") {
    // No histogram lines follow.
  } else if (line != nullptr && std::regex_match(*line, m, kHistogram)) {
    b.histogram_unit = m[1];
    line = next();
    static const std::regex kSummary(
        R"(^Count: (\d+)  Min: +([0-9.]+)  Max: +([0-9.]+)  Avg: ([0-9.]+)$)");
    if (line == nullptr || !std::regex_match(*line, m, kSummary)) return fail("summary line");
    b.histogram_count = std::stoll(m[1]);
    b.histogram_min = std::stod(m[2]);
    b.histogram_max = std::stod(m[3]);
    b.histogram_avg = std::stod(m[4]);
    line = next();
    if (line == nullptr || *line != std::string(60, '-')) return fail("dash line");
    static const std::regex kBucket(
        R"(^\[ *([0-9]+\.[0-9]{6}), +([0-9]+\.[0-9]{6})\)  +(\d+)  +(\d+\.\d)%  +(\d+\.\d)%  (#*)$)");
    while (i < lines.size() && std::regex_match(lines[i], m, kBucket)) {
      b.buckets.push_back(ParsedBucket{std::stod(m[1]), std::stod(m[2]), std::stoll(m[3]),
                                       std::stod(m[4]), std::stod(m[5]),
                                       static_cast<std::size_t>(m[6].length())});
      ++i;
    }
    if (b.buckets.empty()) return fail("no bucket lines");
  } else {
    return fail("histogram header");
  }

  line = next();
  static const std::regex kRequests(
      R"(^Number of requests:  (\d+)	Request throughput:  (\S+) bit/s$)");
  if (line == nullptr || !std::regex_match(*line, m, kRequests)) return fail("requests line");
  b.requests = std::stoull(m[1]);
  b.req_t = GoFloat(m[2]);
  line = next();
  static const std::regex kResponses(
      R"(^Number of responses: (\d+)	Response throughput: (\S+) bit/s$)");
  if (line == nullptr || !std::regex_match(*line, m, kResponses)) return fail("responses line");
  b.responses = std::stoull(m[1]);
  b.resp_t = GoFloat(m[2]);
  if (i != lines.size()) return fail("unexpected lines after the throughput lines");
  return b;
}

// Cuts benchmain's stdout into blocks, each ending with its empty line.
inline std::vector<std::string> SplitBlocks(const std::string& text) {
  std::vector<std::string> blocks;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find("\n\n", start);
    if (end == std::string::npos) {
      blocks.push_back(text.substr(start));
      break;
    }
    blocks.push_back(text.substr(start, end + 2 - start));
    start = end + 2;
  }
  return blocks;
}

}  // namespace rill::bench

#endif  // RILL_TESTS_BENCH_BENCHMAIN_OUTPUT_PARSER_H_
