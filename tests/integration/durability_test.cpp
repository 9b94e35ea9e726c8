// The durability suite: for each fault-injection checkpoint × action, run a
// chain (and, separately, an expand/collapse and a divide/combine) through
// the real forking host with the fault armed (firing once,
// in whichever process reaches it first), and prove the pipeline still
// completes with every step's effects committed exactly once.
#include <signal.h>

#include <tuple>

#include "harness.h"

namespace ductwork::it {
namespace {

using Fault = std::tuple<std::string, std::string>;  // checkpoint, action

class DurabilityTest : public ::testing::TestWithParam<Fault> {};

std::string sql(const Workspace& ws, const std::string& query) { return ws.sql(query); }

// `start --drain` with the fault armed (firing once, in whichever process
// reaches it first): the drain still ends well, and the fault fired.
void drain_with_fault(const Workspace& ws, const std::string& checkpoint, const std::string& action) {
  auto run = ws.process_options(60);
  run.env = {{"DUCTWORK_FAULT", checkpoint + ":" + action}, {"DUCTWORK_FAULT_MARKER", ws.file("fault-fired")}};
  testsupport::ProcessResult r = testsupport::run_process(ws.command({"start", "--drain"}), run);
  ASSERT_EQ(r.exit_code, 0) << r.describe() << "\n" << r.err;
  EXPECT_TRUE(testsupport::file_exists(ws.file("fault-fired"))) << "the fault never fired";
}

TEST_P(DurabilityTest, ChainCompletesWithEveryStepCommittedOnce) {
  const auto& [checkpoint, action] = GetParam();
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("chain.yml", chain_definition("Chain3", {"Inc", "Inc", "Inc"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(ws.trigger("Chain3", {std::to_string(10 * i)}));

  drain_with_fault(ws, checkpoint, action);
  if (::testing::Test::HasFatalFailure()) return;

  for (int i = 0; i < 3; ++i) {
    json doc = ws.status(ids[i]);
    ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
    ASSERT_EQ(doc["runs"].size(), 1u);
    const json& steps = doc["runs"][0]["steps"];
    ASSERT_EQ(steps.size(), 3u) << "no step duplicated or lost";
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(steps[k]["output"], 10 * i + k + 1);
      int successes = 0;
      int crashes_before = 0;
      for (const auto& e : steps[k]["executions"]) {
        // Each crash re-runs the step with crash_count + 1, never a retry.
        EXPECT_EQ(e["crash_count"], crashes_before) << steps[k].dump(2);
        EXPECT_EQ(e["retry_count"], 0) << steps[k].dump(2);
        if (e["result_type"] == "success") ++successes;
        if (e["result_type"] == "process_crashed") {
          EXPECT_TRUE(e["error_klass"].is_string() && !e["error_klass"].get<std::string>().empty());
          ++crashes_before;
        }
      }
      EXPECT_EQ(successes, 1) << steps[k].dump(2);
    }
  }
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM branches WHERE status = 'advancing'"), "0\n") << "stranded branch";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM executions WHERE completed_at IS NULL"), "0\n") << "open execution";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM processes"), "0\n");
  EXPECT_EQ(dangling_references(ws), "");
  if (action != "raise" && checkpoint.rfind("after_job", 0) == 0) {
    // A killed worker child: its claims (the faulting one, and whatever its
    // other worker thread held) were recovered by the supervisor.
    std::string crashes = sql(ws, "SELECT COUNT(*) FROM results WHERE error_klass = 'ProcessCrash'");
    EXPECT_GE(std::atoi(crashes.c_str()), 1) << crashes;
  }
}

// The same faults while branches fan out and back in: an expand/collapse
// and a divide (with branches of different lengths)/combine.
TEST_P(DurabilityTest, FanOutAndFanInCompleteWithExactlyOneFanInTarget) {
  const auto& [checkpoint, action] = GetParam();
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  ws.define("expand.yml", "pipeline: Expand\nsteps:\n  - start: Range\n  - expand: Double\n  - collapse: Sum\n");
  ws.define("divide.yml",
            "pipeline: Divide\nsteps:\n  - start: Echo\n  - divide: [Inc, [Double, Inc]]\n  - combine: Sum\n");
  std::string expand_id = ws.trigger("Expand", {"6"});
  std::string divide_id = ws.trigger("Divide", {"10"});

  drain_with_fault(ws, checkpoint, action);
  if (::testing::Test::HasFatalFailure()) return;

  auto check = [&](const std::string& id, const json& sum_input, size_t steps_expected) {
    json doc = ws.status(id);
    ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
    const json& steps = doc["runs"][0]["steps"];
    ASSERT_EQ(steps.size(), steps_expected) << "no step duplicated or lost\n" << doc.dump(1);
    int sums = 0;
    for (const auto& step : steps) {
      int successes = 0;
      for (const auto& e : step["executions"]) successes += e["result_type"] == "success";
      EXPECT_EQ(successes, 1) << step.dump(2);
      if (step["klass"] == "Sum") {
        ++sums;
        EXPECT_EQ(step["input"], json::array({sum_input}));
      }
    }
    EXPECT_EQ(sums, 1) << "exactly one fan-in target";
  };
  check(expand_id, json::array({0, 2, 4, 6, 8, 10}), 8);  // Range, 6 × Double, Sum
  check(divide_id, json::array({11, 21}), 5);              // Echo, Inc, Double, Inc, Sum
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM branches WHERE status = 'advancing'"), "0\n") << "stranded branch";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM branches WHERE fanin_arrived <> COALESCE(fanout_width, 0)"), "0\n")
      << "every barrier counted each child once";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM executions WHERE completed_at IS NULL"), "0\n") << "open execution";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM processes"), "0\n");
  EXPECT_EQ(dangling_references(ws), "");
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoints, DurabilityTest,
    ::testing::Combine(::testing::Values("after_job_claim", "during_job_execution", "after_branch_candidate_select",
                                         "before_advancement_create", "after_branch_claim",
                                         "after_branch_advancement"),
                       ::testing::Values("kill", "exit", "raise")),
    [](const ::testing::TestParamInfo<Fault>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

// The same faults around a process step (SPEC §19): a chain of Python
// steps and a `.so` step. A killed worker takes its step process with it
// (none is left running); each step still commits exactly once.
class ProcessStepDurabilityTest : public ::testing::TestWithParam<Fault> {};

TEST_P(ProcessStepDurabilityTest, AChainOfProcessStepsCompletesWithEveryStepCommittedOnce) {
  const auto& [checkpoint, action] = GetParam();
  if (find_on_path("python3").empty()) GTEST_SKIP() << "python3 is not installed";
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws;
  with_python_steps(ws, options);
  ws.define("chain.yml", chain_definition("PyChain3", {"PyInc", "Inc", "PyInc"}));
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(ws.trigger("PyChain3", {std::to_string(10 * i)}));
  drain_with_fault(ws, checkpoint, action);
  if (::testing::Test::HasFatalFailure()) return;
  for (int i = 0; i < 3; ++i) {
    json doc = ws.status(ids[i]);
    ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
    const json& steps = doc["runs"][0]["steps"];
    ASSERT_EQ(steps.size(), 3u) << "no step duplicated or lost";
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(steps[k]["output"], 10 * i + k + 1);
      int successes = 0;
      for (const auto& e : steps[k]["executions"]) successes += e["result_type"] == "success";
      EXPECT_EQ(successes, 1) << steps[k].dump(2);
    }
  }
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM executions WHERE completed_at IS NULL"), "0\n") << "open execution";
  EXPECT_EQ(sql(ws, "SELECT COUNT(*) FROM processes"), "0\n");
  // No step process outlives the worker that started it.
  EXPECT_TRUE(eventually(5, [&] { return step_processes_of(ws) == 0; })) << "a step process outlived its worker";
}

