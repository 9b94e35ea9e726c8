#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"
#include "store/store_types.h"

namespace ductwork {

// SPEC §4's rules for a job whose execution did not succeed, in one place:
// every store writes what these return (NextExecution) and decides nothing.

// A step that raised: retried after retry_delay until max_retry retries are
// spent (the crash count is kept).
struct RetryPolicy {
  int max_retry = 3;
  double retry_delay_seconds = 10.0;
};

// A process that died while running the step: re-run on the crash budget
// (the retry count is kept) until max_crash crashes are spent.
struct CrashPolicy {
  int max_crash = 10;
  double retry_delay_seconds = 10.0;
};

// job_worker.max_retry and retry_delay for a step of `klass`.
RetryPolicy retry_policy(const Config& config, const std::string& pipeline, const std::string& klass);

// After the execution with these counts raised. A permanent error
// (`retryable` false: the step said no retry can mend it) fails the step at
// once, however much of the retry budget is left.
NextExecution after_error(int64_t retry_count, int64_t crash_count, const RetryPolicy& policy, bool retryable = true);

// After the process running the execution with these counts died. The
// first third of the budget is retried at once (a flaky host), then each
// crash waits crash_count x retry_delay, so a poison job cannot spin.
NextExecution after_crash(int64_t retry_count, int64_t crash_count, const CrashPolicy& policy);

// SPEC §13: how long a step of `klass` may run, in seconds (0: no limit).
// job_worker.timeout given for the pipeline (or the step) is the
// operator's word and wins; else the definition's `timeout:` for the node
// (`definition_timeout`, 0 when none); else job_worker.timeout's default.
double effective_step_timeout(const Config& config, const std::string& pipeline, const std::string& klass,
                              double definition_timeout);

// The error a timed-out execution ends with (result `failure`, counted
// against the retry budget like any error the step raised).
ErrorInfo step_timeout_error(const std::string& klass, double timeout_seconds, bool honoured_cancellation);

}  // namespace ductwork
