#pragma once

#include <string>

#include "engine/definition.h"
#include "store/store.h"

namespace ductwork {

// A branch parked `dampened` (by a dampen or an await edge, SPEC §13, §18)
// goes on: the step its edge leads to, `target`, with `args_json` (a JSON
// list) and the target's delay and limits, entered by `to_transition`.
NewStep parked_next_step(const Definition& definition, const DampenedBranch& branch, const std::string& target,
                         std::string args_json, const std::string& to_transition);

// Writes what an advance along a chain writes, minus the claim: the step,
// the parked transition completed with it, the branch in progress again.
// The caller reopens the run (StoreTx::reopen_run).
void continue_parked(BranchTx& tx, const DampenedBranch& branch, const NewStep& step);

}  // namespace ductwork