INSTANTIATE_TEST_SUITE_P(
    Checkpoints, ProcessStepDurabilityTest,
    ::testing::Combine(::testing::Values("after_job_claim", "during_job_execution", "after_branch_advancement"),
                       ::testing::Values("kill", "raise")),
    [](const ::testing::TestParamInfo<Fault>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace ductwork::it

namespace ductwork::it {
namespace {


// issue 37 item 3: a prune killed inside a batch (its rows deleted, not
// committed) leaves every pipeline whole or gone, and the next prune
// finishes the job.
TEST(PruneDurabilityTest, AKillInsideAPruneBatchLeavesEveryPipelineWholeOrGone) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain2", {"Inc", "Inc"}));
  std::string lines;
  for (int i = 0; i < 120; ++i) lines += "[" + std::to_string(i) + "]\n";
  ws.write("many.jsonl", lines);
  ProcessResult triggered = ws.run({"trigger", "Chain2", "--from", ws.file("many.jsonl")});
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe();
  ws.drain(60);

  auto run = ws.process_options(60);
  run.env = {{"DUCTWORK_FAULT", "inside_prune_batch:kill:2"}};  // the second batch of 50
  ProcessResult killed = testsupport::run_process(ws.command({"prune"}), run);
  EXPECT_NE(killed.exit_code, 0) << killed.describe();
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines"), "70\n") << "the first batch committed, the second did not";
  EXPECT_EQ(dangling_references(ws), "");
  // Every pipeline left is whole: its run, two completed steps, their jobs.
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM runs"), "70\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM steps WHERE status = 'completed'"), "140\n");
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM jobs"), "140\n");

  ProcessResult rest = ws.run({"prune"});
  ASSERT_EQ(rest.exit_code, 0) << rest.describe();
  EXPECT_NE(rest.out.find("70 pipeline(s) pruned"), std::string::npos) << rest.out;
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines"), "0\n");
  EXPECT_EQ(dangling_references(ws), "");
}

// issue 37 item 4: with an archive, a batch is archived before its delete
// commits. A kill after the archive was synced and before the commit
// leaves the batch whole and archived (again when it is pruned later); a
// kill in the middle of an append leaves a damaged member that readers
// skip. Either way every pruned pipeline ends up readable in the archive.
TEST(PruneDurabilityTest, AKillWhileArchivingLeavesNoPrunedPipelineOutOfTheArchive) {
  Workspace ws;
  ws.define("chain.yml", chain_definition("Chain2", {"Inc", "Inc"}));
  std::string lines;
  for (int i = 0; i < 30; ++i) lines += "[" + std::to_string(i) + "]\n";
  ws.write("many.jsonl", lines);
  ProcessResult triggered = ws.run({"trigger", "Chain2", "--from", ws.file("many.jsonl")});
  ASSERT_EQ(triggered.exit_code, 0) << triggered.describe();
  ws.drain(60);
  std::vector<std::string> ids;
  for (const auto& p : ws.list()) ids.push_back(p["id"].get<std::string>());
  ASSERT_EQ(ids.size(), 30u);
  const std::string archive = ws.file("archive");

  auto run = ws.process_options(60);
  run.env = {{"DUCTWORK_FAULT", "inside_prune_batch:kill:2"}};  // batches of 10 when archiving
  ProcessResult killed = testsupport::run_process(ws.command({"prune", "--archive", archive}), run);
  EXPECT_NE(killed.exit_code, 0) << killed.describe();
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines"), "20\n") << "the first batch committed, the second did not";
  EXPECT_EQ(dangling_references(ws), "");

  run.env = {{"DUCTWORK_FAULT", "inside_archive_append:kill:1"}};
  killed = testsupport::run_process(ws.command({"prune", "--archive", archive}), run);
  EXPECT_NE(killed.exit_code, 0) << killed.describe();
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines"), "20\n") << "killed before the delete: nothing went";

  ProcessResult rest = ws.run({"prune", "--archive", archive});
  ASSERT_EQ(rest.exit_code, 0) << rest.describe();
  EXPECT_NE(rest.out.find("20 pipeline(s) pruned"), std::string::npos) << rest.out;
  EXPECT_EQ(ws.sql("SELECT COUNT(*) FROM pipelines"), "0\n");
  for (const std::string& id : ids) {
    ProcessResult read = ws.run({"status", id, "--archive", archive, "--json"});
    ASSERT_EQ(read.exit_code, 0) << id << " " << read.describe();
    EXPECT_EQ(json::parse(read.out)["status"], "completed");
  }
}

}  // namespace
}  // namespace ductwork::it
