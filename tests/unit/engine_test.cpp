// The execution state machine end to end inside one process: real SQLite
// file, real testkit plugin, the JobWorker and Advancer driven step by step
// (deterministic), and the threaded HostRuntime.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/branch_claims.h"
#include "engine/job_end.h"
#include "engine/job_policy.h"
#include "engine/recovery.h"
#include "process/host_runtime.h"
#include "engine_fixture.h"

namespace ductwork {
namespace {

class EngineTest : public test::EngineFixture {};

TEST_F(EngineTest, TenStepChainCompletesWithEveryOutput) {
  std::string yaml = "pipeline: P\nsteps:\n  - start: Inc\n";
  for (int i = 0; i < 9; ++i) yaml += "  - chain: Inc\n";
  auto t = trigger(compile(yaml), Json::array({0}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  const Json& run = doc["runs"][0];
  EXPECT_EQ(run["status"].as_string(), "completed");
  EXPECT_TRUE(run["completed_at"].is_string());
  ASSERT_EQ(run["steps"].size(), 10u);
  for (int i = 0; i < 10; ++i) {
    const Json& step = run["steps"][i];
    EXPECT_EQ(step["input"], Json::array({i})) << i;
    EXPECT_EQ(step["output"].as_int(), i + 1) << i;
    EXPECT_EQ(step["status"].as_string(), "completed");
    EXPECT_EQ(step["to_transition"].as_string(), i == 0 ? "start" : "default");
    EXPECT_EQ(step["executions"].size(), 1u);
  }
  EXPECT_EQ(run["branches"][0]["status"].as_string(), "completed");
  EXPECT_EQ(stats.steps_succeeded.load(), 10u);
}

TEST_F(EngineTest, AnExceptionBecomesTheErrorAndExhaustsRetries) {
  configure("job_worker: {retry_delay: 0, max_retry: 2}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Fail\n  - chain: Inc\n"), Json::array({1}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  const Json& run = doc["runs"][0];
  EXPECT_EQ(run["status"].as_string(), "halted");
  EXPECT_TRUE(run["halted_at"].is_string());
  EXPECT_EQ(run["branches"][0]["halt_reason"].as_string(), "job_retries_exhausted");
  ASSERT_EQ(run["steps"].size(), 1u);
  EXPECT_EQ(run["steps"][0]["status"].as_string(), "failed");
  const Json& executions = run["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(executions[i]["retry_count"].as_int(), i);
    EXPECT_EQ(executions[i]["result_type"].as_string(), "failure");
    EXPECT_NE(executions[i]["error_klass"].as_string().find("IntentionalFailure"), std::string::npos)
        << executions[i].dump();
    EXPECT_FALSE(executions[i]["error_message"].as_string().empty());
  }
}

TEST_F(EngineTest, PerStepRetryBudgetOverridesThePipelineDefault) {
  configure("job_worker: {retry_delay: 0, max_retry: {default: 5, P: {Fail: 0}}}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Fail\n"), Json::array({1}));
  drain();
  EXPECT_EQ(report(t)["runs"][0]["steps"][0]["executions"].size(), 1u);
}

TEST_F(EngineTest, FailTimesSucceedsOnceRetriesCatchUp) {
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: FailTimes\n  - chain: Double\n"),
                   Json::array({Json::object({{"times", 2}, {"value", 21}})}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["output"].as_int(), 21);
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 3u);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"].as_int(), 42);
}

TEST_F(EngineTest, AMissingStepClassHaltsTheRunInsteadOfCrashing) {
  configure("job_worker: {retry_delay: 0, max_retry: 0}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Ghost\n"), Json::array());
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"][0]["error_klass"].as_string(), "ductwork::UnknownStep");
}

TEST_F(EngineTest, AnEdgeTheAdvancerCannotTakeHaltsTransitionInvalid) {
  Definition def = compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n");
  def.edges[def.nodes[0]].type = "teleport";  // not an edge type routing knows
  auto t = trigger(def, Json::array({1}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"].as_string(), "transition_invalid");
}

// An advancer that advances its claims in the claiming transaction only
// locks their branches; it marks a branch claimed ('advancing', its token)
// only when the advance failed, so that the failure can be recorded
// through the claim's fence after the commit. A trigger logs every mark.
TEST_F(EngineTest, AnAdvancerMarksABranchClaimedOnlyWhenItsAdvanceFailed) {
  exec_dialect(
      "CREATE TABLE claim_marks (branch_id TEXT); "
      "CREATE TRIGGER mark_claims AFTER UPDATE ON branches WHEN NEW.status = 'advancing' "
      "BEGIN INSERT INTO claim_marks VALUES (NEW.id); END;",
      "CREATE TABLE claim_marks (branch_id TEXT); "
      "CREATE FUNCTION mark_claim() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN INSERT INTO claim_marks VALUES (NEW.id); RETURN NEW; END $$; "
      "CREATE TRIGGER mark_claims AFTER UPDATE ON branches FOR EACH ROW "
      "WHEN (NEW.status = 'advancing') EXECUTE FUNCTION mark_claim();");
  // Every branch of a fan-out and its fan-in goes through an advancer.
  auto fan = run("steps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n", Json::array({4}));
  ASSERT_EQ(report(fan)["status"].as_string(), "completed");
  EXPECT_EQ(count("SELECT COUNT(*) FROM claim_marks WHERE branch_id <> ?1", ""), 0)
      << "no branch was marked claimed on its way";
  // An edge routing cannot take: the advance throws, its branch is marked
  // claimed, and the failure recorded through that claim halts it.
  Definition def = compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n");
  def.edges[def.nodes[0]].type = "teleport";
  auto bad = trigger(def, Json::array({1}));
  drain();
  Json doc = report(bad);
  ASSERT_EQ(doc["status"].as_string(), "halted");
  const std::string branch_id = doc["runs"][0]["branches"][0]["id"].as_string();
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"].as_string(), "transition_invalid");
  EXPECT_EQ(count("SELECT COUNT(*) FROM claim_marks WHERE branch_id = ?1", branch_id), 1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM claim_marks WHERE branch_id <> ?1", branch_id), 0);
}

// An advancer's batch writes each claim's transition and advancement once,
// in the state its advance leaves them, instead of inserting them open and
// closing them in the same transaction (a move that succeeded there is not
// written at all: the step it made names its predecessor). A claim whose advance failed is
// written open, and its failure recorded through the fence afterwards. A
// trigger logs every update of the two tables.
TEST_F(EngineTest, AnAdvancerWritesEachClaimsTransitionAndAdvancementOnce) {
  exec_dialect(
      "CREATE TABLE row_updates (tbl TEXT, row_id TEXT); "
      "CREATE TRIGGER log_transitions AFTER UPDATE ON transitions "
      "BEGIN INSERT INTO row_updates VALUES ('transitions', NEW.id); END; "
      "CREATE TRIGGER log_advancements AFTER UPDATE ON advancements "
      "BEGIN INSERT INTO row_updates VALUES ('advancements', NEW.id); END;",
      "CREATE TABLE row_updates (tbl TEXT, row_id TEXT); "
      "CREATE FUNCTION log_update() RETURNS trigger LANGUAGE plpgsql AS "
      "$$ BEGIN INSERT INTO row_updates VALUES (TG_TABLE_NAME, NEW.id); RETURN NEW; END $$; "
      "CREATE TRIGGER log_transitions AFTER UPDATE ON transitions FOR EACH ROW EXECUTE FUNCTION log_update(); "
      "CREATE TRIGGER log_advancements AFTER UPDATE ON advancements FOR EACH ROW EXECUTE FUNCTION log_update();");
  // Range's expand, four arrivals at the collapse and Sum's end all go
  // through an advancer.
  auto fan = run("steps:\n  - start: Range\n  - expand: Inc\n  - collapse: Sum\n", Json::array({4}));
  Json doc = report(fan);
  ASSERT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"].as_array().back()["output"], Json(10)) << "Sum of Inc over 0..3";
  EXPECT_EQ(count("SELECT COUNT(*) FROM row_updates WHERE row_id <> ?1", ""), 0) << "no row rewritten";
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions WHERE completed_at IS NULL AND id <> ?1", ""), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements WHERE completed_at IS NULL AND id <> ?1", ""), 0);
  // Range, four Inc and Sum each advanced in the transaction that claimed
  // it: neither a transition nor an advancement is kept for a move that
  // succeeded there. The steps say what moved where: each Inc names Range,
  // Sum the Inc whose arrival fired the collapse.
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements WHERE id <> ?1", ""), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions WHERE id <> ?1", ""), 0);
  const std::string fan_run = doc["runs"][0]["id"].as_string();
  EXPECT_EQ(count("SELECT COUNT(*) FROM steps s JOIN steps p ON p.id = s.source_step_id "
                  "WHERE s.run_id = ?1 AND p.run_id = ?1 AND p.klass = CASE s.klass WHEN 'Inc' THEN 'Range' "
                  "WHEN 'Sum' THEN 'Inc' END",
                  fan_run),
            5);
  // An edge routing cannot take: the claim's rows are written open, then
  // closed through the fence that records the failure.
  Definition def = compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n");
  def.edges[def.nodes[0]].type = "teleport";
  auto bad = trigger(def, Json::array({1}));
  drain();
  doc = report(bad);
  ASSERT_EQ(doc["status"].as_string(), "halted");
  const std::string branch_id = doc["runs"][0]["branches"][0]["id"].as_string();
  EXPECT_EQ(count("SELECT COUNT(*) FROM advancements a JOIN transitions t ON t.id = a.transition_id "
                  "WHERE t.branch_id = ?1 AND a.error_klass = 'ductwork::TransitionInvalid' AND "
                  "a.completed_at IS NOT NULL",
                  branch_id),
            1);
  EXPECT_EQ(count("SELECT COUNT(*) FROM row_updates u JOIN advancements a ON a.id = u.row_id "
                  "JOIN transitions t ON t.id = a.transition_id WHERE t.branch_id = ?1",
                  branch_id),
            1)
      << "the failure, recorded once through the fence";
  EXPECT_EQ(count("SELECT COUNT(*) FROM transitions WHERE completed_at IS NULL AND branch_id = ?1", branch_id), 1)
      << "left open for a revive to try again";
}

TEST_F(EngineTest, CommitsWakeTheLoopThatCanTakeTheNextStep) {
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n"), Json::array({1}));
  JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled);
  Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id);
  uint64_t advancers_before = wakeups.advancers().generation();
  ASSERT_TRUE(worker.run_once());
  EXPECT_GT(wakeups.advancers().generation(), advancers_before);
  uint64_t jobs_before = wakeups.jobs("P")->generation();
  ASSERT_EQ(advancer.run_once(), BranchClaimResult::kClaimed);
  EXPECT_GT(wakeups.jobs("P")->generation(), jobs_before);
}

