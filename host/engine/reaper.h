#pragma once

#include <string>

#include "config/config.h"
#include "engine/wakeup.h"
#include "engine/recovery.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// Crash recovery run by supervisors (SPEC §6): reaps process rows whose
// heartbeat went stale, and sweeps claims whose process row vanished.
class Reaper {
 public:
  // `wakeups` (may be null) is poked when recovered work becomes claimable.
  Reaper(Store& store, const Config& config, Logger& logger, Wakeups* wakeups);

  // One supervisor tick: reap every stale process except `own_process_id`,
  // then sweep orphans older than 3 × the reaper timeout.
  void tick(const std::string& own_process_id);
  // Reaps one process; `force` skips the staleness re-check (the caller
  // has proof of death). Returns false when nothing was reaped.
  // `death` says how the caller saw it die (see Store::reap_process).
  bool reap(const std::string& process_id, bool force, const Death& death = Death());

 private:
  CrashPlanner plan() const;
  // Counts in /metrics the crashes a committed recovery wrote.
  static void count_crashed(const RecoveryCounts& counts);
  void report(const char* what, const std::string& process_id, const RecoveryCounts& counts);

  Store& store_;
  const Config& config_;
  Logger& logger_;
  Wakeups* wakeups_;
};

}  // namespace ductwork
