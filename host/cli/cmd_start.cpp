// `ductwork start [--drain]`: run the host until SIGINT/SIGTERM, or with
// --drain until no run of its pipelines is in progress. By default
// (forking: fork) this process is a supervisor of child processes; with
// forking: none it runs every loop as its own threads. `--child SPEC` is how
// the supervisor starts its children.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "cli/bootstrap.h"
#include "cli/progress_line.h"
#include "cli/server_shell.h"
#include "http/http_server.h"
#include "metrics/metrics.h"
#include "engine/catalog.h"
#include "plugin/plugin_probe.h"
#include "process/child_exit.h"
#include "process/crash_report.h"
#include "process/started_log.h"
#include "process/host_runtime.h"
#include "process/process_hooks.h"
#include "process/pruner.h"
#include "process/scheduler.h"
#include "process/sd_notify.h"
#include "process/spawn.h"
#include "process/supervisor.h"

namespace ductwork::cli {
namespace {

// One line per refused definition, as `health` prints them.
std::string refused_notice(const std::vector<std::string>& refused) {
  std::string notice;
  for (const auto& problem : refused) {
    if (!notice.empty()) notice.push_back('\n');
    notice.append("refused definition: ").append(problem);
  }
  return notice;
}

// Waits for SIGINT/SIGTERM (or, with `reload`, SIGHUP) in `signals`,
// calling `tick` every 200 ms; stops early when `tick` returns false.
// Returns the signal, or 0. Without `reload` a SIGHUP is taken and ignored:
// a hangup reaches a supervisor's children too, and the supervisor decides.
template <class Tick>
int wait_for_stop(const sigset_t& signals, Logger& logger, bool reload, Tick tick) {
  while (true) {
    timespec wait{0, 200 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) {
      logger.info("Shutdown requested", Json::object({{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}}));
      return sig;
    }
    if (sig == SIGHUP && reload) {
      logger.info("Reload requested: stopping gracefully, then starting again",
                  Json::object({{"signal", "SIGHUP"}}));
      return sig;
    }
    if (!tick()) return 0;
  }
}

// What run_threaded returns after a SIGHUP: start again (restart_self).
constexpr int kRestart = -1;

// SIGHUP on a threaded host: after a graceful stop (every handle closed),
// the same command runs again in this process (same pid), re-reading
// ductwork.yml, the definitions and the plugins. Returns only if exec failed.
int restart_self() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word, '\0');) words.push_back(word);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  if (!words.empty()) ::execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "ductwork start: reload failed: could not start again: %s\n", std::strerror(errno));
  return kExitFailure;
}

// A threaded host runs plugin code in this process, so its HTTP API is a
// `ductwork serve --child` process of its own, stopped with the host.
class ServeChild {
 public:
  ServeChild(const Args& args, Logger& logger) : logger_(logger) {
    // This process's metric table, in a private folder the server reads.
    std::string folder = (std::filesystem::temp_directory_path() /
                          ("ductwork-metrics-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    if (::mkdtemp(folder.data()) != nullptr) {
      folder_ = folder;
      metrics::open_process_table(folder_);
    }
    std::vector<std::string> argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "serve", "--child"};
    if (!folder_.empty()) {
      argv.push_back("--metrics-folder");
      argv.push_back(folder_);
    }
    if (!args.config_path.empty()) {
      argv.push_back("-c");
      argv.push_back(std::filesystem::absolute(args.config_path).string());
    }
    std::string error;
    pid_ = spawn_process(argv, &error);
    if (pid_ < 0) throw std::runtime_error("http.listen: could not start the HTTP server process: " + error);
    logger_.info("HTTP server process started", Json::object({{"child_pid", pid_}}));
  }
  ~ServeChild() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    std::error_code ec;
    if (!folder_.empty()) std::filesystem::remove_all(folder_, ec);
  }
  ServeChild(const ServeChild&) = delete;
  ServeChild& operator=(const ServeChild&) = delete;

 private:
  Logger& logger_;
  std::string folder_;
  pid_t pid_ = -1;
};

// After a clean stop the database's log file is given back (SQLite: the
// -wal, which a drain of 30,000 steps left at 315 MB). Best effort: the
// work is committed either way, and the next host checkpoints it.
void compact_after_clean_stop(Bootstrap& boot) {
  try {
    boot.stores().open()->compact_journal();
  } catch (const std::exception& e) {
    boot.logger().warn("Could not compact the database's log after stopping",
                       Json::object({{"error_message", e.what()}}));
  }
}

