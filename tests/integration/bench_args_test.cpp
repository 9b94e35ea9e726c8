// The benchmark programs' command lines (bench/): a mistyped flag or number
// is refused before any benchmark runs — exit 2, a line on stderr naming
// it, the usage, nothing on stdout — and --help prints the usage, exit 0.
// The programs run as a person runs them; only the last case runs one (a
// 20-wide fan-out) to show a caller's DUCTWORK_ variables do not steer it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "process_runner.h"

#ifndef DUCTWORK_BENCH_DIR  // a tree built without bench/
#define DUCTWORK_BENCH_DIR ""
#endif

namespace {

using ductwork::testsupport::ProcessResult;
using ductwork::testsupport::run_process;

std::string program(const std::string& name) { return std::string(DUCTWORK_BENCH_DIR) + "/" + name; }

ProcessResult run(const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), program(name));
  ductwork::testsupport::ProcessOptions options;
  options.timeout_seconds = 30;
  return run_process(args, options);
}

void expect_refused(const ProcessResult& r, const std::string& message) {
  EXPECT_EQ(r.exit_code, 2) << r.describe() << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(r.err.find("usage: "), std::string::npos) << "stderr: " << r.err;
  EXPECT_EQ(r.out, "") << "a refused command line must not start a benchmark";
}

TEST(BenchCommandLineTest, HelpPrintsTheUsageOfEveryProgram) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  for (const char* name :
       {"ductwork_bench", "ductwork_fanout_bench", "ductwork_sqlite_driver_bench", "ductwork_pg_driver_bench",
        "ductwork_storage_bench"}) {
    ProcessResult r = run(name, {"--help"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.describe() << "\n" << r.err;
    EXPECT_EQ(r.out.rfind("usage: " + std::string(name), 0), 0u) << name << " printed: " << r.out;
    EXPECT_EQ(r.err, "") << name;
  }
}

TEST(BenchCommandLineTest, FanoutBenchRefusesBadFlags) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  expect_refused(run("ductwork_fanout_bench", {"--items", "abc"}),
                 "--items: expected a whole number of at least 1, got 'abc'");
  expect_refused(run("ductwork_fanout_bench", {"--items", "0"}), "--items: expected a whole number of at least 1");
  expect_refused(run("ductwork_fanout_bench", {"--repeat", "3", "--items"}), "--items needs a value");
  expect_refused(run("ductwork_fanout_bench", {"--modes", "fork,thread"}),
                 "--modes: expected fork and/or none, got 'thread'");
  expect_refused(run("ductwork_fanout_bench", {"--itms", "5"}), "unknown option --itms");
}

TEST(BenchCommandLineTest, StorageBenchRefusesBadFlags) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  expect_refused(run("ductwork_storage_bench", {"--length", "0"}), "--length: expected a whole number from 1 to 1000");
  expect_refused(run("ductwork_storage_bench", {"--chain", "5"}), "unknown option --chain");
}

TEST(BenchCommandLineTest, ChainBenchRefusesBadFlags) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  expect_refused(run("ductwork_bench", {"--chains", "10x"}),
                 "--chains: expected a whole number of at least 1, got '10x'");
  expect_refused(run("ductwork_bench", {"--light-chains", "-1"}),
                 "--light-chains: expected a whole number of at least 0");
  expect_refused(run("ductwork_bench", {"--scrape-every", "soon"}),
                 "--scrape-every: expected a number of seconds (0 or more), got 'soon'");
  expect_refused(run("ductwork_bench", {"--chain", "5"}), "unknown option --chain");

}

TEST(BenchCommandLineTest, DriverBenchesRefuseBadCounts) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  expect_refused(run("ductwork_sqlite_driver_bench", {"0"}), "N: expected a whole number of at least 1, got '0'");
  expect_refused(run("ductwork_sqlite_driver_bench", {"10", "20"}), "too many arguments");
  expect_refused(run("ductwork_pg_driver_bench", {}), "a URL is needed");
  expect_refused(run("ductwork_pg_driver_bench", {"postgresql://nobody@127.0.0.1:1/none", "12z"}),
                 "N: expected a whole number of at least 1, got '12z'");
}

TEST(BenchCommandLineTest, FanoutBenchIgnoresTheCallersDuctworkVariables) {
  if (std::string(DUCTWORK_BENCH_DIR).empty()) GTEST_SKIP() << "built without the benchmark programs";
  // A shell that exported DUCTWORK_DATABASE_URL would otherwise send every
  // `ductwork` the benchmark starts to that server, not to the database it
  // wrote into their configuration.
  ductwork::testsupport::ProcessOptions options;
  options.timeout_seconds = 60;
  options.env = {{"DUCTWORK_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none"}};
  ProcessResult r =
      run_process({program("ductwork_fanout_bench"), "--items", "20", "--repeat", "1", "--modes", "fork"}, options);
  EXPECT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.err;
  EXPECT_NE(r.err.find("ductwork_fanout_bench: ignoring DUCTWORK_DATABASE_URL"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("fork median of 1: wall"), std::string::npos) << r.out;
}

}  // namespace
