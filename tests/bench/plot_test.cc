#include "bench/stats/plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rill::bench {
namespace {

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Checks that `svg` is well-formed XML as far as elements go: every start tag is closed in
// order, attribute values are quoted, and text holds no raw '<' or bare '&'.
::testing::AssertionResult WellFormed(const std::string& svg) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (svg.rfind("<?xml", 0) == 0) {
    i = svg.find("?>") + 2;
  }
  while (i < svg.size()) {
    if (svg[i] == '&') {
      const std::size_t semi = svg.find(';', i);
      const std::string entity = svg.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;") {
        return ::testing::AssertionFailure() << "bad entity at " << i << ": " << entity;
      }
    }
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t end = svg.find('>', i);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unclosed tag at " << i;
    std::string tag = svg.substr(i + 1, end - i - 1);
    if (Count(tag, "\"") % 2 != 0) {
      return ::testing::AssertionFailure() << "unbalanced quotes in <" << tag << ">";
    }
    if (tag.front() == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) {
        return ::testing::AssertionFailure()
               << "</" << name << "> closes " << (stack.empty() ? "nothing" : stack.back());
      }
      stack.pop_back();
    } else if (tag.back() != '/') {
      stack.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end + 1;
  }
  if (!stack.empty()) return ::testing::AssertionFailure() << "<" << stack.back() << "> not closed";
  return ::testing::AssertionSuccess();
}

BenchResults MakeRun(const std::string& mode, std::int64_t callers, std::uint64_t ops,
                     std::int64_t p50_ns) {
  BenchResults r;
  r.run_mode = mode;
  r.features.network_mode = "none";
  r.features.bench_time = std::chrono::seconds(2);
  r.features.max_concurrent_calls = callers;
  r.data.total_ops = ops;
  r.data.fiftieth = std::chrono::nanoseconds(p50_ns);
  r.data.ninetieth = std::chrono::nanoseconds(p50_ns * 2);
  r.data.ninety_ninth = std::chrono::nanoseconds(p50_ns * 10);
  r.data.average = std::chrono::nanoseconds(p50_ns + 1);
  return r;
}

TEST(PlotTest, OneRowPerRunOneSeriesPerFile) {
  BenchResults unconstrained = MakeRun("unconstrained", 1, 0, 0);
  unconstrained.data.send_ops = 3000;
  unconstrained.data.recv_ops = 1000;
  const std::vector<PlotSeries> series = {
      {"old & <busted>.json",
       {MakeRun("unary", 1, 20000, 40000), MakeRun("unary", 8, 90000, 80000), unconstrained}},
      {"new.json", {MakeRun("unary", 8, 100000, 70000), MakeRun("streaming", 1, 50000, 19000)}},
  };
  const std::string svg = RenderPlotSvg(series);
  EXPECT_TRUE(WellFormed(svg));
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  // Legend entries, escaped.
  EXPECT_NE(svg.find(">old &amp; &lt;busted&gt;.json<"), std::string::npos);
  EXPECT_NE(svg.find(">new.json<"), std::string::npos);
  // Rows are labelled with the mode and the varying feature only.
  for (const char* label : {">unary Callers_1<", ">unary Callers_8<", ">unconstrained Callers_1<",
                            ">streaming Callers_1<"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  EXPECT_EQ(svg.find("Network_"), std::string::npos);
  // Four (file, run) pairs have latencies (the unconstrained run has none): one p50 dot and one
  // p90 ring each, plus the two legend glyphs.
  EXPECT_EQ(Count(svg, "<circle"), 2u * 4u + 2u);
  // Every run has a throughput bar: 3 + 2.
  EXPECT_EQ(Count(svg, "ops/s ("), 5u);
  EXPECT_NE(svg.find("no such run"), std::string::npos);
  EXPECT_NE(svg.find("no latencies (unconstrained)"), std::string::npos);
  // Axis labels are Go durations and rates.
  EXPECT_NE(svg.find(">10\xC2\xB5s<"), std::string::npos);
  EXPECT_NE(svg.find(">1ms<"), std::string::npos);
  EXPECT_NE(svg.find(">10k<"), std::string::npos);
  // Tooltips carry the exact values.
  EXPECT_NE(
      svg.find(
          "new.json: p50 70\xC2\xB5s, p90 140\xC2\xB5s, p99 700\xC2\xB5s, avg 70.001\xC2\xB5s"),
      std::string::npos);
}

TEST(PlotTest, OpsPerSecond) {
  BenchResults r = MakeRun("unary", 1, 3000, 1);
  EXPECT_EQ(OpsPerSecond(r), 1500);
  r.data.total_ops = 0;
  r.data.send_ops = 4000;
  r.data.recv_ops = 2000;
  EXPECT_EQ(OpsPerSecond(r), 1500);
  r.features.bench_time = std::chrono::seconds(0);
  EXPECT_EQ(OpsPerSecond(r), 0);
}

TEST(PlotTest, EmptyInputStillRendersAChart) { EXPECT_TRUE(WellFormed(RenderPlotSvg({}))); }

}  // namespace
}  // namespace rill::bench
