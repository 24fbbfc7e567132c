// Result files: a JSON array of BenchResults with grpc-go's field names, so that rill's files
// and grpc-go results converted to JSON line up field for field.
//
//   [
//     {
//       "GoVersion": "c++20-gcc12.2.0",        <- BenchResults::runtime_version
//       "GrpcVersion": "0.1.0",                <- BenchResults::rpc_version
//       "RunMode": "unary",
//       "Features": {"NetworkMode": "none", ..., "BenchTime": 1000000000, ...,
//                    "ReqPayloadCurve": null, ...},
//       "SharedFeatures": [true, false, ...],
//       "Data": {"TotalOps": 24490, ..., "Fiftieth": 38653, ...}
//     }
//   ]
//
// Durations are int64 nanoseconds (Go's time.Duration in encoding/json). A payload curve is
// null or {"Sha256": "<hex>"}. Floats that are NaN or infinite (Bytes/op of a run with no
// operations) are written as the strings "NaN", "+Inf", "-Inf".
//
// Reading is strict about JSON syntax and field types, and lenient about fields like gob is:
// missing fields keep their zero values and unknown fields are ignored, so older and newer
// files read.
//
//   rill::Status s = rill::bench::WriteResultFile("out.json", stats.results());
//   rill::StatusOr<std::vector<rill::bench::BenchResults>> r =
//       rill::bench::ReadResultFile("out.json");
#ifndef RILL_BENCH_STATS_RESULT_FILE_H_
#define RILL_BENCH_STATS_RESULT_FILE_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/stats/results.h"
#include "rill/status.h"
#include "rill/status_or.h"

namespace rill::bench {

std::string ResultsToJson(std::span<const BenchResults> results);

rill::StatusOr<std::vector<BenchResults>> ResultsFromJson(std::string_view json);

// Writes the whole file; kUnavailable when it cannot be written.
rill::Status WriteResultFile(const std::string& path, std::span<const BenchResults> results);

// kNotFound when the file cannot be opened, kInvalidArgument (with the path) when it does not
// parse.
rill::StatusOr<std::vector<BenchResults>> ReadResultFile(const std::string& path);

}  // namespace rill::bench

#endif  // RILL_BENCH_STATS_RESULT_FILE_H_
