#pragma once

#include <string>
#include <vector>

#include "engine/run_context.h"
#include "store/store.h"

namespace ductwork {

// The branch statuses that keep a run open (a branch in any other status,
// completed or halted, is settled).
const std::vector<std::string>& open_branch_statuses();
// The statuses a cancel ends (SPEC §13): the open ones and `dampened`.
const std::vector<std::string>& cancellable_branch_statuses();

// What an operator may do with a pipeline in `status` (SPEC §7, §13):
// cancel one that has not finished (completed, halted, cancelled), resume
// one in progress or dampened, revive one halted or cancelled.
bool pipeline_cancellable(const std::string& status);
bool pipeline_resumable(const std::string& status);
bool pipeline_revivable(const std::string& status);

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

// Revives a halted or cancelled pipeline (SPEC §7, §13) in one transaction
// on the write port: a new run with the same definition snapshot; completed
// branches and their steps copied as completed; every other branch
// re-opened, its last step handled by revive_action; the context of the run
// `context` names (run_context.h) copied into the new run; the pipeline in
// progress again, the old run kept as history. Returns the new run's id.
// Throws ReviveRefused for an unknown pipeline, one that is not halted or
// cancelled, or one without a run, and UnknownRun for a run number the
// pipeline does not have (nothing written either way).
std::string revive_pipeline(Store& store, const std::string& pipeline_id, const ContextSource& context);
// The same with `--duplicate-context` (the newest run that has context) or
// without (none).
std::string revive_pipeline(Store& store, const std::string& pipeline_id, bool duplicate_context);

}  // namespace ductwork
