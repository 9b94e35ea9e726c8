// SPEC §13 through the real binary: `ductwork cancel` (a 1,000-wide fan-out
// stops: nothing is claimed or advanced after the cancel commits; revive
// takes a cancelled pipeline back) and dampen / `ductwork resume` (a
// branch parks, `start --drain` exits and says so, resume runs the next
// step with [previous output, value], --node picks branches), with every
// refusal and the fault checkpoints of both commands.
#include <signal.h>

#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "harness.h"

namespace ductwork::it {
namespace {

const std::set<std::string> kOpenBranch = {"pending", "in_progress", "advancing", "waiting", "dampened"};

// Statuses of the run's steps / branches of class `klass` ("" = all), counted.
std::map<std::string, int> step_statuses(const json& run, const std::string& klass = "") {
  std::map<std::string, int> out;
  for (const auto& s : run["steps"]) {
    if (klass.empty() || s["klass"] == klass) ++out[s["status"].get<std::string>()];
  }
  return out;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The one number `query` selects.
long long count(const Workspace& ws, const std::string& query) {
  std::string text = ws.sql(query);
  try {
    return std::stoll(text);
  } catch (const std::exception&) {
    ADD_FAILURE() << "not a count: '" << text << "' from " << query;
    return -1;
  }
}

// --- cancel ----------------------------------------------------------------

TEST(CancelTest, ACancelledWideFanOutStopsAndNothingRunsAfterTheCancelCommits) {
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  Workspace ws(options);
  // 1,000 children sleeping 0..999 ms each: minutes of work for 2 workers.
  ws.define("wide.yml", "pipeline: Wide\nsteps:\n  - start: Range\n  - expand: Sleep\n  - collapse: Sum\n");
  std::string id = ws.trigger("Wide", {"1000"});
  ASSERT_FALSE(id.empty());
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(120));
  ASSERT_TRUE(eventually(30, [&] { return step_statuses(ws.status(id)["runs"][0], "Sleep")["completed"] >= 20; }))
      << host.stdout_so_far();

  const std::string run_of = "JOIN runs r ON r.id = s.run_id WHERE r.pipeline_id = '" + id + "'";
  const std::string attempts = "SELECT COUNT(*) FROM attempts a JOIN executions e ON e.id = a.execution_id JOIN jobs j ON "
                               "j.id = e.job_id JOIN steps s ON s.id = j.step_id " + run_of;
  const std::string steps = "SELECT COUNT(*) FROM steps s " + run_of;
  ProcessResult cancel = ws.run({"cancel", id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.describe() << cancel.err;
  // Counted once the cancel has committed: a claim or an advance that
  // raced it committed before it (PostgreSQL) or not at all.
  const long long attempts_at_cancel = count(ws, attempts), steps_at_cancel = count(ws, steps);
  EXPECT_NE(cancel.out.find("cancelled " + id), std::string::npos) << cancel.out;
  json doc = ws.status(id);
  ASSERT_EQ(doc["status"], "cancelled") << first_line(doc.dump());
  const std::string cancelled_at = doc["cancelled_at"].get<std::string>();
  EXPECT_EQ(doc["runs"][0]["status"], "cancelled");
  EXPECT_EQ(doc["runs"][0]["cancelled_at"], cancelled_at);
  for (const auto& b : doc["runs"][0]["branches"]) {
    EXPECT_FALSE(kOpenBranch.count(b["status"].get<std::string>())) << b.dump();
  }

  // Within a second the steps that were running have seen cancelled() and
  // ended: no execution of the run is open any more.
  const std::string open_executions =
      "SELECT COUNT(*) FROM executions e JOIN jobs j ON j.id = e.job_id JOIN steps s ON s.id = j.step_id "
      "JOIN runs r ON r.id = s.run_id WHERE r.pipeline_id = '" + id + "' AND e.completed_at IS NULL";
  EXPECT_TRUE(eventually(3, [&] { return count(ws, open_executions) == 0; })) << ws.sql(open_executions);
  // A later run of the same pipeline completes: its worker claimed (oldest
  // first) and the advancers advanced after the cancel committed.
  ASSERT_TRUE(a_later_run_completes(ws, "Wide", {"3"})) << host.stdout_so_far();
  ASSERT_TRUE(host.running()) << host.wait(1).describe();
  testsupport::ProcessResult stopped;
  host.signal(SIGTERM);
  stopped = host.wait(60);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.describe();

  // Nothing was claimed, created or advanced after the cancel committed.
  EXPECT_EQ(count(ws, attempts), attempts_at_cancel) << "a job was claimed after the cancel";
  EXPECT_EQ(count(ws, steps), steps_at_cancel) << "a step was created after the cancel";
  EXPECT_EQ(count(ws, "SELECT COUNT(*) FROM availabilities v JOIN executions e ON e.id = v.execution_id JOIN jobs j "
                      "ON j.id = e.job_id JOIN steps s ON s.id = j.step_id " + run_of + " AND v.completed_at IS NULL"),
            0)
      << "a queued job of the run is still claimable";
  doc = ws.status(id);
  auto statuses = step_statuses(doc["runs"][0], "Sleep");
  EXPECT_EQ(statuses.count("pending"), 0u) << doc["runs"][0]["steps"].size();
  EXPECT_GT(statuses["cancelled"], 500) << "most children were withdrawn before they ran";
  EXPECT_EQ(step_statuses(doc["runs"][0], "Sum").size(), 0u) << "the collapse never ran";
  EXPECT_EQ(doc["status"], "cancelled");

  // The listing knows the status; cancelling again is refused, nothing written.
  json listed = ws.list({"--status", "cancelled"});
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["id"], id);
  DbSnapshot before = ws.snapshot();
  ProcessResult again = ws.run({"cancel", id});
  EXPECT_EQ(again.exit_code, 2) << again.describe();
  EXPECT_NE(again.err.find("is cancelled: only a pipeline that has not finished can be cancelled"), std::string::npos)
      << again.err;
  EXPECT_EQ(ws.snapshot(), before);
}

TEST(CancelTest, RefusesUnknownAndFinishedPipelines) {
  Workspace ws;
  ws.define("one.yml", chain_definition("One", {"Inc"}));
  std::string id = ws.trigger("One", {"1"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "completed");
  json before = ws.status(id);
  ProcessResult r = ws.run({"cancel", id});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("is completed: only a pipeline that has not finished can be cancelled"), std::string::npos)
      << r.err;
  EXPECT_EQ(ws.status(id), before);
  r = ws.run({"cancel", "00000000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("no pipeline 00000000-0000-7000-8000-000000000000"), std::string::npos) << r.err;
  r = ws.run({"cancel"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("usage: ductwork cancel PIPELINE_ID"), std::string::npos) << r.err;
}

// A step that is running when its run is cancelled sees cancelled(); its
// error is recorded, no retry is made, and a revive runs it again.
TEST(CancelTest, ARunningStepSeesCancelledAndReviveTakesTheCancelledPipelineBack) {
  ConfigOptions options;
  options.job_worker_extra = "max_retry: 3";
  Workspace ws(options);
  ws.define("gated.yml", chain_definition("Gated", {"Gate", "Inc"}));
  const std::string gate = ws.file("gate-open");
  std::string id = ws.trigger("Gated", {json{{"file", gate}, {"value", 1}}.dump()});
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(20, [&] { return step_statuses(ws.status(id)["runs"][0])["in_progress"] == 1; }))
      << host.stdout_so_far();
  ASSERT_EQ(ws.run({"cancel", id}).exit_code, 0);
  // Gate polls cancelled() every 10 ms; the host tells it within ~0.2 s.
  auto ended = [&] {
    json executions = ws.status(id)["runs"][0]["steps"][0]["executions"];
    return executions.size() == 1 && !executions[0]["result_type"].is_null();
  };
  ASSERT_TRUE(eventually(5, ended)) << ws.status(id).dump(2);
  json doc = ws.status(id);
  const json& step = doc["runs"][0]["steps"][0];
  EXPECT_EQ(step["executions"][0]["result_type"], "failure") << step.dump(2);
  EXPECT_NE(step["executions"][0]["error_klass"].get<std::string>().find("Cancelled"), std::string::npos)
      << step.dump(2);
  EXPECT_EQ(step["status"], "cancelled") << "no retry for a cancelled branch";
  const std::string open_gate = ws.write("other-gate", "open");
  ASSERT_TRUE(a_later_run_completes(ws, "Gated", {json{{"file", open_gate}, {"value", 1}}.dump()}));
  EXPECT_EQ(ws.status(id)["runs"][0]["steps"][0]["executions"].size(), 1u) << "a retry was made";

  ProcessResult revived = ws.run({"revive", id});
  ASSERT_EQ(revived.exit_code, 0) << revived.describe() << revived.err;
  { std::ofstream(gate) << "open"; }
  ASSERT_TRUE(eventually(20, [&] { return ws.status(id)["status"] == "completed"; })) << ws.status(id).dump(2);
  doc = ws.status(id);
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["status"], "cancelled") << "the cancelled run stays as history";
  EXPECT_TRUE(doc["cancelled_at"].is_null()) << "the pipeline is live again";
  EXPECT_EQ(doc["runs"][1]["steps"][1]["output"], 2);
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(60).exit_code, 0);
}

// A step that ignores the cancel and returns a value afterwards: the value
// is recorded, and the branch never advances.
TEST(CancelTest, ALateSuccessIsRecordedButNeverAdvanced) {
  Workspace ws;
  ConfigOptions options;
  options.extra = "supervisor: {polling_timeout: 0.1}\n";
  with_fixture_plugin(ws, "libstubborn.so", options);
  ws.define("late.yml", chain_definition("Late", {"StubbornSleep", "Inc"}));
  std::string id = ws.trigger("Late", {"4000"});  // long enough to cancel it while it runs, even under ASan
  testsupport::Subprocess host(ws.command({"start"}), ws.process_options(60));
  ASSERT_TRUE(eventually(20, [&] { return step_statuses(ws.status(id)["runs"][0])["in_progress"] == 1; }))
      << host.stdout_so_far();
  ASSERT_EQ(ws.run({"cancel", id}).exit_code, 0);
  auto recorded = [&] {
    json executions = ws.status(id)["runs"][0]["steps"][0]["executions"];
    return !executions[0]["result_type"].is_null();
  };
  ASSERT_TRUE(eventually(20, recorded)) << ws.status(id).dump(2);
  // A later run through the same two steps advances: so would this one have.
  ASSERT_TRUE(a_later_run_completes(ws, "Late", {"0"}));
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "cancelled") << doc.dump(2);
  const json& steps = doc["runs"][0]["steps"];
  ASSERT_EQ(steps.size(), 1u) << "the cancelled branch advanced:\n" << doc.dump(2);
  EXPECT_EQ(steps[0]["executions"][0]["result_type"], "success");
  EXPECT_EQ(steps[0]["output"], 4000) << "the late result is recorded";
  EXPECT_EQ(doc["runs"][0]["branches"][0]["status"], "cancelled");
  host.signal(SIGTERM);
  EXPECT_EQ(host.wait(60).exit_code, 0);
}

// --- dampen / resume ---------------------------------------------------------

TEST(DampenTest, ADampenedBranchParksWhileItsSiblingFinishesAndResumeCompletesTheRun) {
  Workspace ws;
  ws.define("approval.yml", kApprovalDefinition);
  std::string id = ws.trigger("Approval", {"1"});
  ProcessResult r = ws.run({"start", "--drain"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  // The drain ends with only a dampened run left, and its last line says so.
  std::string last = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  EXPECT_NE(last.find("1 dampened pipeline(s) parked until `ductwork resume` or an awaited event"), std::string::npos) << r.out;
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "dampened") << doc.dump(2);
  EXPECT_EQ(doc["runs"][0]["status"], "dampened");
  std::multiset<std::string> branches;
  for (const auto& b : doc["runs"][0]["branches"]) branches.insert(b["status"].get<std::string>());
  EXPECT_EQ(branches.count("dampened"), 1u) << doc.dump(2);
  EXPECT_EQ(branches.count("in_progress") + branches.count("advancing"), 0u) << doc.dump(2);
  EXPECT_EQ(ws.list({"--status", "dampened"}).size(), 1u);

  ProcessResult resumed = ws.run({"resume", id, "5"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.describe() << resumed.err;
  EXPECT_NE(resumed.out.find("resumed " + id + " (1 branch)"), std::string::npos) << resumed.out;
  EXPECT_EQ(ws.status(id)["status"], "in_progress");
  ws.drain();
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  // Branch 1: Inc(1) = 2, parked, then Sum(2, 5) = 7; branch 2: Inc, Inc = 3;
  // the combine adds both: 10.
  json resumed_step;
  for (const auto& s : doc["runs"][0]["steps"]) {
    if (s["to_transition"] == "dampen") resumed_step = s;
  }
  ASSERT_FALSE(resumed_step.is_null()) << doc.dump(2);
  EXPECT_EQ(resumed_step["input"], json::parse("[2,5]"));
  EXPECT_EQ(resumed_step["output"], 7);
  EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], 10) << doc.dump(2);
}

TEST(DampenTest, ResumeWithNodeResumesOnlyTheBranchesParkedThere) {
  Workspace ws;
  ws.define("two.yml",
            "pipeline: Two\nsteps:\n  - start: Echo\n  - divide:\n    - [Inc, {dampen: Double}]\n"
            "    - [Echo, {dampen: Inc}]\n  - combine: Sum\n");
  std::string id = ws.trigger("Two", {"3"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "dampened");

  // Refusals first, each writing nothing.
  json before = ws.status(id);
  ProcessResult r = ws.run({"resume", id, "null", "--node", "Nowhere"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("has no dampened branch at Nowhere (its branches are parked at "), std::string::npos)
      << r.err;
  r = ws.run({"resume", id, "{not json"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("VALUE_JSON ('{not json') is not valid JSON"), std::string::npos) << r.err;
  r = ws.run({"resume", "00000000-0000-7000-8000-000000000000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no pipeline"), std::string::npos) << r.err;
  EXPECT_EQ(ws.status(id), before);

  // The branch that ran Inc (4) waits to run Double: resume it by the
  // class it waits for. The other stays parked, so the run parks again.
  r = ws.run({"resume", id, "--node", "Double"});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  EXPECT_NE(r.out.find("(1 branch)"), std::string::npos) << r.out;
  ws.drain();
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "dampened") << doc.dump(2);
  // Then the other by the node it is parked at (the last step of the
  // branch still dampened: branch 2's Echo).
  std::string parked_branch, parked_node;
  for (const auto& b : doc["runs"][0]["branches"]) {
    if (b["status"] == "dampened") parked_branch = b["id"];
  }
  for (const auto& s : doc["runs"][0]["steps"]) {
    if (s["branch_id"] == parked_branch) parked_node = s["node"];
  }
  EXPECT_EQ(parked_node.substr(0, 5), "Echo.") << doc.dump(2);
  ASSERT_FALSE(parked_node.empty());
  r = ws.run({"resume", id, "100", "--node", parked_node});
  ASSERT_EQ(r.exit_code, 0) << r.describe() << r.err;
  ws.drain();
  doc = ws.status(id);
  ASSERT_EQ(doc["status"], "completed") << doc.dump(2);
  // Branch 1: Inc(3) = 4, Double(4, null) = 8. Branch 2: Echo(3) = 3,
  // Inc(3, 100) = 4 (Inc reads its first argument). Combine: 12.
  EXPECT_EQ(doc["runs"][0]["steps"].back()["output"], 12) << doc.dump(2);

  // Nothing is dampened any more: resume is refused.
  before = ws.status(id);
  r = ws.run({"resume", id});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("is completed: nothing to resume"), std::string::npos) << r.err;
  EXPECT_EQ(ws.status(id), before);
}

TEST(DampenTest, ResumeOfARunningPipelineWithNothingDampenedIsRefused) {
  Workspace ws;
  ws.define("gated.yml", chain_definition("Gated", {"Gate"}));
  std::string id = ws.trigger("Gated", {json{{"file", ws.file("never")}}.dump()});
  DbSnapshot before = ws.snapshot();
  ProcessResult r = ws.run({"resume", id, "1"});
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find("has no dampened branch to resume"), std::string::npos) << r.err;
  EXPECT_EQ(ws.snapshot(), before);
}

// A dampened pipeline can be cancelled; revive parks it again.
TEST(DampenTest, CancellingADampenedPipelineAndRevivingIt) {
  Workspace ws;
  ws.define("approval.yml", kApprovalDefinition);
  std::string id = ws.trigger("Approval", {"1"});
  ws.drain();
  ASSERT_EQ(ws.status(id)["status"], "dampened");
  ASSERT_EQ(ws.run({"cancel", id}).exit_code, 0);
  EXPECT_EQ(ws.status(id)["status"], "cancelled");
  ProcessResult r = ws.run({"resume", id});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is cancelled: nothing to resume"), std::string::npos) << r.err;
  ASSERT_EQ(ws.run({"revive", id}).exit_code, 0);
  ws.drain();
  EXPECT_EQ(ws.status(id)["status"], "dampened") << ws.status(id).dump(2);
  ASSERT_EQ(ws.run({"resume", id, "5"}).exit_code, 0);
  ws.drain();
  json doc = ws.status(id);
  EXPECT_EQ(doc["status"], "completed") << doc.dump(2);
  EXPECT_EQ(doc["runs"][1]["steps"].back()["output"], 10);
}

// --- fault checkpoints ------------------------------------------------------

// A cancel or resume that dies just before its commit leaves the pipeline
// exactly as it was; the command then works.
void expect_no_half_state(const std::string& checkpoint, const std::vector<std::string>& command,
                          const std::string& status_after) {
  for (const char* action : {"kill", "raise", "exit"}) {
    SCOPED_TRACE(checkpoint + ":" + std::string(action));
    Workspace ws;
    ws.define("approval.yml", kApprovalDefinition);
    std::string id = ws.trigger("Approval", {"1"});
    ws.drain();
    ASSERT_EQ(ws.status(id)["status"], "dampened");
    std::vector<std::string> args = command;
    args.insert(args.begin() + 1, id);
    json before = ws.status(id);
    DbSnapshot unchanged = ws.snapshot();
    ProcessResult r = ws.run_with_env(args, {{"DUCTWORK_FAULT", checkpoint + ":" + std::string(action)}});
    EXPECT_NE(r.exit_code, 0) << r.describe();
    EXPECT_EQ(ws.status(id), before) << "half-written by " << checkpoint << ":" << action;
    EXPECT_EQ(ws.snapshot(), unchanged);
    ProcessResult again = ws.run(args);
    ASSERT_EQ(again.exit_code, 0) << again.describe() << again.err;
    EXPECT_EQ(ws.status(id)["status"], status_after);
  }
}

TEST(ControlDurabilityTest, CancelDiesBeforeItsCommit) {
  expect_no_half_state("before_cancel_commit", {"cancel"}, "cancelled");
}

TEST(ControlDurabilityTest, ResumeDiesBeforeItsCommit) {
  expect_no_half_state("before_resume_commit", {"resume", "5"}, "in_progress");
}

}  // namespace
}  // namespace ductwork::it
