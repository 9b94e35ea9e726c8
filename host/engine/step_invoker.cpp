#include "engine/step_invoker.h"

#include <cstddef>
#include <stdexcept>

#include "engine/error_info.h"
#include "plugin/process_steps.h"
#include "util/json.h"
#include "util/json_limits.h"

namespace ductwork {
namespace {

// Releases the strings a plugin handed back, with the plugin's own allocator.
struct OutcomeStrings {
  const LoadedPlugin* plugin;
  dw_outcome raw{};
  ~OutcomeStrings() {
    for (char* s : {raw.output_json, raw.error_klass, raw.error_message, raw.error_backtrace}) {
      if (s) plugin->table->free_string(s);
    }
  }
};

// Runs one execution through execute2 when the step class has it, else
// through ABI 1's first `execute` (a plugin built before execute2), whose
// four slots land in the same dw_outcome.
int call_execute(const dw_step_class& cls, void* instance, const dw_step_context& ctx, dw_outcome& out) {
  out.struct_size = sizeof out;
  if (cls.struct_size >= offsetof(dw_step_class, execute2) + sizeof cls.execute2 && cls.execute2 != nullptr) {
    return cls.execute2(instance, &ctx, &out);
  }
  char* slots[DW_V1_OUTCOME_SLOTS] = {};
  int rc = cls.execute(instance, &ctx, slots);
  out.output_json = slots[DW_V1_OUTPUT_JSON];
  out.error_klass = slots[DW_V1_ERROR_KLASS];
  out.error_message = slots[DW_V1_ERROR_MESSAGE];
  out.error_backtrace = slots[DW_V1_ERROR_BACKTRACE];
  return rc;
}

std::string or_empty(const char* s) { return s ? std::string(s) : std::string(); }

}  // namespace

StepOutcome invoke_step(const PluginRegistry& registry, const ClaimedJob& job, StepCallScope& scope,
                        ProcessSteps* processes) {
  StepOutcome outcome;
  const StepClass* step = registry.find_step(job.klass);
  if (!step) {
    outcome.error = make_error_info("ductwork::UnknownStep",
                                    "step class " + job.klass + " is not exported by any loaded plugin");
    return outcome;
  }
  if (step->plugin->manifest) {
    if (processes == nullptr) {
      outcome.error = make_error_info("ductwork::ProcessStepUnavailable",
                                      "step " + job.klass + " is a process step, and this caller runs no step processes");
      return outcome;
    }
    if (scope.process_step) scope.process_step->store(true);
    outcome = processes->run(step->plugin->manifest, job, scope, scope.process_pid);
    outcome.plugin = step->plugin;
    return outcome;
  }
  if (step->abi == nullptr) {
    // A metadata-only registry (plugin_probe) reached a worker: a bug.
    throw std::logic_error("step class " + job.klass + " was probed, not loaded, in this process");
  }
  outcome.plugin = step->plugin;
  dw_step_context ctx{};
  ctx.struct_size = sizeof ctx;
  ctx.args_json = job.args_json.c_str();
  ctx.run_id = job.run_id.c_str();
  ctx.idempotency_key = job.idempotency_key.c_str();
  ctx.pipeline = job.pipeline.c_str();
  ctx.step_name = job.klass.c_str();
  ctx.retry_count = job.retry_count;
  ctx.crash_count = job.crash_count;
  ctx.host = host_api();
  ctx.host_handle = &scope;

  void* instance = step->abi->create();
  if (!instance) {
    outcome.error = make_error_info("ductwork::StepCreateFailed", "plugin could not create step " + job.klass);
    return outcome;
  }
  OutcomeStrings strings{step->plugin};
  scope.error_flags = 0;
  int rc = call_execute(*step->abi, instance, ctx, strings.raw);
  step->abi->destroy(instance);

  if (rc != DW_EXECUTE_OK) {
    // Flags set by a call that then succeeded mean nothing: read them only
    // here. execute2 hands them back; execute set them through the host.
    outcome.retryable = ((scope.error_flags | strings.raw.error_flags) & DW_ERROR_NOT_RETRYABLE) == 0;
    std::string klass = or_empty(strings.raw.error_klass);
    std::string message = or_empty(strings.raw.error_message);
    // A raw-ABI step may return an error code and nothing else: say which
    // step failed and how, rather than record an empty message.
    if (message.empty()) {
      message = "step " + job.klass + " returned error code " + std::to_string(rc) + " with no message";
    }
    std::string backtrace = or_empty(strings.raw.error_backtrace);
    if (step->plugin->frames) backtrace = step->plugin->frames->symbolise(backtrace);
    outcome.error = make_error_info(klass.empty() ? "ductwork::StepError" : klass, message, std::move(backtrace));
    return outcome;
  }
  if (!strings.raw.output_json) {
    outcome.ok = true;
    outcome.output_json = "null";
    return outcome;
  }
  // A value too large for a row (or for anyone to read back) is the step's
  // failure, counted against its retries, never a crash of the process
  // that tried to store it (which re-ran the step forever).
  std::string_view output(strings.raw.output_json);
  if (auto problem = json_limit_problem(output, scope.max_value_bytes, "the output of step ", job.klass)) {
    bool too_large = output.size() > scope.max_value_bytes;  // else: nested too deep
    outcome.error = make_error_info(too_large ? "ductwork::OutputTooLarge" : "ductwork::InvalidOutput", *problem);
    return outcome;
  }
  // Normalise and validate: what is stored must be valid JSON.
  std::optional<Json> parsed = try_parse_json(output);
  if (!parsed) {
    outcome.error = make_error_info("ductwork::InvalidOutput", "step " + job.klass + " returned invalid JSON");
    return outcome;
  }
  outcome.ok = true;
  outcome.output_json = parsed->dump();
  return outcome;
}

}  // namespace ductwork
