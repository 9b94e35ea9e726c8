#include "engine/step_watch.h"

#include <algorithm>
#include <set>
#include <thread>

#include "engine/error_info.h"
#include "engine/job_end.h"
#include "engine/job_policy.h"
#include "metrics/metrics.h"

namespace ductwork {
namespace {

// How often the watch looks at its steps' clocks, and how often it asks the
// database whether their runs were cancelled (SPEC §13: a cancelled run's
// steps are told within well under a second).
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr auto kCancelCheck = std::chrono::milliseconds(200);

Json where(const ClaimedJob& job) {
  return Json::object({{"pipeline", job.pipeline},
                       {"run_id", job.run_id},
                       {"branch_id", job.branch_id},
                       {"job_id", job.job_id},
                       {"step", job.klass}});
}

}  // namespace

StepWatch::Registration::~Registration() {
  if (watch_ && running_) {
    running_->returned.store(true);
    watch_->unregister(running_.get());
  }
}

StepWatch::StepWatch(StoreFactory& stores, const Config& config, Logger& logger, std::string process_id,
                     OnExpired on_expired)
    : stores_(stores),
      config_(config),
      logger_(logger),
      process_id_(std::move(process_id)),
      on_expired_(std::move(on_expired)) {}

StepWatch::Registration StepWatch::watch(const ClaimedJob& job, double timeout_seconds, double grace_seconds,
                                         LoopHealth* health, std::shared_ptr<Running>* spare) {
  std::shared_ptr<Running> running;
  if (spare && *spare) {
    // Only the caller holds it once its registration ended and no tick
    // holds a copy: a tick takes and drops its copies under mutex_, so the
    // count read under it is exact and the tick's writes happened before.
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare->use_count() == 1) running = std::move(*spare);
  }
  if (running) {
    running->cancel.store(false);
    running->timed_out.store(false);
    running->expired.store(false);
    running->returned.store(false);
    running->process_pid.store(0);
    running->process_step.store(false);
    running->run_cancelled = false;
  } else {
    running = std::make_shared<Running>();
  }
  running->job = job;  // into the strings' room from the previous step
  running->timeout_seconds = timeout_seconds;
  running->grace_seconds = grace_seconds;
  running->started = stores_.clock().monotonic();
  running->health = health;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.push_back(running);
  }
  if (spare) *spare = running;
  return Registration(this, std::move(running));
}

void StepWatch::unregister(const Running* running) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_.erase(std::remove_if(running_.begin(), running_.end(),
                                [&](const std::shared_ptr<Running>& r) { return r.get() == running; }),
                 running_.end());
}

void StepWatch::run(const std::atomic<bool>& stopping) {
  while (!stopping.load()) {
    try {
      tick();
    } catch (const std::exception& e) {
      // The database is out of reach or busy: the next tick tries again.
      store_.reset();
      logger_.warn("Step watch tick failed",
                   Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
    }
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    sleep_cv_.wait_for(lock, kTick, [&] { return stopping.load(); });
  }
}

void StepWatch::wake() {
  // Taken so that the notification cannot fall between run()'s check of
  // `stopping` and its wait.
  std::lock_guard<std::mutex> lock(sleep_mutex_);
  sleep_cv_.notify_all();
}

void StepWatch::tick() {
  // The copies are dropped under mutex_ however the tick ends (watch() reads
  // the records' counts under it to use one again).
  struct Copies {
    std::mutex& mutex;
    std::vector<std::shared_ptr<Running>> running;
    ~Copies() {
      std::lock_guard<std::mutex> lock(mutex);
      running.clear();
    }
  } copies{mutex_, {}};
  std::vector<std::shared_ptr<Running>>& running = copies.running;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running = running_;
  }
  if (running.empty()) return;
  const Clock::Instant now = stores_.clock().monotonic();
  for (const auto& r : running) {
    if (!r->timed_out.load() && r->past_timeout(now)) {
      r->timed_out.store(true);
      r->cancel.store(true);
      Json fields = where(r->job);
      fields["timeout_seconds"] = r->timeout_seconds;
      fields["grace_seconds"] = r->grace_seconds;
      logger_.warn("Step ran past its timeout; cancellation raised", fields);
    }
    if (r->timed_out.load() && !r->expired.load() && !r->returned.load() &&
        now - r->started >= std::chrono::duration<double>(r->timeout_seconds + r->grace_seconds)) {
      expire(*r);
    }
  }
  if (now >= next_cancel_check_) {
    next_cancel_check_ = now + kCancelCheck;
    check_cancelled_runs(running);
  }
}

void StepWatch::check_cancelled_runs(const std::vector<std::shared_ptr<Running>>& running) {
  std::set<std::string> runs;
  for (const auto& r : running) {
    if (!r->run_cancelled) runs.insert(r->job.run_id);
  }
  if (runs.empty()) return;
  if (!store_) store_ = stores_.open();
  std::vector<std::string> cancelled = store_->cancelled_runs(std::vector<std::string>(runs.begin(), runs.end()));
  if (cancelled.empty()) return;
  std::set<std::string> hit(cancelled.begin(), cancelled.end());
  for (const auto& r : running) {
    if (r->run_cancelled || !hit.count(r->job.run_id)) continue;
    r->run_cancelled = true;
    r->cancel.store(true);
    logger_.info("Run cancelled; cancellation raised for its running step", where(r->job));
  }
}

void StepWatch::expire(Running& running) {
  if (!store_) store_ = stores_.open();
  const ClaimedJob& job = running.job;
  NextExecution next = after_error(
      job.retry_count, job.crash_count,
      retry_policy(config_, job.pipeline, job.klass));
  ErrorInfo error = step_timeout_error(job.klass, running.timeout_seconds, /*honoured_cancellation=*/false);
  // Fenced: when the step's own result (or a reaper) got there first,
  // nothing is written and the step is left alone.
  running.expired.store(true);
  bool committed = false;
  try {
    committed = record_job_error(*store_, job, process_id_, error, next);
  } catch (...) {
    running.expired.store(false);  // the next tick tries again (or the worker closes it, fenced)
    throw;
  }
  if (!committed) return;
  // Counted here, where it was committed: the step's own return (if it ever
  // comes) finds the execution closed and counts nothing.
  metrics::step_finished(job.pipeline, job.klass, "failure", -1);
  Json fields = where(job);
  fields["timeout_seconds"] = running.timeout_seconds;
  fields["grace_seconds"] = running.grace_seconds;
  fields["retry_count"] = job.retry_count;
  logger_.error("Step ignored cancellation past its timeout's grace; recorded as StepTimeout", fields);
  if (!running.returned.load() && on_expired_) on_expired_(running);
}

}  // namespace ductwork
