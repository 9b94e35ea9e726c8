#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plugin/plugin_registry.h"
#include "util/logger.h"

namespace ductwork {

// Why one run of an event's hooks did not come through.
struct HookFailure {
  std::string event;   // "on_worker_start"
  std::string hook;    // the hook's name
  std::string plugin;  // the plugin's name
  std::string plugin_path;
  std::string error_klass;
  std::string error_message;
  std::string error_backtrace;
  // It did not return within its time: its thread still runs plugin code.
  bool hung = false;

  // "on_worker_start hook open_pool of plugin pools (/p/libpools.so)
  // failed: std::runtime_error: no database"
  std::string describe() const;
};

// Runs the lifecycle hooks (SPEC §15) of the plugins loaded in this
// process. Hooks of one event run one after another, plugin by plugin in
// the registry's order (file-name order) and within a plugin in the order
// it registered them, each on a thread of its own so a hook that never
// returns can be given up on: the whole event is bounded by a time limit.
class HookRunner {
 public:
  // `on_hook_thread` is told, on the hook's thread, what runs there
  // ("hook on_worker_start open_pool (plugin pools)"), and "" after: what
  // a crash report names when the hook crashes the process.
  HookRunner(const PluginRegistry& plugins, Logger& logger,
             std::function<void(const std::string&)> on_hook_thread = {});

  // Whether any loaded plugin has a hook for `event` (dw_hook_event).
  bool has(uint32_t event) const;

  // Runs the hooks of `event` for the process `pid` of `role` serving
  // `pipelines`, within `timeout_seconds` in all. A start event stops at
  // the first failure; a stop event runs every hook. Every failure is
  // logged; the first is returned. After a hook hung, no further hook runs
  // and left_hook_running() is true.
  std::optional<HookFailure> run(uint32_t event, const std::string& role, int64_t pid,
                                 const std::vector<std::string>& pipelines, double timeout_seconds);

  // A hook that hung is still running plugin code on a thread of this
  // process: it must end with _Exit, never by unloading its plugins.
  bool left_hook_running() const { return left_running_; }

 private:
  const PluginRegistry& plugins_;
  Logger& logger_;
  std::function<void(const std::string&)> on_hook_thread_;
  bool left_running_ = false;
};

// The event a role's start or stop is: DW_ON_WORKER_START for ("worker",
// true). Roles: "supervisor", "advancer", "worker".
uint32_t hook_event_for(const std::string& role, bool start);

}  // namespace ductwork
