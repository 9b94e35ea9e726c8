#include "process/supervisor.h"

#include "metrics/metrics.h"
#include "process/spawn.h"

#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "engine/error_info.h"
#include "engine/reaper.h"
#include "plugin/plugin_probe.h"
#include "process/child_exit.h"
#include "process/gone_processes.h"
#include "process/crash_report.h"
#include "process/started_log.h"
#include "process/host_runtime.h"
#include "process/machine.h"
#include "store/store_error.h"
#include "util/uuid.h"
#include "util/wait_status.h"

extern char** environ;

namespace ductwork {
namespace {

// `start`'s exit code when it stopped because the database is unusable.
constexpr int kExitDatabaseUnusable = 1;
// Children that exit because the database is not usable before the
// supervisor stops: a corrupt page may be met by one child and not by the
// supervisor's own few statements, and restarting would only loop (89
// restarts in 70 s were seen), so a few such exits end the host.
constexpr int kUnusableExitsToStop = 3;
// How long past plugins.load_timeout a child may take to register before
// `health` hears of it (opening the database, starting its loops).
constexpr double kReadyMarginSeconds = 10;

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return signal_name(WTERMSIG(status));
  return "stopped";
}

// How a child was seen to die, for the crashed executions' messages:
// "worker pid 42 killed by SIGSEGV" (+ " while running step X").
std::string describe_death(const std::string& spec, pid_t pid, const std::string& how) {
  return spec.substr(0, spec.find(':')) + " pid " + std::to_string(pid) + " " + how;
}

}  // namespace

RuntimeRole child_role(const std::string& spec, std::vector<std::string>* pipelines) {
  RuntimeRole role;
  role.reaper = false;  // the supervisor reaps
  role.supervised = true;
  if (spec == "advancer") {
    role.name = "advancer";
    role.workers = false;
    return role;
  }
  if (spec.rfind("worker:", 0) == 0) {
    std::string pipeline = spec.substr(7);
    if (std::find(pipelines->begin(), pipelines->end(), pipeline) == pipelines->end()) {
      throw std::invalid_argument("--child " + spec + ": pipeline '" + pipeline + "' is not hosted");
    }
    *pipelines = {pipeline};
    role.name = "worker";
    role.advancers = false;
    return role;
  }
  throw std::invalid_argument("--child '" + spec + "': expected advancer or worker:<pipeline>");
}

Supervisor::Supervisor(const Config& config, StoreFactory& stores, Logger& logger, std::vector<std::string> pipelines,
                       Options options)
    : config_(config),
      stores_(stores),
      logger_(logger),
      pipelines_(std::move(pipelines)),
      options_(std::move(options)),
      machine_(machine_identifier()) {
  checked_plugins_ = options_.checked_plugins;
  hook_events_ = options_.hook_events;
  if (config_.role == "all" || config_.role == "advancer") children_.push_back(Child{"advancer"});
  if (config_.role == "all" || config_.role == "worker") {
    for (const auto& p : pipelines_) children_.push_back(Child{"worker:" + p});
  }
}

double Supervisor::child_stale_after() const {
  // SPEC: reaper_timeout - 10 s, so a stuck child is restarted before any
  // other supervisor would reap it; short test timeouts keep half of it.
  double t = config_.supervisor.reaper_timeout;
  return t > 20 ? t - 10 : t / 2;
}

