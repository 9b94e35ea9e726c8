#include "engine/job_policy.h"

namespace ductwork {

NextExecution after_error(int64_t retry_count, int64_t crash_count, const RetryPolicy& policy, bool retryable) {
  NextExecution next;
  next.step_failed = !retryable || retry_count >= policy.max_retry;
  next.retry_count = retry_count + 1;
  next.crash_count = crash_count;
  next.delay_seconds = policy.retry_delay_seconds;
  return next;
}

NextExecution after_crash(int64_t retry_count, int64_t crash_count, const CrashPolicy& policy) {
  NextExecution next;
  next.step_failed = crash_count >= policy.max_crash;
  next.retry_count = retry_count;
  next.crash_count = crash_count + 1;
  next.delay_seconds =
      next.crash_count <= policy.max_crash / 3 ? 0.0 : static_cast<double>(next.crash_count) * policy.retry_delay_seconds;
  return next;
}

}  // namespace ductwork
