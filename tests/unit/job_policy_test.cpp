// The engine's rules as pure functions, tested without a database or a
// clock: SPEC §4 (a job whose execution did not succeed) and SPEC §7 (what
// revive does with a branch's last step). Every store writes what they
// return.
#include <gtest/gtest.h>

#include "engine/job_policy.h"
#include "engine/run_policy.h"

namespace ductwork {
namespace {

TEST(JobPolicy, AnErrorIsRetriedAfterTheDelayUntilTheRetriesAreSpent) {
  RetryPolicy policy{3, 2.5};
  for (int64_t retry = 0; retry < 3; ++retry) {
    NextExecution next = after_error(retry, 4, policy);
    EXPECT_FALSE(next.step_failed) << retry;
    EXPECT_EQ(next.retry_count, retry + 1);
    EXPECT_EQ(next.crash_count, 4) << "an error never spends the crash budget";
    EXPECT_EQ(next.delay_seconds, 2.5);
  }
  EXPECT_TRUE(after_error(3, 0, policy).step_failed);
  EXPECT_TRUE(after_error(0, 0, RetryPolicy{0, 1.0}).step_failed) << "max_retry 0: no retry";
}

TEST(JobPolicy, APermanentErrorFailsTheStepWithRetriesLeft) {
  RetryPolicy policy{3, 2.5};
  for (int64_t retry = 0; retry <= 3; ++retry) {
    NextExecution next = after_error(retry, 2, policy, /*retryable=*/false);
    EXPECT_TRUE(next.step_failed) << "retry " << retry << ": no retry is spent on a permanent error";
    EXPECT_EQ(next.crash_count, 2);
  }
  EXPECT_FALSE(after_error(0, 0, policy, /*retryable=*/true).step_failed) << "an ordinary error is retried";
}

TEST(JobPolicy, ACrashIsRetriedAtOnceForTheFirstThirdThenBacksOffLinearly) {
  CrashPolicy policy{9, 0.5};
  const double expected[] = {0, 0, 0, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5};  // next crash_count 1..9
  for (int64_t crash = 0; crash < 9; ++crash) {
    NextExecution next = after_crash(2, crash, policy);
    EXPECT_FALSE(next.step_failed) << crash;
    EXPECT_EQ(next.crash_count, crash + 1);
    EXPECT_EQ(next.retry_count, 2) << "a crash never spends a retry";
    EXPECT_DOUBLE_EQ(next.delay_seconds, expected[crash]) << "after crash " << crash;
  }
  EXPECT_TRUE(after_crash(0, 9, policy).step_failed);
  EXPECT_TRUE(after_crash(0, 0, CrashPolicy{0, 1.0}).step_failed) << "max_crash 0: no crash tolerated";
  EXPECT_EQ(after_crash(0, 0, CrashPolicy{2, 1.0}).delay_seconds, 1.0) << "a budget under 3 has no immediate third";
}

}  // namespace
}  // namespace ductwork

namespace ductwork {
namespace {

TEST(RunPolicy, ReviveRequeuesAFailedJobAndRetriesAnyOtherTransition) {
  EXPECT_EQ(revive_action("failed"), ReviveAction::kRequeue) << "job_retries/crashes_exhausted: run the job again";
  // A cancel (SPEC §13) leaves jobs withdrawn (cancelled, or pending when it
  // raced) or caught running: each runs again.
  for (const char* status : {"cancelled", "in_progress", "pending"}) {
    EXPECT_EQ(revive_action(status), ReviveAction::kRequeue) << status;
  }
  // A job that succeeded: its transition is tried again (a dampened branch
  // parks again).
  for (const char* status : {"advancing", "completed"}) {
    EXPECT_EQ(revive_action(status), ReviveAction::kReadvance) << status;
  }
}

}  // namespace
}  // namespace ductwork
