#include "bench/stats/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "bench/stats/go_format.h"

namespace rill::bench {
namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr std::size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

// Layout, in pixels.
constexpr double kCharWidth = 6.8;  // 11px monospace.
constexpr double kLatencyWidth = 460;
constexpr double kThroughputWidth = 300;
constexpr double kPanelGap = 70;
constexpr double kRightMargin = 30;
constexpr double kBarHeight = 8;
constexpr double kBarStep = 11;
constexpr double kRowPadding = 8;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string Xml(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// "12.3k", "4.5M": an operations-per-second figure in three significant digits.
std::string Rate(double v) {
  const char* suffix = "";
  if (v >= 1e9) {
    v /= 1e9;
    suffix = "G";
  } else if (v >= 1e6) {
    v /= 1e6;
    suffix = "M";
  } else if (v >= 1e3) {
    v /= 1e3;
    suffix = "k";
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g%s", v, suffix);
  return buf;
}

// A base-10 log axis over [lo, hi] (both powers of ten) mapped to [x0, x0 + width].
struct LogAxis {
  double lo = 1;
  double hi = 10;
  double x0 = 0;
  double width = 1;

  static LogAxis Fit(const std::vector<double>& values, double fallback_lo, double fallback_hi) {
    LogAxis axis;
    double min = 0;
    double max = 0;
    for (double v : values) {
      if (v > 0 && std::isfinite(v)) {
        min = min == 0 ? v : std::min(min, v);
        max = std::max(max, v);
      }
    }
    if (max == 0) {
      axis.lo = fallback_lo;
      axis.hi = fallback_hi;
      return axis;
    }
    axis.lo = std::pow(10, std::floor(std::log10(min)));
    axis.hi = std::pow(10, std::ceil(std::log10(max)));
    if (axis.hi <= axis.lo) {
      axis.hi = axis.lo * 10;
    }
    return axis;
  }

  double X(double v) const {
    v = std::clamp(v, lo, hi);
    return x0 + width * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }

  // Decades from lo to hi.
  std::vector<double> Decades() const {
    std::vector<double> out;
    for (double d = lo; d <= hi * 1.0001; d *= 10) {
      out.push_back(d);
    }
    return out;
  }
};

struct Row {
  std::string key;
  std::string label;
  // Per series: the run, or nullptr when that file lacks it.
  std::vector<const BenchResults*> runs;
};

// Labels rows by the run mode plus every feature whose printed value differs between rows.
void LabelRows(std::vector<Row>& rows) {
  using Getter = std::function<std::string(const Features&)>;
  std::vector<Getter> getters;
  getters.emplace_back([](const Features& f) { return "Network_" + f.network_mode + "-"; });
  getters.emplace_back([](const Features& f) {
    return std::string("BufConn_") + (f.use_buf_conn ? "true" : "false") + "-";
  });
  getters.emplace_back([](const Features& f) {
    return std::string("Keepalive_") + (f.enable_keepalive ? "true" : "false") + "-";
  });
  getters.emplace_back(
      [](const Features& f) { return "BenchTime_" + GoDurationString(f.bench_time) + "-"; });
  getters.emplace_back(
      [](const Features& f) { return "Connections_" + std::to_string(f.connections) + "-"; });
  for (std::size_t i = 0; i < kNumFeatureIndices; ++i) {
    getters.emplace_back([i](const Features& f) { return f.FeatureString(i, "_", "-"); });
  }

  auto features_of = [](const Row& row) -> const Features& {
    for (const BenchResults* r : row.runs) {
      if (r != nullptr) {
        return r->features;
      }
    }
    static const Features kNone;
    return kNone;
  };

  std::vector<bool> varying(getters.size(), false);
  for (std::size_t g = 0; g < getters.size(); ++g) {
    std::set<std::string> values;
    for (const Row& row : rows) {
      values.insert(getters[g](features_of(row)));
    }
    varying[g] = values.size() > 1;
  }
  std::map<std::string, int> seen;
  for (Row& row : rows) {
    std::string name;
    for (std::size_t g = 0; g < getters.size(); ++g) {
      if (varying[g]) {
        name += getters[g](features_of(row));
      }
    }
    if (!name.empty() && name.back() == '-') {
      name.pop_back();
    }
    const BenchResults* any = nullptr;
    for (const BenchResults* r : row.runs) {
      if (r != nullptr) {
        any = r;
        break;
      }
    }
    row.label =
        (any != nullptr ? any->run_mode : std::string("?")) + (name.empty() ? "" : " " + name);
    const int n = ++seen[row.label];
    if (n > 1) {
      row.label += " #" + std::to_string(n);
    }
  }
}

}  // namespace

double OpsPerSecond(const BenchResults& r) {
  const double seconds = GoSeconds(r.features.bench_time);
  if (seconds <= 0) {
    return 0;
  }
  const std::uint64_t ops =
      r.data.total_ops != 0 ? r.data.total_ops : (r.data.send_ops + r.data.recv_ops) / 2;
  return static_cast<double>(ops) / seconds;
}

std::string RenderPlotSvg(std::span<const PlotSeries> series) {
  // Rows in order of first appearance.
  std::vector<Row> rows;
  std::map<std::string, std::size_t> row_of_key;
  for (std::size_t s = 0; s < series.size(); ++s) {
    for (const BenchResults& r : series[s].results) {
      const std::string key = r.Key();
      auto [it, inserted] = row_of_key.try_emplace(key, rows.size());
      if (inserted) {
        rows.push_back(Row{key, "", std::vector<const BenchResults*>(series.size(), nullptr)});
      }
      rows[it->second].runs[s] = &r;
    }
  }
  LabelRows(rows);

  std::vector<double> latencies;
  std::vector<double> rates;
  std::size_t label_chars = 10;
  for (const Row& row : rows) {
    label_chars = std::max(label_chars, RuneCount(row.label));
    for (const BenchResults* r : row.runs) {
      if (r == nullptr) {
        continue;
      }
      for (auto d : {r->data.fiftieth, r->data.ninetieth, r->data.ninety_ninth}) {
        latencies.push_back(static_cast<double>(d.count()));
      }
      rates.push_back(OpsPerSecond(*r));
    }
  }

  const std::size_t num_series = std::max<std::size_t>(series.size(), 1);
  const double label_width = std::min(static_cast<double>(label_chars) * kCharWidth + 20, 620.0);
  const double row_height = static_cast<double>(num_series) * kBarStep + kRowPadding;
  const double legend_top = 46;
  const double legend_rows = static_cast<double>(series.size()) + 1;
  const double plot_top = legend_top + legend_rows * 16 + 40;
  const double plot_height = std::max<double>(static_cast<double>(rows.size()), 1) * row_height;
  const double plot_bottom = plot_top + plot_height;
  const double width = label_width + kLatencyWidth + kPanelGap + kThroughputWidth + kRightMargin;
  const double height = plot_bottom + 48;

  LogAxis lat = LogAxis::Fit(latencies, 1e3, 1e9);
  lat.x0 = label_width;
  lat.width = kLatencyWidth;
  LogAxis thr = LogAxis::Fit(rates, 1, 1e6);
  thr.x0 = label_width + kLatencyWidth + kPanelGap;
  thr.width = kThroughputWidth;

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + Num(width) +
         "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " + Num(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"" + Num(width) + "\" height=\"" + Num(height) +
         "\" fill=\"#ffffff\"/>\n";
  svg +=
      "<text x=\"16\" y=\"26\" font-size=\"16\" font-weight=\"bold\">Benchmark results: "
      "latency percentiles and throughput</text>\n";

  // Legend: one swatch per file, then the percentile glyphs.
  for (std::size_t s = 0; s < series.size(); ++s) {
    const double y = legend_top + static_cast<double>(s) * 16;
    const char* color = kPalette[s % kPaletteSize];
    svg += "<rect x=\"16\" y=\"" + Num(y - 9) + "\" width=\"18\" height=\"10\" fill=\"" + color +
           "\"/>\n";
    svg += "<text x=\"40\" y=\"" + Num(y) + "\">" + Xml(series[s].name) + "</text>\n";
  }
  {
    const double y = legend_top + static_cast<double>(series.size()) * 16;
    svg += "<circle cx=\"22\" cy=\"" + Num(y - 4) + "\" r=\"3.5\" fill=\"#555555\"/>\n";
    svg += "<text x=\"30\" y=\"" + Num(y) + "\">p50</text>\n";
    svg += "<circle cx=\"72\" cy=\"" + Num(y - 4) +
           "\" r=\"3.5\" fill=\"#ffffff\" "
           "stroke=\"#555555\" stroke-width=\"1.5\"/>\n";
    svg += "<text x=\"80\" y=\"" + Num(y) + "\">p90</text>\n";
    svg += "<line x1=\"122\" y1=\"" + Num(y - 9) + "\" x2=\"122\" y2=\"" + Num(y + 1) +
           "\" stroke=\"#555555\" stroke-width=\"2\"/>\n";
    svg += "<text x=\"128\" y=\"" + Num(y) + "\">p99 (line spans p50 to p99)</text>\n";
  }

  // Panel titles.
  svg += "<text x=\"" + Num(lat.x0) + "\" y=\"" + Num(plot_top - 22) +
         "\" font-weight=\"bold\">Latency (log scale)</text>\n";
  svg += "<text x=\"" + Num(thr.x0) + "\" y=\"" + Num(plot_top - 22) +
         "\" font-weight=\"bold\">Throughput, operations/s (log scale)</text>\n";

  // Row stripes and labels.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = plot_top + static_cast<double>(i) * row_height;
    if (i % 2 == 0) {
      svg += "<rect x=\"8\" y=\"" + Num(y) + "\" width=\"" + Num(width - 16) + "\" height=\"" +
             Num(row_height) + "\" fill=\"#f3f3f3\"/>\n";
    }
    svg += "<text x=\"" + Num(label_width - 10) + "\" y=\"" + Num(y + row_height / 2 + 4) +
           "\" text-anchor=\"end\" font-family=\"monospace\" font-size=\"11\">" +
           Xml(rows[i].label) + "<title>" + Xml(rows[i].key) + "</title></text>\n";
  }

  // Axes: decade grid lines, tick labels below the plot, and a frame per panel.
  auto grid = [&](const LogAxis& axis, const std::function<std::string(double)>& label) {
    for (double d : axis.Decades()) {
      const double x = axis.X(d);
      svg += "<line x1=\"" + Num(x) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + Num(x) +
             "\" y2=\"" + Num(plot_bottom) + "\" stroke=\"#c8c8c8\" stroke-width=\"1\"/>\n";
      svg += "<text x=\"" + Num(x) + "\" y=\"" + Num(plot_bottom + 16) +
             "\" text-anchor=\"middle\" font-size=\"11\">" + Xml(label(d)) + "</text>\n";
      svg += "<text x=\"" + Num(x) + "\" y=\"" + Num(plot_top - 6) +
             "\" text-anchor=\"middle\" font-size=\"11\">" + Xml(label(d)) + "</text>\n";
      for (double m : {2.0, 5.0}) {
        if (d * m < axis.hi) {
          const double xm = axis.X(d * m);
          svg += "<line x1=\"" + Num(xm) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + Num(xm) +
                 "\" y2=\"" + Num(plot_bottom) +
                 "\" stroke=\"#e4e4e4\" stroke-width=\"1\" stroke-dasharray=\"2,3\"/>\n";
        }
      }
    }
    svg += "<rect x=\"" + Num(axis.x0) + "\" y=\"" + Num(plot_top) + "\" width=\"" +
           Num(axis.width) + "\" height=\"" + Num(plot_height) +
           "\" fill=\"none\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
  };
  grid(lat, [](double ns) {
    return GoDurationString(std::chrono::nanoseconds(static_cast<std::int64_t>(ns)));
  });
  grid(thr, [](double v) { return Rate(v); });
  svg += "<text x=\"" + Num(lat.x0 + lat.width / 2) + "\" y=\"" + Num(plot_bottom + 36) +
         "\" text-anchor=\"middle\">latency per operation</text>\n";
  svg += "<text x=\"" + Num(thr.x0 + thr.width / 2) + "\" y=\"" + Num(plot_bottom + 36) +
         "\" text-anchor=\"middle\">operations per second</text>\n";

  // Marks.
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double row_y = plot_top + static_cast<double>(i) * row_height + kRowPadding / 2;
    for (std::size_t s = 0; s < rows[i].runs.size(); ++s) {
      const BenchResults* r = rows[i].runs[s];
      const double y = row_y + static_cast<double>(s) * kBarStep + kBarHeight / 2;
      const char* color = kPalette[s % kPaletteSize];
      const std::string who = Xml(series[s].name) + ": ";
      if (r == nullptr) {
        svg += "<text x=\"" + Num(lat.x0 + 4) + "\" y=\"" + Num(y + 3) +
               "\" font-size=\"9\" fill=\"#999999\">" + who + "no such run</text>\n";
        continue;
      }
      const RunData& d = r->data;
      if (d.fiftieth.count() > 0) {
        const double x50 = lat.X(static_cast<double>(d.fiftieth.count()));
        const double x90 = lat.X(static_cast<double>(d.ninetieth.count()));
        const double x99 = lat.X(static_cast<double>(d.ninety_ninth.count()));
        const std::string tip = "<title>" + who + "p50 " + GoDurationString(d.fiftieth) + ", p90 " +
                                GoDurationString(d.ninetieth) + ", p99 " +
                                GoDurationString(d.ninety_ninth) + ", avg " +
                                GoDurationString(d.average) + "</title>";
        svg += "<g>" + tip + "<line x1=\"" + Num(x50) + "\" y1=\"" + Num(y) + "\" x2=\"" +
               Num(x99) + "\" y2=\"" + Num(y) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>";
        svg += "<line x1=\"" + Num(x99) + "\" y1=\"" + Num(y - 4) + "\" x2=\"" + Num(x99) +
               "\" y2=\"" + Num(y + 4) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>";
        svg += "<circle cx=\"" + Num(x90) + "\" cy=\"" + Num(y) +
               "\" r=\"3.5\" fill=\"#ffffff\" "
               "stroke=\"" +
               std::string(color) + "\" stroke-width=\"1.5\"/>";
        svg += "<circle cx=\"" + Num(x50) + "\" cy=\"" + Num(y) + "\" r=\"3.5\" fill=\"" + color +
               "\"/></g>\n";
      } else {
        svg += "<text x=\"" + Num(lat.x0 + 4) + "\" y=\"" + Num(y + 3) +
               "\" font-size=\"9\" fill=\"#999999\">" + who +
               "no latencies (unconstrained)</text>\n";
      }
      const double rate = OpsPerSecond(*r);
      if (rate > 0) {
        const double x = thr.X(rate);
        svg += "<rect x=\"" + Num(thr.x0) + "\" y=\"" + Num(y - kBarHeight / 2) + "\" width=\"" +
               Num(std::max(x - thr.x0, 1.0)) + "\" height=\"" + Num(kBarHeight) + "\" fill=\"" +
               color + "\"><title>" + who + Rate(rate) + " ops/s (" +
               std::to_string(d.total_ops != 0 ? d.total_ops : d.send_ops) + " ops in " +
               GoDurationString(r->features.bench_time) + ")</title></rect>\n";
        svg += "<text x=\"" + Num(x + 4) + "\" y=\"" + Num(y + 3) + "\" font-size=\"9\">" +
               Rate(rate) + "</text>\n";
      }
    }
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace rill::bench
