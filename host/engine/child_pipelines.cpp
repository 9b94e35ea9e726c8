#include "engine/child_pipelines.h"

#include "engine/trigger.h"
#include "util/fault.h"
#include "util/json.h"

namespace ductwork {
namespace {

// A routing error the advancer records and retries (SPEC §5 step 4): a
// host that defines the child may take the branch next time.
class ChildUnknown : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The child's final output (hand_to_parent).
std::string final_output(BranchTx& tx, const std::string& run_id, const EndingChild& child) {
  const Definition definition = Definition::from_json(parse_json(child.definition_json), child.pipeline,
                                                      "run " + run_id, /*strict=*/false);
  std::vector<std::string> ends;  // the nodes where a branch ends
  for (const auto& node : definition.nodes) {
    if (definition.edge(node).type.empty()) ends.push_back(node);
  }
  const std::vector<std::string> outputs = tx.outputs_at(run_id, ends);
  if (outputs.empty()) return "null";
  if (outputs.size() == 1) return outputs.front();
  std::string list = "[";
  for (size_t i = 0; i < outputs.size(); ++i) list += (i ? "," : "") + outputs[i];
  return list + "]";
}

}  // namespace

void invoke_child(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Edge& edge,
                  const Config& config, const DefinitionCache* catalog, AdvanceEffects& effects) {
  const std::string& target = edge.to.front();
  const Edge& node = definition.edge(target);
  const Definition* child = catalog ? catalog->defined(node.klass) : nullptr;
  if (!child) {
    throw ChildUnknown("invoke at node " + claim.step_node + ": this host does not define pipeline " + node.klass);
  }
  const int64_t depth = tx.invoke_depth(claim.run_id) + 1;
  if (depth > config.pipeline_advancer.max_invoke_depth.get(claim.pipeline)) {
    halt_branch(tx, claim, "invoke_depth_exceeded", effects);
    return;
  }
  const std::string args = json_list_text(tx.step_output_json(claim.step_id));
  tx.complete_step(claim.step_id);
  NewStep waiting{claim.run_id, claim.branch_id, claim.pipeline, claim.step_id, target, node.klass, "invoke", args,
                  0, claim.priority, std::nullopt, std::nullopt};
  // The child runs at its own priority, else at its parent run's.
  std::optional<int> priority;
  if (!child->priority && claim.priority) priority = static_cast<int>(*claim.priority);
  NewPipeline request = trigger_request(*child, Json::array(), priority);
  request.args_json = args;
  const std::pair<std::string, std::string> started = tx.start_child(waiting, request, depth);
  close_transition(tx, claim, started.first);
  tx.wait_branch(claim.branch_id);
}

void hand_to_parent(BranchTx& tx, const std::string& run_id, ChildEnd end) {
  std::optional<EndingChild> child = tx.invocation_of_run(run_id);
  if (!child) return;
  if (end == ChildEnd::kCompleted) {
    tx.hand_back(child->invocation.parent_step_id, /*succeeded=*/true, final_output(tx, run_id, *child));
  } else {
    const Json error = Json::object({{"error", "child_halted"},
                                     {"pipeline", child->pipeline},
                                     {"pipeline_id", child->invocation.child_pipeline_id},
                                     {"status", end == ChildEnd::kHalted ? "halted" : "cancelled"}});
    tx.hand_back(child->invocation.parent_step_id, /*succeeded=*/false, error.dump());
  }
  // A kill here loses the child's end and the hand-back together.
  fault_point("during_child_hand_back");
}

void child_halted(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Config& config,
                  const DefinitionCache* catalog, AdvanceEffects& effects) {
  if (!definition.edge(claim.step_node).child_halt_continues) {
    halt_branch(tx, claim, "child_halted", effects);
    return;
  }
  route(tx, definition, claim, config, effects, /*defer=*/nullptr, catalog);
}

}  // namespace ductwork
