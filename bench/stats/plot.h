// An SVG chart of benchmark results: one row per run, one colored series per result file, with
// latency percentiles (p50 dot, p90 ring, p99 bar on a log time axis) on the left and
// throughput (operations per second, log axis) on the right. Hovering a mark shows its exact
// value. Self-contained SVG 1.1; no scripts or external resources.
//
//   std::vector<rill::bench::PlotSeries> series = {{"old.json", old_results},
//                                                  {"new.json", new_results}};
//   std::string svg = rill::bench::RenderPlotSvg(series);
//
// Runs are matched across series by BenchResults::Key and listed in order of first
// appearance; each row is labelled with its run mode and the features that differ between
// rows.
#ifndef RILL_BENCH_STATS_PLOT_H_
#define RILL_BENCH_STATS_PLOT_H_

#include <span>
#include <string>
#include <vector>

#include "bench/stats/results.h"

namespace rill::bench {

struct PlotSeries {
  std::string name;  // Shown in the legend, e.g. the file name.
  std::vector<BenchResults> results;
};

// Operations per second of a run: TotalOps (or, for unconstrained runs, the mean of SendOps
// and RecvOps) over the bench time; 0 when the bench time is 0.
double OpsPerSecond(const BenchResults& r);

std::string RenderPlotSvg(std::span<const PlotSeries> series);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_PLOT_H_
