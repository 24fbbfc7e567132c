// benchresult's two text reports, in grpc-go's `benchmark/benchresult` layout.
//
//   PrintResultsTable(std::cout, results);          // benchresult file.json
//
//   Shared features:
//   --------------------
//   Network: none
//   BenchTime: 1s
//   Trace: false
//   ...
//   -----------------------------------
//   Name                          ...   TotalOps     SendOps     RecvOps      Bytes/op (B) ...
//   unaryCallers_8-ReqSize_1024B- ...      24490           0           0           9830.47 ...
//
//   PrintComparison(std::cout, before, after);      // benchresult old.json new.json
//
//   unary-networkMode_none-...-sharedWriteBuffer_true
//                  Title       Before        After Percentage
//               TotalOps        24490        26012     6.21%
//               ...
//
// Differences from grpc-go, all deliberate: runs are compared in sorted key order instead of
// Go's random map order, and the version rows are titled "GoVersion"/"GrpcVersion" as in
// grpc-go although they hold rill's runtime and version.
#ifndef RILL_BENCH_STATS_REPORT_H_
#define RILL_BENCH_STATS_REPORT_H_

#include <ostream>
#include <span>

#include "bench/stats/results.h"

namespace rill::bench {

// One file: the features shared by all runs (taken from the first run), then one row per run
// named by its run mode and the features that vary. Prints nothing for no results.
void PrintResultsTable(std::ostream& os, std::span<const BenchResults> results);

// Two files: for every run of `after` that is also in `before` (matched by BenchResults::Key,
// a later duplicate replacing an earlier one), the key and the table of changes, followed by
// a blank line. Percentages are (after - before) * 100 / before; Bytes/op, Allocs/op, ReqT and
// RespT subtract after truncating both values to int64, as grpc-go does; 0/0 prints "NaN%".
void PrintComparison(std::ostream& os, std::span<const BenchResults> before,
                     std::span<const BenchResults> after);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_REPORT_H_