Supervisor::CrashFolder::CrashFolder() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path temp = fs::temp_directory_path(ec);
  if (ec) return;  // without a folder, crashes have no backtrace
  // Folders of supervisors that were killed (SIGKILL skips the destructor):
  // named by their pid, removed once that process is gone.
  const std::string prefix = "ductwork-crash-";
  for (fs::directory_iterator it(temp, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    long owner = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) {
      std::error_code remove_ec;
      fs::remove_all(it->path(), remove_ec);
    }
  }
  std::string folder = (temp / (prefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (::mkdtemp(folder.data()) != nullptr) path = folder;
}

Supervisor::CrashFolder::~CrashFolder() {
  std::error_code ec;
  if (!path.empty()) std::filesystem::remove_all(path, ec);
}

std::vector<std::string> Supervisor::child_args(const std::string& spec) const {
  std::vector<std::string> args = {options_.executable, "start", "--child", spec};
  if (!crash_folder_.path.empty()) {
    args.push_back("--crash-folder");
    args.push_back(crash_folder_.path);
  }
  if (!options_.config_path.empty()) {
    args.push_back("-c");
    args.push_back(options_.config_path);
  }
  args.push_back("--plugins-checked");
  args.push_back(checked_plugins_text(checked_plugins_));
  return args;
}

void Supervisor::spawn(Child& child) {
  std::vector<std::string> args = child_args(child.spec);
  child.spawned_at = stores_.clock().monotonic();
  child.ready = false;
  std::string error;
  pid_t pid = spawn_process(args, &error);
  if (pid < 0) {
    logger_.error("Could not start child", Json::object({{"child", child.spec}, {"error_message", error}}));
    child.pid = -1;
    return;
  }
  child.pid = pid;
  logger_.info("Child started", Json::object({{"child", child.spec}, {"child_pid", pid}}));
}

bool Supervisor::reap_child_row(pid_t pid, const char* why, Death death) {
  // Its claims whose steps never started are released, not crashed.
  death.started = take_started_log(crash_folder_.path, pid);
  // Its counters keep counting in the host's total.
  collector_.retire(pid);
  try {
    if (auto row = store_->find_process(pid, machine_)) {
      Reaper(*store_, config_, logger_, nullptr).reap(*row, /*force=*/true, death);
      return true;
    }
  } catch (const std::exception& e) {
    logger_.error("Could not reap child row", Json::object({{"child_pid", pid},
                                                            {"reason", why},
                                                            {"error_klass", demangled_type_name(e)},
                                                            {"error_message", e.what()}}));
  }
  return false;
}

namespace {

// "worker" of "worker:Pipeline".
std::string role_of(const std::string& spec) { return spec.substr(0, spec.find(':')); }

}  // namespace

void Supervisor::check_children(bool stopping, bool check_heartbeats) {
  auto now = stores_.clock().monotonic();
  for (auto& child : children_) {
    if (child.pid > 0) {
      int status = 0;
      pid_t done = ::waitpid(child.pid, &status, WNOHANG);
      if (done == child.pid) {
        Json fields =
            Json::object({{"child", child.spec}, {"child_pid", child.pid}, {"status", describe_status(status)}});
        if (child.reloading) {
          logger_.info("Child stopped for reload", fields);
        } else {
          logger_.warn("Child exited", fields);
        }
        Death death(describe_death(child.spec, child.pid, how_it_ended(status)));
        std::optional<CrashReport> report = take_crash_report(crash_folder_.path, child.pid, config_.plugins_directory);
        if (report && crashed_in_hook(*report)) {
          log_hook_crash(child, status, *report);
        } else if (report) {
          death.backtrace = report->backtrace;
          death.backtrace_execution_id = report->execution_id;
        }
        bool had_started = reap_child_row(child.pid, "exited", death);
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (code == kChildExitDatabaseUnusable) ++unusable_exits_;
        if (!had_started && !child.reloading) child.unready_reason = early_death_reason(child, status, report);
        metrics::process_table().add(metrics::Family::kProcessRestartsTotal,
                                     {role_of(child.spec), child.reloading      ? "reload"
                                                           : WIFSIGNALED(status) ? "signal"
                                                                                 : "exit"});
        child.pid = -1;
        child.reloading = false;
        // Died before registering (cannot load config, plugins, database):
        // pause before the next try instead of spinning.
        // So did one that met a database it cannot use: the pause leaves
        // `health` a moment to see it before the host stops.
        // One that keeps dying so (a start hook that fails every time)
        // waits longer each time: 1, 2, 4 ... 30 s.
        if (!had_started || code == kChildExitDatabaseUnusable) {
          const int doublings = std::min(child.early_deaths, 5);
          child.early_deaths += 1;
          child.not_before = now + std::chrono::seconds(std::min(30, 1 << doublings));
        }
      } else if (auto stale = check_heartbeats ? store_->heartbeat_stale(child.pid, machine_, child_stale_after())
                                               : std::nullopt;
                 stale && *stale) {
        logger_.warn("Child heartbeat is stale; restarting it",
                     Json::object({{"child", child.spec}, {"child_pid", child.pid}}));
        ::kill(child.pid, SIGKILL);
        ::waitpid(child.pid, &status, 0);
        reap_child_row(child.pid, "stale heartbeat",
                       describe_death(child.spec, child.pid, "stopped heartbeating and was killed by SIGKILL"));
        metrics::process_table().add(metrics::Family::kProcessRestartsTotal, {role_of(child.spec), "heartbeat"});
        child.pid = -1;
      }
    }
    if (child.pid <= 0 && !stopping && now >= child.not_before) spawn(child);
  }
}

void Supervisor::check_readiness() {
  for (auto& child : children_) {
    if (child.pid <= 0 || child.ready) continue;
    if (store_->find_process(child.pid, machine_)) {
      child.ready = true;
      child.unready_reason.clear();
      child.early_deaths = 0;
    }
  }
}

std::string Supervisor::problem() const {
  std::string out;
  auto add = [&out](const std::string& text) { out += (out.empty() ? "" : "; ") + text; };
  if (unusable_exits_ > 0) {
    add(std::to_string(unusable_exits_) + " child process" + (unusable_exits_ == 1 ? "" : "es") +
        " exited because the database " + database_name(config_.database) + " is not usable");
  }
  const auto now = stores_.clock().monotonic();
  const auto patience = std::chrono::duration<double>(config_.plugins_load_timeout + kReadyMarginSeconds);
  for (const auto& child : children_) {
    if (child.ready) continue;
    if (!child.unready_reason.empty()) {
      add(child.spec + " is not running: " + child.unready_reason);
    } else if (child.pid > 0 && now - child.spawned_at > patience) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.0f", patience.count());
      add(child.spec + " pid " + std::to_string(child.pid) + " has not become ready within " + shown + " s");
    }
  }
  return out;
}

