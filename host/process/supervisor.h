#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <set>

#include "metrics/collector.h"
#include "process/database_outage.h"
#include "process/sd_notify.h"
#include "config/config.h"
#include "plugin/plugin_registry.h"
#include "process/crash_report.h"
#include "process/host_runtime.h"
#include "process/pruner.h"
#include "store/store.h"
#include "store/store_types.h"
#include "util/logger.h"

namespace ductwork {

// The forking supervisor (SPEC §6, the default mode). Runs no user code
// itself: it spawns fresh child processes (fork+exec of this binary, never a
// bare fork of a threaded process) — one advancer child for every pipeline
// and one worker child per pipeline, as the role allows — heartbeats its own
// row, runs the reaper, and watches the children. A child that exits or is
// killed (a step that segfaults takes only its child down) is noticed at
// once through SIGCHLD: its row is reaped with force, so its claims are
// recovered immediately, and it is restarted. A child whose heartbeat went
// stale is killed, reaped and restarted the same way.
class Supervisor {
 public:
  struct Options {
    std::string executable;   // this binary (/proc/self/exe)
    std::string config_path;  // passed to children with -c (empty: none)
    bool drain = false;       // stop once no run of these pipelines is open
    // systemd's notification socket (READY/STOPPING/RELOADING/WATCHDOG); null: none.
    SystemdNotifier* notifier = nullptr;
    // The plugins the probe accepted: the only files a child may load
    // (CheckedPlugin). A reload (SIGHUP) probes the folder again.
    std::vector<CheckedPlugin> checked_plugins;
    // The lifecycle-hook events (dw_hook_event) some checked plugin has
    // hooks for: the supervisor's own run in a child of their own, and a
    // child with stop hooks gets their time to run them at shutdown.
    std::set<uint32_t> hook_events;
  };

  Supervisor(const Config& config, StoreFactory& stores, Logger& logger, std::vector<std::string> pipelines,
             Options options);

  // Runs until SIGINT/SIGTERM arrives in `signals` (blocked by the caller,
  // with SIGCHLD and SIGHUP, which restarts the children gracefully) or, with drain, until the pipelines are drained. Stops the
  // children (shutdown timeout, then SIGKILL), reaps their rows and its own.
  // Returns the exit code.
  int run(const sigset_t& signals, const std::function<void(const Progress&, int64_t)>& on_progress);

  // This host's metrics: its children's tables and its own (/metrics).
  metrics::Collector& collector() { return collector_; }

 private:
  struct Child {
    std::string spec;  // "advancer" or "worker:<pipeline>"
    pid_t pid = -1;
    // A child that dies right after starting (say, it cannot open the
    // database) is restarted after a pause, not in a tight loop.
    Clock::Instant not_before{};
    // Asked to stop by a reload (SIGHUP): its exit is expected, and it is
    // started again at once.
    bool reloading = false;
    // When it was spawned, and whether it has registered its process row
    // since (loaded its plugins, opened the database): a child that never
    // does is a problem `health` reports.
    Clock::Instant spawned_at{};
    bool ready = false;
    // Why the last one ended before it became ready ("" when it did not).
    std::string unready_reason;
    // Deaths in a row before it became ready (a failing start hook, a
    // database it cannot open): each doubles the pause before the next try.
    int early_deaths = 0;
  };
  // What the supervisor's own hooks came to.
  enum class HookOutcome { kRan, kFailed, kInterrupted };

  void spawn(Child& child);
  // The command line of a child: `start --child SPEC` with this host's
  // folder, configuration and checked plugins.
  std::vector<std::string> child_args(const std::string& spec) const;
  // Runs the supervisor's hooks of `event` in a short-lived child (the
  // supervisor never runs plugin code). *failure says what went wrong.
  // During start hooks a SIGINT/SIGTERM in `signals` ends them
  // (kInterrupted).
  HookOutcome run_own_hooks(uint32_t event, const sigset_t& signals, std::string* failure);
  // Why a child that exited or was killed before it became ready ended:
  // its exit note (a failed start hook), a hook's crash, or its status.
  std::string early_death_reason(const Child& child, int status, const std::optional<CrashReport>& report) const;
  // Logs a child that a hook's crash ended: which hook, how, its frames.
  void log_hook_crash(const Child& child, int status, const CrashReport& report) const;
  // Reaps the row of a child that is gone (force: we saw it die). False
  // when the child never registered a row.
  // `death` names how it died, for the crashed executions' messages.
  // Claims whose steps the child never started (its started log) are
  // released instead.
  bool reap_child_row(pid_t pid, const char* why, Death death);
  void check_children(bool stopping, bool check_heartbeats);
  void stop_children();
  // SIGHUP: a graceful restart of every child. Each finishes its in-flight
  // steps (shutdown timeout) and is started again, re-reading ductwork.yml,
  // the definitions and the plugins.
  void reload_children();
  // SIGHUP: probes the plugins folder again in the background; the children
  // restart once it answered (with the new list, or the old one if a plugin
  // was refused as a whole: hung, exited or crashed the probe).
  void start_reprobe();
  void finish_reprobe_if_done();
  // Marks children whose process row exists now as ready.
  void check_readiness();
  // What is wrong with this host, for its process row ("" when nothing).
  std::string problem() const;
  double child_stale_after() const;

  const Config& config_;
  StoreFactory& stores_;
  Logger& logger_;
  DatabaseOutage outage_{logger_};
  std::vector<std::string> pipelines_;
  Options options_;
  std::unique_ptr<Store> store_;
  std::string process_id_;
  std::string machine_;
  std::vector<Child> children_;
  std::vector<CheckedPlugin> checked_plugins_;
  std::set<uint32_t> hook_events_;
  // What a reprobe found: the files a child may load, and their hooks' events.
  struct Probed {
    std::vector<CheckedPlugin> checked;
    std::set<uint32_t> hook_events;
  };
  std::future<Probed> reprobe_;
  std::atomic<bool> stop_reprobe_{false};
  // Children that exited because the database is not usable
  // (child_exit.h); at kUnusableExitsToStop the supervisor stops, exit 1.
  int unusable_exits_ = 0;
  std::string published_problem_;  // problem() as the process row has it
  // The retention policy's passes (retention:), when it has any age.
  std::unique_ptr<Pruner> pruner_;
  // Where children leave their crash reports (crash_report.h): a private
  // folder made at construction, removed with the supervisor.
  struct CrashFolder {
    CrashFolder();
    ~CrashFolder();
    CrashFolder(const CrashFolder&) = delete;
    CrashFolder& operator=(const CrashFolder&) = delete;
    std::string path;
  } crash_folder_;
  // After crash_folder_: the children's metric tables are kept there.
  metrics::Collector collector_{crash_folder_.path};
};

// The loops a child of the forking supervisor runs, from its `spec`
// ("advancer" or "worker:<pipeline>"); narrows *pipelines for a worker.
// Throws std::invalid_argument for an unknown spec.
RuntimeRole child_role(const std::string& spec, std::vector<std::string>* pipelines);

}  // namespace ductwork
