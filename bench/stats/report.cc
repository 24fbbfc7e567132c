#include "bench/stats/report.h"

#include <map>
#include <string>
#include <vector>

#include "bench/stats/go_format.h"

namespace rill::bench {
namespace {

std::string Column(std::string_view s, std::size_t width) { return GoPadLeft(s, width); }

std::string Percent(double v) { return GoPadLeft(GoFixedString(v, 2), 8) + "%"; }

// "%20s %12d %12d %8.2f%%": the change of a counter.
std::string IntChange(std::string_view title, std::uint64_t before, std::uint64_t after) {
  // Go: float64(int64(after) - int64(before)) * 100 / float64(before), wrapping like Go.
  const auto delta = static_cast<std::int64_t>(after - before);
  const double pct = static_cast<double>(delta) * 100 / static_cast<double>(before);
  return Column(title, 20) + " " + Column(std::to_string(before), 12) + " " +
         Column(std::to_string(after), 12) + " " + Percent(pct) + "\n";
}

// "%20s %12.2f %12.2f %8.2f%%": the change of a per-op figure; the difference is taken after
// truncating both values to int64, the divisor is the untruncated value.
std::string FloatChange(std::string_view title, double before, double after) {
  const auto delta = static_cast<std::int64_t>(static_cast<std::uint64_t>(GoFloatToInt64(after)) -
                                               static_cast<std::uint64_t>(GoFloatToInt64(before)));
  const double pct = static_cast<double>(delta) * 100 / before;
  return Column(title, 20) + " " + Column(GoFixedString(before, 2), 12) + " " +
         Column(GoFixedString(after, 2), 12) + " " + Percent(pct) + "\n";
}

// "%20s %12s %12s %8.2f%%": the change of a latency.
std::string TimeChange(std::string_view title, std::chrono::nanoseconds before,
                       std::chrono::nanoseconds after) {
  const auto delta = static_cast<std::int64_t>(static_cast<std::uint64_t>(after.count()) -
                                               static_cast<std::uint64_t>(before.count()));
  const double pct = static_cast<double>(delta) * 100 / static_cast<double>(before.count());
  return Column(title, 20) + " " + Column(GoDurationString(before), 12) + " " +
         Column(GoDurationString(after), 12) + " " + Percent(pct) + "\n";
}

std::string StrDiff(std::string_view title, std::string_view before, std::string_view after) {
  return Column(title, 20) + " " + Column(before, 12) + " " + Column(after, 12) + "\n";
}

std::map<std::string, const BenchResults*> ByKey(std::span<const BenchResults> results) {
  std::map<std::string, const BenchResults*> map;
  for (const BenchResults& r : results) {
    map.insert_or_assign(r.Key(), &r);
  }
  return map;
}

}  // namespace

void PrintResultsTable(std::ostream& os, std::span<const BenchResults> results) {
  if (results.empty()) {
    return;
  }
  const BenchResults& first = results.front();
  os << "\nShared features:\n" << std::string(20, '-') << "\n";
  os << first.features.SharedFeaturesString(first.shared_features);
  os << std::string(35, '-') << "\n";

  // Rows name the features that are not shared, judged by the first run's mask.
  std::vector<bool> varying = first.shared_features;
  varying.flip();

  std::string out = GoPadRight("Name", 80);
  for (const char* title : {"TotalOps", "SendOps", "RecvOps"}) {
    out += Column(title, 12);
  }
  for (const char* title : {"Bytes/op (B)", "Allocs/op (#)", "RequestT", "ResponseT"}) {
    out += Column(title, 18);
  }
  for (const char* title : {"L-50", "L-90", "L-99", "L-Avg"}) {
    out += Column(title, 12);
  }
  os << out << "\n";

  for (const BenchResults& r : results) {
    const RunData& d = r.data;
    std::string row = GoPadRight(r.run_mode + r.features.PrintableName(varying), 80);
    for (std::uint64_t v : {d.total_ops, d.send_ops, d.recv_ops}) {
      row += Column(std::to_string(v), 12);
    }
    for (double v : {d.alloced_bytes, d.allocs, d.req_t, d.resp_t}) {
      row += Column(GoFixedString(v, 2), 18);
    }
    for (std::chrono::nanoseconds v : {d.fiftieth, d.ninetieth, d.ninety_ninth, d.average}) {
      row += Column(GoDurationString(v), 12);
    }
    os << row << "\n";
  }
}

void PrintComparison(std::ostream& os, std::span<const BenchResults> before,
                     std::span<const BenchResults> after) {
  const auto old_runs = ByKey(before);
  for (const auto& [key, new_run] : ByKey(after)) {
    const auto it = old_runs.find(key);
    if (it == old_runs.end()) {
      continue;
    }
    const BenchResults& v1 = *it->second;
    const BenchResults& v2 = *new_run;
    std::string out = key + "\n";
    out += Column("Title", 20) + " " + Column("Before", 12) + " " + Column("After", 12) + " " +
           Column("Percentage", 8) + "\n";
    out += IntChange("TotalOps", v1.data.total_ops, v2.data.total_ops);
    out += IntChange("SendOps", v1.data.send_ops, v2.data.send_ops);
    out += IntChange("RecvOps", v1.data.recv_ops, v2.data.recv_ops);
    out += FloatChange("Bytes/op", v1.data.alloced_bytes, v2.data.alloced_bytes);
    out += FloatChange("Allocs/op", v1.data.allocs, v2.data.allocs);
    out += FloatChange("ReqT/op", v1.data.req_t, v2.data.req_t);
    out += FloatChange("RespT/op", v1.data.resp_t, v2.data.resp_t);
    out += TimeChange("50th-Lat", v1.data.fiftieth, v2.data.fiftieth);
    out += TimeChange("90th-Lat", v1.data.ninetieth, v2.data.ninetieth);
    out += TimeChange("99th-Lat", v1.data.ninety_ninth, v2.data.ninety_ninth);
    out += TimeChange("Avg-Lat", v1.data.average, v2.data.average);
    out += StrDiff("GoVersion", v1.runtime_version, v2.runtime_version);
    out += StrDiff("GrpcVersion", v1.rpc_version, v2.rpc_version);
    os << out << "\n";
  }
}

}  // namespace rill::bench
