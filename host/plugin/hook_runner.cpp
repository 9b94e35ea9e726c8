#include "plugin/hook_runner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>

#include "plugin/host_api.h"
#include "util/clock.h"

namespace ductwork {
namespace {

// One hook call, shared with the thread that makes it: when the hook hangs
// the thread is left running, and everything it can touch lives here.
struct HookCall {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  int rc = DW_EXECUTE_ERROR;
  std::atomic<bool> cancelled{false};
  HookCallScope scope;
  std::string role;
  std::vector<std::string> pipelines;
  std::vector<const char*> pipeline_ptrs;
  dw_process_info info{};
  dw_outcome out{};
};

std::string or_empty(const char* s) { return s ? std::string(s) : std::string(); }

}  // namespace

std::string HookFailure::describe() const {
  std::string text = event + " hook " + hook + " of plugin " + plugin;
  if (!plugin_path.empty()) text += " (" + plugin_path + ")";
  if (hung) return text + " " + error_message;
  text += " failed: ";
  if (!error_klass.empty()) text += error_klass + ": ";
  return text + error_message;
}

uint32_t hook_event_for(const std::string& role, bool start) {
  if (role == "supervisor") return start ? DW_ON_SUPERVISOR_START : DW_ON_SUPERVISOR_STOP;
  if (role == "advancer") return start ? DW_ON_ADVANCER_START : DW_ON_ADVANCER_STOP;
  if (role == "worker") return start ? DW_ON_WORKER_START : DW_ON_WORKER_STOP;
  return 0;
}

HookRunner::HookRunner(const PluginRegistry& plugins, Logger& logger,
                       std::function<void(const std::string&)> on_hook_thread)
    : plugins_(plugins), logger_(logger), on_hook_thread_(std::move(on_hook_thread)) {}

bool HookRunner::has(uint32_t event) const {
  for (const auto& plugin : plugins_.plugins()) {
    for (const auto& hook : plugin->hooks) {
      if (hook.event == event) return true;
    }
  }
  return false;
}

std::optional<HookFailure> HookRunner::run(uint32_t event, const std::string& role, int64_t pid,
                                           const std::vector<std::string>& pipelines, double timeout_seconds) {
  const char* event_name = hook_event_name(event);
  const bool start = event == DW_ON_SUPERVISOR_START || event == DW_ON_ADVANCER_START || event == DW_ON_WORKER_START;
  const Clock& clock = Clock::system();  // the one clock (util/clock.h)
  const auto deadline = clock.after(timeout_seconds);
  std::optional<HookFailure> first;
  for (const auto& plugin : plugins_.plugins()) {
    for (const auto& hook : plugin->hooks) {
      if (hook.event != event) continue;
      if (hook.abi == nullptr) throw std::logic_error("hook " + hook.name + " was probed, not loaded, in this process");
      auto call = std::make_shared<HookCall>();
      call->scope = HookCallScope{&logger_, &call->cancelled, event_name, hook.name, plugin->name};
      call->role = role;
      call->pipelines = pipelines;
      for (const auto& p : call->pipelines) call->pipeline_ptrs.push_back(p.c_str());
      call->info.struct_size = sizeof call->info;
      call->info.role = call->role.c_str();
      call->info.pid = pid;
      call->info.pipeline_count = call->pipeline_ptrs.size();
      call->info.pipelines = call->pipeline_ptrs.empty() ? nullptr : call->pipeline_ptrs.data();
      call->info.host = hook_host_api();
      call->info.host_handle = &call->scope;
      call->out.struct_size = sizeof call->out;
      const std::string label = "hook " + std::string(event_name) + " " + hook.name + " (plugin " + plugin->name + ")";
      const auto began = clock.monotonic();
      std::thread thread([call, run = hook.abi->run, label, mark = on_hook_thread_] {
        if (mark) mark(label);
        int rc = run(&call->info, &call->out);
        if (mark) mark("");
        std::lock_guard<std::mutex> lock(call->mutex);
        call->rc = rc;
        call->done = true;
        call->finished.notify_all();
      });
      bool done;
      {
        std::unique_lock<std::mutex> lock(call->mutex);
        done = call->finished.wait_until(lock, deadline, [&] { return call->done; });
      }
      Json fields = Json::object({{"event", event_name}, {"hook", hook.name}, {"plugin", plugin->name}});
      HookFailure failure{event_name, hook.name, plugin->name, plugin->path, "", "", "", false};
      if (!done) {
        // A thread cannot be stopped: ask the hook to give up, and leave it.
        call->cancelled.store(true);
        thread.detach();
        left_running_ = true;
        char shown[32];
        std::snprintf(shown, sizeof shown, "%g", timeout_seconds);
        failure.hung = true;
        failure.error_klass = "ductwork::HookTimeout";
        failure.error_message = std::string("did not finish within supervisor.shutdown_timeout (") + shown + " s)";
        fields["timeout_seconds"] = timeout_seconds;
        logger_.error(start ? "Start hook did not finish in time; giving up on it"
                            : "Stop hook did not finish in time; giving up on it",
                      fields);
        if (!first) first = failure;
        return first;  // its thread may still touch anything: run nothing more
      }
      thread.join();
      fields["seconds"] = std::chrono::duration<double>(clock.monotonic() - began).count();
      auto release = [&](char* s) {
        if (s) plugin->table->free_string(s);
      };
      if (call->rc == DW_EXECUTE_OK) {
        release(call->out.output_json);
        logger_.info("Hook ran", fields);
        continue;
      }
      failure.error_klass = or_empty(call->out.error_klass);
      failure.error_message = or_empty(call->out.error_message);
      failure.error_backtrace = or_empty(call->out.error_backtrace);
      for (char* s : {call->out.output_json, call->out.error_klass, call->out.error_message, call->out.error_backtrace}) {
        release(s);
      }
      if (failure.error_klass.empty()) failure.error_klass = "ductwork::HookError";
      if (failure.error_message.empty()) {
        failure.error_message = "returned error code " + std::to_string(call->rc) + " with no message";
      }
      if (plugin->frames) failure.error_backtrace = plugin->frames->symbolise(failure.error_backtrace);
      fields["plugin_path"] = plugin->path;
      fields["error_klass"] = failure.error_klass;
      fields["error_message"] = failure.error_message;
      fields["error_backtrace"] = failure.error_backtrace;
      logger_.error(start ? "Start hook failed" : "Stop hook failed; shutdown goes on", fields);
      if (!first) first = failure;
      if (start) return first;
    }
  }
  return first;
}

}  // namespace ductwork