TEST_F(EngineTest, ContextStepsShareValuesWithinARun) {
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: ContextSet\n  - chain: ContextGet\n"),
                   Json::array({Json::object({{"key", "k"}, {"value", Json::object({{"deep", true}})}})}));
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"][1]["output"], Json::object({{"deep", true}}));
}

TEST_F(EngineTest, AdvancersThatKeepDyingHaltTheBranchAdvancerCrashesExhausted) {
  configure("job_worker: {retry_delay: 0}\npipeline_advancer: {max_crash: 2}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n"), Json::array({1}));
  JobWorker worker("P", *store, registry, config, logger, wakeups, stats, process_id, cancelled);
  ASSERT_TRUE(worker.run_once());
  CrashPlanner policy = [](const ClaimedJob& job) {
    return after_crash(job.retry_count, job.crash_count, CrashPolicy{10, 0.0});
  };
  // Two advancer processes die mid-advance; each time the reaper closes the
  // abandoned advancement as a crash and releases the branch.
  for (int i = 0; i < 2; ++i) {
    store->register_process("doomed", 7, "m", "all");
    AdvanceInClaim dies = [](BranchTx&, const BranchClaim&) { throw std::runtime_error("died mid-advance"); };
    BranchClaim claim;
    EXPECT_THROW(claim_branch(*store, "P", "doomed", 20, 3, &claim, &dies), std::runtime_error);
    EXPECT_EQ(claim.advancement_crash_count, i);
    RecoveryCounts counts;
    ASSERT_TRUE(reap_process(*store, "doomed", true, 300.0, policy, &counts, Death()));
    EXPECT_EQ(counts.advancements, 1);
  }
  Advancer advancer({"P"}, *store, cache, config, logger, wakeups, process_id);
  ASSERT_EQ(advancer.run_once(), BranchClaimResult::kClaimed);
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "halted");
  EXPECT_EQ(doc["runs"][0]["branches"][0]["halt_reason"].as_string(), "advancer_crashes_exhausted");
  EXPECT_EQ(doc["runs"][0]["steps"].size(), 1u) << "the next step was never created";
}

