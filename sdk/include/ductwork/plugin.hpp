// ductwork/plugin.hpp — registration macros and the plugin table. Included
// by step.hpp; include that instead.
//
//   DUCTWORK_STEP(ClassName);                 registers ClassName as "ClassName"
//   DUCTWORK_STEP_NAMED(ClassName, "Name");   registers it under another name
//   DUCTWORK_PIPELINE(expr);                  exports a pipeline built with
//                                             ductwork::Pipeline (pipeline.hpp)
//   DUCTWORK_PIPELINE_JSON(text);             exports canonical definition JSON
//   DUCTWORK_HOOK(on_worker_start, fn);       runs void fn(const ductwork::ProcessInfo&)
//                                             when a worker process starts (also
//                                             on_worker_stop, on_advancer_start/stop,
//                                             on_supervisor_start/stop; SPEC §15)
//   DUCTWORK_PLUGIN("name", "1.0.0");         the entry points; once per .so
//
// Each macro is a namespace-scope declaration ending in the caller's ';'.
// Registrations may be spread over any number of source files of a plugin;
// each .so keeps its own registry (see DUCTWORK_HIDDEN). Every execution
// gets a fresh instance, so steps may run concurrently without sharing state.
//
// Pipelines: DUCTWORK_PIPELINE takes an expression yielding a
// ductwork::Pipeline, the fluent builder of pipeline.hpp (start, chain,
// divide, ...); DUCTWORK_PIPELINE_JSON takes the canonical definition JSON
// (SPEC §3) as text. Both register a producer through the same hook,
// detail::PipelineRegistrar; producers run at plugin init, so a rule the
// builder rejects fails the plugin's init with the builder's message.
#ifndef DUCTWORK_PLUGIN_HPP
#define DUCTWORK_PLUGIN_HPP

#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ductwork/abi.h"
#include "ductwork/detail/macros.hpp"
#include "ductwork/json.hpp"
#include "ductwork/pipeline.hpp"
#include "ductwork/process_info.hpp"
#include "ductwork/step.hpp"  // before the trampolines, which need Step
#include "ductwork/detail/trampolines.hpp"

