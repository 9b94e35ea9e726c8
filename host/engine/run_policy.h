#pragma once

#include <string>
#include <vector>

#include "engine/run_context.h"
#include "store/store.h"

namespace ductwork {

// The branch statuses that keep a run open (a branch in any other status,
// completed or halted, is settled).
const std::vector<std::string>& open_branch_statuses();

// Run settlement (SPEC §5, §13), inside the caller's branch transaction:
// while any branch is open the run stays open; otherwise the run and its
// pipeline become dampened while any branch is parked dampened, else
// halted when any branch halted, else completed. Returns the run's state.
RunState settle_run(BranchTx& tx, const std::string& run_id);

// Revive (SPEC §7, §13), for the last step of a branch that did not
// complete: a step whose job failed (retries or crashes exhausted), or whose
// job a cancel withdrew or caught running, is enqueued again with fresh
// budgets; any other (its job succeeded: its transition failed — invalid,
// advancer budgets, max fan-out, no matching route — or a cancel caught it
// before or while parked) is re-created as `advancing` so the transition is
// tried again.
ReviveAction revive_action(const std::string& last_step_status);

// Store::revive with the engine's plans: revive_action for each re-opened
// branch, and the context of the run `context` names (run_context.h)
// copied into the new run. Throws ReviveRefused as the store does, and
// UnknownRun for a run number the pipeline does not have (nothing written
// either way).
std::string revive_pipeline(Store& store, const std::string& pipeline_id, const ContextSource& context);
// The same with `--duplicate-context` (the newest run that has context) or
// without (none).
std::string revive_pipeline(Store& store, const std::string& pipeline_id, bool duplicate_context);

}  // namespace ductwork
