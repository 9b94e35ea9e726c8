#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "engine/branch_claims.h"
#include "engine/claim_fence.h"
#include "engine/job_end.h"
#include "engine/job_policy.h"
#include "engine/job_success.h"
#include "engine/recovery.h"
#include "engine/run_policy.h"
#include "engine/status_document.h"
#include "engine/trigger.h"
#include "store/store_error.h"
#include "store/store_tx.h"
#include "store_fixture.h"

namespace ductwork {
namespace {

using test::StoreFixture;

const char* kChain = "pipeline: P\nsteps:\n  - start: Inc\n  - chain: Double\n";

class StoreTest : public ::testing::Test, public StoreFixture {
 protected:
  void SetUp() override { store->register_process(process_id, 4242, "machine-a", "all"); }
  const std::string process_id = "proc-1";
};

TEST_F(StoreTest, MigrateIsIncrementalAndIdempotent) {
  EXPECT_TRUE(store->migrate().empty());
  testsupport::TempDir other;
  DatabaseConfig db = database;
  db.path = other.file("fresh.sqlite3");
  std::unique_ptr<testsupport::PgDatabase> fresh_pg;
  if (pg) {
    fresh_pg = std::make_unique<testsupport::PgDatabase>(testsupport::PgDatabase::Schema::kEmpty);
    db.url = fresh_pg->url();
  }
  auto fresh = make_store_factory(db)->open();
  EXPECT_FALSE(fresh->has_schema());
  auto applied = fresh->migrate();
  ASSERT_GE(applied.size(), 2u);
  EXPECT_EQ(applied.front(), "001_create_tables");
  EXPECT_TRUE(fresh->migrate().empty());
  EXPECT_TRUE(fresh->has_schema());
}

TEST_F(StoreTest, TriggerCreatesTheWholeStartInOneGo) {
  auto t = trigger(compile(kChain), Json::array({5}));
  auto report = pipeline_report(*store, t.pipeline_id);
  ASSERT_TRUE(report);
  EXPECT_EQ((*report)["status"].as_string(), "in_progress");
  ASSERT_EQ((*report)["runs"].size(), 1u);
  const Json& run = (*report)["runs"][0];
  EXPECT_EQ(run["id"].as_string(), t.run_id);
  EXPECT_EQ(run["status"].as_string(), "in_progress");
  ASSERT_EQ(run["branches"].size(), 1u);
  ASSERT_EQ(run["steps"].size(), 1u);
  EXPECT_EQ(run["steps"][0]["status"].as_string(), "pending");
  EXPECT_EQ(run["steps"][0]["to_transition"].as_string(), "start");
  EXPECT_EQ(run["steps"][0]["input"], Json::array({5}));
  EXPECT_TRUE(run["steps"][0]["output"].is_null());
  ASSERT_EQ(run["steps"][0]["executions"].size(), 1u);
  EXPECT_TRUE(run["steps"][0]["executions"][0]["result_type"].is_null());
}

// What engine/trigger.cpp builds for `definition`.
NewPipeline request(const Definition& definition, const std::string& args_json) {
  NewPipeline r;
  r.pipeline = definition.pipeline;
  r.definition_json = definition.canonical_text();
  r.definition_sha1 = definition.sha1();
  r.start_node = definition.start_node();
  r.start_klass = definition.edge(r.start_node).klass;
  r.args_json = args_json;
  return r;
}

// The write port's contract (store_tx.h): a body's writes commit when it
// returns and none are left when it throws, whatever it wrote before; the
// exception reaches the caller as it was thrown.
TEST_F(StoreTest, TransactCommitsABodyThatReturnsAndNothingOfOneThatThrows) {
  Definition p = compile(kChain);
  struct Abandoned : std::runtime_error {
    using std::runtime_error::runtime_error;
  };
  std::string written;
  EXPECT_THROW(store->transact([&](StoreTx& tx) {
    written = tx.insert_pipeline(request(p, "[1]")).pipeline_id;
    EXPECT_EQ(tx.lock_pipeline(written), std::optional<std::string>("in_progress")) << "visible inside its transaction";
    throw Abandoned("changed my mind");
  }),
               Abandoned);
  ASSERT_FALSE(written.empty());
  EXPECT_FALSE(store->reads().pipeline_record(written)) << "a body that throws leaves nothing";
  EXPECT_TRUE(store->reads().list_pipelines(ListFilter{}).empty());

  store->transact([&](StoreTx& tx) { written = tx.insert_pipeline(request(p, "[2]")).pipeline_id; });
  std::optional<PipelineRecord> kept = store->reads().pipeline_record(written);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->runs.size(), 1u);
  EXPECT_EQ(store->reads().list_pipelines(ListFilter{}).size(), 1u);
}

// 1,100 requests of two pipelines in one call: more rows than one
// multi-row statement takes, so both a full statement and the remainder's
// smaller ones run inside the one transaction.
TEST_F(StoreTest, TriggerManyWritesEveryRequestInOrder) {
  Definition p = compile(kChain);
  Definition q = compile("pipeline: Q\nsteps:\n  - start: Double\n");
  EXPECT_TRUE(trigger_requests(*store, {}).empty());
  EXPECT_TRUE(store->reads().list_pipelines(ListFilter{}).empty()) << "an empty batch writes nothing";

  std::vector<NewPipeline> requests;
  for (int i = 0; i < 1100; ++i) requests.push_back(request(i % 2 ? q : p, "[" + std::to_string(i) + ", \"x\"]"));
  std::vector<TriggeredPipeline> made = trigger_requests(*store, requests);
  ASSERT_EQ(made.size(), 1100u);
  std::set<std::string> pipeline_ids, run_ids;
  for (const auto& t : made) {
    pipeline_ids.insert(t.pipeline_id);
    run_ids.insert(t.run_id);
  }
  EXPECT_EQ(pipeline_ids.size(), 1100u);
  EXPECT_EQ(run_ids.size(), 1100u);
  ListFilter all;
  all.limit = 5000;
  EXPECT_EQ(store->reads().list_pipelines(all).size(), 1100u);
  for (int i : {0, 1, 999, 1000, 1099}) {
    SCOPED_TRACE(i);
    auto report = pipeline_report(*store, made[static_cast<size_t>(i)].pipeline_id);
    ASSERT_TRUE(report);
    EXPECT_EQ((*report)["pipeline"].as_string(), i % 2 ? "Q" : "P");
    EXPECT_EQ((*report)["status"].as_string(), "in_progress");
    const Json& run = (*report)["runs"][0];
    EXPECT_EQ(run["id"].as_string(), made[static_cast<size_t>(i)].run_id);
    ASSERT_EQ(run["steps"].size(), 1u);
    EXPECT_EQ(run["steps"][0]["klass"].as_string(), i % 2 ? "Double" : "Inc");
    EXPECT_EQ(run["steps"][0]["status"].as_string(), "pending");
    EXPECT_EQ(run["steps"][0]["to_transition"].as_string(), "start");
    EXPECT_EQ(run["steps"][0]["input"], parse_json("[" + std::to_string(i) + ", \"x\"]"));
    ASSERT_EQ(run["steps"][0]["executions"].size(), 1u);
    EXPECT_TRUE(run["steps"][0]["executions"][0]["result_type"].is_null());
  }
  // Every start step is queued for its own pipeline's workers.
  auto job = store->claim_job("Q", process_id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->klass, "Double");
  EXPECT_EQ(parse_json(job->args_json)[0].as_int() % 2, 1);
  int claimed = 1;
  while (store->claim_job("Q", process_id)) ++claimed;
  EXPECT_EQ(claimed, 550);
}

// The engine's bulk trigger: one transaction per 1,000, reported batch by
// batch, in input order.
TEST_F(StoreTest, TriggerPipelinesCommitsAThousandAtATime) {
  std::vector<std::string> args;
  for (int i = 0; i < 2500; ++i) args.push_back("[" + std::to_string(i) + "]");
  std::vector<size_t> batch_sizes;
  std::vector<TriggeredPipeline> made;
  trigger_pipelines(*store, compile(kChain), args, [&](const std::vector<TriggeredPipeline>& batch) {
    batch_sizes.push_back(batch.size());
    made.insert(made.end(), batch.begin(), batch.end());
  });
  EXPECT_EQ(batch_sizes, (std::vector<size_t>{1000, 1000, 500}));
  ASSERT_EQ(made.size(), 2500u);
  for (size_t i : {size_t{0}, size_t{999}, size_t{1000}, size_t{2499}}) {
    auto report = pipeline_report(*store, made[i].pipeline_id);
    ASSERT_TRUE(report);
    EXPECT_EQ((*report)["runs"][0]["steps"][0]["input"], Json::array({static_cast<int>(i)})) << i;
  }
}

TEST_F(StoreTest, ClaimTakesEachAvailabilityOnce) {
  auto t = trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->klass, "Inc");
  EXPECT_EQ(job->args_json, "[1]");
  EXPECT_EQ(job->run_id, t.run_id);
  EXPECT_EQ(job->retry_count, 0);
  EXPECT_FALSE(store->claim_job("P", process_id));
  EXPECT_FALSE(store->claim_job("OtherPipeline", process_id));
  auto report = pipeline_report(*store, t.pipeline_id);
  EXPECT_EQ((*report)["runs"][0]["steps"][0]["status"].as_string(), "in_progress");
}

