#include "engine/reaper.h"

#include "engine/job_policy.h"
#include "engine/recovery.h"
#include "metrics/metrics.h"

namespace ductwork {

Reaper::Reaper(Store& store, const Config& config, Logger& logger, Wakeups* wakeups)
    : store_(store), config_(config), logger_(logger), wakeups_(wakeups) {}

CrashPlanner Reaper::plan() const {
  const Config& config = config_;
  // Pure: it runs inside the store's transaction, which may still roll
  // back; what committed is counted afterwards (count_crashed).
  return [&config](const ClaimedJob& job) {
    return after_crash(job.retry_count, job.crash_count,
                       CrashPolicy{config.job_worker.max_crash.get(job.pipeline, job.klass), config.job_worker.retry_delay});
  };
}

void Reaper::count_crashed(const RecoveryCounts& counts) {
  // Each claim charged a crash: its step ended with its process.
  for (const auto& [pipeline, step] : counts.crashed) metrics::step_finished(pipeline, step, "crashed", -1);
}

void Reaper::report(const char* what, const std::string& process_id, const RecoveryCounts& counts) {
  logger_.warn(what, Json::object({{"reaped_process_id", process_id},
                                   {"executions_crashed", counts.executions},
                                   {"advancements_closed", counts.advancements},
                                   {"claims_released", counts.released}}));
  if (wakeups_ && (counts.executions > 0 || counts.advancements > 0 || counts.released > 0)) {
    wakeups_->wake_everyone();
  }
}

bool Reaper::reap(const std::string& process_id, bool force, const Death& death) {
  RecoveryCounts counts;
  if (!reap_process(store_, process_id, force, config_.supervisor.reaper_timeout, plan(), &counts, death)) {
    return false;
  }
  count_crashed(counts);
  report("Process reaped", process_id, counts);
  return true;
}

void Reaper::tick(const std::string& own_process_id) {
  for (const auto& id : store_.stale_processes(own_process_id, config_.supervisor.reaper_timeout)) reap(id, false);
  RecoveryCounts orphans = sweep_orphans(store_, 3 * config_.supervisor.reaper_timeout, plan());
  count_crashed(orphans);
  if (orphans.executions > 0 || orphans.advancements > 0) report("Orphaned claims recovered", "", orphans);
}

}  // namespace ductwork
