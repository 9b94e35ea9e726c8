#include "engine/branch_advance.h"

#include "metrics/metrics.h"

#include "engine/child_pipelines.h"
#include "engine/error_info.h"
#include "engine/on_halt.h"

namespace ductwork {

BranchAdvance::BranchAdvance(Store& store, DefinitionCache& definitions, const Config& config, Logger& logger,
                             Wakeups& wakeups, const PluginRegistry* registry)
    : store_(store),
      definitions_(definitions),
      config_(config),
      logger_(logger),
      wakeups_(wakeups),
      registry_(registry) {}

void BranchAdvance::advance(BranchTx& tx, const BranchClaim& claim, AdvanceEffects& effects,
                            std::optional<PendingArrival>* defer) {
  if (claim.step_status != "advancing" && claim.step_status != "failed") {
    // Stale claim: the step moved on. Release; no budget is charged.
    tx.complete_advancement(claim.advancement_id);
    tx.release_branch(claim.branch_id);
    return;
  }
  // Halts only once advancers have actually crashed on this transition;
  // max_crash 0 means "no crash tolerated", not "never advance".
  if (claim.advancement_crash_count > 0 &&
      claim.advancement_crash_count >= config_.pipeline_advancer.max_crash.get(claim.pipeline)) {
    halt_branch(tx, claim, "advancer_crashes_exhausted", effects);
    return;
  }
  if (claim.step_status == "failed") {
    auto definition = definitions_.get(claim.definition_sha1, claim.run_id, store_);
    auto node = definition->edges.find(claim.step_node);
    if (node != definition->edges.end() && node->second.invoked) {
      // No job failed: the child pipeline this step stands for halted.
      child_halted(tx, *definition, claim, config_, &definitions_, effects);
      return;
    }
    // Why the job gave up: its crash budget, a permanent error the step
    // raised (FatalError: no retry was spent), or its retry budget.
    LastResult last = tx.last_result(claim.step_id);
    const char* reason = last.type == "process_crashed" ? "job_crashes_exhausted"
                         : !last.retryable              ? "job_error_not_retryable"
                                                        : "job_retries_exhausted";
    halt_branch(tx, claim, reason, effects);
    return;
  }
  auto definition = definitions_.get(claim.definition_sha1, claim.run_id, store_);
  route(tx, *definition, claim, config_, effects, defer, &definitions_);
}

void BranchAdvance::after_commit(const BranchClaim& claim, const AdvanceEffects& effects, size_t jobs_taken) {
  if (effects.jobs_created > 0) {
    if (effects.jobs_created > jobs_taken) wakeups_.job_enqueued(claim.pipeline, effects.jobs_created - jobs_taken);
    if (claim.step_waited_seconds >= 0) {
      const std::chrono::duration<double> advancing = store_.clock().monotonic() - claim.claimed_at;
      metrics::branch_advanced(claim.pipeline, claim.step_waited_seconds + advancing.count());
    }
  }
  if (effects.run_state != RunState::kOpen) {
    metrics::pipeline_finished(claim.pipeline, effects.run_state == RunState::kCompleted  ? "completed"
                                               : effects.run_state == RunState::kDampened ? "dampened"
                                                                                          : "halted");
  }
  if (!effects.halt_reason.empty()) {
    logger_.warn("Branch halted", Json::object({{"pipeline", claim.pipeline},
                                                {"run_id", claim.run_id},
                                                {"branch_id", claim.branch_id},
                                                {"step", claim.step_klass},
                                                {"halt_reason", effects.halt_reason}}));
  }
  if (effects.run_state != RunState::kOpen) {
    logger_.info(effects.run_state == RunState::kCompleted  ? "Run completed"
                 : effects.run_state == RunState::kDampened ? "Run dampened; waiting for a resume"
                                                            : "Run halted",
                 Json::object({{"pipeline", claim.pipeline}, {"run_id", claim.run_id}}));
  }
  if (effects.run_state == RunState::kHalted) {
    // After the halt committed, outside every transaction (SPEC §5).
    try {
      auto definition = definitions_.get(claim.definition_sha1, claim.run_id, store_);
      if (definition->on_halt) {
        dispatch_on_halt(store_, registry_, logger_, claim.pipeline, claim.run_id, *definition->on_halt);
      }
    } catch (const std::exception& e) {
      logger_.error("on_halt not dispatched", Json::object({{"pipeline", claim.pipeline},
                                                            {"run_id", claim.run_id},
                                                            {"error_klass", demangled_type_name(e)},
                                                            {"error_message", e.what()}}));
    }
  }
}

BranchAdvance::JobNode BranchAdvance::job_node(const std::string& definition_sha1, const std::string& run_id,
                                               const std::string& node) {
  JobNode out;
  try {
    auto definition = definitions_.get(definition_sha1, run_id, store_);
    const Edge& edge = definition->edge(node);
    out.worker_may_advance = edge.type.empty() || edge.type == "chain" || edge.type == "converge" ||
                             edge.type == "divert" || edge.type == "combine" || edge.type == "collapse";
    out.timeout_seconds = edge.timeout_seconds;
  } catch (const std::exception&) {
    // An advancer meets the problem, and records it as SPEC §5 says.
  }
  return out;
}

}  // namespace ductwork