namespace ductwork {
namespace detail {

// Step classes registered in this plugin, in registration order (which
// across source files is the unspecified order of static initialisation).
DUCTWORK_HIDDEN inline std::vector<dw_step_class>& step_registry() {
  static std::vector<dw_step_class> steps;
  return steps;
}

// Producers of this plugin's pipeline definitions (JSON text). They run in
// ductwork_plugin_init, not during static initialisation, so a producer that
// throws fails the plugin's init instead of terminating the host at dlopen.
// DUCTWORK_PIPELINE_JSON registers a producer returning fixed text,
// DUCTWORK_PIPELINE one returning the builder's dump().
DUCTWORK_HIDDEN inline std::vector<std::function<std::string()>>& pipeline_registry() {
  static std::vector<std::function<std::string()>> producers;
  return producers;
}

struct StepRegistrar {
  // `name` must have static storage duration (a string literal).
  StepRegistrar(const char* name, void* (*create)()) {
    step_registry().push_back(
        dw_step_class{sizeof(dw_step_class), name, create, &execute_step, &destroy_step, &execute_step2});
  }
};

struct PipelineRegistrar {
  explicit PipelineRegistrar(std::function<std::string()> producer) {
    pipeline_registry().push_back(std::move(producer));
  }
};

// Lifecycle hooks registered in this plugin, in registration order.
DUCTWORK_HIDDEN inline std::vector<dw_hook>& hook_registry() {
  static std::vector<dw_hook> hooks;
  return hooks;
}

// The events DUCTWORK_HOOK accepts, by the names it is spelled with.
namespace hook_event {
constexpr std::uint32_t on_supervisor_start = DW_ON_SUPERVISOR_START;
constexpr std::uint32_t on_supervisor_stop = DW_ON_SUPERVISOR_STOP;
constexpr std::uint32_t on_advancer_start = DW_ON_ADVANCER_START;
constexpr std::uint32_t on_advancer_stop = DW_ON_ADVANCER_STOP;
constexpr std::uint32_t on_worker_start = DW_ON_WORKER_START;
constexpr std::uint32_t on_worker_stop = DW_ON_WORKER_STOP;
}  // namespace hook_event

// dw_hook.run for the function `Hook`: the exception barrier of a hook, as
// execute_step2 is a step's.
template <void (*Hook)(const ProcessInfo&)>
int run_hook(const dw_process_info* raw, dw_outcome* out) noexcept {
  if (out == nullptr || out->struct_size < sizeof(std::uint32_t)) return DW_EXECUTE_ERROR;
  OutcomeStrings strings;
  int rc = DW_EXECUTE_OK;
  try {
    if (raw == nullptr) throw Error("ductwork::AbiError", "hook called without process information");
    ProcessInfo info(*raw);
    Hook(info);
  } catch (...) {
    report_current_exception(strings);
    rc = DW_EXECUTE_ERROR;
  }
  write_outcome(out, strings);
  return rc;
}

struct HookRegistrar {
  // `name` must have static storage duration (a string literal).
  HookRegistrar(std::uint32_t event, const char* name, int (*run)(const dw_process_info*, dw_outcome*)) {
    hook_registry().push_back(dw_hook{sizeof(dw_hook), event, name, run});
  }
};

template <class T>
constexpr bool is_registrable_step() {
  static_assert(std::is_base_of_v<Step, T>,
                "DUCTWORK_STEP needs a class derived from ductwork::Step");
  static_assert(std::is_default_constructible_v<T>, "a step class needs a default constructor");
  static_assert(!std::is_abstract_v<T>, "a step class must implement execute()");
  return true;
}

// The table ductwork_plugin_init returns; it lives until the library is
// unloaded.
class PluginTable {
 public:
  PluginTable(const char* name, const char* version) : name_(name), version_(version) {
    for (const dw_step_class& step : step_registry()) steps_.push_back(&step);
    for (const auto& produce : pipeline_registry()) {
      std::string text = produce();
      // Canonicalise (compact, sorted keys) when it parses; otherwise pass it
      // on verbatim so the host's validation reports the error with context.
      try {
        text = Json::parse(text).dump();
      } catch (const JsonError&) {
      }
      pipelines_.push_back(std::move(text));
    }
    for (const std::string& text : pipelines_) pipeline_ptrs_.push_back(text.c_str());
    for (const dw_hook& hook : hook_registry()) hooks_.push_back(&hook);

    plugin_ = dw_plugin{};
    plugin_.struct_size = sizeof(dw_plugin);
    plugin_.abi_version = DUCTWORK_ABI_VERSION;
    plugin_.name = name_.c_str();
    plugin_.version = version_.c_str();
    plugin_.step_count = steps_.size();
    plugin_.steps = steps_.empty() ? nullptr : steps_.data();
    plugin_.pipeline_count = pipeline_ptrs_.size();
    plugin_.pipelines_json = pipeline_ptrs_.empty() ? nullptr : pipeline_ptrs_.data();
    plugin_.free_string = &free_plugin_string;
    plugin_.hook_count = hooks_.size();
    plugin_.hooks = hooks_.empty() ? nullptr : hooks_.data();
  }
  PluginTable(const PluginTable&) = delete;
  PluginTable& operator=(const PluginTable&) = delete;

  const dw_plugin* plugin() const noexcept { return &plugin_; }

 private:
  std::string name_;
  std::string version_;
  std::vector<const dw_step_class*> steps_;
  std::vector<std::string> pipelines_;
  std::vector<const char*> pipeline_ptrs_;
  std::vector<const dw_hook*> hooks_;
  dw_plugin plugin_{};
};

// Why the last init_plugin call failed ("" when it did not); the text
// behind ductwork_plugin_init_error.
DUCTWORK_HIDDEN inline std::string& init_error() {
  static std::string text;
  return text;
}

// Body of ductwork_plugin_init. Builds the table once (later calls return
// the same one). Returns NULL, after a line on stderr, when building it
// fails (a pipeline producer threw, or out of memory); the host reads the
// reason back through ductwork_plugin_init_error.
DUCTWORK_HIDDEN inline const dw_plugin* init_plugin(const char* name, const char* version,
                                                    const dw_host_api* host) noexcept {
  (void)host;  // steps reach the host through each dw_step_context
  try {
    static const PluginTable table(name, version);
    return table.plugin();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ductwork plugin %s: init failed: %s\n", name, e.what());
    try {
      init_error() = e.what();
    } catch (...) {
      init_error().clear();
    }
  } catch (...) {
    std::fprintf(stderr, "ductwork plugin %s: init failed: unknown exception\n", name);
    init_error().clear();
  }
  return nullptr;
}

DUCTWORK_HIDDEN inline const char* init_error_text() noexcept {
  return init_error().empty() ? "the plugin's initialiser threw an exception that is not a std::exception"
                              : init_error().c_str();
}

}  // namespace detail
}  // namespace ductwork

