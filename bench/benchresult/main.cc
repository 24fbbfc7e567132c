// benchresult: prints, compares and plots the result files that benchmain writes with
// -resultFile, like grpc-go's benchmark/benchresult.
//
//   benchresult results.json                  shared features and one row per run
//   benchresult old.json new.json             per-run changes for runs present in both
//   benchresult --plot out.svg a.json b.json  latency percentiles and throughput as SVG
//
// Exits with 1 when a file cannot be read or holds no results.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "bench/stats/plot.h"
#include "bench/stats/report.h"
#include "bench/stats/result_file.h"

namespace {

bool Load(const std::string& path, std::vector<rill::bench::BenchResults>& out) {
  rill::StatusOr<std::vector<rill::bench::BenchResults>> results =
      rill::bench::ReadResultFile(path);
  if (!results.ok()) {
    std::cerr << "benchresult: " << results.status().message() << "\n";
    return false;
  }
  out = std::move(*results);
  return true;
}

// The file name without its directory, for the plot legend.
std::string BaseName(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Prints a benchmain result file, compares two of them, or plots any number of them."};
  std::vector<std::string> files;
  std::string plot_path;
  app.add_option("files", files, "Result files written by benchmain -resultFile")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--plot", plot_path,
                 "Write an SVG chart of latency percentiles and throughput for every file");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::vector<rill::bench::BenchResults>> loaded(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!Load(files[i], loaded[i])) {
      return 1;
    }
  }

  if (!plot_path.empty()) {
    std::vector<rill::bench::PlotSeries> series;
    for (std::size_t i = 0; i < files.size(); ++i) {
      series.push_back({BaseName(files[i]), std::move(loaded[i])});
    }
    std::ofstream out(plot_path, std::ios::binary | std::ios::trunc);
    out << rill::bench::RenderPlotSvg(series);
    out.close();
    if (!out) {
      std::cerr << "benchresult: cannot write " << plot_path << "\n";
      return 1;
    }
    return 0;
  }

  if (files.size() == 1) {
    if (loaded[0].empty()) {
      std::cerr << "benchresult: no benchmark results in file " << files[0] << "\n";
      return 1;
    }
    rill::bench::PrintResultsTable(std::cout, loaded[0]);
    return 0;
  }
  if (files.size() == 2) {
    rill::bench::PrintComparison(std::cout, loaded[0], loaded[1]);
    return 0;
  }
  std::cerr << "benchresult: give one file to print or two to compare (or --plot)\n";
  return 1;
}
