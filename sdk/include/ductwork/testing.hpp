// ductwork/testing.hpp — unit-test a step without a host or a database.
//
//   #include <ductwork/testing.hpp>
//
//   ductwork::testing::StepHarness h;
//   h.args({"/tmp/a.txt"}).context("locale", "en").retry_count(1);
//   auto result = h.run<CountWords>();          // or h.run("CountWords")
//   assert(result.ok());
//   assert(result.output()["hello"] == 2);
//   assert(h.logs().empty());
//
// The step runs through the same C trampolines the host calls (create ->
// execute -> destroy over abi.h), so its output is serialised, and whatever
// it throws is described (class name, message, backtrace, retryable), exactly
// as the host would record it. The host's limits on values apply too: an
// output (or a ctx.set value) longer than max_output_bytes() or nested
// deeper than 510 levels fails as it would in the host
// (ductwork::OutputTooLarge / ductwork::InvalidOutput, same message). The harness plays the host: it holds a run
// context (seeded with context(), written by the step's ctx.set), records
// log lines, and answers cancelled() from a flag a test may raise from
// another thread while the step runs. Any test framework works (GoogleTest,
// Catch2, plain assert): nothing here fails a test by itself.
//
// Header-only; needs the step classes compiled into the test (link the
// step sources, not the .so). HookHarness (testing_hooks.hpp, included
// here) runs the lifecycle hooks registered with DUCTWORK_HOOK the same way.
#ifndef DUCTWORK_TESTING_HPP
#define DUCTWORK_TESTING_HPP

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ductwork/abi.h"
#include "ductwork/json.hpp"
#include "ductwork/step.hpp"

namespace ductwork {
namespace testing {

// The host's limits on a value a step hands back (docs/step-authors.md):
// job_worker.max_output_bytes by default, and the nesting a step can read
// back (Json::kMaxDepth less the two lists a value may be wrapped in: the
// argument list, and a fan-in's list of outputs).
constexpr std::size_t kDefaultMaxOutputBytes = std::size_t{16} << 20;
constexpr int kMaxValueDepth = Json::kMaxDepth - 2;

namespace limits {

// The deepest nesting of arrays and objects in JSON text, brackets inside
// strings not counted; stops counting past `stop_after`.
inline int json_nesting_depth(std::string_view text, int stop_after) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > stop_after) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Why the host would refuse `text` as `what` ("the output of step X"), in
// its words; "" when it would take it. *too_large says which limit.
inline std::string value_limit_problem(std::string_view text, std::size_t max_bytes, const std::string& what,
                                       bool* too_large) {
  *too_large = text.size() > max_bytes;
  if (*too_large) {
    return what + " is " + std::to_string(text.size()) + " bytes of JSON, more than the limit of " +
           std::to_string(max_bytes) + " (job_worker.max_output_bytes)";
  }
  if (json_nesting_depth(text, kMaxValueDepth) > kMaxValueDepth) {
    return what + " nests arrays/objects deeper than " + std::to_string(kMaxValueDepth) + " levels";
  }
  return "";
}

}  // namespace limits

// One line a step logged through ctx.log.
struct LogLine {
  LogLevel level;
  std::string message;
};

// One successful ctx.set call, in call order.
struct ContextWrite {
  std::string key;
  Json value;
  bool overwrite;
};

// What one run produced: the output, or the error the host would record.
class StepResult {
 public:
  // True when execute returned normally.
  bool ok() const noexcept { return ok_; }
  // The step's return value. Throws std::logic_error naming the error when
  // the step failed, so `result.output()` in a test reports why.
  const Json& output() const {
    if (!ok_) throw std::logic_error("the step failed with " + error_klass_ + ": " + error_message_);
    return output_;
  }
  // The recorded error (empty when ok()): class name as the host stores it
  // (e.g. "ductwork::ArgumentError", "std::out_of_range", or the name given
  // to ductwork::Error), what(), and the backtrace frames.
  const std::string& error_klass() const noexcept { return error_klass_; }
  const std::string& error_message() const noexcept { return error_message_; }
  const std::string& error_backtrace() const noexcept { return error_backtrace_; }
  // False when the step raised a permanent error (FatalError,
  // Error::retryable(false)): the host would fail the step without retrying.
  bool retryable() const noexcept { return retryable_; }

 private:
  friend class StepHarness;
  bool ok_ = false;
  Json output_;
  std::string error_klass_, error_message_, error_backtrace_;
  bool retryable_ = true;
};

class StepHarness {
 public:
  StepHarness() {
    api_.struct_size = sizeof(dw_host_api);
    api_.abi_version = DUCTWORK_ABI_VERSION;
    api_.is_cancelled = &StepHarness::is_cancelled_cb;
    api_.log = &StepHarness::log_cb;
    api_.context_get = &StepHarness::context_get_cb;
    api_.context_set = &StepHarness::context_set_cb;
    api_.free_string = &StepHarness::free_cb;
    api_.set_error_flags = &StepHarness::set_error_flags_cb;
  }
  StepHarness(const StepHarness&) = delete;
  StepHarness& operator=(const StepHarness&) = delete;

