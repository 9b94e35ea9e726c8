#include "engine/run_policy.h"

namespace ductwork {

const std::vector<std::string>& open_branch_statuses() {
  static const std::vector<std::string> statuses = {"pending", "in_progress", "advancing", "waiting"};
  return statuses;
}

RunState settle_run(BranchTx& tx, const std::string& run_id) {
  if (tx.run_has_branch_in(run_id, open_branch_statuses())) return RunState::kOpen;
  RunState state = tx.run_has_branch_in(run_id, {"halted"}) ? RunState::kHalted : RunState::kCompleted;
  tx.close_run(run_id, state);
  return state;
}

ReviveAction revive_action(const std::string& last_step_status) {
  return last_step_status == "failed" ? ReviveAction::kRequeue : ReviveAction::kReadvance;
}

std::string revive_pipeline(Store& store, const std::string& pipeline_id, bool duplicate_context) {
  return store.revive(pipeline_id, duplicate_context, revive_action);
}

}  // namespace ductwork
