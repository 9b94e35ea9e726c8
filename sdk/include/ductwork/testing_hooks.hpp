// ductwork/testing_hooks.hpp — HookHarness: a plugin's lifecycle hooks
// (DUCTWORK_HOOK) in a unit test. Included by <ductwork/testing.hpp>;
// include that.
#ifndef DUCTWORK_TESTING_HOOKS_HPP
#define DUCTWORK_TESTING_HOOKS_HPP

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ductwork/abi.h"
#include "ductwork/testing.hpp"

namespace ductwork {
namespace testing {

// What one run of an event's hooks came to (HookHarness::run).
struct HookResult {
  // True when every hook of the event returned normally.
  bool ok() const noexcept { return failed_hook.empty(); }
  // The hooks that ran, in order (the failing one included).
  std::vector<std::string> ran;
  // The hook that failed and how ("" when ok()), as the host logs it.
  std::string failed_hook, error_klass, error_message, error_backtrace;
};

// Runs the lifecycle hooks registered in this binary (DUCTWORK_HOOK) the
// way the host does (SPEC §15), through the same C entry points:
//
//   ductwork::testing::HookHarness hooks;
//   hooks.pipelines({"Thumbnails"});
//   assert(hooks.run("on_worker_start").ok());   // opens the pool
//   ... run steps with StepHarness ...
//   assert(hooks.run("on_worker_stop").ok());    // closes it
//
// ProcessInfo::role() is the event's role ("worker" for on_worker_start),
// pid() this process unless pid() sets another. A start event stops at its
// first failing hook, as in the host; a stop event runs every hook. Log
// lines are kept (logs()); cancelled() answers the flag a test raises.
class HookHarness {
 public:
  HookHarness() {
    api_.struct_size = sizeof(dw_host_api);
    api_.abi_version = DUCTWORK_ABI_VERSION;
    api_.is_cancelled = [](void* handle) { return self(handle).cancelled_.load() ? 1 : 0; };
    api_.log = [](void* handle, int level, const char* message) {
      HookHarness& h = self(handle);
      std::lock_guard<std::mutex> lock(h.mutex_);
      h.logs_.push_back(LogLine{static_cast<LogLevel>(level), message != nullptr ? message : ""});
    };
    api_.context_get = [](void*, const char*, char** value_json_out, char**) {
      if (value_json_out != nullptr) *value_json_out = nullptr;
      return static_cast<int>(DW_CONTEXT_ERROR);  // a hook belongs to no run
    };
    api_.context_set = [](void*, const char*, const char*, int, char**) { return static_cast<int>(DW_CONTEXT_ERROR); };
    api_.free_string = [](char* s) { std::free(s); };
    api_.set_error_flags = [](void*, std::uint32_t) {};
  }
  HookHarness(const HookHarness&) = delete;
  HookHarness& operator=(const HookHarness&) = delete;

  HookHarness& pipelines(std::vector<std::string> names) {
    pipelines_ = std::move(names);
    return *this;
  }
  HookHarness& pid(std::int64_t value) {
    pid_ = value;
    return *this;
  }
  // Raises (or lowers) the flag ProcessInfo::cancelled() reads.
  HookHarness& cancelled(bool value = true) {
    cancelled_.store(value);
    return *this;
  }

  // Runs every hook registered for `event` ("on_worker_start", ...).
  // Throws std::invalid_argument for an unknown event name.
  HookResult run(std::string_view event) {
    static const std::pair<const char*, std::uint32_t> kEvents[] = {
        {"on_supervisor_start", DW_ON_SUPERVISOR_START}, {"on_supervisor_stop", DW_ON_SUPERVISOR_STOP},
        {"on_advancer_start", DW_ON_ADVANCER_START},     {"on_advancer_stop", DW_ON_ADVANCER_STOP},
        {"on_worker_start", DW_ON_WORKER_START},         {"on_worker_stop", DW_ON_WORKER_STOP}};
    std::uint32_t code = 0;
    for (const auto& [name, value] : kEvents) {
      if (event == name) code = value;
    }
    if (code == 0) throw std::invalid_argument("no hook event named \"" + std::string(event) + "\"");
    const std::string name(event);
    const std::string role = name.substr(3, name.find('_', 3) - 3);  // on_<role>_start
    const bool start = name.size() > 6 && name.compare(name.size() - 6, 6, "_start") == 0;
    std::vector<const char*> names;
    for (const auto& p : pipelines_) names.push_back(p.c_str());
    dw_process_info info{};
    info.struct_size = sizeof info;
    info.role = role.c_str();
    info.pid = pid_ != 0 ? pid_ : static_cast<std::int64_t>(::getpid());
    info.pipeline_count = names.size();
    info.pipelines = names.empty() ? nullptr : names.data();
    info.host = &api_;
    info.host_handle = this;
    HookResult result;
    for (const dw_hook& hook : detail::hook_registry()) {
      if (hook.event != code) continue;
      result.ran.emplace_back(hook.name);
      dw_outcome out{};
      out.struct_size = sizeof out;
      const int rc = hook.run(&info, &out);
      if (rc != DW_EXECUTE_OK && result.failed_hook.empty()) {
        result.failed_hook = hook.name;
        result.error_klass = out.error_klass != nullptr ? out.error_klass : "ductwork::HookError";
        result.error_message = out.error_message != nullptr ? out.error_message : "";
        result.error_backtrace = out.error_backtrace != nullptr ? out.error_backtrace : "";
      }
      for (char* s : {out.output_json, out.error_klass, out.error_message, out.error_backtrace}) {
        detail::free_plugin_string(s);
      }
      if (rc != DW_EXECUTE_OK && start) break;
    }
    return result;
  }

  std::vector<LogLine> logs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return logs_;
  }

 private:
  static HookHarness& self(void* handle) { return *static_cast<HookHarness*>(handle); }

  dw_host_api api_{};
  std::vector<std::string> pipelines_;
  std::int64_t pid_ = 0;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mutex_;
  std::vector<LogLine> logs_;
};

}  // namespace testing
}  // namespace ductwork

#endif  // DUCTWORK_TESTING_HOOKS_HPP
