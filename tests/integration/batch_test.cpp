// Group commit and batched claims (issue 11), through the real binary: a
// worker claims several due jobs per transaction and commits their
// successes together; a claim whose step never started is given back at no
// cost when its process dies or stops.
#include <signal.h>

#include <fstream>
#include <regex>

#include "harness.h"

namespace ductwork::it {
namespace {

// Triggers `count` pipelines `One` (a single Inc step) in one bulk trigger.
void trigger_many(Workspace& ws, int count) {
  std::string path = ws.file("args.jsonl");
  {
    std::ofstream out(path);
    for (int i = 0; i < count; ++i) out << "[" << i << "]\n";
  }
  testsupport::ProcessResult r = ws.run({"trigger", "One", "--from", path});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
}

int number(const std::string& text) { return std::atoi(text.c_str()); }

// Sum of a JSON log field over every line that has it.
int64_t logged_total(const std::string& out, const std::string& field) {
  std::regex pattern("\"" + field + "\":([0-9]+)");
  int64_t total = 0;
  for (std::sregex_iterator it(out.begin(), out.end(), pattern), end; it != end; ++it) {
    total += std::stoll((*it)[1].str());
  }
  return total;
}

// Every step ran to exactly one success, with its input + 1 as output.
void expect_all_completed_once(const Workspace& ws, int count) {
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines WHERE status = 'completed'"), std::to_string(count) + "\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM results WHERE result_type = 'success'"), std::to_string(count) + "\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM executions WHERE completed_at IS NULL"), "0\n");
}

TEST(BatchTest, QuickStepsAreCommittedManyPerTransactionAndBatchOneTurnsItOff) {
  for (int batch : {16, 1}) {
    ConfigOptions options;
    options.job_workers = 1;
    options.job_worker_extra = "batch: " + std::to_string(batch);
    Workspace ws(options);
    ws.define("one.yml", chain_definition("One", {"Inc"}));
    trigger_many(ws, 60);
    testsupport::ProcessResult r = ws.run({"start", "--drain"}, 60);
    ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
    expect_all_completed_once(ws, 60);
    // Everything one transaction writes carries its one database time: the
    // successes of a batch share their executions' completed_at.
    int commits = number(ws.sql("SELECT COUNT(DISTINCT completed_at) FROM executions"));
    if (batch == 16) {
      EXPECT_LE(commits, 30) << "60 quick steps in at most 30 commits with batch 16";
    } else {
      EXPECT_EQ(commits, 60) << "batch 1: one commit per step";
    }
  }
}

// With the default maximum (256), a batch of millisecond steps stops
// growing at about 20 ms of work: 1, 2, 4, 8, 16, then about 20 — never 32,
// so a claimed step never waits long behind its batch. The claims of a
// batch share their attempts' started_at (one transaction, one instant).
TEST(BatchTest, ABatchHoldsAboutTwentyMillisecondsOfWork) {
  ConfigOptions options;
  options.job_workers = 1;
  Workspace ws(options);
  ws.define("nap.yml", chain_definition("Nap", {"Sleep"}));
  std::string path = ws.file("args.jsonl");
  {
    std::ofstream out(path);
    for (int i = 0; i < 120; ++i) out << "[1]\n";
  }
  testsupport::ProcessResult triggered = ws.run({"trigger", "Nap", "--from", path});
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe() << triggered.err;
  testsupport::ProcessResult r = ws.run({"start", "--drain"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines WHERE status = 'completed'"), "120\n");
  int largest = number(ws.sql("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM attempts GROUP BY started_at) AS claims"));
  EXPECT_GT(largest, 1) << "quick steps are claimed several at a time";
  EXPECT_LE(largest, 20) << "a batch of 1 ms steps holds at most 20 ms of them";
}

// The worker thread is killed while running the 5th job of its run; its
// claims are then: finished but uncommitted (crash), running (crash), and
// still queued (released: run again later with no crash recorded). Batches
// grow 1, 2, 4, so the 5th job runs inside a batch of 4 with more queued.
TEST(BatchTest, ClaimsWhoseStepsNeverStartedAreReleasedNotCrashedWhenTheWorkerDies) {
  ConfigOptions options;
  options.job_workers = 1;
  options.job_worker_extra = "batch: 8, max_crash: 5";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("one.yml", chain_definition("One", {"Inc"}));
  trigger_many(ws, 12);
  auto run = ws.process_options(60);
  run.env = {{"DUCTWORK_FAULT", "during_job_execution:kill:5"}, {"DUCTWORK_FAULT_MARKER", ws.file("fault-fired")}};
  testsupport::ProcessResult r = testsupport::run_process(ws.command({"start", "--drain"}), run);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  ASSERT_TRUE(testsupport::file_exists(ws.file("fault-fired")));
  expect_all_completed_once(ws, 12);
  int crashes = number(ws.sql("SELECT COUNT(*) FROM results WHERE result_type = 'process_crashed'"));
  EXPECT_GE(crashes, 1) << "the running step is a crash";
  EXPECT_LE(crashes, 2) << "only the running step and one finished before it may be charged\n" << r.out;
  EXPECT_GE(logged_total(r.out, "claims_released"), 1) << r.out;
  // A released claim leaves no trace: its execution ran later as if first
  // claimed then, one execution, no crash counted.
  EXPECT_EQ(number(ws.sql("SELECT COUNT(*) FROM executions")), 12 + crashes);
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM executions e WHERE e.completed_at IS NOT NULL AND NOT EXISTS "
                   "(SELECT 1 FROM results r WHERE r.execution_id = e.id)"),
            "0\n")
      << "every closed execution has its result";
  EXPECT_EQ(number(ws.sql("SELECT COUNT(*) FROM attempts")), number(ws.sql("SELECT COUNT(*) FROM executions")))
      << "one attempt per execution: a released claim's attempt is gone";
}

// SIGTERM while claims are queued behind a running step: the running step
// finishes and commits, the queued ones are given back untouched, and the
// next start runs them with no crash counted.
TEST(BatchTest, AStoppingWorkerReleasesTheClaimsItHasNotStarted) {
  ConfigOptions options;
  options.job_workers = 1;
  options.job_worker_extra = "batch: 8";
  Workspace ws(options);
  ws.define("one.yml", chain_definition("One", {"Inc"}));
  trigger_many(ws, 12);
  auto run = ws.process_options(60);
  run.env = {{"DUCTWORK_FAULT", "during_job_execution:sleep:5"},
             {"DUCTWORK_FAULT_SLEEP", "1.5"},
             {"DUCTWORK_FAULT_MARKER", ws.file("fault-fired")}};
  testsupport::Subprocess host(ws.command({"start"}), run);
  ASSERT_TRUE(eventually(20, [&] { return testsupport::file_exists(ws.file("fault-fired")); }))
      << host.stdout_so_far();
  host.signal(SIGTERM);
  testsupport::ProcessResult stopped = host.wait(30);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.describe() << stopped.err;
  EXPECT_GE(logged_total(stopped.out, "jobs"), 1) << stopped.out;
  EXPECT_NE(stopped.out.find("Claimed jobs not started released at shutdown"), std::string::npos) << stopped.out;
  EXPECT_GE(number(ws.sql("SELECT COUNT(*) FROM availabilities WHERE completed_at IS NULL")), 1)
      << "the released claims are open again\n" << stopped.out;

  testsupport::ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  expect_all_completed_once(ws, 12);
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM results WHERE result_type <> 'success'"), "0\n") << "nothing charged";
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM executions"), "12\n");
}

}  // namespace
}  // namespace ductwork::it
