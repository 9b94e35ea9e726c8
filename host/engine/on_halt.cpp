#include "engine/on_halt.h"

#include <atomic>

#include "engine/step_invoker.h"
#include "plugin/host_api.h"
#include "util/json.h"

namespace ductwork {

void dispatch_on_halt(Store& store, const PluginRegistry* registry, Logger& logger, const std::string& pipeline,
                      const std::string& run_id, const std::string& klass) {
  std::optional<std::vector<std::string>> reasons = store.take_on_halt(run_id);
  if (!reasons) return;  // another advancer dispatched it
  Json halt_reasons(Json::Array(reasons->begin(), reasons->end()));
  Json where =
      Json::object({{"pipeline", pipeline}, {"run_id", run_id}, {"step", klass}, {"halt_reasons", halt_reasons}});
  if (!registry) {
    logger.warn("on_halt not run: this process has no plugins loaded", where);
    return;
  }
  ClaimedJob call;
  call.run_id = run_id;
  call.pipeline = pipeline;
  call.klass = klass;
  // One dispatch per run: a revived run that halts again is a new halt, and
  // its on_halt gets a new key (docs/decisions.md).
  call.idempotency_key = "on_halt:" + run_id;
  call.args_json = Json::array({halt_reasons}).dump();
  static const std::atomic<bool> never_cancelled{false};
  StepCallScope scope{&store, &logger, &never_cancelled, run_id, pipeline, klass, ""};
  StepOutcome outcome = invoke_step(*registry, call, scope);
  if (outcome.ok) {
    logger.info("on_halt step ran", where);
  } else {
    where["error_klass"] = outcome.error.klass;
    where["error_message"] = outcome.error.message;
    logger.error("on_halt step failed (not retried)", where);
  }
}

}  // namespace ductwork