  // ---- what the step is given (each returns *this, to chain)
  // The job's arguments: a JSON array (a non-array is wrapped as [value]).
  StepHarness& args(Json arguments) {
    args_ = arguments.is_array() ? std::move(arguments) : Json::array({std::move(arguments)});
    return *this;
  }
  StepHarness& args(std::initializer_list<Json> arguments) { return args(Json::array(arguments)); }
  // A run-context value present before the step runs.
  StepHarness& context(std::string key, Json value) {
    std::lock_guard<std::mutex> lock(mutex_);
    context_[std::move(key)] = std::move(value);
    return *this;
  }
  StepHarness& retry_count(std::int64_t n) {
    retry_count_ = n;
    return *this;
  }
  StepHarness& crash_count(std::int64_t n) {
    crash_count_ = n;
    return *this;
  }
  // Raises (or lowers) the cancellation flag; safe from another thread
  // while the step runs.
  StepHarness& cancelled(bool value = true) {
    cancelled_.store(value);
    return *this;
  }
  StepHarness& run_id(std::string id) {
    run_id_ = std::move(id);
    return *this;
  }
  StepHarness& pipeline(std::string name) {
    pipeline_ = std::move(name);
    return *this;
  }
  StepHarness& idempotency_key(std::string key) {
    idempotency_key_ = std::move(key);
    return *this;
  }
  // The host's job_worker.max_output_bytes (16 MiB unless configured): the
  // largest output or ctx.set value, in bytes of JSON.
  StepHarness& max_output_bytes(std::size_t bytes) {
    max_output_bytes_ = bytes;
    return *this;
  }
  // Every context call fails with this message (a storage error), to test
  // how a step copes; empty restores a working context.
  StepHarness& context_failure(std::string message) {
    context_failure_ = std::move(message);
    return *this;
  }

  // ---- running
  // Runs step class T (a fresh instance, as the host makes per execution).
  template <class T>
  StepResult run() {
    static_assert(std::is_base_of_v<Step, T>, "run<T>() needs a class derived from ductwork::Step");
    return run_class(&detail::create_step<T>, "ductwork::testing");
  }
  // Runs the step registered (DUCTWORK_STEP) under `name` in this binary.
  // Throws std::invalid_argument naming the registered steps when unknown.
  StepResult run(std::string_view name) {
    std::string known;
    for (const dw_step_class& step : detail::step_registry()) {
      if (name == step.name) return run_class(step.create, step.name);
      known += known.empty() ? "" : ", ";
      known += step.name;
    }
    throw std::invalid_argument("no step named \"" + std::string(name) + "\" is registered in this binary" +
                                (known.empty() ? std::string(" (none is)") : " (registered: " + known + ")"));
  }