TEST_F(StoreTest, SucceededIsFencedOnTheOwner) {
  trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job);
  EXPECT_FALSE(job_succeeded(*store, *job, "someone-else", "2"));  // CommitFailed: writes nothing
  EXPECT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  EXPECT_FALSE(job_succeeded(*store, *job, process_id, "2"));  // already closed
  auto report = pipeline_report(*store, store->reads().list_pipelines({}).front().id);
  const Json& step = (*report)["runs"][0]["steps"][0];
  EXPECT_EQ(step["status"].as_string(), "advancing");
  EXPECT_EQ(step["output"].as_int(), 2);
  ASSERT_EQ(step["executions"].size(), 1u);
  EXPECT_EQ(step["executions"][0]["result_type"].as_string(), "success");
}

using test::crash_policy;

// Group commit (issue 11): several jobs claimed in one transaction, their
// successes committed in one; each fenced on its own.
TEST_F(StoreTest, ClaimJobsTakesUpToTheBatchOldestFirstAndEachOnce) {
  std::vector<std::string> runs;
  for (int i = 0; i < 5; ++i) runs.push_back(trigger(compile(kChain), Json::array({i})).run_id);
  std::vector<ClaimedJob> first = store->claim_jobs("P", process_id, 3);
  ASSERT_EQ(first.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(first[static_cast<size_t>(i)].run_id, runs[static_cast<size_t>(i)]);
  std::vector<ClaimedJob> rest = store->claim_jobs("P", process_id, 8);
  ASSERT_EQ(rest.size(), 2u) << "only what is due";
  EXPECT_EQ(rest[0].run_id, runs[3]);
  EXPECT_TRUE(store->claim_jobs("P", process_id, 8).empty());
}

TEST_F(StoreTest, JobsSucceededFencesEachJobAndCommitsTheRestTogether) {
  for (int i = 0; i < 3; ++i) trigger(compile(kChain), Json::array({i}));
  std::vector<ClaimedJob> jobs = store->claim_jobs("P", process_id, 3);
  ASSERT_EQ(jobs.size(), 3u);
  // The reaper takes the second claim away (its owner looked dead).
  store->register_process("other", 7, "machine-b", "all");
  ClaimedJob stolen = jobs[1];
  ASSERT_TRUE(release_jobs(*store, {stolen}, process_id) == 1);
  auto again = store->claim_job("P", "other");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->execution_id, stolen.execution_id) << "a released claim is the same execution, open again";
  std::vector<JobSuccess> done;
  for (const auto& job : jobs) done.push_back(JobSuccess{&job, "7", false});
  std::vector<ClaimedJob> next;
  std::vector<bool> committed = jobs_succeeded(*store, done, process_id, &next, 4, nullptr, true);
  EXPECT_EQ(committed, (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(next.empty()) << "nothing else due";
  int successes = 0;
  for (const auto& summary : store->reads().list_pipelines({})) {
    Json step = (*pipeline_report(*store, summary.id))["runs"][0]["steps"][0];
    if (step["executions"][0]["result_type"] == "success") {
      ++successes;
      EXPECT_EQ(step["output"].as_int(), 7);
      EXPECT_EQ(step["status"].as_string(), "advancing");
    } else {
      EXPECT_TRUE(step["executions"][0]["result_type"].is_null()) << "the stolen claim is untouched";
    }
  }
  EXPECT_EQ(successes, 2);
  EXPECT_TRUE(job_succeeded(*store, *again, "other", "8")) << "its new owner still commits it";
}

TEST_F(StoreTest, ReleasedClaimsOpenAgainWithNoTraceAndReapingReleasesUnstartedOnes) {
  auto t = trigger(compile(kChain), Json::array({1}));
  trigger(compile(kChain), Json::array({2}));
  store->register_process("dead", 99, "machine-a", "all");
  std::vector<ClaimedJob> jobs = store->claim_jobs("P", "dead", 2);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(release_jobs(*store, {jobs[0]}, "someone-else"), 0) << "fenced on the owner";
  // The supervisor read the child's started log: only the first had started.
  Death death("worker pid 99 killed by SIGKILL");
  death.started = std::set<std::string>{jobs[0].execution_id};
  RecoveryCounts counts;
  ASSERT_TRUE(reap_process(*store, "dead", true, 300.0, crash_policy(3), &counts, death));
  EXPECT_EQ(counts.executions, 1);
  EXPECT_EQ(counts.released, 1);
  // What /metrics counts once the reap committed: the crashed one only.
  ASSERT_EQ(counts.crashed.size(), 1u);
  EXPECT_EQ(counts.crashed[0], std::make_pair(std::string("P"), jobs[0].klass));
  std::vector<ClaimedJob> again = store->claim_jobs("P", process_id, 4);
  ASSERT_EQ(again.size(), 2u);
  for (const auto& job : again) {
    if (job.job_id == jobs[1].job_id) {
      EXPECT_EQ(job.execution_id, jobs[1].execution_id);
      EXPECT_EQ(job.crash_count, 0) << "a claim that never started costs nothing";
    } else {
      EXPECT_EQ(job.crash_count, 1);
    }
  }
  Json steps = (*pipeline_report(*store, t.pipeline_id))["runs"][0]["steps"];
  ASSERT_EQ(steps[0]["executions"].size(), 2u) << "the started one crashed and was re-queued";
}

TEST_F(StoreTest, ErroredRetriesAfterTheDelayThenFails) {
  trigger(compile(kChain), Json::array({1}));
  ErrorInfo error{"Boom", "it broke", "frame"};
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(record_job_error(*store, *job, process_id, error, after_error(0, 0, RetryPolicy{1, 3600.0})));
  EXPECT_FALSE(store->claim_job("P", process_id)) << "the retry must wait for its delay";
  auto wait = store->seconds_until_next_job("P");
  ASSERT_TRUE(wait);
  EXPECT_GT(*wait, 3500.0);

  trigger(compile(kChain), Json::array({2}));
  auto second = store->claim_job("P", process_id);
  ASSERT_TRUE(second);
  ASSERT_TRUE(record_job_error(*store, *second, process_id, error, after_error(0, 0, RetryPolicy{1, 0.0})));
  auto retry = store->claim_job("P", process_id);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->job_id, second->job_id);
  EXPECT_EQ(retry->retry_count, 1);
  NextExecution last = after_error(retry->retry_count, retry->crash_count, RetryPolicy{1, 0.0});
  ASSERT_TRUE(last.step_failed);
  ASSERT_TRUE(record_job_error(*store, *retry, process_id, error, last));
  EXPECT_FALSE(store->claim_job("P", process_id));
}

TEST_F(StoreTest, CrashedKeepsRetryCountAndRecordsTheCause) {
  auto t = trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(record_job_crash(*store, *job, process_id, ErrorInfo{"ProcessCrash", "owner reaped", ""},
                                 after_crash(job->retry_count, job->crash_count, CrashPolicy{3, 10.0})));
  auto again = store->claim_job("P", process_id);  // first third of the budget: immediate
  ASSERT_TRUE(again);
  EXPECT_EQ(again->crash_count, 1);
  EXPECT_EQ(again->retry_count, 0);
  auto report = pipeline_report(*store, t.pipeline_id);
  const Json& first = (*report)["runs"][0]["steps"][0]["executions"][0];
  EXPECT_EQ(first["result_type"].as_string(), "process_crashed");
  EXPECT_EQ(first["error_klass"].as_string(), "ProcessCrash");
}

TEST_F(StoreTest, BranchClaimNeedsAnAdvanceableStepAndALiveProcess) {
  trigger(compile(kChain), Json::array({1}));
  BranchClaim claim;
  EXPECT_EQ(claim_branch(*store, "P", process_id, 20, 3, &claim), BranchClaimResult::kIdle);
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  EXPECT_EQ(claim_branch(*store, "P", "reaped-process", 20, 3, &claim), BranchClaimResult::kIdle);
  ASSERT_EQ(claim_branch(*store, "P", process_id, 20, 3, &claim), BranchClaimResult::kClaimed);
  EXPECT_EQ(claim.step_id, job->step_id);
  EXPECT_EQ(claim.step_status, "advancing");
  EXPECT_EQ(claim.advancement_crash_count, 0);
  EXPECT_FALSE(claim.claim_token.empty());
  BranchClaim second;
  EXPECT_EQ(claim_branch(*store, "P", process_id, 20, 3, &second), BranchClaimResult::kIdle) << "already claimed";
}

TEST_F(StoreTest, ClaimFenceRejectsADivergedToken) {
  trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  BranchClaim claim;
  ASSERT_EQ(claim_branch(*store, "P", process_id, 20, 3, &claim), BranchClaimResult::kClaimed);
  bool ran = false;
  EXPECT_FALSE(with_claim_fence(*store, claim.branch_id, "not-the-token", [&](BranchTx&) { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_TRUE(with_claim_fence(*store, claim.branch_id, claim.claim_token, [&](BranchTx& tx) {
    ran = true;
    EXPECT_EQ(tx.step_output_json(claim.step_id), "2");
    tx.release_branch(claim.branch_id);
  }));
  EXPECT_TRUE(ran);
}

TEST_F(StoreTest, FenceBodyThatThrowsWritesNothing) {
  auto t = trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  BranchClaim claim;
  ASSERT_EQ(claim_branch(*store, "P", process_id, 20, 3, &claim), BranchClaimResult::kClaimed);
  EXPECT_THROW(with_claim_fence(*store, claim.branch_id, claim.claim_token,
                                       [&](BranchTx& tx) {
                                         tx.complete_step(claim.step_id);
                                         throw std::runtime_error("routing failed");
                                       }),
               std::runtime_error);
  auto report = pipeline_report(*store, t.pipeline_id);
  EXPECT_EQ((*report)["runs"][0]["steps"][0]["status"].as_string(), "advancing");
}

TEST_F(StoreTest, SettleRunCompletesOnlyWhenNoBranchIsOpen) {
  auto t = trigger(compile(kChain), Json::array({1}));
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  BranchClaim claim;
  ASSERT_EQ(claim_branch(*store, "P", process_id, 20, 3, &claim), BranchClaimResult::kClaimed);
  RunState state = RunState::kOpen;
  ASSERT_TRUE(with_claim_fence(*store, claim.branch_id, claim.claim_token, [&](BranchTx& tx) {
    EXPECT_EQ(settle_run(tx, claim.run_id), RunState::kOpen);  // the branch is still advancing
    tx.halt_branch(claim.branch_id, "job_retries_exhausted");
    state = settle_run(tx, claim.run_id);
  }));
  EXPECT_EQ(state, RunState::kHalted);
  auto report = pipeline_report(*store, t.pipeline_id);
  EXPECT_EQ((*report)["status"].as_string(), "halted");
  EXPECT_EQ((*report)["runs"][0]["branches"][0]["halt_reason"].as_string(), "job_retries_exhausted");
}

TEST_F(StoreTest, ContextIsSetOnceUnlessOverwritten) {
  auto t = trigger(compile(kChain), Json::array({1}));
  EXPECT_FALSE(store->context_get(t.run_id, "k"));
  EXPECT_TRUE(store->context_set(t.run_id, "k", "42", false));
  EXPECT_FALSE(store->context_set(t.run_id, "k", "43", false));
  EXPECT_EQ(*store->context_get(t.run_id, "k"), "42");
  EXPECT_TRUE(store->context_set(t.run_id, "k", "{\"a\":1}", true));
  EXPECT_EQ(*store->context_get(t.run_id, "k"), "{\"a\":1}");
}

TEST_F(StoreTest, HeartbeatReportsAReapedRow) {
  EXPECT_TRUE(store->heartbeat(process_id));
  store->remove_process(process_id);
  EXPECT_FALSE(store->heartbeat(process_id));
}

TEST_F(StoreTest, ReapRechecksStalenessUnlessForced) {
  store->register_process("other", 99, "machine-a", "all");
  RecoveryCounts counts;
  EXPECT_FALSE(reap_process(*store, "other", false, 3600.0, crash_policy(3), &counts, Death())) << "fresh heartbeat";
  EXPECT_TRUE(store->heartbeat("other"));
  EXPECT_TRUE(reap_process(*store, "other", true, 3600.0, crash_policy(3), &counts, Death()));
  EXPECT_FALSE(store->heartbeat("other")) << "reaped rows are deleted";
  EXPECT_EQ(store->find_process(99, "machine-a"), std::nullopt);
  EXPECT_EQ(store->find_process(4242, "machine-a"), std::optional<std::string>(process_id));
}

TEST_F(StoreTest, StaleProcessesNeverIncludesTheCaller) {
  store->register_process("other", 99, "machine-a", "all");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(store->stale_processes(process_id, 0.001), std::vector<std::string>{"other"});
  EXPECT_TRUE(store->stale_processes(process_id, 3600.0).empty());
}

TEST_F(StoreTest, ReapingADeadOwnerCrashesItsExecutionsWithProcessCrash) {
  auto t = trigger(compile(kChain), Json::array({1}));
  store->register_process("dead", 99, "machine-a", "all");
  auto job = store->claim_job("P", "dead");
  ASSERT_TRUE(job);
  RecoveryCounts counts;
  ASSERT_TRUE(reap_process(*store, "dead", true, 300.0, crash_policy(3), &counts, Death()));
  EXPECT_EQ(counts.executions, 1);
  EXPECT_FALSE(job_succeeded(*store, *job, "dead", "2")) << "the dead owner can no longer commit";
  auto again = store->claim_job("P", process_id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->job_id, job->job_id);
  EXPECT_EQ(again->crash_count, 1);
  Json first = (*pipeline_report(*store, t.pipeline_id))["runs"][0]["steps"][0]["executions"][0];
  EXPECT_EQ(first["result_type"].as_string(), "process_crashed");
  EXPECT_EQ(first["error_klass"].as_string(), "ProcessCrash");
}

TEST_F(StoreTest, ReapingReleasesTheBranchOfAnOpenAdvancement) {
  trigger(compile(kChain), Json::array({1}));
  store->register_process("dead", 99, "machine-a", "all");
  auto job = store->claim_job("P", process_id);
  ASSERT_TRUE(job_succeeded(*store, *job, process_id, "2"));
  // A claim whose advance threw stays committed with its advancement open.
  AdvanceInClaim boom = [](BranchTx&, const BranchClaim&) { throw std::runtime_error("boom"); };
  BranchClaim claim;
  EXPECT_THROW(claim_branch(*store, "P", "dead", 20, 3, &claim, &boom), std::runtime_error);
  ASSERT_FALSE(claim.branch_id.empty());
  BranchClaim none;
  EXPECT_EQ(claim_branch(*store, "P", process_id, 20, 3, &none), BranchClaimResult::kIdle) << "still claimed";
  RecoveryCounts counts;
  ASSERT_TRUE(reap_process(*store, "dead", true, 300.0, crash_policy(3), &counts, Death()));
  EXPECT_EQ(counts.advancements, 1);
  BranchClaim next;
  ASSERT_EQ(claim_branch(*store, "P", process_id, 20, 3, &next), BranchClaimResult::kClaimed);
  EXPECT_EQ(next.branch_id, claim.branch_id);
  EXPECT_EQ(next.transition_id, claim.transition_id);
  EXPECT_EQ(next.advancement_crash_count, 1) << "the reaped advancement counts as a crash";
}

TEST_F(StoreTest, OrphanSweepTakesOnlyClaimsWithoutAProcess) {
  auto t = trigger(compile(kChain), Json::array({1}));
  auto queued = trigger(compile(kChain), Json::array({2}));
  auto job = store->claim_job("P", "ghost");  // no processes row: an orphaned claim
  ASSERT_TRUE(job);
  EXPECT_EQ(sweep_orphans(*store, 3600.0, crash_policy(3)).executions, 0) << "too young to be an orphan";
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RecoveryCounts swept = sweep_orphans(*store, 0.001, crash_policy(3));
  EXPECT_EQ(swept.executions, 1);
  ASSERT_EQ(swept.crashed.size(), 1u);
  EXPECT_EQ(swept.crashed[0], std::make_pair(std::string("P"), job->klass));
  Json first = (*pipeline_report(*store, t.pipeline_id))["runs"][0]["steps"][0]["executions"][0];
  EXPECT_EQ(first["error_klass"].as_string(), "OrphanedClaim");
  Json untouched = (*pipeline_report(*store, queued.pipeline_id))["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(untouched.size(), 1u) << "unclaimed queued work is not an orphan";
  EXPECT_TRUE(untouched[0]["result_type"].is_null());
}

TEST(SqliteStoreOpen, CorruptFileIsAClearError) {
  testsupport::TempDir dir;
  std::string path = dir.write("corrupt.sqlite3", std::string(4096, '\x5a'));
  DatabaseConfig db;
  db.path = path;
  try {
    make_store_factory(db)->open()->migrate();
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a database"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ductwork
