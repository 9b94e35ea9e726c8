#include "engine/run_policy.h"

#include "engine/child_pipelines.h"
#include "store/store_error.h"
#include "store/store_tx.h"

namespace ductwork {

const std::vector<std::string>& open_branch_statuses() {
  static const std::vector<std::string> statuses = {"pending", "in_progress", "advancing", "waiting"};
  return statuses;
}

const std::vector<std::string>& cancellable_branch_statuses() {
  static const std::vector<std::string> statuses = [] {
    std::vector<std::string> all = open_branch_statuses();
    all.emplace_back("dampened");
    return all;
  }();
  return statuses;
}

bool pipeline_cancellable(const std::string& status) {
  return status != "completed" && status != "halted" && status != "cancelled";
}

bool pipeline_resumable(const std::string& status) { return status == "in_progress" || status == "dampened"; }

bool pipeline_revivable(const std::string& status) { return status == "halted" || status == "cancelled"; }

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
  if (state != RunState::kDampened) {
    hand_to_parent(tx, run_id, state == RunState::kCompleted ? ChildEnd::kCompleted : ChildEnd::kHalted);
  }
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

namespace {

bool finished_unsuccessfully(const std::optional<std::string>& status) {
  return status && (*status == "halted" || *status == "cancelled");
}

// Revives one pipeline inside `tx`, then (SPEC §18) each halted or
// cancelled child its invoke steps wait for again, with theirs.
std::string revive_in(StoreTx& tx, const std::string& pipeline_id, const ContextSource& context) {
  std::optional<std::string> status = tx.lock_pipeline(pipeline_id);
  if (!status) throw ReviveRefused("no pipeline " + pipeline_id, /*unknown=*/true);
  if (!pipeline_revivable(*status)) {
    throw ReviveRefused("pipeline " + pipeline_id + " is " + *status +
                        ", not halted or cancelled: only a halted or cancelled pipeline can be revived");
  }
  RevivePlan plan;
  plan.pipeline_id = pipeline_id;
  // Whose context the new run gets is picked before anything is written:
  // a refusal (a run the pipeline does not have) leaves no trace.
  plan.context_run = context_source_run(pipeline_id, tx.run_context_counts(pipeline_id), context);
  std::optional<std::string> run = tx.latest_run(pipeline_id);
  if (!run) throw ReviveRefused("pipeline " + pipeline_id + " has no run to revive");
  plan.run_id = *run;
  std::vector<std::string> children;  // revived once the parent's copy names them
  for (const RunBranchEnd& branch : tx.branch_ends(plan.run_id)) {
    if (branch.status == "completed") continue;
    std::optional<ReviveAction> action =
        branch.last_step_status ? std::optional<ReviveAction>(revive_action(*branch.last_step_status)) : std::nullopt;
    // A step that stands for a child which halted or was cancelled waits
    // for the same child, revived, instead of starting another.
    if (branch.child_pipeline_id && finished_unsuccessfully(branch.child_status)) {
      action = ReviveAction::kReinvoke;
      children.push_back(*branch.child_pipeline_id);
    }
    plan.reopened[branch.branch_id] = action;
  }
  // A requeued job starts over: fresh budgets, due at once.
  plan.requeued = NextExecution{};
  const std::string new_run = tx.copy_run(plan);
  ContextSource child_context;  // a child keeps its own newest context when the parent's was asked for
  if (context.kind != ContextSource::Kind::kNone) child_context.kind = ContextSource::Kind::kNewestWithContext;
  for (const std::string& child : children) revive_in(tx, child, child_context);
  return new_run;
}

}  // namespace

std::string revive_pipeline(Store& store, const std::string& pipeline_id, const ContextSource& context) {
  std::string new_run;
  store.transact([&](StoreTx& tx) { new_run = revive_in(tx, pipeline_id, context); });
  return new_run;
}

std::string revive_pipeline(Store& store, const std::string& pipeline_id, bool duplicate_context) {
  ContextSource context;
  if (duplicate_context) context.kind = ContextSource::Kind::kNewestWithContext;
  return revive_pipeline(store, pipeline_id, context);
}

}  // namespace ductwork