  // ---- what the step did
  // The run context now: seeded values plus the step's writes.
  std::map<std::string, Json> context_values() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return context_;
  }
  std::vector<ContextWrite> context_writes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return writes_;
  }
  std::vector<LogLine> logs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return logs_;
  }
  // Strings any harness handed a step that the step has not released: not
  // zero after a run means the SDK leaked (a bug to report, not yours).
  static int outstanding_strings() noexcept { return live_harness_strings().load(); }

 private:
  StepResult run_class(void* (*create)(), const char* step_name) {
    const std::string args_text = args_.dump();
    const std::string name = step_name;
    dw_step_context raw{};
    raw.struct_size = sizeof(dw_step_context);
    raw.args_json = args_text.c_str();
    raw.run_id = run_id_.c_str();
    raw.idempotency_key = idempotency_key_.c_str();
    raw.pipeline = pipeline_.c_str();
    raw.step_name = name.c_str();
    raw.retry_count = retry_count_;
    raw.crash_count = crash_count_;
    raw.host = &api_;
    raw.host_handle = this;
    error_flags_ = 0;

    void* instance = create();
    dw_outcome out{};
    out.struct_size = sizeof out;
    int rc = detail::execute_step2(instance, &raw, &out);
    detail::destroy_step(instance);

    StepResult result;
    result.ok_ = rc == DW_EXECUTE_OK;
    if (result.ok_) {
      // What the host checks before it stores an output, in its order and
      // words (engine/step_invoker.cpp): a failure of the step, retryable.
      const std::string_view text = out.output_json != nullptr ? out.output_json : "null";
      bool too_large = false;
      std::string problem =
          limits::value_limit_problem(text, max_output_bytes_, "the output of step " + name, &too_large);
      if (problem.empty()) {
        try {
          result.output_ = Json::parse(text);
        } catch (const JsonError&) {
          problem = "step " + name + " returned invalid JSON";
        }
      }
      if (!problem.empty()) {
        result.ok_ = false;
        result.error_klass_ = too_large ? "ductwork::OutputTooLarge" : "ductwork::InvalidOutput";
        result.error_message_ = problem;
      }
    } else {
      result.error_klass_ = out.error_klass != nullptr ? out.error_klass : "";
      result.error_message_ = out.error_message != nullptr ? out.error_message : "";
      result.error_backtrace_ = out.error_backtrace != nullptr ? out.error_backtrace : "";
      result.retryable_ = ((error_flags_ | out.error_flags) & DW_ERROR_NOT_RETRYABLE) == 0;
    }
    detail::free_plugin_string(out.output_json);
    detail::free_plugin_string(out.error_klass);
    detail::free_plugin_string(out.error_message);
    detail::free_plugin_string(out.error_backtrace);
    return result;
  }

  // Host-side strings: malloc'ed here, released by the step through
  // free_string (the side that allocates frees).
  char* host_string(const std::string& s) {
    char* copy = static_cast<char*>(std::malloc(s.size() + 1));
    if (copy == nullptr) return nullptr;
    std::memcpy(copy, s.c_str(), s.size() + 1);
    live_harness_strings().fetch_add(1);
    return copy;
  }

  static StepHarness& self(void* handle) { return *static_cast<StepHarness*>(handle); }

  static int is_cancelled_cb(void* handle) { return self(handle).cancelled_.load() ? 1 : 0; }
  static void log_cb(void* handle, int level, const char* message) {
    StepHarness& h = self(handle);
    std::lock_guard<std::mutex> lock(h.mutex_);
    h.logs_.push_back(LogLine{static_cast<LogLevel>(level), message != nullptr ? message : ""});
  }
  static int context_get_cb(void* handle, const char* key, char** value_json_out, char** error_out) {
    StepHarness& h = self(handle);
    std::lock_guard<std::mutex> lock(h.mutex_);
    if (!h.context_failure_.empty()) {
      *error_out = h.host_string(h.context_failure_);
      return DW_CONTEXT_ERROR;
    }
    auto found = h.context_.find(key);
    if (found == h.context_.end()) return DW_CONTEXT_NOT_FOUND;
    *value_json_out = h.host_string(found->second.dump());
    return DW_CONTEXT_OK;
  }
  static int context_set_cb(void* handle, const char* key, const char* value_json, int overwrite,
                            char** error_out) {
    StepHarness& h = self(handle);
    std::lock_guard<std::mutex> lock(h.mutex_);
    if (!h.context_failure_.empty()) {
      *error_out = h.host_string(h.context_failure_);
      return DW_CONTEXT_ERROR;
    }
    const std::string_view text = value_json != nullptr ? value_json : "";
    bool too_large = false;
    std::string problem = limits::value_limit_problem(
        text, h.max_output_bytes_, std::string("context value for key '") + key + "'", &too_large);
    if (!problem.empty()) {
      *error_out = h.host_string(problem);
      return DW_CONTEXT_ERROR;
    }
    Json value;
    try {
      value = Json::parse(text);
    } catch (const std::exception&) {
      *error_out = h.host_string(std::string("context_set: value for key '") + key + "' is not valid JSON");
      return DW_CONTEXT_ERROR;
    }
    if (overwrite == 0 && h.context_.count(key) != 0) return DW_CONTEXT_ALREADY_SET;
    h.context_[key] = value;
    h.writes_.push_back(ContextWrite{key, std::move(value), overwrite != 0});
    return DW_CONTEXT_OK;
  }
  static void free_cb(char* s) {
    if (s == nullptr) return;
    std::free(s);
    live_harness_strings().fetch_sub(1);
  }
  static void set_error_flags_cb(void* handle, std::uint32_t flags) { self(handle).error_flags_ |= flags; }

  // free_string has no handle: one process-wide count, mirrored per harness.
  static std::atomic<int>& live_harness_strings() {
    static std::atomic<int> count{0};
    return count;
  }

  dw_host_api api_{};
  Json args_ = Json::array();
  std::string run_id_ = "test-run";
  std::string pipeline_ = "TestPipeline";
  std::string idempotency_key_ = "test-step";
  std::int64_t retry_count_ = 0;
  std::int64_t crash_count_ = 0;
  std::size_t max_output_bytes_ = kDefaultMaxOutputBytes;
  std::atomic<bool> cancelled_{false};
  std::uint32_t error_flags_ = 0;

  mutable std::mutex mutex_;
  std::map<std::string, Json> context_;
  std::vector<ContextWrite> writes_;
  std::vector<LogLine> logs_;
  std::string context_failure_;
};

// One call: runs T with `arguments` and nothing else.
template <class T>
StepResult run(Json arguments = Json::array()) {
  StepHarness harness;
  harness.args(std::move(arguments));
  return harness.run<T>();
}

}  // namespace testing
}  // namespace ductwork

// HookHarness, for a plugin's lifecycle hooks.
#include "ductwork/testing_hooks.hpp"  // IWYU pragma: export

#endif  // DUCTWORK_TESTING_HPP
