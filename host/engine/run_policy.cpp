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

}  // namespace ductwork
