#include "engine/control.h"

#include <algorithm>

#include "engine/definition.h"
#include "engine/retry_when_busy.h"
#include "store/store_error.h"
#include "util/json.h"

namespace ductwork {

// Cancel and resume lock many rows of a busy run at once; on PostgreSQL a
// worker or advancer locking the same rows in another order can make the
// server break a deadlock by aborting one side: they are tried again
// (retry_when_busy.h).

CancelResult cancel_pipeline(Store& store, const std::string& pipeline_id) {
  return retry_when_busy([&] { return store.cancel(pipeline_id); });
}

ResumeResult resume_pipeline(Store& store, const std::string& pipeline_id, const std::string& value_json,
                             const std::optional<std::string>& node) {
  // The run's snapshot, parsed once per distinct text (every branch of a run
  // shares it).
  std::string parsed_text;
  std::optional<Definition> definition;
  auto plan = [&](const DampenedBranch& branch) -> std::optional<NewStep> {
    if (!definition || parsed_text != branch.definition_json) {
      definition = Definition::from_json(parse_json(branch.definition_json), branch.pipeline, "run " + branch.run_id,
                                         /*strict=*/false);
      parsed_text = branch.definition_json;
    }
    auto edge = definition->edges.find(branch.step_node);
    if (edge == definition->edges.end() || edge->second.type != "dampen" || edge->second.to.empty()) {
      return std::nullopt;  // not parked by a dampen edge of this definition: left alone
    }
    const std::string& target = edge->second.to.front();
    const Edge& next = definition->edge(target);
    if (node && *node != branch.step_node && *node != branch.step_klass && *node != target && *node != next.klass) {
      return std::nullopt;
    }
    NewStep step;
    step.run_id = branch.run_id;
    step.branch_id = branch.branch_id;
    step.pipeline = branch.pipeline;
    step.source_step_id = branch.step_id;
    step.node = target;
    step.klass = next.klass;
    step.to_transition = "dampen";
    step.args_json = "[" + branch.output_json + "," + value_json + "]";
    step.delay_seconds = next.delay_seconds;
    return step;
  };
  ResumeResult result = retry_when_busy([&] { return store.resume(pipeline_id, plan); });
  if (result.resumed > 0) return result;
  if (result.parked_at.empty()) throw ControlRefused("pipeline " + pipeline_id + " has no dampened branch to resume");
  std::vector<std::string> at = result.parked_at;
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::string list;
  for (const auto& n : at) list += (list.empty() ? "" : ", ") + n;
  if (!node) {
    throw ControlRefused("pipeline " + pipeline_id + ": no dampen edge of its definition leads on from " + list);
  }
  throw ControlRefused("pipeline " + pipeline_id + " has no dampened branch at " + *node +
                       " (its branches are parked at " + list + ")");
}

}  // namespace ductwork