// The schedules of the pipelines this host runs, looked at on a thread of
// the process that runs no plugin code (SPEC §18); none under --drain,
// which ends once the work already queued is done.
std::unique_ptr<Scheduler> start_scheduler(Bootstrap& boot, const std::vector<std::string>& pipelines, bool drain) {
  if (drain) return nullptr;
  std::vector<const Definition*> served;
  for (const std::string& name : pipelines) served.push_back(boot.definitions().find(name));
  std::vector<Definition> scheduled = Scheduler::scheduled(served);
  if (scheduled.empty()) return nullptr;
  auto scheduler = std::make_unique<Scheduler>(std::move(scheduled), boot.stores(), boot.logger());
  scheduler->start();
  return scheduler;
}

// `refused`: the definitions this host leaves out, for `health` to report.
int run_threaded(Bootstrap& boot, const std::vector<std::string>& pipelines, const std::vector<std::string>& refused,
                 const sigset_t& signals, bool drain, RuntimeRole role, SystemdNotifier* systemd, const Args& args) {
  std::unique_ptr<ServeChild> http;
  if (!role.supervised && !boot.config().http.listen.empty()) http = std::make_unique<ServeChild>(args, boot.logger());
  StoreFactory& stores = boot.stores();
  // Lifecycle hooks (SPEC §15): this process's roles start before its
  // first claim and stop after its loops ended. A threaded host is its own
  // supervisor; a forked child is one advancer or one worker.
  std::vector<std::string> hook_roles;
  if (!role.supervised) hook_roles.push_back("supervisor");
  if (role.advancers) hook_roles.push_back("advancer");
  if (role.workers) hook_roles.push_back("worker");
  ProcessHooks hooks(boot.runnable_plugins(), boot.logger(), boot.config().supervisor.shutdown_timeout, hook_roles,
                     pipelines);
  if (std::optional<HookFailure> failure = hooks.start()) {
    const std::string* crash_folder = args.option("crash-folder");
    if (role.supervised) write_exit_note(crash_folder ? *crash_folder : std::string(), failure->describe());
    const int rc = role.supervised ? kChildExitHookFailed : kExitFailure;
    if (hooks.left_hook_running()) {  // a hung hook's thread is still in plugin code
      if (!role.supervised) std::fprintf(stderr, "ductwork start: %s\n", failure->describe().c_str());
      std::fflush(nullptr);
      remove_pidfile();
      std::_Exit(rc);
    }
    if (role.supervised) return rc;
    throw std::runtime_error(failure->describe());
  }
  HostRuntime runtime(boot.config(), stores, boot.runnable_plugins(), boot.logger(), pipelines, role);
  runtime.set_notice(refused_notice(refused));
  runtime.set_catalog(&boot.definitions());
  runtime.start();
  // A threaded host reaps for itself, and prunes too (retention:).
  std::unique_ptr<Pruner> pruner;
  if (!role.supervised && boot.config().retention.enabled()) {
    pruner = std::make_unique<Pruner>(boot.config(), stores, boot.logger());
    pruner->start();
  }
  std::unique_ptr<Scheduler> scheduler = role.supervised ? nullptr : start_scheduler(boot, pipelines, drain);
  if (systemd) systemd->notify("READY=1\nSTATUS=Running " + std::to_string(pipelines.size()) + " pipelines in threads");
  std::unique_ptr<ProgressLine> progress;
  if (::isatty(STDOUT_FILENO)) progress = std::make_unique<ProgressLine>(boot.logger(), boot.stores().clock());
  auto store = stores.open();
  const bool supervised = role.supervised;
  std::optional<Progress> drained;  // said last, once everything stopped
  int sig = wait_for_stop(signals, boot.logger(), /*reload=*/!supervised, [&] {
    if (systemd) systemd->watchdog_tick();
    if (runtime.database_unusable()) return false;
    if (!drain && !progress) return true;
    try {
      Progress totals = store->reads().progress(pipelines);
      if (progress) {
        progress->update(totals.pipelines_total - totals.pipelines_open, totals.pipelines_total,
                         runtime.stats().steps_succeeded.load());
      }
      if (drain && totals.drained()) {
        drained = totals;
        return false;
      }
    } catch (const std::exception& e) {
      boot.logger().error("Progress query failed", Json::object({{"error_message", e.what()}}));
    }
    return true;
  });
  progress.reset();
  if (systemd) systemd->notify(sig == SIGHUP ? "RELOADING=1" : "STOPPING=1");
  if (scheduler) scheduler->stop();
  if (pruner) pruner->stop();
  runtime.stop();
  hooks.stop(runtime.abandoned_running());
  if (drained) log_drained(boot.logger(), *drained);
  // A child says why (child_exit.h): its supervisor must not restart it
  // into the same corrupt database.
  const int unusable = supervised ? kChildExitDatabaseUnusable : kExitFailure;
  const int rc = runtime.database_unusable() ? unusable : sig == SIGHUP ? kRestart : kExitOk;
  if ((rc != kRestart && runtime.abandoned_running() > 0) || hooks.left_hook_running()) {
    // A thread abandoned to a step that ignored its timeout, or to a stop
    // hook that hung, still runs in plugin code and may return into the
    // host's state: end the process here rather than destroy that state
    // under it. (A restart execs, which ends every thread too.)
    // Everything is committed already.
    std::fflush(nullptr);
    if (rc == kRestart) std::_Exit(restart_self());  // exec: the pidfile stays ours
    remove_pidfile();
    std::_Exit(rc);
  }
  if (rc == kExitOk && !supervised) {
    store.reset();
    compact_after_clean_stop(boot);
  }
  return rc;
}

