// Test harness for code on either side of the C ABI: a fake host (the
// dw_host_api table with an in-memory run context), a dlopen'ed plugin, and
// a helper that runs one step the way the host does.
#ifndef DUCTWORK_TESTS_SDK_PLUGIN_HARNESS_H
#define DUCTWORK_TESTS_SDK_PLUGIN_HARNESS_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ductwork/abi.h>
#include <ductwork/json.hpp>

#include "json_print.h"

namespace ductwork::test {

// A dw_host_api backed by plain members the test sets and inspects.
class FakeHost {
 public:
  FakeHost();
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const dw_host_api* api() const { return &api_; }
  dw_host_api* mutable_api() { return &api_; }

  // A step context for one execute call; `args_json` must outlive it.
  dw_step_context make_context(const std::string& args_json, std::int64_t retry_count = 0,
                               std::int64_t crash_count = 0);

  // Strings the host handed out that the plugin has not yet released
  // through free_string (across all FakeHosts).
  static int outstanding_strings();

  bool cancelled = false;
  std::map<std::string, std::string> context;  // key -> JSON text
  std::vector<std::pair<int, std::string>> logs;
  // When non-empty, every context call fails with DW_CONTEXT_ERROR and this
  // message.
  std::string context_failure;
  // The DW_ERROR_* bits the plugin passed to set_error_flags, OR'ed together
  // (run_step clears them before each call), and how many calls there were
  // (never cleared).
  std::uint32_t error_flags = 0;
  int set_error_flags_calls = 0;

 private:
  static int is_cancelled(void* handle);
  static void log(void* handle, int level, const char* message);
  static int context_get(void* handle, const char* key, char** value_json_out, char** error_out);
  static int context_set(void* handle, const char* key, const char* value_json, int overwrite,
                         char** error_out);
  static void free_string(char* s);
  static void set_error_flags(void* handle, std::uint32_t flags);
  static char* host_string(const std::string& s);

  dw_host_api api_{};
};

// A plugin library opened with dlopen and closed when this goes away.
class LoadedPlugin {
 public:
  // Opens <dir>/lib<name>.so; fails the current test (ADD_FAILURE) when it
  // cannot, leaving ok() false.
  LoadedPlugin(const std::string& dir, const std::string& name);
  ~LoadedPlugin();
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  bool ok() const { return handle_ != nullptr; }
  // The symbol, or nullptr when the library does not export it.
  void* symbol(const char* name) const;
  // Calls ductwork_plugin_init with `host`; nullptr when missing or failing.
  const dw_plugin* init(const dw_host_api* host) const;

 private:
  void* handle_ = nullptr;
};

// The step class named `name` in `plugin`, or nullptr.
const dw_step_class* find_step(const dw_plugin& plugin, std::string_view name);

// What one execute call produced, copied out of its outcome.
struct StepRun {
  int rc = -1;
  bool has_output = false;
  std::string output_json;
  std::string klass, message, backtrace;
  // The DW_ERROR_* bits of the call: set through dw_host_api.set_error_flags
  // (execute) or handed back in dw_outcome.error_flags (execute2).
  std::uint32_t error_flags = 0;

  Json output() const { return Json::parse(output_json); }
};

// Which entry point run_step calls: execute2 when the class has it (what
// the host does), or ABI 1's first `execute` (what an older host does).
enum class Entry { kPreferred, kExecuteV1 };

// create -> execute -> destroy, as the host does, releasing the outcome's
// strings through `free_string` (the plugin's).
StepRun run_step(const dw_step_class& step, void (*free_string)(char*), FakeHost& host,
                 const std::string& args_json, std::int64_t retry_count = 0,
                 std::int64_t crash_count = 0, Entry entry = Entry::kPreferred);

}  // namespace ductwork::test

#endif  // DUCTWORK_TESTS_SDK_PLUGIN_HARNESS_H
