// A job worker that advances a chain in its success transaction takes the
// step it creates as it writes it (issue 11): the rows are those a claim
// would leave, no claim statement runs for it, and the oldest due jobs
// still come first. Runs on both dialects.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/branch_advance.h"
#include "engine/job_end.h"
#include "engine/job_success.h"
#include "engine/recovery.h"
#include "engine/status_document.h"
#include "engine_fixture.h"

namespace ductwork {
namespace {

class WorkerTakesTest : public test::EngineFixture {
 protected:
  // Commits `jobs` as successes of 7, advancing their branches here, and
  // returns what the commit claimed for the worker (at most `next_max`).
  std::vector<ClaimedJob> succeed(const std::vector<ClaimedJob>& jobs, int next_max) {
    BranchAdvance advance(*store, cache, config, logger, wakeups, &registry);
    BatchAdvance advance_here;
    advance_here.advance = [&](BranchTx& tx, const BranchClaim& claim, size_t) {
      AdvanceEffects effects;
      advance.advance(tx, claim, effects);
      return std::string();
    };
    std::vector<JobSuccess> done;
    for (const ClaimedJob& job : jobs) done.push_back(JobSuccess{&job, "7", true});
    std::vector<ClaimedJob> next;
    std::vector<bool> committed = jobs_succeeded(*store, done, process_id, &next, next_max, &advance_here, true);
    EXPECT_EQ(committed, std::vector<bool>(jobs.size(), true));
    return next;
  }

  // How the rows of `job`'s step stand: "step status|availability owner|
  // availability open, closed or none|execution owner|attempts".
  std::string rows_of(const ClaimedJob& job) {
    return text("SELECT s.status || '|' || COALESCE(a.process_id, '-') || '|' || "
                "CASE WHEN a.id IS NULL THEN 'none' WHEN a.completed_at IS NULL THEN 'open' ELSE 'closed' END || "
                "'|' || COALESCE(e.process_id, '-') || '|' || "
                "(SELECT COUNT(*) FROM attempts t WHERE t.execution_id = e.id) "
                "FROM executions e LEFT JOIN availabilities a ON a.execution_id = e.id "
                "JOIN jobs j ON j.id = e.job_id JOIN steps s ON s.id = j.step_id WHERE e.id = ?",
                job.execution_id);
  }

  std::string text(const std::string& sql, const std::string& arg) {
    auto& sql_store = dynamic_cast<sql::SqlStore&>(*store);
    auto held = sql_store.lock();
    auto stmt = sql_store.connection().prepare(sql);
    stmt.bind(1, arg);
    EXPECT_TRUE(stmt.step()) << sql;
    return stmt.text(0);
  }

  const char* kTwoSteps = "pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n";

  // Triggers a two-step chain, runs its first step here and returns its
  // second, which that success took as its advance created it (with a test
  // failure when it did not).
  std::vector<ClaimedJob> second_step_taken(std::string* pipeline_id = nullptr) {
    auto t = trigger(compile(kTwoSteps), Json::array({1}));
    if (pipeline_id) *pipeline_id = t.pipeline_id;
    std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 1);
    EXPECT_EQ(first.size(), 1u);
    std::vector<ClaimedJob> next = succeed(first, 4);
    EXPECT_EQ(next.size(), 1u) << "the step its advance created";
    return next;
  }
};

TEST_F(WorkerTakesTest, TheNextChainStepIsWrittenClaimedByTheWorkerThatAdvancedIt) {
  auto t = trigger(compile(kTwoSteps), Json::array({1}));
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 1);
  ASSERT_EQ(first.size(), 1u);
  std::vector<ClaimedJob> next = succeed(first, 4);
  ASSERT_EQ(next.size(), 1u) << "the step its advance created";
  const ClaimedJob& taken = next[0];
  EXPECT_EQ(taken.run_id, t.run_id);
  EXPECT_EQ(taken.branch_id, first[0].branch_id);
  EXPECT_EQ(taken.klass, "Inc");
  EXPECT_EQ(taken.args_json, "[7]");
  EXPECT_EQ(taken.definition_sha1, first[0].definition_sha1);
  EXPECT_EQ(taken.retry_count, 0);
  EXPECT_EQ(taken.crash_count, 0);
  EXPECT_NE(taken.step_id, first[0].step_id);
  // As a claim leaves them, less the queue row it never needed: step in
  // progress, execution owned, one attempt.
  EXPECT_EQ(rows_of(taken), "in_progress|-|none|" + process_id + "|1");
  EXPECT_TRUE(store->claim_jobs("P", "someone-else", 8).empty()) << "nobody else can claim it";
  // The worker's success of it completes the run.
  std::vector<ClaimedJob> after = succeed(next, 4);
  EXPECT_TRUE(after.empty());
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  ASSERT_EQ(doc["runs"][0]["steps"].size(), 2u);
  EXPECT_EQ(doc["runs"][0]["steps"][1]["executions"].size(), 1u);
}

