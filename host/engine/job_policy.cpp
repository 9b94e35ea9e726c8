#include "engine/job_policy.h"

#include <sstream>

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

RetryPolicy retry_policy(const Config& config, const std::string& pipeline, const std::string& klass) {
  return RetryPolicy{config.job_worker.max_retry.get(pipeline, klass), config.job_worker.retry_delay};
}

double effective_step_timeout(const Config& config, const std::string& pipeline, const std::string& klass,
                              double definition_timeout) {
  const Scoped<double>& timeout = config.job_worker.timeout;
  if (timeout.scoped(pipeline)) return timeout.get(pipeline, klass);
  if (definition_timeout > 0) return definition_timeout;
  return timeout.default_value();
}

ErrorInfo step_timeout_error(const std::string& klass, double timeout_seconds, bool honoured_cancellation) {
  std::ostringstream message;
  message << "step " << klass << " ran past its timeout of " << timeout_seconds << " s";
  message << (honoured_cancellation ? "; it stopped when cancelled, its result is ignored"
                                    : "; it ignored cancellation and was stopped after the grace period");
  ErrorInfo error;
  error.klass = "StepTimeout";
  error.message = message.str();
  return error;
}

}  // namespace ductwork
