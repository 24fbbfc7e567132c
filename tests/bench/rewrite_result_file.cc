// Reads a benchmain result file and writes it back in the current writer's format:
//
//   rewrite_result_file IN OUT
//
// update_testdata.sh uses it to keep tests/bench/testdata's result files in that format.
#include <iostream>

#include "bench/stats/result_file.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: rewrite_result_file IN OUT\n";
    return 2;
  }
  rill::StatusOr<std::vector<rill::bench::BenchResults>> results =
      rill::bench::ReadResultFile(argv[1]);
  if (!results.ok()) {
    std::cerr << "rewrite_result_file: " << results.status().message() << "\n";
    return 1;
  }
  if (rill::Status s = rill::bench::WriteResultFile(argv[2], *results); !s.ok()) {
    std::cerr << "rewrite_result_file: " << s.message() << "\n";
    return 1;
  }
  return 0;
}
