#include "engine/parked_branch.h"

#include "engine/flow_control.h"

namespace ductwork {

NewStep parked_next_step(const Definition& definition, const DampenedBranch& branch, const std::string& target,
                         std::string args_json, const std::string& to_transition) {
  const Edge& next = definition.edge(target);
  NewStep step;
  step.run_id = branch.run_id;
  step.branch_id = branch.branch_id;
  step.pipeline = branch.pipeline;
  step.source_step_id = branch.step_id;
  step.node = target;
  step.klass = next.klass;
  step.to_transition = to_transition;
  step.args_json = std::move(args_json);
  step.delay_seconds = next.delay_seconds;
  step.gate = concurrency_gate(definition, branch.pipeline, target);
  step.rate = rate_gate(definition, branch.pipeline, target);
  return step;
}

void continue_parked(BranchTx& tx, const DampenedBranch& branch, const NewStep& step) {
  const std::string step_id = tx.create_step(step);
  if (!branch.transition_id.empty()) tx.complete_transition(branch.transition_id, step_id);
  tx.release_branch(branch.branch_id);
}

}  // namespace ductwork