// The threaded runtime: several worker and advancer threads, each on its own
// connection, racing over many runs. Run under TSan as well.
TEST_F(EngineTest, ThreadedRuntimeCompletesManyChains) {
  configure(
      "job_worker: {count: 3, polling_timeout: 0.05, retry_delay: 0}\n"
      "pipeline_advancer: {count: 3, polling_timeout: 0.05}\nsupervisor: {polling_timeout: 0.1}");
  Definition def = compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n  - chain: Inc\n  - chain: Double\n");
  std::vector<TriggeredPipeline> runs;
  for (int i = 0; i < 40; ++i) runs.push_back(trigger(def, Json::array({i})));
  HostRuntime runtime(config, *factory, registry, logger, {"P"});
  runtime.start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (store->reads().progress({"P"}).pipelines_open > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  runtime.stop();
  for (int i = 0; i < 40; ++i) {
    Json doc = report(runs[i]);
    ASSERT_EQ(doc["status"].as_string(), "completed") << i;
    ASSERT_EQ(doc["runs"][0]["steps"].size(), 4u);
    EXPECT_EQ(doc["runs"][0]["steps"][3]["output"].as_int(), (i + 3) * 2);
    for (const Json& step : doc["runs"][0]["steps"].as_array()) EXPECT_EQ(step["executions"].size(), 1u);
  }
  EXPECT_FALSE(store->heartbeat(runtime.process_id())) << "a clean stop removes the process row";
}

}  // namespace
}  // namespace ductwork
