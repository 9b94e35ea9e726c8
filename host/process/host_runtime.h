#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "process/database_outage.h"
#include "config/config.h"
#include "engine/catalog.h"
#include "engine/loop_health.h"
#include "engine/runtime_stats.h"
#include "engine/step_watch.h"
#include "engine/wakeup.h"
#include "plugin/plugin_registry.h"
#include "process/step_journal.h"
#include "store/store.h"
#include "util/logger.h"

namespace ductwork {

// One host process running every loop as threads (threaded mode): job
// workers per pipeline, pipeline advancers, and a heartbeat. Each thread
// owns its own store connection. Loops sleep only when idle, and are woken
// at once when this process enqueues work they can take.
// Which loops a HostRuntime runs. The threaded host runs everything; a
// forked child runs only its share and leaves reaping to its supervisor.
struct RuntimeRole {
  std::string name = "all";   // the processes.role value
  bool workers = true;        // job workers for every pipeline
  bool advancers = true;      // pipeline advancers for every pipeline
  bool reaper = true;         // reap stale processes and sweep orphans
  bool supervised = false;    // a child of the forking supervisor
};

// The last line of `start --drain`: nothing runs any more; pipelines parked
// dampened (SPEC §13) or of a paused name (issue 38) do not keep a drain
// waiting, and are named as such.
void log_drained(Logger& logger, const Progress& totals);

class HostRuntime {
 public:
  HostRuntime(const Config& config, StoreFactory& stores, const PluginRegistry& plugins, Logger& logger,
              std::vector<std::string> pipelines, RuntimeRole role = RuntimeRole{});
  ~HostRuntime();
  HostRuntime(const HostRuntime&) = delete;
  HostRuntime& operator=(const HostRuntime&) = delete;

  // What this process's row tells `ductwork health` with every heartbeat
  // (the definition files it refused); call before start().
  void set_notice(std::string notice) { notice_ = std::move(notice); }
  // The pipelines this host defines, which invoke edges start (SPEC §18);
  // call before start(), and keep `catalog` alive until stop().
  void set_catalog(const DefinitionSet* catalog) { definitions_.set_catalog(catalog); }
  // Registers this process and starts every loop thread.
  void start();
  // Stops claiming, gives in-flight steps the shutdown timeout, then asks
  // them to cancel, joins every thread and removes the process row.
  void stop();

  const std::vector<std::string>& pipelines() const { return pipelines_; }
  const std::string& process_id() const { return process_id_; }
  Wakeups& wakeups() { return wakeups_; }
  const RuntimeStats& stats() const { return stats_; }
  // True once a loop found the database unusable (corrupt, not a database,
  // an I/O error, the file replaced or its -wal deleted): every loop has
  // stopped and the host must stop and exit non-zero.
  bool database_unusable() const { return database_unusable_.load(); }
  // After stop(): worker threads left running steps that ignored their
  // timeout (threaded mode). They still use the host's state, so the
  // process must end without destroying it (cmd_start ends it with _Exit).
  size_t abandoned_running() const { return abandoned_running_; }

 private:
  void worker_loop(const std::string& pipeline, LoopHealth& health);
  // SPEC §13, for a step past its timeout's grace: a forked child kills
  // itself (the supervisor recovers its other steps as crashes); a threaded
  // host leaves the loop running it and starts a new one for its pipeline.
  void end_expired_step(const StepWatch::Running& running);
  // An advancer serving `pipelines` (a subset of the host's, see
  // PipelineAdvancerConfig::threads_for).
  void advancer_loop(const std::vector<std::string>& pipelines, LoopHealth& health);
  void heartbeat_loop();
  // Wakes idle loops when another process commits (PRAGMA data_version), so
  // work enqueued by a trigger or a sibling child is taken at once.
  void change_watch_loop();
  // Sleeps on `waker` for `seconds` ± 25 % jitter (re-rolled every time).
  void idle_wait(Waker& waker, uint64_t seen, double seconds);
  // For a loop's catch: when `e` says the database is unusable, logs it
  // once, stops every loop and returns true (the loop must exit).
  bool stop_if_database_unusable(const std::exception& e);

  const Config& config_;
  StoreFactory& stores_;
  ProcessStepJournal journal_;  // the worker loops' (started log, crash report)
  const PluginRegistry& plugins_;
  Logger& logger_;
  std::vector<std::string> pipelines_;
  RuntimeRole role_;
  Wakeups wakeups_;
  RuntimeStats stats_;
  DefinitionCache definitions_;
  std::string process_id_;
  std::string notice_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> database_unusable_{false};
  // A database server out of reach: every loop backs off and retries.
  DatabaseOutage outage_{logger_};
  std::atomic<int> busy_workers_{0};
  // Thread health: each loop thread stamps its slot at every iteration, idle
  // or not, and marks it busy while a step runs. Slots are created before
  // threads start.
  // Guarded by loops_mutex_ (a threaded host adds a loop when it abandons
  // one to a step that ignored its timeout), as is threads_.
  std::vector<std::unique_ptr<LoopHealth>> loops_;
  mutable std::mutex loops_mutex_;
  LoopHealth& new_loop_slot();
  // How long the most overdue loop that is not running a step has gone
  // without ticking, in seconds (0 when there is none).
  double oldest_tick_age() const;
  double stuck_after_seconds() const;
  Waker stop_waker_;
  // Each loop thread with its health slot (null for the heartbeat and
  // change-watch threads).
  std::vector<std::pair<std::thread, LoopHealth*>> threads_;
  // Timeouts and cancelled runs of the running steps; stopped after every
  // worker has been joined.
  std::unique_ptr<StepWatch> watch_;
  std::atomic<bool> watch_stopping_{false};
  size_t abandoned_running_ = 0;
  std::thread watch_thread_;
};

}  // namespace ductwork