// Registers step class `Class` under the name `name` (a string literal).
#define DUCTWORK_STEP_NAMED(Class, name)                                               \
  static_assert(::ductwork::detail::is_registrable_step<Class>(), "");                 \
  [[maybe_unused]] static const ::ductwork::detail::StepRegistrar DUCTWORK_DETAIL_UNIQUE( \
      ductwork_step_registrar_)(name, &::ductwork::detail::create_step<Class>)

// Registers step class `Class` under its name as spelled, so write it
// unqualified, in the class's namespace, after the class definition.
#define DUCTWORK_STEP(Class) DUCTWORK_STEP_NAMED(Class, #Class)

// Exports a pipeline definition: `text` (a std::string or C string
// expression, evaluated when the host initialises the plugin) is canonical
// definition JSON with a top-level "pipeline" name.
#define DUCTWORK_PIPELINE_JSON(text)                                                       \
  [[maybe_unused]] static const ::ductwork::detail::PipelineRegistrar DUCTWORK_DETAIL_UNIQUE( \
      ductwork_pipeline_registrar_)([]() -> std::string { return std::string(text); })

// Exports a pipeline built with the fluent builder: the argument is an
// expression yielding a ductwork::Pipeline (evaluated when the host
// initialises the plugin), e.g.
//   DUCTWORK_PIPELINE(ductwork::Pipeline("Checkout").start("Charge").chain("Receipt"));
// Variadic so that commas inside the expression (a lambda's body) need no
// extra parentheses.
#define DUCTWORK_PIPELINE(...)                                                             \
  [[maybe_unused]] static const ::ductwork::detail::PipelineRegistrar DUCTWORK_DETAIL_UNIQUE( \
      ductwork_pipeline_registrar_)(                                                       \
      []() -> std::string { return ::ductwork::detail::pipeline_text(__VA_ARGS__); })

// Registers `function` (void function(const ductwork::ProcessInfo&), a
// named function) to run at `event`: on_worker_start, on_worker_stop,
// on_advancer_start, on_advancer_stop, on_supervisor_start or
// on_supervisor_stop. Whatever it throws is the hook's failure: at a start
// the process logs it and exits (and is restarted with the crash backoff),
// at a stop it is logged and shutdown goes on. See docs/step-authors.md,
// "Per-process resources".
#define DUCTWORK_HOOK(event, function)                                                      \
  [[maybe_unused]] static const ::ductwork::detail::HookRegistrar DUCTWORK_DETAIL_UNIQUE(    \
      ductwork_hook_registrar_)(::ductwork::detail::hook_event::event, #function,           \
                                &::ductwork::detail::run_hook<&function>)

// Defines the plugin's two exported entry points (abi.h). Use exactly once
// per plugin, at global namespace scope; a second use fails to link.
#define DUCTWORK_PLUGIN(name, version)                                                          \
  extern "C" DUCTWORK_EXPORT std::uint32_t ductwork_plugin_abi_version(void) {                  \
    return DUCTWORK_ABI_VERSION;                                                                \
  }                                                                                             \
  extern "C" DUCTWORK_EXPORT const dw_plugin* ductwork_plugin_init(const dw_host_api* host) {  \
    return ::ductwork::detail::init_plugin(name, version, host);                                \
  }                                                                                             \
  extern "C" DUCTWORK_EXPORT const char* ductwork_plugin_init_error(void) {                     \
    return ::ductwork::detail::init_error_text();                                               \
  }                                                                                             \
  static_assert(std::is_same_v<decltype(&ductwork_plugin_init), dw_init_fn> &&                  \
                    std::is_same_v<decltype(&ductwork_plugin_abi_version), dw_abi_version_fn> && \
                    std::is_same_v<decltype(&ductwork_plugin_init_error), dw_init_error_fn>,   \
                "entry points must match abi.h")

#endif  // DUCTWORK_PLUGIN_HPP
