#include "plugin/host_api.h"

#include "util/json_limits.h"

#include <cstdlib>
#include <cstring>
#include <exception>

#include "store/store.h"
#include "util/logger.h"

namespace ductwork {
namespace {

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

void set_error(char** error_out, const std::string& message) {
  if (error_out) *error_out = copy_string(message);
}

int is_cancelled(void* handle) {
  auto* scope = static_cast<StepCallScope*>(handle);
  if (!scope) return 0;
  bool shutdown = scope->cancelled && scope->cancelled->load(std::memory_order_relaxed);
  bool own = scope->step_cancelled && scope->step_cancelled->load(std::memory_order_relaxed);
  return shutdown || own ? 1 : 0;
}

LogLevel log_level_of(int level) {
  return level <= DW_LOG_DEBUG ? LogLevel::kDebug
         : level == DW_LOG_INFO ? LogLevel::kInfo
         : level == DW_LOG_WARN ? LogLevel::kWarn
                                : LogLevel::kError;
}

void log_line(void* handle, int level, const char* message) {
  auto* scope = static_cast<StepCallScope*>(handle);
  if (!scope || !scope->logger || !message) return;
  try {
    scope->logger->log(log_level_of(level), message,
                       Json::object({{"pipeline", scope->pipeline},
                                     {"run_id", scope->run_id},
                                     {"job_id", scope->job_id},
                                     {"step", scope->step}}));
  } catch (...) {  // logging must never throw into a plugin
  }
}

int context_get(void* handle, const char* key, char** value_json_out, char** error_out) {
  auto* scope = static_cast<StepCallScope*>(handle);
  if (value_json_out) *value_json_out = nullptr;
  if (!scope || !scope->store || !key || !value_json_out) {
    set_error(error_out, "context_get: missing argument");
    return DW_CONTEXT_ERROR;
  }
  try {
    auto value = scope->store->context_get(scope->run_id, key);
    if (!value) return DW_CONTEXT_NOT_FOUND;
    *value_json_out = copy_string(*value);
    return DW_CONTEXT_OK;
  } catch (const std::exception& e) {
    set_error(error_out, e.what());
    return DW_CONTEXT_ERROR;
  }
}

int context_set(void* handle, const char* key, const char* value_json, int overwrite, char** error_out) {
  auto* scope = static_cast<StepCallScope*>(handle);
  if (!scope || !scope->store || !key || !value_json) {
    set_error(error_out, "context_set: missing argument");
    return DW_CONTEXT_ERROR;
  }
  try {
    std::string what = std::string("context value for key '") + key + "'";
    if (auto problem = json_limit_problem(value_json, scope->max_value_bytes, what)) {
      set_error(error_out, *problem);
      return DW_CONTEXT_ERROR;
    }
    std::optional<Json> parsed = try_parse_json(value_json);
    if (!parsed) {
      set_error(error_out, std::string("context_set: value for key '") + key + "' is not valid JSON");
      return DW_CONTEXT_ERROR;
    }
    bool set = scope->store->context_set(scope->run_id, key, parsed->dump(), overwrite != 0);
    if (!set) {
      set_error(error_out, std::string("can only set value once (key '") + key + "' is already set)");
      return DW_CONTEXT_ALREADY_SET;
    }
    return DW_CONTEXT_OK;
  } catch (const std::exception& e) {
    set_error(error_out, e.what());
    return DW_CONTEXT_ERROR;
  }
}

void free_string(char* s) { std::free(s); }

// Bits accumulate over the call; unknown bits (from a newer SDK) are kept
// but mean nothing to this host.
void set_error_flags(void* handle, uint32_t flags) {
  auto* scope = static_cast<StepCallScope*>(handle);
  if (scope) scope->error_flags |= flags;
}

int hook_is_cancelled(void* handle) {
  auto* scope = static_cast<HookCallScope*>(handle);
  return scope && scope->cancelled && scope->cancelled->load(std::memory_order_relaxed) ? 1 : 0;
}

void hook_log_line(void* handle, int level, const char* message) {
  auto* scope = static_cast<HookCallScope*>(handle);
  if (!scope || !scope->logger || !message) return;
  try {
    scope->logger->log(log_level_of(level), message,
                       Json::object({{"hook", scope->hook}, {"event", scope->event}, {"plugin", scope->plugin}}));
  } catch (...) {  // logging must never throw into a plugin
  }
}

int hook_context_get(void*, const char*, char** value_json_out, char** error_out) {
  if (value_json_out) *value_json_out = nullptr;
  set_error(error_out, "a hook has no run context (it belongs to a process, not to a run)");
  return DW_CONTEXT_ERROR;
}

int hook_context_set(void*, const char*, const char*, int, char** error_out) {
  set_error(error_out, "a hook has no run context (it belongs to a process, not to a run)");
  return DW_CONTEXT_ERROR;
}

void hook_set_error_flags(void*, uint32_t) {}  // a hook's outcome carries its own flags

const dw_host_api kHookHostApi = {
    sizeof(dw_host_api), DUCTWORK_ABI_VERSION, hook_is_cancelled, hook_log_line, hook_context_get, hook_context_set,
    free_string, hook_set_error_flags,
};

const dw_host_api kHostApi = {
    sizeof(dw_host_api), DUCTWORK_ABI_VERSION, is_cancelled, log_line, context_get, context_set, free_string,
    set_error_flags,
};

}  // namespace

const dw_host_api* host_api() { return &kHostApi; }

const dw_host_api* hook_host_api() { return &kHookHostApi; }

}  // namespace ductwork
