#include "engine/router.h"

#include <algorithm>

#include "engine/child_pipelines.h"
#include "engine/events.h"
#include "engine/flow_control.h"
#include "engine/run_policy.h"
#include "util/json.h"

namespace ductwork {
namespace {

// A routing error the advancer records and retries (SPEC §5 step 4).
class AdvanceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The step's output as a routing key: a string as itself, anything else as
// its JSON text (3 -> "3", null -> "null").
std::string routing_key(const std::string& output_json) {
  std::optional<Json> value = try_parse_json(output_json);
  if (value && value->is_string()) return value->as_string();
  return output_json;
}

bool exceeds_max_depth(const Config& config, const BranchClaim& claim, size_t width) {
  int max_depth = config.pipeline_advancer.max_depth.get(claim.pipeline, claim.step_klass);
  return max_depth >= 0 && width > static_cast<size_t>(max_depth);
}

// The next step on the same branch (chain, divert, converge), given the
// step's output.
void continue_on_branch(BranchTx& tx, const Definition& definition, const BranchClaim& claim,
                        const std::string& next, const std::string& to_transition, const std::string& output,
                        AdvanceEffects& effects) {
  tx.complete_step(claim.step_id);
  step_on_branch(tx, definition, claim, next, to_transition, json_list_text(output), effects);
}

// The branch ends here (no edge, or an expand of nothing).
void end_branch(BranchTx& tx, const BranchClaim& claim, AdvanceEffects& effects) {
  tx.complete_step(claim.step_id);
  close_transition(tx, claim, "");
  tx.complete_branch(claim.branch_id);
  effects.run_state = settle_run(tx, claim.run_id);
}

// dampen: the step is done, and the branch parks until a resume enqueues
// the edge's target (SPEC §13). The transition stays open for the resume
// to complete.
void park_branch(BranchTx& tx, const BranchClaim& claim, AdvanceEffects& effects) {
  tx.complete_step(claim.step_id);
  tx.complete_advancement(claim.advancement_id);
  tx.dampen_branch(claim.branch_id);
  effects.run_state = settle_run(tx, claim.run_id);
}

// divide / expand: the branch completes and one child per entry starts.
void fan_out(BranchTx& tx, const BranchClaim& claim, const std::string& type, const std::vector<NewChild>& children,
             AdvanceEffects& effects) {
  tx.complete_step(claim.step_id);
  tx.create_children(claim, type, children);
  close_transition(tx, claim, "");
  tx.complete_branch(claim.branch_id);
  effects.jobs_created = children.size();
}

// An expand of nothing. SPEC §5 says the branch completes; when the
// definition has a collapse for this expand, that would silently drop the
// rest of the pipeline — and inside an enclosing fan-out the outer fan-in
// would wait forever for this lineage while the run reports `completed`.
// So the collapse fires at once with an empty list (input [[]]), linked
// from this branch; with no matching collapse the branch just completes.
void empty_expand(BranchTx& tx, const Definition& definition, const BranchClaim& claim, AdvanceEffects& effects) {
  const std::string* collapse_target = nullptr;
  for (const auto& [node, edge] : definition.edges) {
    if (edge.type == "collapse" &&
        std::find(edge.barrier_nodes.begin(), edge.barrier_nodes.end(), claim.step_node) != edge.barrier_nodes.end()) {
      collapse_target = &edge.to.front();
      break;
    }
  }
  if (!collapse_target) {
    end_branch(tx, claim, effects);
    return;
  }
  tx.complete_step(claim.step_id);
  tx.create_children(claim, "expand", {});  // the barrier, width 0
  close_transition(tx, claim, "");
  tx.complete_branch(claim.branch_id);
  NewStep step{claim.run_id, "", claim.pipeline, claim.step_id, *collapse_target,
               definition.edge(*collapse_target).klass, "collapse", "", definition.edge(*collapse_target).delay_seconds,
               claim.priority, concurrency_gate(definition, claim.pipeline, *collapse_target),
               rate_gate(definition, claim.pipeline, *collapse_target)};
  if (!tx.fire_fan_in(claim.branch_id, step).empty()) effects.jobs_created = 1;
}

// combine / collapse: the branch arrives at its barrier. Finding the
// barrier is all that happens here; arrive_together writes the arrival.
PendingArrival find_arrival(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Edge& edge) {
  if (edge.barrier_nodes.empty()) {
    throw TransitionInvalid(edge.type + " edge of node " + claim.step_node + " names no barrier_node");
  }
  std::optional<Barrier> barrier = tx.find_barrier(claim.branch_id, edge.barrier_nodes);
  if (!barrier) {
    throw TransitionInvalid(edge.type + " at node " + claim.step_node +
                            ": no ancestor branch ran its barrier node " + edge.barrier_nodes.front());
  }
  const std::string& next = edge.to.front();
  NewStep step{claim.run_id, "",        claim.pipeline, claim.step_id, next, definition.edge(next).klass,
               edge.type,    "",        definition.edge(next).delay_seconds, claim.priority,
               concurrency_gate(definition, claim.pipeline, next), rate_gate(definition, claim.pipeline, next)};
  return PendingArrival{claim, *barrier, std::move(step)};
}

}  // namespace

void step_on_branch(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const std::string& next,
                    const std::string& to_transition, std::string args_json, AdvanceEffects& effects) {
  NewStep step{claim.run_id,  claim.branch_id, claim.pipeline,         claim.step_id,
               next,          definition.edge(next).klass, to_transition, std::move(args_json),
               definition.edge(next).delay_seconds, claim.priority, concurrency_gate(definition, claim.pipeline, next),
               rate_gate(definition, claim.pipeline, next)};
  std::string step_id = tx.create_step(step);
  close_transition(tx, claim, step_id);
  tx.release_branch(claim.branch_id);
  effects.jobs_created = 1;
}

void close_transition(BranchTx& tx, const BranchClaim& claim, const std::string& out_step_id) {
  tx.complete_transition(claim.transition_id, out_step_id);
  tx.complete_advancement(claim.advancement_id);
}

void halt_branch(BranchTx& tx, const BranchClaim& claim, const std::string& reason, AdvanceEffects& effects) {
  close_transition(tx, claim, "");
  tx.halt_branch(claim.branch_id, reason);
  effects.halt_reason = reason;
  effects.run_state = settle_run(tx, claim.run_id);
}

void route(BranchTx& tx, const Definition& definition, const BranchClaim& claim, const Config& config,
           AdvanceEffects& effects, std::optional<PendingArrival>* defer, const DefinitionCache* catalog) {
  const Edge& edge = definition.edge(claim.step_node);
  if (edge.type.empty()) {
    end_branch(tx, claim, effects);
    return;
  }
  if (edge.type == "chain" || edge.type == "converge") {
    continue_on_branch(tx, definition, claim, edge.to.front(), edge.type == "chain" ? "default" : "converge",
                       tx.step_output_json(claim.step_id), effects);
    return;
  }
  if (edge.type == "divert") {
    std::string output = tx.step_output_json(claim.step_id);
    auto target = edge.routes.find(routing_key(output));
    if (target == edge.routes.end()) target = edge.routes.find("otherwise");
    if (target == edge.routes.end()) {
      halt_branch(tx, claim, "condition_unmatched", effects);
      return;
    }
    continue_on_branch(tx, definition, claim, target->second, "divert", output, effects);
    return;
  }
  if (edge.type == "divide") {
    if (exceeds_max_depth(config, claim, edge.to.size())) {
      halt_branch(tx, claim, "max_fanout_exceeded", effects);
      return;
    }
    std::string args = json_list_text(tx.step_output_json(claim.step_id));
    std::vector<NewChild> children;
    for (const auto& target : edge.to) {
      const Edge& child = definition.edge(target);
      children.push_back(NewChild{target, child.klass, args, child.delay_seconds,
                                  concurrency_gate(definition, claim.pipeline, target),
                                  rate_gate(definition, claim.pipeline, target)});
    }
    fan_out(tx, claim, "divide", children, effects);
    return;
  }
  if (edge.type == "expand") {
    std::optional<Json> parsed = try_parse_json(tx.step_output_json(claim.step_id));
    if (!parsed || !parsed->is_array()) {
      throw AdvanceError("expand: step " + claim.step_klass + " must return a list, got " +
                         (!parsed ? std::string("invalid JSON") : std::string(json_kind(*parsed))));
    }
    const Json::Array& items = parsed->as_array();
    if (items.empty()) {
      empty_expand(tx, definition, claim, effects);
      return;
    }
    if (exceeds_max_depth(config, claim, items.size())) {
      halt_branch(tx, claim, "max_fanout_exceeded", effects);
      return;
    }
    const std::string& target = edge.to.front();
    const std::string& klass = definition.edge(target).klass;
    const double delay = definition.edge(target).delay_seconds;
    const std::optional<GateSpec> gate = concurrency_gate(definition, claim.pipeline, target);
    const std::optional<RateSpec> rate = rate_gate(definition, claim.pipeline, target);
    std::vector<NewChild> children;
    children.reserve(items.size());
    for (const Json& item : items) {
      children.push_back(NewChild{target, klass, json_list_text(item.dump()), delay, gate, rate});
    }
    fan_out(tx, claim, "expand", children, effects);
    return;
  }
  if (edge.type == "combine" || edge.type == "collapse") {
    PendingArrival arrival = find_arrival(tx, definition, claim, edge);
    if (defer) {
      *defer = std::move(arrival);
      return;
    }
    arrive_together(tx, {&arrival}, {&effects});
    return;
  }
  if (edge.type == "dampen") {
    park_branch(tx, claim, effects);
    return;
  }
  if (edge.type == "await") {
    await_event(tx, definition, claim, edge, effects);
    return;
  }
  if (edge.type == "invoke") {
    invoke_child(tx, definition, claim, edge, config, catalog, effects);
    return;
  }
  throw TransitionInvalid("edge type '" + edge.type + "' of node " + claim.step_node + " is not supported");
}

void arrive_together(BranchTx& tx, const std::vector<const PendingArrival*>& arrivals,
                     const std::vector<AdvanceEffects*>& effects) {
  if (arrivals.empty()) return;
  const PendingArrival& last = *arrivals.back();
  // The run's lock before its barrier's: run settlement takes the run's
  // lock too (settle_run), so every transaction takes a run's locks in this
  // one order and two cannot deadlock on them.
  tx.lock_run(last.claim.run_id);
  std::vector<const BranchClaim*> claims;
  std::vector<Arrival> counted;
  for (const PendingArrival* arrival : arrivals) {
    if (arrival->barrier.branch_id != last.barrier.branch_id) {
      throw std::logic_error("arrive_together: arrivals at two barriers");
    }
    claims.push_back(&arrival->claim);
    counted.push_back(Arrival{arrival->claim.branch_id, arrival->barrier.ordinal, arrival->claim.step_id});
  }
  tx.close_arrived(claims);
  ArrivalCount count = tx.arrive(last.barrier.branch_id, counted);
  // The arrivals that complete the count create the fan-in branch.
  AdvanceEffects& effects_after = *effects.back();
  if (!count.fired && count.arrived >= count.width) {
    if (!tx.fire_fan_in(last.barrier.branch_id, last.fan_in_step).empty()) {
      effects_after.jobs_created = 1;
      return;
    }
  }
  // Not the last arrivals: the run may still be over (a sibling halted).
  effects_after.run_state = settle_run(tx, last.claim.run_id);
}

}  // namespace ductwork