TEST_F(WorkerTakesTest, TheWorkersOwnAdvanceLocksTheBranchWithoutRewritingIt) {
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n  - chain: Inc\n"), Json::array({1}));
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 1);
  ASSERT_EQ(first.size(), 1u);
  const std::string branch_before =
      text("SELECT last_advanced_at || '|' || updated_at || '|' || status FROM branches WHERE id = ?",
           first[0].branch_id);
  clock->advance(60);
  std::vector<ClaimedJob> next = succeed(first, 4);
  ASSERT_EQ(next.size(), 1u) << "advanced here, a minute later";
  EXPECT_EQ(text("SELECT last_advanced_at || '|' || updated_at || '|' || status FROM branches WHERE id = ?",
                 first[0].branch_id),
            branch_before)
      << "last_advanced_at is the advancers' order: only an advancer moves it";
  EXPECT_EQ(next[0].args_json, "[7]") << "the output the success wrote";
  // The move completed where it was claimed: no transition row is kept,
  // and the step it made names the completed step it came from.
  EXPECT_EQ(text("SELECT COUNT(*) FROM transitions WHERE branch_id = ?", first[0].branch_id), "0");
  EXPECT_EQ(text("SELECT p.id || '|' || p.status FROM steps s JOIN steps p ON p.id = s.source_step_id WHERE s.id = ?",
                 next[0].step_id),
            first[0].step_id + "|completed");
}

TEST_F(WorkerTakesTest, AStepTakenAsItWasCreatedAndHandedBackUnrunIsQueuedForAnyWorker) {
  std::vector<ClaimedJob> next = second_step_taken();
  ASSERT_EQ(next.size(), 1u);
  ASSERT_EQ(rows_of(next[0]), "in_progress|-|none|" + process_id + "|1");
  // A shutdown hands it back before its user code ran.
  ASSERT_EQ(release_jobs(*store, next, process_id), 1);
  EXPECT_EQ(rows_of(next[0]), "in_progress|-|open|-|0");
  std::vector<ClaimedJob> again = store->claim_jobs("P", "someone-else", 8);
  ASSERT_EQ(again.size(), 1u) << "queued for any worker";
  EXPECT_EQ(again[0].execution_id, next[0].execution_id);
  EXPECT_EQ(again[0].args_json, "[7]");
  EXPECT_EQ(rows_of(again[0]), "in_progress|-|none|someone-else|1") << "taken again: out of the queue";
}

// A claim takes a job without gates out of the queue (its row is deleted:
// the execution says who runs it); a job with a concurrency gate keeps its
// row, marked taken, for its gate to be read while it runs. Handed back,
// both are queued again for any worker.
TEST_F(WorkerTakesTest, AClaimDeletesAPlainJobsQueueRowAndKeepsAGatedOnes) {
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n    concurrency: 1\n"), Json::array({2}));
  std::vector<ClaimedJob> taken = store->claim_jobs("P", process_id, 8);
  ASSERT_EQ(taken.size(), 2u);
  if (taken[0].args_json != "[1]") std::swap(taken[0], taken[1]);
  ASSERT_EQ(taken[0].args_json, "[1]");
  EXPECT_EQ(rows_of(taken[0]), "in_progress|-|none|" + process_id + "|1");
  EXPECT_EQ(rows_of(taken[1]), "in_progress|" + process_id + "|closed|" + process_id + "|1");
  ASSERT_EQ(release_jobs(*store, taken, process_id), 2);
  EXPECT_EQ(rows_of(taken[0]), "in_progress|-|open|-|0");
  EXPECT_EQ(rows_of(taken[1]), "in_progress|-|open|-|0");
  EXPECT_EQ(store->claim_jobs("P", "someone-else", 8).size(), 2u);
}

