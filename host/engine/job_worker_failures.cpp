// How a claimed job ends other than in success (SPEC §4): a step's error
// (a retry, or the step failed), a crash of its execution (a step process
// that died, a job stopped by shutdown), and a claim the worker could not
// close, kept until the database takes writes again. The budgets are
// engine/job_policy's; the rows are written by engine/job_end.
#include "engine/error_info.h"
#include "engine/job_end.h"
#include "engine/job_policy.h"
#include "engine/job_worker.h"
#include "metrics/metrics.h"

namespace ductwork {

NextExecution JobWorker::after_crash_of(const ClaimedJob& job) const {
  return after_crash(job.retry_count, job.crash_count,
                     CrashPolicy{config_.job_worker.max_crash.get(pipeline_, job.klass), config_.job_worker.retry_delay});
}

void JobWorker::abandon(const ClaimedJob& job, const ErrorInfo& cause) {
  NextExecution next = after_crash_of(job);
  try {
    if (record_job_crash(store_, job, process_id_, cause, next)) {
      logger_.warn("Abandoned claim closed as a crash", Json::object({{"pipeline", pipeline_},
                                                                      {"run_id", job.run_id},
                                                                      {"branch_id", job.branch_id},
                                                                      {"job_id", job.job_id},
                                                                      {"step", job.klass},
                                                                      {"error_klass", cause.klass},
                                                                      {"error_message", cause.message}}));
      closed_as_crash(job, next);
    }
  } catch (const std::exception& e) {
    logger_.error("Could not close an abandoned claim; retrying once the database takes writes",
                  Json::object({{"pipeline", pipeline_},
                                {"run_id", job.run_id},
                                {"branch_id", job.branch_id},
                                {"job_id", job.job_id},
                                {"step", job.klass},
                                {"error_klass", demangled_type_name(e)},
                                {"error_message", e.what()}}));
    unclosed_.emplace_back(job, cause);
  }
}

void JobWorker::closed_as_crash(const ClaimedJob& job, const NextExecution& next) {
  metrics::step_finished(pipeline_, job.klass, "crashed", -1);
  wakeups_.job_enqueued(pipeline_);
  if (next.step_failed) wakeups_.advancers().notify_one();
}

void JobWorker::close_unclosed() {
  while (!unclosed_.empty()) {
    const auto& [job, cause] = unclosed_.front();
    NextExecution next = after_crash_of(job);
    try {
      // False: the fence matched nothing, someone else recovered it.
      if (record_job_crash(store_, job, process_id_, cause, next)) {
        logger_.info(
            "Abandoned claim closed as a crash after the database took writes again",
            Json::object(
                {{"pipeline", pipeline_}, {"run_id", job.run_id}, {"job_id", job.job_id}, {"step", job.klass}}));
        closed_as_crash(job, next);
      }
    } catch (const std::exception&) {
      return;  // still not writable: the next iteration tries again
    }
    unclosed_.erase(unclosed_.begin());
  }
}

Json JobWorker::fields_of(const ClaimedJob& job) const {
  return Json::object({{"pipeline", pipeline_},
                       {"job_id", job.job_id},
                       {"step", job.klass},
                       {"run_id", job.run_id},
                       {"branch_id", job.branch_id}});
}

void JobWorker::commit_failure(const ClaimedJob& job, const StepOutcome& outcome) {
  Json fields = fields_of(job);
  bool committed;
  bool step_failed = false;
  const bool crashed = cancelled_.load() || outcome.crashed;
  if (crashed) {
    // The step's process died or broke the protocol (SPEC §19): a crash of
    // this execution, as a `.so` step's worker dying would be, without the
    // worker's other work going with it. Or the step stopped because we are
    // shutting down: that is not the step's fault, so it costs a crash unit
    // rather than a retry. So does an error it called permanent:
    // cancellation may have caused it, and if it is real the re-run after
    // the restart fails the step just the same.
    NextExecution next = after_crash_of(job);
    committed = record_job_crash(store_, job, process_id_, outcome.error, next);
    step_failed = next.step_failed;
    fields["error_klass"] = outcome.error.klass;
    fields["error_message"] = outcome.error.message;
    logger_.warn(outcome.crashed ? "Step process crashed; recorded as a crash"
                                 : "Job stopped by shutdown; recorded as a crash",
                 fields);
  } else {
    // A permanent error (the step said so) fails the step now: the failure
    // result is written like any other, and no retry execution is made.
    NextExecution next = after_error(
        job.retry_count, job.crash_count,
        retry_policy(config_, pipeline_, job.klass),
        outcome.retryable);
    ErrorInfo error = outcome.error;
    error.retryable = outcome.retryable;  // stored: the branch halts job_error_not_retryable
    committed = record_job_error(store_, job, process_id_, error, next);
    step_failed = next.step_failed;
    stats_.steps_errored.fetch_add(1, std::memory_order_relaxed);
    fields["error_klass"] = outcome.error.klass;
    fields["error_message"] = outcome.error.message;
    fields["retry_count"] = job.retry_count;
    fields["retryable"] = outcome.retryable;
    logger_.warn(!outcome.retryable ? "Job failed, error not retryable"
                 : step_failed      ? "Job failed, retries exhausted"
                                    : "Job errored, will retry",
                 fields);
  }
  if (!committed) {
    // The fence matched nothing: the reaper took this claim away and another
    // execution owns the job now. Writing anything would double-commit.
    logger_.warn("Job commit failed: the claim was taken away (CommitFailed)", fields_of(job));
    return;
  }
  metrics::step_finished(pipeline_, job.klass, crashed ? "crashed" : "failure", outcome.ran_seconds);
  if (step_failed) wakeups_.advancers().notify_one();
}

}  // namespace ductwork
