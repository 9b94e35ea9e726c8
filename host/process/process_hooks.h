#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "plugin/hook_runner.h"

namespace ductwork {

// The lifecycle hooks of one host process (SPEC §15), for the roles it
// plays: a threaded host is the supervisor, an advancer and a worker at
// once; a forked child is one advancer or one worker. Start hooks run role
// by role (supervisor, advancer, worker) before the process's loops start;
// stop hooks after its loops ended, in the reverse order of roles. Each
// event is bounded by `timeout_seconds` (supervisor.shutdown_timeout).
class ProcessHooks {
 public:
  ProcessHooks(const PluginRegistry& plugins, Logger& logger, double timeout_seconds, std::vector<std::string> roles,
               std::vector<std::string> pipelines);

  // Runs the start hooks. On a failure the stop hooks of the roles already
  // started run (what they opened is closed again) and the failure is
  // returned: the process must not start its loops.
  std::optional<HookFailure> start();
  // Runs the stop hooks of every started role. Never while a step of this
  // process runs: with `steps_still_running` (threads abandoned to steps
  // that ignored their timeout) they are skipped, and the log says so.
  void stop(std::size_t steps_still_running = 0);
  // A hook did not return in time and still runs on one of this process's
  // threads: end the process with _Exit, never by unloading plugins.
  bool left_hook_running() const { return runner_.left_hook_running(); }

 private:
  HookRunner runner_;
  Logger& logger_;
  double timeout_seconds_;
  std::vector<std::string> roles_;
  std::vector<std::string> pipelines_;
  std::size_t started_ = 0;  // roles whose start hooks all ran
};

// `ductwork start --child hooks:on_supervisor_start` (or _stop): the
// short-lived child in which a forking supervisor's own hooks run. Runs
// them for the supervisor (this process's parent) and returns the exit
// code: 0, or kChildExitHookFailed after leaving the failure's description
// for the supervisor (crash_report.h, write_exit_note).
int run_supervisor_hooks_child(const PluginRegistry& plugins, Logger& logger, const std::string& event_name,
                               const std::vector<std::string>& pipelines, double timeout_seconds,
                               const std::string& crash_folder);

}  // namespace ductwork