int run_supervisor(Bootstrap& boot, const Args& args, const std::vector<std::string>& pipelines,
                   const sigset_t& signals, bool drain, SystemdNotifier* systemd) {
  Supervisor::Options options;
  options.notifier = systemd;
  options.executable = std::filesystem::read_symlink("/proc/self/exe").string();
  if (!args.config_path.empty()) options.config_path = std::filesystem::absolute(args.config_path).string();
  options.drain = drain;
  options.checked_plugins = boot.plugins().checked();
  for (const auto& plugin : boot.plugins().plugins()) {
    for (const auto& hook : plugin->hooks) options.hook_events.insert(hook.event);
  }
  Supervisor supervisor(boot.config(), boot.stores(), boot.logger(), pipelines, options);
  // The supervisor runs no plugin code, so it serves the HTTP API itself;
  // listening before any child starts makes a taken port fail the start.
  std::unique_ptr<http::HttpServer> http;
  if (!boot.config().http.listen.empty()) {
    http = std::make_unique<http::HttpServer>(boot.config(), boot.stores(), boot.definitions(), boot.plugins(),
                                              boot.logger(), &supervisor.collector());
    http->start(boot.config().http.listen);
  }
  std::unique_ptr<ProgressLine> progress;
  uint64_t steps = 0;
  if (::isatty(STDOUT_FILENO)) progress = std::make_unique<ProgressLine>(boot.logger(), boot.stores().clock());
  std::function<void(const Progress&, int64_t)> on_progress;
  if (progress) {
    on_progress = [&](const Progress& totals, int64_t new_steps) {
      steps += static_cast<uint64_t>(new_steps);
      progress->update(totals.pipelines_total - totals.pipelines_open, totals.pipelines_total, steps);
    };
  }
  std::unique_ptr<Scheduler> scheduler = start_scheduler(boot, pipelines, drain);
  int rc = supervisor.run(signals, on_progress);
  if (scheduler) scheduler->stop();
  progress.reset();
  if (rc == kExitOk) compact_after_clean_stop(boot);
  return rc;
}

int start_host(const Args& args, SystemdNotifier* systemd);

}  // namespace

int cmd_start(const Args& args) {
  // Under systemd (Type=notify) the top process speaks for the service;
  // children never do (the notifier takes the variables out of the
  // environment before any child starts).
  std::unique_ptr<SystemdNotifier> systemd;
  if (!args.option("child")) systemd = std::make_unique<SystemdNotifier>();
  int rc = start_host(args, systemd && systemd->enabled() ? systemd.get() : nullptr);
  if (rc != kRestart) return rc;
  // Every handle of the stopped host is closed by now. The same pid starts
  // again, and says READY=1 again.
  if (systemd) systemd->restore_environment();
  return restart_self();
}

