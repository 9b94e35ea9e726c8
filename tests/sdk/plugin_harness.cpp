#include "plugin_harness.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include <gtest/gtest.h>

namespace ductwork::test {

namespace {
std::atomic<int> g_outstanding_strings{0};

FakeHost& self(void* handle) { return *static_cast<FakeHost*>(handle); }
}  // namespace

FakeHost::FakeHost() {
  api_.struct_size = sizeof(dw_host_api);
  api_.abi_version = DUCTWORK_ABI_VERSION;
  api_.is_cancelled = &FakeHost::is_cancelled;
  api_.log = &FakeHost::log;
  api_.context_get = &FakeHost::context_get;
  api_.context_set = &FakeHost::context_set;
  api_.free_string = &FakeHost::free_string;
  api_.set_error_flags = &FakeHost::set_error_flags;
}

dw_step_context FakeHost::make_context(const std::string& args_json, std::int64_t retry_count,
                                       std::int64_t crash_count) {
  dw_step_context ctx{};
  ctx.struct_size = sizeof(dw_step_context);
  ctx.args_json = args_json.c_str();
  ctx.run_id = "run-1";
  ctx.idempotency_key = "step-42";
  ctx.pipeline = "TestPipeline";
  ctx.step_name = "TestStep";
  ctx.retry_count = retry_count;
  ctx.crash_count = crash_count;
  ctx.host = &api_;
  ctx.host_handle = this;
  return ctx;
}

int FakeHost::outstanding_strings() { return g_outstanding_strings.load(); }

int FakeHost::is_cancelled(void* handle) { return self(handle).cancelled ? 1 : 0; }

void FakeHost::log(void* handle, int level, const char* message) {
  self(handle).logs.emplace_back(level, message);
}

// Allocated with new[] on purpose: a plugin that released it with free()
// instead of our free_string would trip AddressSanitizer.
char* FakeHost::host_string(const std::string& s) {
  char* copy = new char[s.size() + 1];
  std::memcpy(copy, s.c_str(), s.size() + 1);
  ++g_outstanding_strings;
  return copy;
}

void FakeHost::free_string(char* s) {
  if (s == nullptr) return;
  --g_outstanding_strings;
  delete[] s;
}

void FakeHost::set_error_flags(void* handle, std::uint32_t flags) {
  FakeHost& host = self(handle);
  host.error_flags |= flags;
  ++host.set_error_flags_calls;
}

int FakeHost::context_get(void* handle, const char* key, char** value_json_out, char** error_out) {
  FakeHost& host = self(handle);
  if (!host.context_failure.empty()) {
    *error_out = host_string(host.context_failure);
    return DW_CONTEXT_ERROR;
  }
  auto it = host.context.find(key);
  if (it == host.context.end()) return DW_CONTEXT_NOT_FOUND;
  *value_json_out = host_string(it->second);
  return DW_CONTEXT_OK;
}

int FakeHost::context_set(void* handle, const char* key, const char* value_json, int overwrite,
                          char** error_out) {
  FakeHost& host = self(handle);
  if (!host.context_failure.empty()) {
    *error_out = host_string(host.context_failure);
    return DW_CONTEXT_ERROR;
  }
  if (!overwrite && host.context.count(key) != 0) {
    *error_out = host_string(std::string("key ") + key + " already set");
    return DW_CONTEXT_ALREADY_SET;
  }
  host.context[key] = value_json;
  return DW_CONTEXT_OK;
}

LoadedPlugin::LoadedPlugin(const std::string& dir, const std::string& name) {
  std::string path = dir + "/lib" + name + ".so";
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) ADD_FAILURE() << "dlopen " << path << ": " << ::dlerror();
}

LoadedPlugin::~LoadedPlugin() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* LoadedPlugin::symbol(const char* name) const {
  return handle_ == nullptr ? nullptr : ::dlsym(handle_, name);
}

const dw_plugin* LoadedPlugin::init(const dw_host_api* host) const {
  auto abi_version = reinterpret_cast<dw_abi_version_fn>(symbol(DUCTWORK_ABI_VERSION_SYMBOL));
  auto init = reinterpret_cast<dw_init_fn>(symbol(DUCTWORK_INIT_SYMBOL));
  if (abi_version == nullptr || init == nullptr || abi_version() != DUCTWORK_ABI_VERSION) {
    return nullptr;
  }
  return init(host);
}

const dw_step_class* find_step(const dw_plugin& plugin, std::string_view name) {
  for (std::size_t i = 0; i < plugin.step_count; ++i) {
    if (plugin.steps[i]->name == name) return plugin.steps[i];
  }
  return nullptr;
}

StepRun run_step(const dw_step_class& step, void (*free_string)(char*), FakeHost& host,
                 const std::string& args_json, std::int64_t retry_count, std::int64_t crash_count, Entry entry) {
  dw_step_context ctx = host.make_context(args_json, retry_count, crash_count);
  void* instance = step.create();
  dw_outcome out{};
  out.struct_size = sizeof out;
  StepRun run;
  host.error_flags = 0;
  const bool has_execute2 =
      step.struct_size >= offsetof(dw_step_class, execute2) + sizeof step.execute2 && step.execute2 != nullptr;
  if (entry == Entry::kPreferred && has_execute2) {
    run.rc = step.execute2(instance, &ctx, &out);
  } else {
    char* slots[DW_V1_OUTCOME_SLOTS] = {};
    run.rc = step.execute(instance, &ctx, slots);
    out.output_json = slots[DW_V1_OUTPUT_JSON];
    out.error_klass = slots[DW_V1_ERROR_KLASS];
    out.error_message = slots[DW_V1_ERROR_MESSAGE];
    out.error_backtrace = slots[DW_V1_ERROR_BACKTRACE];
  }
  run.error_flags = host.error_flags | out.error_flags;
  step.destroy(instance);
  auto take = [&](char*& s, std::string& into) {
    if (s == nullptr) return;
    into = s;
    free_string(s);
    s = nullptr;
  };
  run.has_output = out.output_json != nullptr;
  take(out.output_json, run.output_json);
  take(out.error_klass, run.klass);
  take(out.error_message, run.message);
  take(out.error_backtrace, run.backtrace);
  return run;
}

}  // namespace ductwork::test
