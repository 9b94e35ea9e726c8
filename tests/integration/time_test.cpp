// SPEC §13 through the real binary: a step's timeout (one that ignores
// cancellation is ended in about timeout + timeout_grace, in both
// supervision modes; one that honours it fails StepTimeout and succeeds on
// a retry) and a step's delay (inside an expand: every child waits).

#include <fstream>
#include <sstream>

#include "harness.h"

namespace ductwork::it {
namespace {

void expect_stubborn_step_ended(const std::string& mode_line) {
  Workspace ws;
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 1, timeout_grace: 1";
  options.extra = mode_line + "supervisor: {polling_timeout: 0.1}\n";
  with_fixture_plugin(ws, "libstubborn.so", options);
  ws.define("stuck.yml",
            "pipeline: Stuck\nsteps:\n  - start: StubbornSleep\n    timeout: 1\n  - chain: Inc\n");
  std::string id = ws.trigger("Stuck", {"600000"});  // ten minutes, never cancelled
  ASSERT_FALSE(id.empty());
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.out << r.err;
  // Two executions (max_retry 1), each ended about 1 s + 1 s grace after it
  // began; the drain's whole run is far below one step's ten minutes.
  EXPECT_LT(r.seconds, 15) << "the stubborn step was not ended by its timeout";
  EXPECT_GT(r.seconds, 3.5) << "each execution had its timeout and grace (2 x 2 s)";
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"], "job_retries_exhausted") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 2u) << doc.dump(2);
  for (const auto& e : executions) {
    EXPECT_EQ(e["result_type"], "failure") << e.dump(2);
    EXPECT_EQ(e["error_klass"], "StepTimeout") << e.dump(2);
    EXPECT_NE(e["error_message"].get<std::string>().find("ignored cancellation"), std::string::npos) << e.dump(2);
    EXPECT_EQ(e["crash_count"], 0) << "a timeout spends the retry budget, not the crash budget";
  }
  EXPECT_EQ(executions[1]["retry_count"], 1);
  const std::string logs = r.out + r.err;
  if (mode_line.empty()) {
    EXPECT_EQ(count_of(logs, "Killing this worker process to end a step that ignored its timeout"), 2u) << logs;
  } else {
    EXPECT_EQ(count_of(logs, "Worker thread abandoned to a step that ignored its timeout"), 2u) << logs;
  }
}

TEST(StepTimeoutTest, AStepThatIgnoresCancellationIsEndedInForkingMode) { expect_stubborn_step_ended(""); }

TEST(StepTimeoutTest, AStepThatIgnoresCancellationIsEndedInThreadedMode) {
  expect_stubborn_step_ended("forking: none\n");
}

// A step that honours cancellation stops when its timeout passes; what it
// returns is ignored, the execution fails StepTimeout without a kill, and
// the retry (the gate now open) succeeds.
TEST(StepTimeoutTest, TimeoutThenSuccessOnRetry) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 20, timeout_grace: 30";
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("gated.yml", "pipeline: Gated\nsteps:\n  - start: Gate\n    timeout: 0.5\n  - chain: Inc\n");
  const std::string gate = ws.file("gate-open");
  std::string id = ws.trigger("Gated", {json{{"file", gate}, {"value", 41}}.dump()});
  ASSERT_FALSE(id.empty());
  testsupport::Subprocess host(ws.command({"start", "--drain"}), ws.process_options(60));
  auto first_timed_out = [&] {
    json doc = ws.status(id);
    const json& executions = doc["runs"][0]["steps"][0]["executions"];
    return !executions.empty() && executions[0]["error_klass"] == "StepTimeout";
  };
  ASSERT_TRUE(eventually(20, first_timed_out)) << host.stdout_so_far();
  { std::ofstream(gate) << "open"; }
  ProcessResult r = host.wait(60);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.out << r.err;
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  const json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_GE(executions.size(), 2u) << doc.dump(2);
  EXPECT_EQ(executions[0]["result_type"], "failure");
  EXPECT_NE(executions[0]["error_message"].get<std::string>().find("stopped when cancelled"), std::string::npos)
      << executions[0].dump(2);
  EXPECT_EQ(executions.back()["result_type"], "success") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], 42);
  EXPECT_EQ(count_of(r.out + r.err, "Killing this worker"), 0u) << "a step that stops on cancellation is not killed";
}

// job_worker.timeout for the pipeline applies to a step without `timeout:`.
TEST(StepTimeoutTest, ConfigTimeoutAppliesWithoutADefinitionTimeout) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 0, timeout: {Slow: 0.3}";
  Workspace ws(options);
  ws.define("slow.yml", chain_definition("Slow", {"Sleep"}));
  std::string id = ws.trigger("Slow", {"20000"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_LT(r.seconds, 15);
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "halted") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"][0]["error_klass"], "StepTimeout") << doc.dump(2);
}

// `delay:` on an expand's target: every child's job opens that long after
// the transition that created it, and none runs sooner.
TEST(StepDelayTest, EveryChildOfAnExpandWaitsItsDelay) {
  Workspace ws;
  ws.define("later.yml",
            "pipeline: Later\nsteps:\n  - start: Range\n  - expand: Inc\n    delay: 1.5\n  - collapse: Sum\n");
  log_queue_rows(ws);  // each child's queue row, as it was written
  std::string id = ws.trigger("Later", {"4"});
  ASSERT_FALSE(id.empty());
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], 10) << "1+2+3+4";
  // Each child: its availability opens 1.5 s after its step was created,
  // and its one attempt started no sooner.
  std::string rows = ws.sql(
      "SELECT s.started_at, v.started_at, a.started_at FROM steps s JOIN jobs j ON j.step_id = s.id "
      "JOIN executions e ON e.job_id = j.id JOIN queued_log v ON v.execution_id = e.id "
      "JOIN attempts a ON a.execution_id = e.id WHERE s.klass = 'Inc' ORDER BY s.started_at");
  std::istringstream lines(rows);
  std::string line;
  int children = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cols;
    std::istringstream fields(line);
    for (std::string c; std::getline(fields, c, '|');) cols.push_back(c);
    ASSERT_EQ(cols.size(), 3u) << line;
    double created = db_seconds(cols[0]), opens = db_seconds(cols[1]), ran = db_seconds(cols[2]);
    EXPECT_NEAR(opens - created, 1.5, 0.001) << line;
    EXPECT_GE(ran, opens) << "an attempt began before its delay was over: " << line;
    ++children;
  }
  EXPECT_EQ(children, 4) << rows;
}

// A delayed start step: trigger returns at once, the job waits.
TEST(StepDelayTest, ADelayedStartStepWaitsAfterTheTrigger) {
  Workspace ws;
  ws.define("later.yml", "pipeline: Later\nsteps:\n  - start: Inc\n    delay: 1\n");
  std::string id = ws.trigger("Later", {"1"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(ws.status(id)["status"], "completed");
  std::string rows = ws.sql(
      "SELECT p.triggered_at, a.started_at FROM pipelines p JOIN runs r ON r.pipeline_id = p.id "
      "JOIN steps s ON s.run_id = r.id JOIN jobs j ON j.step_id = s.id JOIN executions e ON e.job_id = j.id "
      "JOIN attempts a ON a.execution_id = e.id");
  auto bar = rows.find('|');
  ASSERT_NE(bar, std::string::npos) << rows;
  double waited = db_seconds(rows.substr(bar + 1, rows.find('\n') - bar - 1)) - db_seconds(rows.substr(0, bar));
  EXPECT_GE(waited, 1.0) << rows;
}

}  // namespace
}  // namespace ductwork::it