namespace {

int start_host(const Args& args, SystemdNotifier* systemd) {
  if (!args.positionals.empty()) throw BadInput("usage: ductwork start [--drain] [-c CONFIG]");
  const std::string* child = args.option("child");
  // Signals are taken synchronously by this thread, from the very start so a
  // SIGTERM during start-up still ends in a clean exit 0. Every thread
  // inherits the blocked mask, so none of them is interrupted by them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);  // reload (docs/cli.md); never an abrupt death
  if (!child) sigaddset(&signals, SIGCHLD);  // a supervisor hears its children die at once
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // The short-lived child in which a supervisor's own hooks run.
  const bool hooks_child = child && child->rfind("hooks:", 0) == 0;
  if (child) {
    // A child never outlives its supervisor: if the supervisor dies, the
    // child stops cleanly and the next supervisor adopts the work.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) return kExitFailure;
    // A step (or a hook) that crashes this child leaves its backtrace for
    // the supervisor.
    if (const std::string* folder = args.option("crash-folder")) {
      install_crash_report(*folder);
      if (!hooks_child) {
        open_started_log(*folder);
        metrics::open_process_table(*folder);
      }
    }
  }

  Bootstrap boot(args, stdout, LogLevel::kDebug);
  boot.logger().set_role(child ? child->substr(0, child->find(':')) : boot.config().forking ? "supervisor" : "host");
  if (child) {
    const std::string* checked = args.option("plugins-checked");
    if (checked == nullptr) throw BadInput("--child needs --plugins-checked (the plugins the supervisor's probe accepted)");
    try {
      boot.load_plugins_in_process(parse_checked_plugins(*checked));
    } catch (const std::invalid_argument& e) {
      throw BadInput(std::string("--plugins-checked: ") + e.what());
    }
    boot.set_plugin_timeout_exit_code(kChildExitPluginLoadTimeout);
    boot.trust_migrated_database();
  } else {
    // The plugins load in a probe process: a SIGINT/SIGTERM meanwhile
    // (blocked here, so pending) stops start-up at once.
    boot.set_stop_check([] {
      sigset_t pending;
      sigpending(&pending);
      return sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1;
    });
  }
  // One broken definition file must not stop every pipeline of the host:
  // the others are served, and each refusal is logged (by the supervisor or
  // threaded host; its children would only repeat it).
  boot.tolerate_broken_definitions();
  std::vector<std::string> pipelines;
  try {
    pipelines = boot.hosted_pipelines();
  } catch (const PluginProbeInterrupted&) {
    boot.logger().info("Shutdown requested while loading plugins");
    return kExitOk;
  }
  std::vector<std::string> refused = boot.definition_problems();
  if (boot.config().all_pipelines) {
    // A pipeline naming a step no plugin exports is refused like a broken file.
    std::vector<std::string> served;
    for (const auto& name : pipelines) {
      const std::vector<std::string> only{name};
      std::vector<std::string> missing = check_steps_resolve(boot.definitions(), boot.plugins(), &only);
      if (missing.empty()) served.push_back(name);
      refused.insert(refused.end(), missing.begin(), missing.end());
    }
    pipelines = std::move(served);
  } else if (auto problems = check_steps_resolve(boot.definitions(), boot.plugins(), &pipelines); !problems.empty()) {
    // Pipelines the configuration names must all run.
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    throw BadInput("definitions name steps that no plugin exports:" + all);
  }
  if (pipelines.empty() && !refused.empty()) {
    std::string why;
    for (const auto& problem : refused) why += "\n  " + problem;
    throw BadInput("no pipelines to run: every definition was refused:" + why);
  }
  if (pipelines.empty()) {
    throw BadInput("no pipelines to run: no definition in " + boot.config().definitions_directory +
                   " and none exported by a plugin in " + boot.config().plugins_directory);
  }
  if (!child) {
    for (const auto& problem : refused) {
      boot.logger().error("Definition refused; its pipeline is not served", Json::object({{"problem", problem}}));
    }
  }
  bool drain = args.flag("drain");
  if (hooks_child) {
    const std::string* folder = args.option("crash-folder");
    try {
      return run_supervisor_hooks_child(boot.runnable_plugins(), boot.logger(), child->substr(6), pipelines,
                                        boot.config().supervisor.shutdown_timeout, folder ? *folder : std::string());
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    }
  }
  if (child) {
    RuntimeRole role;
    try {
      role = child_role(*child, &pipelines);
    } catch (const std::invalid_argument& e) {
      throw BadInput(e.what());
    }
    return run_threaded(boot, pipelines, refused, signals, /*drain=*/false, role, nullptr, args);
  }
  if (boot.config().forking) return run_supervisor(boot, args, pipelines, signals, drain, systemd);
  RuntimeRole role;
  role.name = boot.config().role;
  role.workers = boot.config().role != "advancer";
  role.advancers = boot.config().role != "worker";
  return run_threaded(boot, pipelines, refused, signals, drain, role, systemd, args);
}

}  // namespace

}  // namespace ductwork::cli