void Supervisor::start_reprobe() {
  if (reprobe_.valid()) return;  // one is under way: its answer serves this hangup too
  reprobe_ = std::async(std::launch::async, [this] {
    PluginRegistry registry;
    probe_plugins(options_.executable, config_.plugins_directory, config_.plugins_load_timeout,
                  config_.plugins_handshake_timeout, registry, logger_,
                  [this] { return stop_reprobe_.load(); });
    Probed probed{registry.checked(), {}};
    for (const auto& plugin : registry.plugins()) {
      for (const auto& hook : plugin->hooks) probed.hook_events.insert(hook.event);
    }
    return probed;
  });
}

void Supervisor::finish_reprobe_if_done() {
  if (!reprobe_.valid() || reprobe_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  try {
    Probed probed = reprobe_.get();
    checked_plugins_ = std::move(probed.checked);
    hook_events_ = std::move(probed.hook_events);
    logger_.info("Plugins checked for the reload", Json::object({{"plugins", checked_plugins_.size()}}));
  } catch (const std::exception& e) {
    reprobe_ = {};
    logger_.error("Reload: the plugins folder was refused; children restart with the plugins checked before",
                  Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
  }
  reload_children();
  if (options_.notifier) options_.notifier->notify("READY=1");
}

void Supervisor::reload_children() {
  for (auto& child : children_) {
    if (child.pid <= 0 || child.reloading) continue;
    child.reloading = true;
    ::kill(child.pid, SIGTERM);
  }
}

void Supervisor::stop_children() {
  for (auto& child : children_) {
    if (child.pid > 0) ::kill(child.pid, SIGTERM);
  }
  // Children with stop hooks run them once their loops ended, each event
  // bounded by supervisor.shutdown_timeout: they get that much more.
  const bool stop_hooks = hook_events_.count(DW_ON_WORKER_STOP) > 0 || hook_events_.count(DW_ON_ADVANCER_STOP) > 0;
  const auto deadline =
      stores_.clock().after(config_.supervisor.shutdown_timeout * (stop_hooks ? 2 : 1) + (stop_hooks ? 1 : 0));
  while (stores_.clock().monotonic() < deadline) {
    bool any = false;
    for (auto& child : children_) {
      if (child.pid <= 0) continue;
      int status = 0;
      if (::waitpid(child.pid, &status, WNOHANG) == child.pid) {
        // A stop hook that crashed its child is the hook's failure, logged;
        // shutdown goes on.
        std::optional<CrashReport> report = take_crash_report(crash_folder_.path, child.pid, config_.plugins_directory);
        if (report && crashed_in_hook(*report)) {
          log_hook_crash(child, status, *report);
        }
        // A child that stopped cleanly removed its own row; one that had
        // crashed just before the shutdown did not: recover its claims.
        reap_child_row(child.pid, "exited during shutdown",
                       describe_death(child.spec, child.pid, how_it_ended(status) + " during shutdown"));
        child.pid = -1;
      } else {
        any = true;
      }
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& child : children_) {
    if (child.pid <= 0) continue;
    logger_.warn("Child did not stop in time; killing it",
                 Json::object({{"child", child.spec}, {"child_pid", child.pid}}));
    ::kill(child.pid, SIGKILL);
    ::waitpid(child.pid, nullptr, 0);
    reap_child_row(child.pid, "killed at shutdown",
                   describe_death(child.spec, child.pid,
                                  "did not stop within supervisor.shutdown_timeout and was killed by SIGKILL"));
    child.pid = -1;
  }
}

int Supervisor::run(const sigset_t& signals, const std::function<void(const Progress&, int64_t)>& on_progress) {
  std::optional<Progress> drained;  // said last, once everything stopped
  // The supervisor's start hooks, before any child starts (SPEC §15).
  std::string hook_failure;
  switch (run_own_hooks(DW_ON_SUPERVISOR_START, signals, &hook_failure)) {
    case HookOutcome::kRan:
      break;
    case HookOutcome::kInterrupted:
      return 0;
    case HookOutcome::kFailed:
      throw std::runtime_error(hook_failure);
  }
  store_ = stores_.open();
  {
    Reaper boot_reaper(*store_, config_, logger_, nullptr);
    reap_gone_processes(*store_, boot_reaper, machine_, logger_);
  }
  process_id_ = new_uuid_v7(stores_.clock());
  store_->register_process(process_id_, ::getpid(), machine_, "supervisor");
  logger_.info("Supervisor started", Json::object({{"process_id", process_id_},
                                                   {"pipelines", Json::Array(pipelines_.begin(), pipelines_.end())},
                                                   {"host_role", config_.role}}));
  Reaper reaper(*store_, config_, logger_, nullptr);
  if (config_.retention.enabled()) {
    pruner_ = std::make_unique<Pruner>(config_, stores_, logger_);
    pruner_->start();
  }
  std::string results_cursor;
  auto next_tick = stores_.clock().monotonic();
  check_children(false, false);
  SystemdNotifier* systemd = options_.notifier;
  if (systemd) {
    systemd->notify("READY=1\nSTATUS=Supervising " + std::to_string(children_.size()) + " child processes");
  }
  int rc = 0;
  long progress_wait_ns = 100'000'000L;  // the wake-up without a signal
  while (true) {
    // The watchdog vouches for this loop: a wedged supervisor is restarted.
    if (systemd) systemd->watchdog_tick();
    // SIGCHLD ends the wait at once: a dead child is noticed immediately,
    // not after a heartbeat timeout.
    timespec wait{0, progress_wait_ns};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      logger_.info("Shutdown requested", Json::object({{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}}));
      break;
    }
    if (sig == SIGHUP) {
      // A hangup (a closed terminal, `systemctl reload`) never kills the
      // supervisor: its children restart gracefully and pick up changes.
      logger_.info("Reload requested: checking the plugins, then restarting children gracefully",
                   Json::object({{"signal", "SIGHUP"}}));
      if (systemd) systemd->notify("RELOADING=1");
      start_reprobe();
    }
    finish_reprobe_if_done();
    const uint64_t attempt = outage_.attempt();
    try {
      // Exits are checked on every wake-up (SIGCHLD); heartbeats, whose
      // threshold is seconds, once per supervisor polling interval.
      auto now = stores_.clock().monotonic();
      bool tick = now >= next_tick;
      check_children(false, tick);
      // A new problem is written at once, not at the next tick: `health`
      // is asked exactly when something goes wrong.
      if (!tick && problem() != published_problem_) tick = true;
      if (unusable_exits_ >= kUnusableExitsToStop) {
        logger_.error("Database is not usable; stopping the host",
                      Json::object({{"database", database_name(config_.database)},
                                    {"child_exits", unusable_exits_},
                                    {"error_message", "children exited " + std::to_string(unusable_exits_) +
                                                          " times because the database " +
                                                          database_name(config_.database) + " is not usable"}}));
        rc = kExitDatabaseUnusable;
        break;
      }
      if (tick) {
        next_tick = stores_.clock().after(config_.supervisor.polling_timeout);
        store_->check_storage();
        check_readiness();
        const std::string now_wrong = problem();
        if (!store_->heartbeat(process_id_, now_wrong)) {
          logger_.warn("Supervisor row was reaped; re-adopting", Json::object({{"process_id", process_id_}}));
          store_->register_process(process_id_, ::getpid(), machine_, "supervisor");
          store_->heartbeat(process_id_, now_wrong);
        }
        if (now_wrong != published_problem_) {
          // Said once a change is written, so what the log says `health` says too.
          if (now_wrong.empty()) {
            logger_.info("Host problem cleared", Json::object({{"was", published_problem_}}));
          } else {
            logger_.warn("Host problem reported to health", Json::object({{"problem", now_wrong}}));
          }
          published_problem_ = now_wrong;
        }
        reaper.tick(process_id_);
      }
      if (options_.drain || on_progress) {
        const auto asked = stores_.clock().monotonic();
        Progress totals = store_->reads().progress(pipelines_);
        if (options_.drain) {
          // A drain ends soon after the last run does (every 20 ms), but
          // never spends more than a tenth of its time counting.
          const auto took = std::chrono::duration_cast<std::chrono::nanoseconds>(stores_.clock().monotonic() - asked);
          progress_wait_ns = std::clamp<long>(10 * took.count(), 20'000'000L, 999'999'999L);
        }
        if (on_progress) on_progress(totals, store_->reads().successes_since(&results_cursor));
        if (options_.drain && totals.drained()) {
          drained = totals;
          break;
        }
      }
      outage_.succeeded(attempt);
    } catch (const std::exception& e) {
      if (is_database_unusable(e)) {
        // Children fail the same way and exit; restarting them, or going
        // on, would only spin. Stop everything and say so, exit 1.
        logger_.error("Database is not usable; stopping the host",
                      Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
        rc = kExitDatabaseUnusable;
        break;
      }
      double backoff = 0;  // the tick keeps its pace: it also watches the children
      if (!outage_.failed(e, &backoff)) {
        logger_.error("Supervisor tick failed",
                      Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
      }
    }
  }
  if (systemd) systemd->notify("STOPPING=1");
  if (pruner_) pruner_->stop();
  if (reprobe_.valid()) {
    stop_reprobe_.store(true);
    reprobe_.wait();
  }
  stop_children();
  try {
    store_->remove_process(process_id_);
  } catch (const std::exception& e) {
    logger_.error("Could not remove the process row",
                  Json::object({{"error_klass", demangled_type_name(e)}, {"error_message", e.what()}}));
  }
  // After every child stopped and this process's own row is gone, as the
  // gem runs them; a failure is logged and shutdown goes on.
  if (run_own_hooks(DW_ON_SUPERVISOR_STOP, signals, &hook_failure) == HookOutcome::kFailed) {
    logger_.error("Supervisor stop hook failed; shutdown goes on", Json::object({{"error_message", hook_failure}}));
  }
  logger_.info("Supervisor stopped", Json::object({{"process_id", process_id_}}));
  if (drained) log_drained(logger_, *drained);
  return rc;
}

}  // namespace ductwork
