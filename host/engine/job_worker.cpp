#include "engine/job_worker.h"

#include <algorithm>
#include <chrono>

#include "store/store_error.h"
#include "util/fault.h"
#include "engine/error_info.h"
#include "engine/job_policy.h"
#include "engine/step_invoker.h"
#include "process/crash_report.h"

namespace ductwork {

JobWorker::JobWorker(std::string pipeline, Store& store, const PluginRegistry& registry, const Config& config,
                     Logger& logger, Wakeups& wakeups, RuntimeStats& stats, std::string process_id,
                     const std::atomic<bool>& cancelled, const std::atomic<bool>* stopping, LoopHealth* health,
                     BranchAdvance* advance, StepWatch* watch)
    : pipeline_(std::move(pipeline)),
      store_(store),
      registry_(registry),
      config_(config),
      logger_(logger),
      wakeups_(wakeups),
      stats_(stats),
      process_id_(std::move(process_id)),
      cancelled_(cancelled),
      stopping_(stopping),
      health_(health),
      advance_(advance),
      watch_(watch) {}

BranchAdvance::JobNode JobWorker::node_of(const ClaimedJob& job) const {
  return advance_ ? advance_->job_node(job.definition_sha1, job.run_id, job.node) : BranchAdvance::JobNode{};
}

bool JobWorker::run_once() {
  // Results kept while the database server was out of reach go first (and
  // throw again while it still is: the loop backs off).
  while (!unsettled_.empty()) {
    const ClaimedJob& kept = unsettled_.front().first;
    commit(kept, unsettled_.front().second, node_of(kept).worker_may_advance);
    logger_.info("Kept step result committed after the database returned",
                 {{"pipeline", pipeline_}, {"job_id", unsettled_.front().first.job_id},
                  {"step", unsettled_.front().first.klass}});
    unsettled_.erase(unsettled_.begin());
  }
  if (!unclosed_.empty()) close_unclosed();
  std::optional<ClaimedJob> job;
  if (pending_) {
    job = std::move(pending_);
    pending_.reset();
  } else {
    job = store_.claim_job(pipeline_, process_id_);
  }
  if (!job) return false;
  if (logger_.enabled(LogLevel::kDebug)) {
    logger_.debug("Job claimed", {{"pipeline", pipeline_}, {"job_id", job->job_id}, {"step", job->klass},
                                  {"run_id", job->run_id}, {"branch_id", job->branch_id}});
  }
  StepOutcome outcome;
  const BranchAdvance::JobNode node = node_of(*job);
  StepWatch::Registration watched;
  bool timed_out = false;
  double timeout = 0;
  try {
    fault_point("after_job_claim");
    StepCallScope scope{&store_, &logger_, &cancelled_, job->run_id, pipeline_, job->klass, job->job_id,
                        static_cast<std::size_t>(config_.job_worker.max_output_bytes)};
    timeout = effective_step_timeout(config_, pipeline_, job->klass, node.timeout_seconds);
    if (watch_) {
      watched = watch_->watch(*job, timeout, config_.job_worker.timeout_grace.get(pipeline_, job->klass), health_);
      scope.step_cancelled = &watched->cancel;
    }
    fault_point("during_job_execution");
    {
      LoopHealth::RunningStep running(health_);
      set_running_execution(job->execution_id);  // named by a crash report
      const auto started = std::chrono::steady_clock::now();
      outcome = invoke_step(registry_, *job, scope);
      timed_out = timeout > 0 && std::chrono::steady_clock::now() - started >= std::chrono::duration<double>(timeout);
      if (watched) watched->returned.store(true);
      set_running_execution(std::string());
    }
    if (outcome.plugin != nullptr) {
      job->plugin_name = outcome.plugin->name;
      job->plugin_version = outcome.plugin->version;
    }
  } catch (const std::exception& e) {
    // The iteration is leaving with a claim it has not committed. Close it
    // now with the real error (a crash, not a retry) rather than leave it
    // for the reaper; the execution is fenced, so a claim that was
    // committed or taken away meanwhile is left alone.
    abandon(*job, make_error_info(demangled_type_name(e), e.what()));
    throw;
  }
  if (watched && watched->expired.load()) {
    // The watch closed the execution as StepTimeout when the grace ran out
    // (and the process or thread is being ended). Written again here, fenced,
    // in case the watch's write failed: the first one wins, the other writes
    // nothing. What the step returned is ignored either way.
    NextExecution next = after_error(
        job->retry_count, job->crash_count,
        retry_policy(config_, pipeline_, job->klass));
    bool closed_here = store_.job_errored(*job, process_id_, step_timeout_error(job->klass, timeout, false), next);
    logger_.warn(closed_here ? "Timed-out step returned after its grace; its worker recorded StepTimeout"
                             : "Timed-out step returned after its grace; its result is ignored",
                 {{"pipeline", pipeline_}, {"job_id", job->job_id}, {"step", job->klass}});
    return true;
  }
  if (timed_out) {
    // SPEC §13: past its timeout, what the step returns (a value or its own
    // error) is ignored; the execution fails as StepTimeout.
    outcome.ok = false;
    outcome.retryable = true;
    outcome.error = step_timeout_error(job->klass, timeout, /*honoured_cancellation=*/true);
  }
  try {
    commit(*job, outcome, node.worker_may_advance);
  } catch (const std::exception& e) {
    if (is_database_unreachable(e)) {
      // SPEC §11: the result is kept and committed once the server is back,
      // if the claim's fence still holds then (a reaper may have taken it).
      logger_.warn("Database unreachable; keeping the step result to commit when it returns",
                   {{"pipeline", pipeline_}, {"job_id", job->job_id}, {"step", job->klass}});
      unsettled_.emplace_back(std::move(*job), std::move(outcome));
    } else {
      abandon(*job, make_error_info(demangled_type_name(e), e.what()));
    }
    throw;
  }
  return true;
}

NextExecution JobWorker::after_crash_of(const ClaimedJob& job) const {
  return after_crash(job.retry_count, job.crash_count,
                     CrashPolicy{config_.job_worker.max_crash.get(pipeline_, job.klass), config_.job_worker.retry_delay});
}

void JobWorker::abandon(const ClaimedJob& job, const ErrorInfo& cause) {
  NextExecution next = after_crash_of(job);
  try {
    if (store_.job_crashed(job, process_id_, cause, next)) {
      logger_.warn("Abandoned claim closed as a crash",
                   {{"pipeline", pipeline_}, {"run_id", job.run_id}, {"branch_id", job.branch_id},
                    {"job_id", job.job_id}, {"step", job.klass}, {"error_klass", cause.klass},
                    {"error_message", cause.message}});
      wakeups_.job_enqueued(pipeline_);
      if (next.step_failed) wakeups_.advancers().notify_one();
    }
  } catch (const std::exception& e) {
    logger_.error("Could not close an abandoned claim; retrying once the database takes writes",
                  {{"pipeline", pipeline_}, {"run_id", job.run_id}, {"branch_id", job.branch_id},
                   {"job_id", job.job_id}, {"step", job.klass}, {"error_klass", demangled_type_name(e)},
                   {"error_message", e.what()}});
    unclosed_.emplace_back(job, cause);
  }
}

void JobWorker::close_unclosed() {
  while (!unclosed_.empty()) {
    const auto& [job, cause] = unclosed_.front();
    NextExecution next = after_crash_of(job);
    try {
      // False: the fence matched nothing, someone else recovered it.
      if (store_.job_crashed(job, process_id_, cause, next)) {
        logger_.info("Abandoned claim closed as a crash after the database took writes again",
                     {{"pipeline", pipeline_}, {"run_id", job.run_id}, {"job_id", job.job_id}, {"step", job.klass}});
        wakeups_.job_enqueued(pipeline_);
        if (next.step_failed) wakeups_.advancers().notify_one();
      }
    } catch (const std::exception&) {
      return;  // still not writable: the next iteration tries again
    }
    unclosed_.erase(unclosed_.begin());
  }
}

void JobWorker::commit(const ClaimedJob& job, const StepOutcome& outcome, bool may_advance) {
  // Built only when something is logged: the success path is the hot path.
  auto where = [&] {
    return json{{"pipeline", pipeline_}, {"job_id", job.job_id}, {"step", job.klass},
                {"run_id", job.run_id},  {"branch_id", job.branch_id}};
  };
  bool committed;
  bool step_failed = false;
  if (outcome.ok) {
    bool claim_next = !(stopping_ && stopping_->load());
    // A chain, converge or divert edge (or the branch's end) is taken here,
    // in the success's transaction: no advancer round trip (issue 11).
    std::optional<BranchClaim> advanced;
    AdvanceEffects effects;
    Store::AdvanceInClaim advance_here = [&](BranchTx& tx, const BranchClaim& claim) {
      fault_point("after_branch_claim");
      AdvanceEffects done;
      advance_->advance(tx, claim, done);
      effects = std::move(done);
      advanced = claim;  // last: set only when the advance went through
    };
    bool inline_advance = advance_ && may_advance;
    // With advancers of its own (role all), a worker that has more work due
    // leaves the branch to them: they batch many per commit. A worker-only
    // host advances every chain step it runs (nobody else may).
    committed = store_.job_succeeded(job, process_id_, outcome.output_json, claim_next ? &pending_ : nullptr,
                                     inline_advance ? &advance_here : nullptr,
                                     /*advance_when_busy=*/config_.role == "worker");
    if (committed) {
      stats_.steps_succeeded.fetch_add(1, std::memory_order_relaxed);
      if (advanced) {
        advance_->after_commit(*advanced, effects);
        fault_point("after_branch_advancement");
      } else {
        wakeups_.advancers().notify_one();
      }
    }
  } else if (cancelled_.load()) {
    // The step stopped because we are shutting down: that is not the step's
    // fault, so it costs a crash unit rather than a retry. So does an error
    // it called permanent: cancellation may have caused it, and if it is
    // real the re-run after the restart fails the step just the same.
    NextExecution next = after_crash_of(job);
    committed = store_.job_crashed(job, process_id_, outcome.error, next);
    step_failed = next.step_failed;
    json fields = where();
    fields["error_klass"] = outcome.error.klass;
    fields["error_message"] = outcome.error.message;
    logger_.warn("Job stopped by shutdown; recorded as a crash", fields);
  } else {
    // A permanent error (the step said so) fails the step now: the failure
    // result is written like any other, and no retry execution is made.
    NextExecution next = after_error(
        job.retry_count, job.crash_count,
        retry_policy(config_, pipeline_, job.klass),
        outcome.retryable);
    ErrorInfo error = outcome.error;
    error.retryable = outcome.retryable;  // stored: the branch halts job_error_not_retryable
    committed = store_.job_errored(job, process_id_, error, next);
    step_failed = next.step_failed;
    stats_.steps_errored.fetch_add(1, std::memory_order_relaxed);
    json fields = where();
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
    logger_.warn("Job commit failed: the claim was taken away (CommitFailed)", where());
    return;
  }
  if (step_failed) wakeups_.advancers().notify_one();
}

double JobWorker::idle_seconds() {
  double poll = config_.job_worker.polling_timeout.get(pipeline_);
  auto next = store_.seconds_until_next_job(pipeline_);
  if (next) poll = std::min(poll, std::max(*next, 0.002));  // floor: never spin
  return poll;
}

}  // namespace ductwork
