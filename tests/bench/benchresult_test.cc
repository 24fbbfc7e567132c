// Runs the benchresult binary (RILL_BENCHRESULT, compiled in by CMake) on the result files in
// testdata and checks its output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace {

std::string Testdata(const std::string& name) {
  return std::string(RILL_BENCH_TESTDATA) + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

struct Result {
  int exit_code = -1;
  std::string out;
};

// Runs benchresult with `args` (already shell-quoted), capturing stdout.
Result RunBenchresult(const std::string& args) {
  Result r;
  const std::string command = std::string("'") + RILL_BENCHRESULT + "' " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed";
    return r;
  }
  std::array<char, 4096> buf;
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) {
    r.out.append(buf.data(), n);
  }
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Quote(const std::string& s) { return "'" + s + "'"; }

TEST(BenchresultTest, OneFilePrintsTheTable) {
  const Result r = RunBenchresult(Quote(Testdata("old.json")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, ReadFile(Testdata("old_table.txt")));
}

TEST(BenchresultTest, TwoFilesPrintTheComparison) {
  const Result r = RunBenchresult(Quote(Testdata("old.json")) + " " + Quote(Testdata("new.json")));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, ReadFile(Testdata("old_new_comparison.txt")));
}

// A file of the JSON writer that preceded the JSON library prints exactly as its rewrite does.
TEST(BenchresultTest, FilesOfTheEarlierWriterPrintTheSame) {
  const Result table = RunBenchresult(Quote(Testdata("old_writer_format.json")));
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_EQ(table.out, ReadFile(Testdata("old_table.txt")));
  const Result comparison =
      RunBenchresult(Quote(Testdata("old_writer_format.json")) + " " + Quote(Testdata("new.json")));
  EXPECT_EQ(comparison.exit_code, 0);
  EXPECT_EQ(comparison.out, ReadFile(Testdata("old_new_comparison.txt")));
}

// --plot is tested by plot_test.py.

TEST(BenchresultTest, BadInputFails) {
  EXPECT_NE(RunBenchresult(Quote(Testdata("no-such-file.json"))).exit_code, 0);
  // A file that is not a result file.
  EXPECT_NE(RunBenchresult(Quote(Testdata("old_table.txt"))).exit_code, 0);
  EXPECT_NE(RunBenchresult("").exit_code, 0);
  EXPECT_NE(RunBenchresult(Quote(Testdata("old.json")) + " " + Quote(Testdata("new.json")) + " " +
                           Quote(Testdata("old.json")))
                .exit_code,
            0);
}

}  // namespace
