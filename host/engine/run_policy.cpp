#include "engine/run_policy.h"

namespace ductwork {

const std::vector<std::string>& open_branch_statuses() {
  static const std::vector<std::string> statuses = {"pending", "in_progress", "advancing", "waiting"};
  return statuses;
}

RunState settle_run(BranchTx& tx, const std::string& run_id) {
  // Two transactions settling the run's last branches at once must not
  // both see the other's branch open (then neither closes the run).
  tx.lock_run(run_id);
  if (tx.run_has_branch_in(run_id, open_branch_statuses())) return RunState::kOpen;
  // Parked branches wait for a person (SPEC §13); the run is not over even
  // when a sibling halted: a resume may still move it.
  RunState state = tx.run_has_branch_in(run_id, {"dampened"})  ? RunState::kDampened
                   : tx.run_has_branch_in(run_id, {"halted"}) ? RunState::kHalted
                                                               : RunState::kCompleted;
  tx.close_run(run_id, state);
  return state;
}

ReviveAction revive_action(const std::string& last_step_status) {
  // A job that failed, or that a cancel withdrew or interrupted (SPEC §13),
  // runs again; a step whose job succeeded has its transition tried again.
  if (last_step_status == "failed" || last_step_status == "cancelled" || last_step_status == "pending" ||
      last_step_status == "in_progress") {
    return ReviveAction::kRequeue;
  }
  return ReviveAction::kReadvance;
}

std::string revive_pipeline(Store& store, const std::string& pipeline_id, const ContextSource& context) {
  ContextSourcePlanner context_from = [&](const std::vector<RunContextCount>& runs) {
    return context_source_run(pipeline_id, runs, context);
  };
  return store.revive(pipeline_id, context_from, revive_action);
}

std::string revive_pipeline(Store& store, const std::string& pipeline_id, bool duplicate_context) {
  ContextSource context;
  if (duplicate_context) context.kind = ContextSource::Kind::kNewestWithContext;
  return revive_pipeline(store, pipeline_id, context);
}

}  // namespace ductwork
