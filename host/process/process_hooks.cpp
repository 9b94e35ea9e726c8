#include "process/process_hooks.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "process/child_exit.h"
#include "process/crash_report.h"

namespace ductwork {

ProcessHooks::ProcessHooks(const PluginRegistry& plugins, Logger& logger, double timeout_seconds,
                           std::vector<std::string> roles, std::vector<std::string> pipelines)
    : runner_(plugins, logger, set_running_execution),
      logger_(logger),
      timeout_seconds_(timeout_seconds),
      roles_(std::move(roles)),
      pipelines_(std::move(pipelines)) {}

std::optional<HookFailure> ProcessHooks::start() {
  for (; started_ < roles_.size(); ++started_) {
    const std::string& role = roles_[started_];
    if (auto failure = runner_.run(hook_event_for(role, true), role, ::getpid(), pipelines_, timeout_seconds_)) {
      // A hung hook may still touch anything: nothing more runs.
      if (!failure->hung) stop();
      return failure;
    }
  }
  return std::nullopt;
}

void ProcessHooks::stop(std::size_t steps_still_running) {
  if (started_ == 0) return;
  if (steps_still_running > 0) {
    logger_.warn("Stop hooks skipped: steps that ignored their timeout are still running in this process",
                 Json::object({{"steps_running", steps_still_running}}));
    started_ = 0;
    return;
  }
  while (started_ > 0 && !runner_.left_hook_running()) {
    const std::string& role = roles_[--started_];
    runner_.run(hook_event_for(role, false), role, ::getpid(), pipelines_, timeout_seconds_);
  }
  started_ = 0;
}

int run_supervisor_hooks_child(const PluginRegistry& plugins, Logger& logger, const std::string& event_name,
                               const std::vector<std::string>& pipelines, double timeout_seconds,
                               const std::string& crash_folder) {
  const uint32_t event = hook_event_of(event_name);
  if (event != hook_event_for("supervisor", true) && event != hook_event_for("supervisor", false)) {
    throw std::invalid_argument("--child hooks:" + event_name + ": expected on_supervisor_start or on_supervisor_stop");
  }
  HookRunner runner(plugins, logger, set_running_execution);
  std::optional<HookFailure> failure = runner.run(event, "supervisor", ::getppid(), pipelines, timeout_seconds);
  if (!failure) return kExitHooksRan;
  write_exit_note(crash_folder, failure->describe());
  if (runner.left_hook_running()) {
    std::fflush(nullptr);
    std::_Exit(kChildExitHookFailed);
  }
  return kChildExitHookFailed;
}

}  // namespace ductwork
