#include "engine/job_worker.h"

#include <algorithm>
#include <chrono>

#include "store/store_error.h"
#include "util/fault.h"
#include "engine/error_info.h"
#include "engine/flow_control.h"
#include "engine/job_end.h"
#include "engine/job_success.h"
#include "engine/job_policy.h"
#include "engine/retry_when_busy.h"
#include "engine/step_invoker.h"
#include "metrics/metrics.h"

namespace ductwork {

JobWorker::JobWorker(std::string pipeline, Store& store, const PluginRegistry& registry, const Config& config,
                     Logger& logger, Wakeups& wakeups, RuntimeStats& stats, std::string process_id,
                     const std::atomic<bool>& cancelled, const std::atomic<bool>* stopping, LoopHealth* health,
                     BranchAdvance* advance, StepWatch* watch, StepJournal* journal)
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
      watch_(watch),
      journal_(journal),
      // Half the supervisor's patience: the step processes' groups are
      // killed here before the supervisor could kill this worker, which
      // would take only the step processes themselves (PR_SET_PDEATHSIG),
      // not what they started.
      process_steps_(logger, config.plugins_handshake_timeout, config.supervisor.shutdown_timeout / 2) {}

BranchAdvance::JobNode JobWorker::node_of(const ClaimedJob& job) const {
  return advance_ ? advance_->job_node(job.definition_sha1, job.run_id, job.node) : BranchAdvance::JobNode{};
}

namespace {

// A step quicker than this lets the worker's next claim take more jobs.
constexpr auto kQuickStep = std::chrono::milliseconds(2);
// A success held longer than this is committed before the next step starts.
constexpr auto kFlushAfter = std::chrono::milliseconds(5);
// A batch holds about this much work, by the mean step time of the last
// one: quick steps are claimed in hundreds (few commits), steps of a
// millisecond a dozen at a time, so none waits long behind its batch while
// another thread or host could have run it.
constexpr auto kBatchWork = std::chrono::milliseconds(20);

}  // namespace

bool JobWorker::run_once() {
  // Results kept while the database server was out of reach go first (and
  // throw again while it still is: the loop backs off).
  while (!unsettled_.empty()) {
    ClaimedJob& kept = unsettled_.front().first;
    StepOutcome& outcome = unsettled_.front().second;
    logger_.info("Kept step result committing after the database returned",
                 Json::object({{"pipeline", pipeline_}, {"job_id", kept.job_id}, {"step", kept.klass}}));
    if (outcome.ok) {
      const bool may_advance = node_of(kept).worker_may_advance;  // before `kept` is moved
      done_.push_back(Done{std::move(kept), std::move(outcome), may_advance});
    } else {
      commit_failure(kept, outcome);
    }
    unsettled_.erase(unsettled_.begin());
  }
  if (!unclosed_.empty()) close_unclosed();
  const bool stopping = stopping_ && stopping_->load();
  if (stopping && !queue_.empty()) {
    // Shutting down: steps that have not started are given back, unspent,
    // for whoever runs next (this host after a restart, or another one).
    int released = release_queue();
    logger_.info("Claimed jobs not started released at shutdown",
                 Json::object({{"pipeline", pipeline_}, {"jobs", released}}));
  }
  // Before the next claim, whichever path makes it (a success commit claims
  // the next batch in its own transaction).
  if (!stopping) age_waiting_jobs_when_due();
  if (queue_.empty()) {
    if (!done_.empty()) {
      flush(/*claim_next=*/!stopping);
      return true;
    }
    if (stopping) return false;  // nothing held, and no new claims
    if (journal_) journal_->steps_settled();  // nothing of this thread's is running or uncommitted now
    std::vector<ClaimedJob> claimed = store_.claim_jobs(pipeline_, process_id_, batch_);
    reset_step_times();
    for (auto& job : claimed) queue_.push_back(std::move(job));
  }
  if (queue_.empty()) return false;
  std::optional<ClaimedJob> job = std::move(queue_.front());
  queue_.pop_front();
  if (job->waited_seconds >= 0) metrics::job_claimed(pipeline_, job->waited_seconds);
  if (logger_.enabled(LogLevel::kDebug)) {
    logger_.debug("Job claimed", Json::object({{"pipeline", pipeline_},
                                               {"job_id", job->job_id},
                                               {"step", job->klass},
                                               {"run_id", job->run_id},
                                               {"branch_id", job->branch_id}}));
  }
  StepOutcome outcome;
  double ran_seconds = -1;
  const BranchAdvance::JobNode node = node_of(*job);
  StepWatch::Registration watched;
  bool timed_out = false;
  const double timeout = effective_step_timeout(config_, pipeline_, job->klass, node.timeout_seconds);
  // Taken off the queue, the job counts as started: if the process dies
  // from here on (in the step, or wedged before it), this claim is a crash;
  // the ones still queued are released at no cost (step_journal.h).
  if (journal_) journal_->step_started(job->execution_id);
  try {
    fault_point("after_job_claim");
    if (timeout > 0 && !queue_.empty()) {
      // A step that may be ended (its thread abandoned, its process killed)
      // runs with nothing claimed behind it: claims queued in an abandoned
      // thread could not be given back until the process stops.
      release_queue();
    }
    StepCallScope scope{&store_, &logger_, &cancelled_, job->run_id, pipeline_, job->klass, job->job_id,
                        static_cast<std::size_t>(config_.job_worker.max_output_bytes)};
    if (watch_) {
      watched = watch_->watch(*job, timeout, config_.job_worker.timeout_grace.get(pipeline_, job->klass), health_,
                              &spare_watch_);
      scope.step_cancelled = &watched->cancel;
      scope.process_pid = &watched->process_pid;
      scope.process_step = &watched->process_step;
    }
    fault_point("during_job_execution");
    {
      LoopHealth::RunningStep running(health_);
      if (journal_) journal_->running(job->execution_id);  // named by a crash report
      const auto started = store_.clock().monotonic();
      outcome = invoke_step(registry_, *job, scope, &process_steps_);
      const auto took = store_.clock().monotonic() - started;
      slowest_ = std::max(slowest_, took);
      ran_ += took;
      ++ran_count_;
      ran_seconds = std::chrono::duration<double>(took).count();
      outcome.ran_seconds = ran_seconds;
      timed_out = timeout > 0 && took >= std::chrono::duration<double>(timeout);
      if (watched) watched->returned.store(true);
      if (journal_) journal_->running(std::string());
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
    bool closed_here = record_job_error(store_, *job, process_id_, step_timeout_error(job->klass, timeout, false), next);
    if (closed_here) metrics::step_finished(pipeline_, job->klass, "failure", ran_seconds);
    logger_.warn(closed_here ? "Timed-out step returned after its grace; its worker recorded StepTimeout"
                             : "Timed-out step returned after its grace; its result is ignored",
                 Json::object({{"pipeline", pipeline_}, {"job_id", job->job_id}, {"step", job->klass}}));
    return true;
  }
  if (timed_out) {
    // SPEC §13: past its timeout, what the step returns (a value or its own
    // error) is ignored; the execution fails as StepTimeout.
    outcome.ok = false;
    outcome.retryable = true;
    outcome.error = step_timeout_error(job->klass, timeout, /*honoured_cancellation=*/true);
  }
  if (outcome.ok) {
    if (done_.empty()) first_done_at_ = store_.clock().monotonic();
    done_.push_back(Done{std::move(*job), std::move(outcome), node.worker_may_advance});
    // More claimed steps to run, and nothing held for long: commit later,
    // with them.
    if (!queue_.empty() && !(stopping_ && stopping_->load()) &&
        store_.clock().monotonic() - first_done_at_ < kFlushAfter) {
      return true;
    }
    flush(/*claim_next=*/queue_.empty() && !(stopping_ && stopping_->load()));
    return true;
  }
  try {
    commit_failure(*job, outcome);
  } catch (const std::exception& e) {
    if (is_database_unreachable(e)) {
      // SPEC §11: the result is kept and committed once the server is back,
      // if the claim's fence still holds then (a reaper may have taken it).
      logger_.warn("Database unreachable; keeping the step result to commit when it returns",
                   Json::object({{"pipeline", pipeline_}, {"job_id", job->job_id}, {"step", job->klass}}));
      unsettled_.emplace_back(std::move(*job), std::move(outcome));
    } else {
      abandon(*job, make_error_info(demangled_type_name(e), e.what()));
    }
    throw;
  }
  return true;
}

int JobWorker::release_queue() {
  std::vector<ClaimedJob> back(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
  queue_.clear();
  // Should this fail, the claims stay this process's until it is reaped or
  // its row is gone (the orphan sweep): recovered as crashes, as before
  // batching.
  return release_jobs(store_, back, process_id_);
}

void JobWorker::flush(bool claim_next) {
  // In run order: concurrent batches then take the run rows' locks (run
  // settlement, BranchTx::lock_run) in one order, and cannot deadlock on them.
  std::stable_sort(done_.begin(), done_.end(),
                   [](const Done& a, const Done& b) { return a.job.run_id < b.job.run_id; });
  std::vector<JobSuccess> batch;
  batch.reserve(done_.size());
  for (const Done& d : done_) batch.push_back(JobSuccess{&d.job, d.outcome.output_json, d.may_advance});
  // Chain, converge and divert edges, a branch's end and an arrival at a
  // fan-in are taken here, in the successes' transaction: no advancer round
  // trip (issue 11).
  advanced_count_ = 0;
  auto add_advanced = [this](const BranchClaim& claim, AdvanceEffects effects) {
    if (advanced_count_ < advanced_.size()) {
      advanced_[advanced_count_].first = claim;  // into the strings' room
      advanced_[advanced_count_].second = std::move(effects);
    } else {
      advanced_.emplace_back(claim, std::move(effects));
    }
    ++advanced_count_;
  };
  // Arrivals at a fan-in are held back, one per job that made one, and
  // written by barrier once the batch's advances of their run ran: the
  // siblings of a fan-out this batch finished are counted together, as an
  // advancer's batch counts them (Advancer::run_once).
  std::vector<std::optional<PendingArrival>> arrivals;
  BatchAdvance advance_here;
  advance_here.advance = [&](BranchTx& tx, const BranchClaim& claim, size_t index) -> std::string {
    fault_point("after_branch_claim");
    AdvanceEffects effects;
    if (arrivals.size() <= index) arrivals.resize(index + 1);
    arrivals[index].reset();
    advance_->advance(tx, claim, effects, &arrivals[index]);
    if (arrivals[index]) return arrivals[index]->barrier.branch_id;  // advanced when its group is finished
    add_advanced(claim, std::move(effects));  // last: only once the advance went through
    return std::string();
  };
  advance_here.finish = [&](BranchTx& tx, const std::vector<size_t>& indexes) {
    std::vector<const PendingArrival*> group;
    std::vector<AdvanceEffects> effects(indexes.size());
    std::vector<AdvanceEffects*> group_effects;
    for (size_t k = 0; k < indexes.size(); ++k) {
      group.push_back(&*arrivals[indexes[k]]);
      group_effects.push_back(&effects[k]);
    }
    arrive_together(tx, group, group_effects);
    for (size_t k = 0; k < indexes.size(); ++k) {  // last: only once the group went through
      add_advanced(arrivals[indexes[k]]->claim, std::move(effects[k]));
    }
  };
  // The next claim may take more jobs while the steps stay quick; one slow
  // step brings it back to one, so a slow step never holds others back.
  batch_ = next_batch();
  std::vector<ClaimedJob> next;
  size_t taken_new = 0;  // of `next`, the steps this commit's advances created
  std::vector<bool> committed;
  try {
    // With advancers of its own (role all), a worker with one success and
    // more work due leaves the branch to them; a worker-only host advances
    // every chain step it runs (nobody else may). See engine/job_success.h.
    // A deadlock the server broke by aborting this transaction (PostgreSQL)
    // wrote nothing: the claims are still ours, so the batch is tried again.
    committed = retry_when_busy(
        [&] {
          advanced_count_ = 0;
          arrivals.clear();
          return jobs_succeeded(store_, batch, process_id_, claim_next ? &next : nullptr, batch_,
                                       advance_ ? &advance_here : nullptr,
                                       /*advance_when_busy=*/config_.role == "worker", &taken_new);
        },
        [&](int attempt, const StoreError& e) {
          logger_.warn("Step results' commit met contention; trying again",
                       Json::object({{"pipeline", pipeline_},
                                     {"jobs", batch.size()},
                                     {"attempt", attempt},
                                     {"error_message", e.what()}}));
        });
  } catch (const std::exception& e) {
    std::vector<Done> held = std::move(done_);
    done_.clear();
    for (Done& d : held) {
      if (is_database_unreachable(e)) {
        // SPEC §11: kept and committed once the server is back, if the
        // claim's fence still holds then.
        unsettled_.emplace_back(std::move(d.job), std::move(d.outcome));
      } else {
        abandon(d.job, make_error_info(demangled_type_name(e), e.what()));
      }
    }
    if (is_database_unreachable(e)) {
      logger_.warn("Database unreachable; keeping step results to commit when it returns",
                   Json::object({{"pipeline", pipeline_}, {"jobs", held.size()}}));
    }
    throw;
  }
  // First thing after the commit: the gap in which a kill leaves a
  // committed success uncounted is kept as short as it can be.
  count_committed(committed);
  std::size_t succeeded = 0;
  for (std::size_t i = 0; i < done_.size(); ++i) {
    if (committed[i]) {
      ++succeeded;
      continue;
    }
    // The fence matched nothing: the reaper took this claim away and another
    // execution owns the job now. Writing anything would double-commit.
    logger_.warn("Job commit failed: the claim was taken away (CommitFailed)", fields_of(done_[i].job));
  }
  done_.clear();
  // Every step this thread started has its result committed.
  if (queue_.empty() && journal_) journal_->steps_settled();
  stats_.steps_succeeded.fetch_add(succeeded, std::memory_order_relaxed);
  // The jobs the commit claimed are queued before anything below can throw:
  // an error there must leave them to be run (or released), not held by
  // this process with nobody to run them.
  for (auto& job : next) queue_.push_back(std::move(job));
  reset_step_times();
  if (succeeded > advanced_count_) wakeups_.advancers().notify_one();
  for (size_t k = 0; k < advanced_count_; ++k) {
    const auto& [claim, effects] = advanced_[k];
    // The steps this thread took need no other worker woken for them.
    const size_t taken = std::min(taken_new, effects.jobs_created);
    taken_new -= taken;
    advance_->after_commit(claim, effects, taken);
    fault_point("after_branch_advancement");
  }
}

void JobWorker::count_committed(const std::vector<bool>& committed) const {
  // One add per step class of the batch (a batch holds few), then each
  // success's run time.
  std::vector<std::pair<const std::string*, uint64_t>> by_step;
  for (std::size_t i = 0; i < done_.size(); ++i) {
    if (!committed[i]) continue;
    const std::string& klass = done_[i].job.klass;
    auto same = std::find_if(by_step.begin(), by_step.end(), [&](const auto& s) { return *s.first == klass; });
    if (same == by_step.end()) {
      by_step.emplace_back(&klass, 1);
    } else {
      ++same->second;
    }
  }
  for (const auto& [klass, n] : by_step) metrics::steps_finished(pipeline_, *klass, "success", n);
  for (std::size_t i = 0; i < done_.size(); ++i) {
    if (committed[i] && done_[i].outcome.ran_seconds >= 0) {
      metrics::step_ran(pipeline_, done_[i].job.klass, done_[i].outcome.ran_seconds);
    }
  }
}

int JobWorker::next_batch() const {
  if (slowest_ >= kQuickStep) return 1;
  int most = std::max(config_.job_worker.batch.get(pipeline_), 1);
  if (ran_count_ > 0 && ran_.count() > 0) {
    const double mean = std::chrono::duration<double>(ran_).count() / ran_count_;
    const double fits = std::chrono::duration<double>(kBatchWork).count() / mean;
    if (fits < most) most = std::max(1, static_cast<int>(fits));
  }
  return std::min(batch_ * 2, most);
}

void JobWorker::age_waiting_jobs_when_due() {
  const double aging = config_.job_worker.priority_aging;
  if (aging <= 0) return;
  const auto now = store_.clock().monotonic();
  if (now < next_aging_) return;
  next_aging_ = now + std::chrono::duration_cast<Clock::Instant::duration>(
                          std::chrono::duration<double>(aging_period_seconds(aging)));
  age_waiting_jobs(store_, pipeline_, aging);
}

double JobWorker::idle_seconds() {
  double poll = config_.job_worker.polling_timeout.get(pipeline_);
  auto next = store_.seconds_until_next_job(pipeline_);
  if (next) poll = std::min(poll, std::max(*next, 0.002));  // floor: never spin
  return poll;
}

}  // namespace ductwork
