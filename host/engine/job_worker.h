#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "engine/branch_advance.h"
#include "engine/loop_health.h"
#include "engine/runtime_stats.h"
#include "engine/step_invoker.h"
#include "engine/step_journal.h"
#include "engine/step_watch.h"
#include "engine/wakeup.h"
#include "plugin/plugin_registry.h"
#include "plugin/process_steps.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// One job worker of one pipeline (SPEC §4): claim the oldest due execution,
// run its step, commit succeeded! or errored!. The caller's loop decides
// when to sleep; run_once never sleeps.
class JobWorker {
 public:
  // `store` is this worker thread's own connection. `cancelled` is raised on
  // shutdown and shown to the running step. `health`, when given, is marked
  // busy while user code runs, so thread-health checks never take a long
  // step for a stuck loop (SPEC §6). `advance`, when given, moves the
  // step's branch along a chain / converge / divert edge (or ends it) in
  // the success's own transaction instead of leaving it to an advancer.
  // `watch`, when given, is told of every running step (timeouts and
  // cancelled runs, SPEC §13); without one a timeout is only judged when
  // the step returns. `journal`, when given, is told which claims started
  // and which step runs (what outlives the process's death).
  JobWorker(std::string pipeline, Store& store, const PluginRegistry& registry, const Config& config,
            Logger& logger, Wakeups& wakeups, RuntimeStats& stats, std::string process_id,
            const std::atomic<bool>& cancelled, const std::atomic<bool>* stopping = nullptr,
            LoopHealth* health = nullptr, BranchAdvance* advance = nullptr, StepWatch* watch = nullptr,
            StepJournal* journal = nullptr);

  // Runs at most one job: the next one claimed ahead, or one of a newly
  // claimed batch (up to job_worker.batch jobs per transaction while steps
  // are quick, issue 11). A success is committed with the others of its
  // batch, in one transaction that also claims the next batch; one that
  // waited kFlushAfter is committed before the next step starts. Returns
  // true when it ran or committed something. Once `stopping` is raised,
  // claims whose steps have not started are released (never run here) and
  // the successes still held are committed.
  bool run_once();
  // True while claims or uncommitted successes are held: the loop must call
  // run_once until it is false before it may exit.
  bool has_pending() const { return !queue_.empty() || !done_.empty(); }

  // How long an idle loop may sleep: the polling timeout, or less when a
  // delayed retry falls due sooner.
  double idle_seconds();

  const std::string& pipeline() const { return pipeline_; }

 private:
  // The job's log fields (pipeline, job, step, run, branch).
  Json fields_of(const ClaimedJob& job) const;
  // errored! / crashed! for one job, at once.
  void commit_failure(const ClaimedJob& job, const struct StepOutcome& outcome);
  // Commits every held success in one transaction (with their chain
  // advances); claims the next batch in it when `claim_next`.
  void flush(bool claim_next);
  // Counts in /metrics the successes of done_ whose commit went through.
  void count_committed(const std::vector<bool>& committed) const;
  // Gives the claims still queued back (Store::release_jobs); how many.
  int release_queue();
  // What the run's definition says of the job's node (nothing without an
  // advance, as in unit tests).
  BranchAdvance::JobNode node_of(const ClaimedJob& job) const;
  // The engine's crash rule (job_policy.h) with this step's configuration.
  NextExecution after_crash_of(const ClaimedJob& job) const;
  // The next claim's size: twice the last while its steps were quick, at
  // most job_worker.batch and about kBatchWork of them; 1 after a slow step.
  int next_batch() const;
  // Every aging_period_seconds (engine/flow_control.h), before a claim:
  // jobs due longer than job_worker.priority_aging get the top priority.
  void age_waiting_jobs_when_due();
  // Starts a new batch's step timings.
  void reset_step_times() {
    slowest_ = ran_ = {};
    ran_count_ = 0;
  }
  // crashed! for a claim this iteration could not finish. When even that
  // write fails (a full disk), the claim is kept in unclosed_.
  void abandon(const ClaimedJob& job, const ErrorInfo& cause);
  // Closes the claims abandon() could not, once the database takes writes
  // again: this loop knows they are its own, so they are recovered at once
  // instead of waiting for the orphan sweep (3 x reaper_timeout).
  void close_unclosed();
  // A claim of this loop's was closed as a crash (committed): counted, and
  // whoever runs what follows is woken.
  void closed_as_crash(const ClaimedJob& job, const NextExecution& next);

  std::string pipeline_;
  Store& store_;
  const PluginRegistry& registry_;
  const Config& config_;
  Logger& logger_;
  Wakeups& wakeups_;
  RuntimeStats& stats_;
  std::string process_id_;
  const std::atomic<bool>& cancelled_;
  const std::atomic<bool>* stopping_;
  LoopHealth* health_;
  BranchAdvance* advance_;
  StepWatch* watch_;
  std::shared_ptr<StepWatch::Running> spare_watch_;  // StepWatch::watch's spare
  // The advances of the batch being committed (flush), for after_commit:
  // the first advanced_count_ entries. The entries stay between batches so
  // that a claim is copied into strings that already have room.
  std::vector<std::pair<BranchClaim, AdvanceEffects>> advanced_;
  size_t advanced_count_ = 0;
  StepJournal* journal_;
  // This worker's step processes (process steps, SPEC §19).
  ProcessSteps process_steps_;
  std::vector<std::pair<ClaimedJob, ErrorInfo>> unclosed_;
  // Claimed in this worker's last claim or commit, not started yet.
  std::deque<ClaimedJob> queue_;
  // Succeeded, not committed yet (group commit).
  struct Done {
    ClaimedJob job;
    StepOutcome outcome;
    bool may_advance;
  };
  std::vector<Done> done_;
  Clock::Instant first_done_at_;
  // Jobs the next claim may take (grows while steps are quick), and the
  // longest and total time of the steps run since the last claim.
  int batch_ = 1;
  Clock::Instant next_aging_{};
  Clock::Instant::duration slowest_{};
  Clock::Instant::duration ran_{};
  int ran_count_ = 0;
  // Step results whose commit met an unreachable database server, retried
  // (fenced as always) before anything else once it answers again.
  std::vector<std::pair<ClaimedJob, StepOutcome>> unsettled_;
};

}  // namespace ductwork
