// Rules that wait, tested by moving the host's one clock (util/clock.h)
// instead of waiting: the crash backoff of SPEC §4, a retry's delay, a
// step's `delay:`, the reaper's heartbeat timeout, a step's timeout and its
// grace, a loop's liveness and the dashboard's window. Runs on both dialects.
#include <gtest/gtest.h>

#include "engine/loop_health.h"
#include "engine/reaper.h"
#include "engine/step_watch.h"
#include "engine_fixture.h"

namespace ductwork::test {
namespace {

class ClockTest : public EngineFixture {
 protected:
  // Seconds until pipeline P's next job is due (negative or zero: due now).
  double due_in() {
    std::optional<double> seconds = store->seconds_until_next_job("P");
    EXPECT_TRUE(seconds.has_value()) << "no job queued";
    return seconds.value_or(1e9);
  }

  // A process that claims P's job and dies; the reaper crashes the claim.
  void claim_and_die(Reaper& reaper) {
    store->register_process("doomed", 7, "m", "all");
    ASSERT_TRUE(store->claim_job("P", "doomed").has_value()) << "the job was not due";
    ASSERT_TRUE(reaper.reap("doomed", true));
  }
};

TEST_F(ClockTest, AMovedClockMovesWhatTheStoreCallsNow) {
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n    delay: 100\n"), Json::array({1}));
  EXPECT_NEAR(due_in(), 100.0, 5.0);
  clock->advance(60);
  EXPECT_NEAR(due_in(), 40.0, 5.0);
  clock->advance(-30);
  EXPECT_NEAR(due_in(), 70.0, 5.0);
}

// SPEC §4: a crashed execution is retried at once while its crash count is
// within the first third of the budget, then after crash_count × retry_delay.
TEST_F(ClockTest, CrashesAreRetriedAtOnceForAThirdOfTheBudgetThenAfterALinearDelay) {
  configure("job_worker: {max_crash: 6, retry_delay: 60}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  Reaper reaper(*store, config, logger, nullptr);

  claim_and_die(reaper);  // crash 1 of 6
  EXPECT_LE(due_in(), 0.5) << "the first third of the crash budget retries at once";
  claim_and_die(reaper);  // crash 2: still within 6 / 3
  EXPECT_LE(due_in(), 0.5);
  claim_and_die(reaper);  // crash 3: delayed 3 × 60 s
  EXPECT_NEAR(due_in(), 180.0, 5.0);
  EXPECT_FALSE(store->claim_job("P", process_id).has_value()) << "claimed before its backoff was over";

  clock->advance(170);
  EXPECT_FALSE(store->claim_job("P", process_id).has_value()) << "claimed 10 s before its backoff was over";
  clock->advance(15);
  claim_and_die(reaper);  // crash 4: delayed 4 × 60 s from the moment it was reaped
  EXPECT_NEAR(due_in(), 240.0, 5.0);

  clock->advance(245);
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  const Json& executions = doc["runs"][0]["steps"][0]["executions"];
  ASSERT_EQ(executions.size(), 5u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(executions[i]["result_type"].as_string(), "process_crashed") << i;
  EXPECT_EQ(executions[4]["result_type"].as_string(), "success");
}

TEST_F(ClockTest, AFailedStepIsRetriedAfterRetryDelay) {
  configure("job_worker: {retry_delay: 30}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: FailTimes\n"),
                   Json::array({Json::object({{"times", 1}, {"value", 5}})}));
  drain();
  EXPECT_EQ(report(t)["status"].as_string(), "in_progress");
  EXPECT_NEAR(due_in(), 30.0, 5.0);
  clock->advance(31);
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"].size(), 2u);
}

TEST_F(ClockTest, TheReaperTakesAProcessWhoseHeartbeatIsOlderThanItsTimeout) {
  configure("job_worker: {retry_delay: 0}\nsupervisor: {reaper_timeout: 300}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  store->register_process("silent", 9, "m", "all");
  ASSERT_TRUE(store->claim_job("P", "silent").has_value());
  Reaper reaper(*store, config, logger, nullptr);

  clock->advance(290);
  store->heartbeat(process_id);
  reaper.tick(process_id);
  EXPECT_FALSE(store->claim_job("P", process_id).has_value()) << "reaped before its heartbeat was stale";

  clock->advance(20);
  store->heartbeat(process_id);
  reaper.tick(process_id);
  drain();
  Json doc = report(t);
  EXPECT_EQ(doc["status"].as_string(), "completed");
  EXPECT_EQ(doc["runs"][0]["steps"][0]["executions"][0]["result_type"].as_string(), "process_crashed");
}

// SPEC §13 through the step watch: a step's timeout and its grace pass when
// the clock says so. The watch, the loops and the database read one clock.
TEST_F(ClockTest, AStepsTimeoutAndGracePassWhenTheClockMoves) {
  configure("job_worker: {retry_delay: 0, max_retry: 3}");
  auto t = trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  std::optional<ClaimedJob> job = store->claim_job("P", process_id);
  ASSERT_TRUE(job.has_value());
  int expired = 0;
  StepWatch watch(*factory, config, logger, process_id, [&](const StepWatch::Running&) { ++expired; });
  StepWatch::Registration running = watch.watch(*job, /*timeout_seconds=*/600, /*grace_seconds=*/60, nullptr);

  watch.tick();
  EXPECT_FALSE(running->cancel.load()) << "cancelled before its timeout";
  clock->advance(599);
  watch.tick();
  EXPECT_FALSE(running->timed_out.load()) << "timed out a second early";

  clock->advance(2);
  watch.tick();
  EXPECT_TRUE(running->timed_out.load());
  EXPECT_TRUE(running->cancel.load()) << "the step's cancellation flag is raised at its timeout";
  EXPECT_FALSE(running->expired.load()) << "expired before its grace";
  EXPECT_EQ(expired, 0);

  clock->advance(60);
  watch.tick();
  EXPECT_TRUE(running->expired.load());
  EXPECT_EQ(expired, 1) << "the step outlived its grace: the host is told to end it";
  Json doc = report(t);
  const Json& execution = doc["runs"][0]["steps"][0]["executions"][0];
  EXPECT_EQ(execution["result_type"].as_string(), "failure");
  EXPECT_EQ(execution["error_klass"].as_string(), "StepTimeout") << doc.dump();
}

// A worker's next step is watched with the record of its previous one
// (no allocation per step), fresh in every flag: a timed-out, cancelled,
// expired step leaves nothing to the next. A record still registered is
// never taken: the next step gets its own.
TEST_F(ClockTest, AWatchRecordUsedAgainStartsFresh) {
  configure("job_worker: {retry_delay: 0, max_retry: 3}");
  trigger(compile("pipeline: P\nsteps:\n  - start: Inc\n"), Json::array({1}));
  std::optional<ClaimedJob> job = store->claim_job("P", process_id);
  ASSERT_TRUE(job.has_value());
  StepWatch watch(*factory, config, logger, process_id, [](const StepWatch::Running&) {});
  std::shared_ptr<StepWatch::Running> spare;
  const StepWatch::Running* first = nullptr;
  {
    StepWatch::Registration running = watch.watch(*job, /*timeout_seconds=*/10, /*grace_seconds=*/1, nullptr, &spare);
    first = &*spare;
    clock->advance(20);
    watch.tick();
    ASSERT_TRUE(running->timed_out.load());
    ASSERT_TRUE(running->cancel.load());
    ASSERT_TRUE(running->expired.load());
    running->process_pid.store(42);
    StepWatch::Registration overlapping = watch.watch(*job, 0, 0, nullptr, &spare);
    EXPECT_NE(&*spare, first) << "a record still registered was handed out again";
    spare.reset();
  }
  const StepWatch::Running* second = nullptr;
  {
    StepWatch::Registration running = watch.watch(*job, 10, 1, nullptr, &spare);
    second = running.operator->();
    running->cancel.store(true);
    clock->advance(20);  // past the timeout again
  }
  ClaimedJob other = *job;
  other.klass = "AnotherStepClassWithALongName";
  StepWatch::Registration again = watch.watch(other, /*timeout_seconds=*/0, /*grace_seconds=*/0, nullptr, &spare);
  EXPECT_EQ(again.operator->(), second) << "the previous step's record, let go of, is used again";
  EXPECT_FALSE(again->cancel.load());
  EXPECT_FALSE(again->timed_out.load());
  EXPECT_FALSE(again->expired.load());
  EXPECT_FALSE(again->returned.load());
  EXPECT_EQ(again->process_pid.load(), 0);
  EXPECT_FALSE(again->past_timeout(clock->monotonic())) << "no timeout given: none kept from before";
  EXPECT_EQ(again->job.klass, "AnotherStepClassWithALongName");
  watch.tick();
  EXPECT_FALSE(again->cancel.load());
}

// The thread-health check reads the loops' ticks on the same clock.
TEST_F(ClockTest, ALoopIsStuckForAsLongAsTheClockMovedSinceItsTick) {
  LoopHealth health(*clock);
  health.tick();
  EXPECT_LT(health.stuck_seconds(LoopHealth::now_ms(*clock)), 1.0);
  clock->advance(120);
  EXPECT_NEAR(health.stuck_seconds(LoopHealth::now_ms(*clock)), 120.0, 1.0);
  {
    LoopHealth::RunningStep step(&health);
    EXPECT_EQ(health.stuck_seconds(LoopHealth::now_ms(*clock)), 0.0) << "a loop running a step is busy, not stuck";
    clock->advance(600);
  }
  EXPECT_LT(health.stuck_seconds(LoopHealth::now_ms(*clock)), 1.0) << "the step's end is a fresh tick";
}

// The dashboard's "last 15 minutes" is a window of the database clock, the
// one results are stamped with: results an hour behind or ahead of this
// machine's clock are counted while they are recent by that clock.
TEST_F(ClockTest, TheDashboardsWindowIsTheDatabaseClocks) {
  for (double shift : {-3600.0, 7200.0}) {
    clock->advance(shift);
    run("steps:\n  - start: Inc\n", Json::array({1}));
    int64_t recent = 0;
    for (const MinuteCount& m : store->reads().results_per_minute(15)) recent += m.succeeded;
    EXPECT_EQ(recent, 1) << "with the clock moved " << shift << " s";
    clock->advance(16 * 60);
    recent = 0;
    for (const MinuteCount& m : store->reads().results_per_minute(15)) recent += m.succeeded;
    EXPECT_EQ(recent, 0) << "16 minutes later by the clock moved " << shift << " s";
  }
}

}  // namespace
}  // namespace ductwork::test