TEST_F(WorkerTakesTest, AStepTakenAsItWasCreatedCountsAsRunningAndKeepsAPausedPipelineBusy) {
  std::vector<ClaimedJob> next = second_step_taken();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(store->reads().metric_gauges().jobs_running["P"], 1);
  store->transact([](StoreTx& tx) { tx.set_paused("P", true); });
  EXPECT_EQ(store->reads().progress({"P"}).pipelines_paused, 0) << "a job of it still runs: not idle";
  succeed(next, 4);
  EXPECT_EQ(store->reads().metric_gauges().jobs_running["P"], 0);
}

TEST_F(WorkerTakesTest, AStepTakenAsItWasCreatedWhoseProcessVanishedIsSweptAsAnOrphan) {
  std::string pipeline_id;
  std::vector<ClaimedJob> next = second_step_taken(&pipeline_id);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(sweep_orphans(*store, 0.001, test::crash_policy(3)).executions, 0) << "its process is alive";
  text("DELETE FROM processes WHERE id = ? RETURNING id", process_id);  // gone without a goodbye
  EXPECT_EQ(sweep_orphans(*store, 3600.0, test::crash_policy(3)).executions, 0) << "too young to be an orphan";
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(sweep_orphans(*store, 0.001, test::crash_policy(3)).executions, 1);
  std::vector<ClaimedJob> again = store->claim_jobs("P", "someone-else", 8);
  ASSERT_EQ(again.size(), 1u) << "a new execution of the step is queued";
  EXPECT_EQ(again[0].step_id, next[0].step_id);
  EXPECT_EQ(again[0].crash_count, 1);
  Json first_try = (*pipeline_report(*store, pipeline_id))["runs"][0]["steps"][1]["executions"][0];
  EXPECT_EQ(first_try["error_klass"].as_string(), "OrphanedClaim");
}

TEST_F(WorkerTakesTest, AStepWithADelayIsLeftOpenForItsTime) {
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n  - chain: Inc\n    delay: 100\n"), Json::array({1}));
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(succeed(first, 4).empty()) << "not due yet: not taken";
  EXPECT_EQ(text("SELECT s.status || '|' || CASE WHEN a.completed_at IS NULL THEN 'open' ELSE 'closed' END "
                 "FROM steps s JOIN jobs j ON j.step_id = s.id JOIN executions e ON e.job_id = j.id "
                 "JOIN availabilities a ON a.execution_id = e.id WHERE s.branch_id = ? AND s.status <> 'completed'",
                 first[0].branch_id),
            "pending|open");
}

TEST_F(WorkerTakesTest, OlderDueJobsFillTheBatchButHalfKeptForTheNewSteps) {
  std::vector<std::string> runs;
  for (int i = 0; i < 4; ++i) runs.push_back(trigger(compile(kTwoSteps), Json::array({i})).run_id);
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 2);
  ASSERT_EQ(first.size(), 2u);
  // Two advances create two steps; runs 2 and 3 still wait with their
  // first steps, older. A batch of two: one of those, then one new step.
  std::vector<ClaimedJob> next = succeed(first, 2);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].run_id, runs[2]) << "the oldest due job first";
  EXPECT_EQ(next[0].step_id, text("SELECT id FROM steps WHERE run_id = ?", runs[2]));
  EXPECT_EQ(next[1].run_id, runs[0]) << "then a step the advances created";
  EXPECT_NE(next[1].step_id, first[0].step_id);
  // What was not taken is open, oldest first: run 3's first step, then
  // run 1's second.
  std::vector<ClaimedJob> rest = store->claim_jobs("P", "someone-else", 8);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].run_id, runs[3]);
  EXPECT_EQ(rest[1].run_id, runs[1]);
  EXPECT_NE(rest[1].step_id, first[1].step_id);
}

TEST_F(WorkerTakesTest, ABatchOfOneIsFirstComeFirstServed) {
  std::vector<std::string> runs;
  for (int i = 0; i < 2; ++i) runs.push_back(trigger(compile(kTwoSteps), Json::array({i})).run_id);
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 1);
  ASSERT_EQ(first.size(), 1u);
  std::vector<ClaimedJob> next = succeed(first, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].run_id, runs[1]) << "the job that was due first, not the chain in hand";
  std::vector<ClaimedJob> rest = store->claim_jobs("P", "someone-else", 8);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].run_id, runs[0]) << "the new step was written open";
}

}  // namespace
}  // namespace ductwork
