#include "bench/stats/report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "bench/stats/result_file.h"

namespace rill::bench {
namespace {

std::string TestdataPath(const std::string& name) {
  return std::string(RILL_BENCH_TESTDATA) + "/" + name;
}

std::string ReadText(const std::string& name) {
  std::ifstream in(TestdataPath(name), std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<BenchResults> ReadResults(const std::string& name) {
  rill::StatusOr<std::vector<BenchResults>> r = ReadResultFile(TestdataPath(name));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::move(*r) : std::vector<BenchResults>();
}

// The expected outputs in testdata were computed from grpc-go's benchresult rules by a separate
// program, not by this code.
TEST(ReportTest, OneFileTable) {
  std::ostringstream os;
  PrintResultsTable(os, ReadResults("old.json"));
  EXPECT_EQ(os.str(), ReadText("old_table.txt"));
}

TEST(ReportTest, TwoFileComparison) {
  std::ostringstream os;
  PrintComparison(os, ReadResults("old.json"), ReadResults("new.json"));
  EXPECT_EQ(os.str(), ReadText("old_new_comparison.txt"));
}

TEST(ReportTest, ComparisonPercentageRules) {
  std::vector<BenchResults> before(1);
  before[0].run_mode = "unary";
  before[0].data.total_ops = 200;
  before[0].data.alloced_bytes = 0.9;  // Truncates to 0.
  before[0].data.allocs = 0;
  before[0].data.req_t = 100.99;
  before[0].data.fiftieth = std::chrono::nanoseconds(0);
  std::vector<BenchResults> after = before;
  after[0].data.total_ops = 100;
  after[0].data.alloced_bytes = 1.1;                     // Truncates to 1: (1 - 0) * 100 / 0.9.
  after[0].data.allocs = 0;                              // 0 / 0.
  after[0].data.req_t = 101.5;                           // (101 - 100) * 100 / 100.99.
  after[0].data.fiftieth = std::chrono::nanoseconds(5);  // 5 * 100 / 0.
  std::ostringstream os;
  PrintComparison(os, before, after);
  const std::string out = os.str();
  EXPECT_NE(out.find("            TotalOps          200          100   -50.00%\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("            Bytes/op         0.90         1.10   111.11%\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("           Allocs/op         0.00         0.00      NaN%\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("             ReqT/op       100.99       101.50     0.99%\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("            50th-Lat           0s          5ns     +Inf%\n"),
            std::string::npos)
      << out;
}

TEST(ReportTest, LaterDuplicateKeysWinAndUnmatchedRunsAreSkipped) {
  std::vector<BenchResults> before(2);
  before[0].run_mode = "unary";
  before[0].data.total_ops = 1;
  before[1].run_mode = "unary";
  before[1].data.total_ops = 4;
  std::vector<BenchResults> after(2);
  after[0].run_mode = "unary";
  after[0].data.total_ops = 8;
  after[1].run_mode = "streaming";
  std::ostringstream os;
  PrintComparison(os, before, after);
  const std::string out = os.str();
  EXPECT_NE(out.find("TotalOps            4            8   100.00%"), std::string::npos) << out;
  EXPECT_EQ(out.find("streaming"), std::string::npos) << out;
}

TEST(ReportTest, EmptyInputPrintsNothing) {
  std::ostringstream os;
  PrintResultsTable(os, {});
  PrintComparison(os, {}, {});
  EXPECT_EQ(os.str(), "");
}

}  // namespace
}  // namespace rill::bench
