#include "engine/on_halt.h"

#include <atomic>

#include "engine/step_invoker.h"
#include "plugin/host_api.h"
#include "util/json.h"

namespace ductwork {
namespace {

Json text_or_null(const std::optional<std::string>& text) { return text ? Json(*text) : Json(); }

// The error a halted branch's halt reason is about: its job's last failure
// for a job-side halt (job_retries_exhausted, job_crashes_exhausted,
// job_error_not_retryable), its transition's last failed advancement for
// an advancer-side one; null for a halt no error caused
// (condition_unmatched, max_fanout_exceeded).
Json failure_json(const HaltedBranch& b) {
  const bool job_side = b.halt_reason.rfind("job_", 0) == 0;
  const std::optional<std::string>& klass = job_side ? b.job_error_klass : b.advance_error_klass;
  const std::optional<std::string>& message = job_side ? b.job_error_message : b.advance_error_message;
  return Json::object({{"branch_id", b.branch_id},
                       {"halt_reason", b.halt_reason},
                       {"step_id", b.step_id},
                       {"node", b.node},
                       {"klass", b.klass},
                       {"error_klass", text_or_null(klass)},
                       {"error_message", text_or_null(message)}});
}

}  // namespace

Json on_halt_payload(const std::string& pipeline, const std::string& run_id, const OnHaltDispatch& dispatch) {
  Json failures = Json::array();
  for (const HaltedBranch& b : dispatch.halted) failures.push_back(failure_json(b));
  return Json::object({{"pipeline", pipeline},
                       {"pipeline_id", dispatch.pipeline_id},
                       {"run_id", run_id},
                       {"halt_reasons", json_strings(dispatch.halt_reasons)},
                       {"failures", std::move(failures)},
                       {"failures_total", dispatch.halted_total}});
}

void dispatch_on_halt(Store& store, const PluginRegistry* registry, Logger& logger, const std::string& pipeline,
                      const std::string& run_id, const std::string& klass) {
  std::optional<OnHaltDispatch> dispatch = store.take_on_halt(run_id, klass, kOnHaltMaxFailures);
  if (!dispatch) return;  // another advancer dispatched it
  Json halt_reasons = json_strings(dispatch->halt_reasons);
  Json where =
      Json::object({{"pipeline", pipeline}, {"run_id", run_id}, {"step", klass}, {"halt_reasons", halt_reasons}});
  if (!registry) {
    logger.warn("on_halt not run: this process has no plugins loaded", where);
    store.finish_on_halt(run_id, "not_run", ErrorInfo{"", "this process has no plugins loaded", "", false});
    return;
  }
  ClaimedJob call;
  call.run_id = run_id;
  call.pipeline = pipeline;
  call.klass = klass;
  // One dispatch per run: a revived run that halts again is a new halt, and
  // its on_halt gets a new key (docs/decisions.md).
  call.idempotency_key = "on_halt:" + run_id;
  // The halt reasons first, as before the payload existed (an on_halt step
  // that reads its first argument keeps working), then the payload
  // (docs/step-authors.md, "on_halt").
  call.args_json = Json::array({halt_reasons, on_halt_payload(pipeline, run_id, *dispatch)}).dump();
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
  try {
    store.finish_on_halt(run_id, outcome.ok ? "succeeded" : "failed",
                         outcome.ok ? std::nullopt : std::optional<ErrorInfo>(outcome.error));
  } catch (const std::exception& e) {
    // The call happened; only its record is missing (status shows it
    // `running`). Never a reason to run it again.
    where["record_error"] = e.what();
    logger.error("on_halt outcome not recorded", where);
  }
}

}  // namespace ductwork
