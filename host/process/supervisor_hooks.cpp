// The supervisor's own lifecycle hooks (SPEC §15), run in a child of their
// own, and what a child that a hook ended says for itself.
#include "process/supervisor.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>

#include "plugin/hook_runner.h"
#include "process/child_exit.h"
#include "process/spawn.h"
#include "util/wait_status.h"

namespace ductwork {

void Supervisor::log_hook_crash(const Child& child, int status, const CrashReport& report) const {
  logger_.error("Child crashed in a hook", Json::object({{"child", child.spec},
                                                         {"child_pid", child.pid},
                                                         {"hook", report.execution_id},
                                                         {"status", how_it_ended(status)},
                                                         {"error_backtrace", report.backtrace}}));
}

std::string Supervisor::early_death_reason(const Child& child, int status,
                                           const std::optional<CrashReport>& report) const {
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == kChildExitPluginLoadTimeout) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", config_.plugins_load_timeout);
    return std::string("its plugins did not finish loading within ") + shown +
           " s (plugins.load_timeout); see the log's \"Plugin refused\" line";
  }
  if (code == kChildExitHookFailed) {
    std::optional<std::string> note = take_exit_note(crash_folder_.path, child.pid);
    return "its start hook failed: " + (note ? *note : std::string("see the log's \"Start hook failed\" line"));
  }
  if (report && crashed_in_hook(*report)) return report->execution_id + " crashed (" + how_it_ended(status) + ")";
  return "ended before it became ready (" + how_it_ended(status) + ")";
}

Supervisor::HookOutcome Supervisor::run_own_hooks(uint32_t event, const sigset_t& signals, std::string* failure) {
  if (hook_events_.count(event) == 0) return HookOutcome::kRan;
  const bool start = event == DW_ON_SUPERVISOR_START;
  const std::string spec = std::string("hooks:") + hook_event_name(event);
  std::string error;
  pid_t pid = spawn_process(child_args(spec), &error);
  if (pid < 0) {
    *failure = std::string(hook_event_name(event)) + " hooks could not run: " + error;
    logger_.error("Supervisor hooks could not run", Json::object({{"event", hook_event_name(event)}, {"error_message", error}}));
    return HookOutcome::kFailed;
  }
  logger_.info("Supervisor hooks started", Json::object({{"event", hook_event_name(event)}, {"child_pid", pid}}));
  // The child bounds the hooks by supervisor.shutdown_timeout itself; this
  // is the backstop for a child that cannot even load its plugins.
  const auto deadline = stores_.clock().after(config_.supervisor.shutdown_timeout + config_.plugins_load_timeout + 5);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (stores_.clock().monotonic() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      *failure = std::string(hook_event_name(event)) + " hooks did not finish and were killed";
      logger_.error("Supervisor hooks did not finish; killed them",
                    Json::object({{"event", hook_event_name(event)}, {"child_pid", pid}}));
      return HookOutcome::kFailed;
    }
    timespec wait{0, 50 * 1000 * 1000};
    int sig = sigtimedwait(&signals, nullptr, &wait);
    if (start && (sig == SIGINT || sig == SIGTERM)) {
      logger_.info("Shutdown requested while the supervisor's start hooks ran; ending them",
                   Json::object({{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}}));
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return HookOutcome::kInterrupted;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == kExitHooksRan) return HookOutcome::kRan;
  std::optional<CrashReport> report = take_crash_report(crash_folder_.path, pid, config_.plugins_directory);
  if (std::optional<std::string> note = take_exit_note(crash_folder_.path, pid)) {
    *failure = *note;
  } else if (report && crashed_in_hook(*report)) {
    *failure = report->execution_id + " crashed (" + how_it_ended(status) + ")";
    logger_.error("Supervisor hook crashed", Json::object({{"hook", report->execution_id},
                                                           {"status", how_it_ended(status)},
                                                           {"error_backtrace", report->backtrace}}));
  } else {
    *failure = std::string(hook_event_name(event)) + " hooks did not run: their process ended (" +
               how_it_ended(status) + ")";
  }
  return HookOutcome::kFailed;
}

}  // namespace ductwork
