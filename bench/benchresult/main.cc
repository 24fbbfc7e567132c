// benchresult: prints, compares and plots the result files that benchmain writes with
// -resultFile, like grpc-go's benchmark/benchresult.
//
//   benchresult results.json                  shared features and one row per run
//   benchresult old.json new.json             per-run changes for runs present in both
//   benchresult --plot out.svg a.json b.json  latency percentiles and throughput, drawn by
//                                             plot.py (matplotlib); .png and .pdf work too
//
// Exits with 1 when a file cannot be read or holds no results (or the plot cannot be drawn).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

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

// Replaces this process with `RILL_PLOT_PYTHON RILL_PLOT_SCRIPT out files...` (paths compiled
// in by CMake); returns only when that cannot start.
int ExecPlotScript(const std::string& out, const std::vector<std::string>& files) {
  std::vector<std::string> args = {RILL_PLOT_PYTHON, RILL_PLOT_SCRIPT, out};
  args.insert(args.end(), files.begin(), files.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(argv[0], argv.data());
  std::cerr << "benchresult: cannot run " << RILL_PLOT_PYTHON << ": " << std::strerror(errno)
            << "\n";
  return 1;
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
                 "Draw latency percentiles and throughput of every file into this file (.svg, "
                 ".png, .pdf) with matplotlib (" RILL_PLOT_PYTHON ")");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::vector<rill::bench::BenchResults>> loaded(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (!Load(files[i], loaded[i])) {
      return 1;
    }
  }

  if (!plot_path.empty()) {
    return ExecPlotScript(plot_path, files);
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
